//! The words of the simple command being read, and which of them would let a value become code
//! (SPEC §17).
//!
//! The lexer hands each word here as it reads it, quotes removed, and asks
//! [`Words::code_position`] before it places a hole. The lists below name what runs or loads code
//! taken from its arguments or its value: runners, shells, interpreters, code-bearing variables.
//! A hole is refused as the program name, among a runner's arguments, as an interpreter's program
//! text or in a code variable's assignment, and wherever the program is not written out literally,
//! since then nothing tells what it would run.

/// Programs and builtins that run another program or shell code taken from their arguments, or
/// treat an argument as a variable name or arithmetic: no value may be among their arguments.
const RUNNERS: &[&str] = &[
    ".",
    "alias",
    "bind",
    "builtin",
    "busybox",
    "bwrap",
    "chroot",
    "chrt",
    "command",
    "complete",
    "compgen",
    "coproc",
    "declare",
    "doas",
    "enable",
    "env",
    "eval",
    "exec",
    "expect",
    "fakeroot",
    "fc",
    "firejail",
    "flock",
    "gdb",
    "getopts",
    "hash",
    "ionice",
    "let",
    "ltrace",
    "mapfile",
    "nice",
    "nohup",
    "nsenter",
    "parallel",
    "proot",
    "read",
    "readarray",
    "runuser",
    "script",
    "setsid",
    "source",
    "ssh",
    "stdbuf",
    "strace",
    "su",
    "sudo",
    "systemd-run",
    "taskset",
    "time",
    "timeout",
    "toybox",
    "trap",
    "typeset",
    "unbuffer",
    "unset",
    "unshare",
    "valgrind",
    "watch",
    "xargs",
];
/// Shells: a value may only be a positional parameter after `-c SCRIPT NAME`.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "fish", "csh", "tcsh", "posh", "rbash"];
/// Interpreters whose option (`-c`, `-e`, …) takes a program: a value may not be that program.
const INTERPRETERS: &[(&str, &[&str])] = &[
    ("python", &["-c"]),
    ("python3", &["-c"]),
    ("python2", &["-c"]),
    ("perl", &["-e", "-E"]),
    ("ruby", &["-e"]),
    ("node", &["-e", "--eval", "-p", "--print"]),
    ("php", &["-r"]),
    ("lua", &["-e"]),
    ("tclsh", &[]),
    ("sed", &["-e", "--expression"]),
    ("gsed", &["-e", "--expression"]),
];
/// Programs whose first operand is their program text unless a script file is named with `-f`.
const FIRST_OPERAND_IS_CODE: &[&str] = &["awk", "gawk", "mawk", "nawk", "busybox-awk", "sed", "gsed"];
/// Environment variables whose value decides what runs or what code is loaded.
const CODE_VARIABLES: &[&str] = &[
    "PATH",
    "BASH_ENV",
    "ENV",
    "PS1",
    "PS2",
    "PS3",
    "PS4",
    "PROMPT_COMMAND",
    "SHELLOPTS",
    "BASHOPTS",
    "CDPATH",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PYTHONHOME",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "RUBYOPT",
    "RUBYLIB",
    "NODE_OPTIONS",
    "NODE_PATH",
    "GIT_SSH_COMMAND",
    "GIT_SSH",
    "GIT_EXEC_PATH",
    "GIT_CONFIG_PARAMETERS",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "SHELL",
    "BROWSER",
    "LESSOPEN",
    "LESSCLOSE",
    "MANPAGER",
    "GCONV_PATH",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "IFS",
];
/// Words that, anywhere in a script, make its program names unknowable (aliases) or its
/// assignments arithmetic (integer attributes): a script using them takes no values.
pub(super) const SCRIPT_WIDE: &[&str] = &["alias", "declare", "typeset", "integer", "shopt", "enable", "function", "let"];
/// Reserved words after which a command name follows.
const KEYWORDS: &[&str] = &["if", "then", "else", "elif", "do", "while", "until", "!", "{"];
/// Reserved words that end a compound command.
const CLOSERS: &[&str] = &["fi", "done", "esac", "}"];
/// Marks, inside a word's text, an expansion (`$…`, a backtick) or a hole.
pub(super) const EXPANSION: char = '\u{1}';
pub(super) const HOLE: char = '\0';

const NOT_A_PROGRAM: &str = "a template cannot name the program to run: write the program in the design and pass the value as an argument";

/// `true` when `name` is an environment variable whose value can load or choose code.
pub fn is_code_variable(name: &str) -> bool {
    CODE_VARIABLES.contains(&name) || name.starts_with("LD_") || name.starts_with("DYLD_") || name.starts_with("BASH_FUNC_")
}

/// The words of the simple command being read, enough to tell a program name from its arguments.
#[derive(Default)]
pub(super) struct Words {
    /// Completed words of this command, quotes removed (holes as [`HOLE`], expansions as
    /// [`EXPANSION`]).
    done: Vec<String>,
    /// The word being read.
    pub(super) current: String,
    pub(super) in_word: bool,
    /// The next word is a redirection target, not a command word.
    pub(super) redirect_next: bool,
    /// Inside `[[ … ]]`: no value may be placed until its unquoted `]]`.
    pub(super) double_bracket: bool,
    /// The current word has a quoted part.
    quoted: bool,
    /// `case` commands open in this frame: a `)` ends a pattern, not the frame.
    pub(super) case_depth: usize,
    /// A `case` was read in this frame.
    pub(super) saw_case: bool,
}

impl Words {
    pub(super) fn push_char(&mut self, c: char) {
        self.current.push(c);
        self.in_word = true;
    }
    pub(super) fn touch(&mut self) {
        self.in_word = true;
    }
    pub(super) fn quote(&mut self) {
        self.in_word = true;
        self.quoted = true;
    }
    pub(super) fn end_word(&mut self) {
        if !self.in_word {
            return;
        }
        let w = std::mem::take(&mut self.current);
        self.in_word = false;
        let quoted = std::mem::take(&mut self.quoted);
        if std::mem::take(&mut self.redirect_next) {
            return;
        }
        if w == "]]" && !quoted {
            self.double_bracket = false;
        }
        let at_name = self.command_name_index().is_none();
        if at_name && w == "case" {
            self.case_depth += 1;
            self.saw_case = true;
        }
        if at_name && w == "esac" {
            self.case_depth = self.case_depth.saturating_sub(1);
        }
        if CLOSERS.contains(&w.as_str()) && at_name {
            self.done.clear();
            return;
        }
        if KEYWORDS.contains(&w.as_str()) && at_name {
            self.done.clear();
            return;
        }
        self.done.push(w);
    }
    pub(super) fn end_command(&mut self) {
        self.end_word();
        self.done.clear();
        self.redirect_next = false;
        self.double_bracket = false;
    }

    /// Index in `done` of the word that names the program, if one has been read (assignments
    /// before it are skipped).
    pub(super) fn command_name_index(&self) -> Option<usize> {
        self.done.iter().position(|w| !is_assignment(w))
    }

    /// Why a hole in the current word would let its value choose or become code, if it would.
    pub(super) fn code_position(&self) -> Option<String> {
        if self.double_bracket {
            return Some(
                "[[ … ]] evaluates arithmetic in some shells, which can run code hidden in a value: use [ \"…\" = … ] or test".into(),
            );
        }
        if self.redirect_next {
            return None;
        }
        let Some(i) = self.command_name_index() else {
            return match assignment_name(&self.current) {
                Some(var) if is_code_variable(var) => Some(format!("{var} decides which code runs, so it cannot take a template value")),
                Some(_) => None,
                None => Some(NOT_A_PROGRAM.into()),
            };
        };
        let name = &self.done[i];
        if name.contains([EXPANSION, HOLE, '*', '?', '~', '{', '}']) || (name.contains('[') && name != "[") {
            return Some(format!(
                "the program of this command ({name:?}) is not written out, so a value among its arguments could reach a shell or eval: name the program literally"
            ));
        }
        let program = basename(name);
        let args = &self.done[i + 1..];
        if RUNNERS.contains(&program) {
            return Some(format!(
                "{program} can run its arguments as a program or shell code, or read one as a variable name: write what it runs in the design, and pass a value as an argument of that program instead"
            ));
        }
        if SHELLS.contains(&program) {
            // Only `sh -c SCRIPT NAME [values…]`: a value is then a positional parameter.
            let c_flag = args
                .first()
                .is_some_and(|a| a.len() > 1 && a.starts_with('-') && a[1..].chars().all(|c| c.is_ascii_lowercase()) && a.contains('c'));
            return (!(c_flag && args.len() >= 3)).then(|| {
                format!("{program} would run the value as shell code: pass it as a positional parameter instead ({program} -c '… \"$1\" …' _ {{{{…}}}})")
            });
        }
        if let Some((_, options)) = INTERPRETERS.iter().find(|(p, _)| *p == program)
            && args.last().is_some_and(|a| options.contains(&a.as_str()))
        {
            return Some(format!(
                "the program text of {program} would run the value as code: pass the value as an argument or in the environment and read it there"
            ));
        }
        let option_value = self.current.starts_with('-') || args.last().is_some_and(|a| a == "-v" || a == "-F");
        if FIRST_OPERAND_IS_CODE.contains(&program)
            && !option_value
            && !args.iter().any(|a| a.starts_with("-f") || a == "-e" || a == "--expression" || a.starts_with("--file"))
            && args.iter().all(|a| a.starts_with('-'))
        {
            return Some(format!(
                "the program text of {program} would run the value as code: pass it with -v name=value (awk) or in the environment, and read it there"
            ));
        }
        if program == "find" && args.iter().any(|a| matches!(a.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir")) {
            return Some("find -exec runs its arguments as a program: pass values to find only before -exec".into());
        }
        // A value at the very start of printf's format could be bash's `-v name`.
        if program == "printf" && ((args.is_empty() && self.current.is_empty()) || args.iter().any(|a| a.starts_with("-v"))) {
            return Some("printf's format and -v are read as code-like text (a value could be -v name): write the format in the design (printf %s {{…}})".into());
        }
        if matches!(program, "[" | "test") && args.iter().any(|a| a == "-v" || a == "-R") {
            return Some("test -v reads a variable name, which bash evaluates: compare the value instead".into());
        }
        if matches!(program, "export" | "readonly" | "local") {
            if args.iter().any(|a| a.starts_with('-')) || assignment_name(&self.current).is_none() {
                return Some(format!("{program} takes values only as NAME=value, with no options"));
            }
            if let Some(var) = assignment_name(&self.current).filter(|v| is_code_variable(v)) {
                return Some(format!("{var} decides which code runs, so it cannot take a template value"));
            }
        }
        None
    }
}

/// The variable an assignment word sets (`NAME=…`), if the word is one.
fn assignment_name(word: &str) -> Option<&str> {
    let (name, _) = word.split_once('=')?;
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    ok.then_some(name)
}

fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

fn is_assignment(word: &str) -> bool {
    assignment_name(word).is_some()
}
