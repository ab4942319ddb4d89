//! Template values in a command step's shell script (SPEC §3 command, §17).
//!
//! A `run` string is POSIX shell text with `{{…}}` holes. Values never enter the script: each
//! hole becomes a reference to an environment variable (`VWF_VALUE_<n>`), spelled for the quoting
//! context the hole sits in, and the values travel in the child's environment. The script text is
//! therefore fixed by the design alone; whatever a value holds, the shell parses the same text, and
//! the result of a quoted parameter expansion is never parsed as code, split or globbed.
//!
//! | context                              | written as               |
//! |--------------------------------------|--------------------------|
//! | bare word, `$(…)`, assignment, `${x:-…}` word | `"${VWF_VALUE_n}"` |
//! | inside `"…"`, unquoted here-document | `${VWF_VALUE_n}`         |
//! | inside `'…'`                         | `'"${VWF_VALUE_n}"'`     |
//!
//! Placements that no spelling makes safe are refused when the design is checked, with how to write
//! it instead: the program name of a command, backticks, arithmetic (`$((…))`, `((…))`, `[[…]]`,
//! `let`), a quoted here-document, right after a backslash, a parameter name, `$'…'`, a here-document
//! delimiter, and code that is evaluated again (`eval`, `trap`, the script of `sh -c`, `ssh`).
//! The design's own text may not mention a `VWF_VALUE_` variable: that would read a value where
//! none of these rules look.
//!
//! Written by hand: shell parser crates build syntax trees of complete scripts and know nothing of
//! holes; what this needs is the quoting state at each hole, which a small lexer tracks. When the
//! lexer cannot tell a context with confidence it refuses, never guesses.

use crate::limits::COMMAND_VALUE_BYTES;
use crate::template::{self, Context, Ref, Segment, Template};

/// Prefix of the environment variables that carry template values into a command.
pub const VALUE_VAR_PREFIX: &str = "VWF_VALUE_";

/// A `run` string made ready for `sh -c`: the script text and, for each variable it reads, the
/// reference whose value the variable carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    pub text: String,
    /// `(variable name, reference)`, in the order the holes appear.
    pub values: Vec<(String, Ref)>,
    /// A construct in which bash evaluates variables as arithmetic (`$((…))`, `[[ … ]]`, …): a
    /// value stored in a variable may reach it, and bash runs `a[$(…)]` there, so values holding
    /// `[` with `$` or a backtick are refused when the step runs.
    pub arithmetic: Option<&'static str>,
}

impl Script {
    /// The environment entries that carry the values, read from `ctx`. A value a process cannot
    /// receive (a NUL byte, or longer than one environment entry may be) is an error naming it.
    pub fn bind(&self, ctx: &Context) -> Result<Vec<(String, String)>, String> {
        self.values
            .iter()
            .map(|(var, r)| {
                let text = template::ref_text(r, ctx).map_err(|e| e.0)?;
                let shown = shown(r);
                if text.contains('\0') {
                    return Err(format!("{shown} holds a NUL byte, which no command can receive"));
                }
                if let Some(construct) = self.arithmetic
                    && text.contains('[')
                    && text.contains(['$', '`'])
                {
                    return Err(format!(
                        "{shown} holds \"[\" with \"$\" or a backtick, which bash would run as code if it reached the {construct} this command uses; nothing was run"
                    ));
                }
                if text.len() > COMMAND_VALUE_BYTES {
                    return Err(format!(
                        "{shown} is {} bytes; a command receives at most {COMMAND_VALUE_BYTES} bytes per value (write it to a file in an earlier step, or use an http step)",
                        text.len()
                    ));
                }
                Ok((var.clone(), text))
            })
            .collect()
    }
}

/// A hole placed where no spelling is safe; the message says where and how to write it instead.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
#[error("{0}")]
pub struct PlacementError(pub String);

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
const SCRIPT_WIDE: &[&str] = &["alias", "declare", "typeset", "integer", "shopt", "enable", "function", "let"];
/// Reserved words after which a command name follows.
const KEYWORDS: &[&str] = &["if", "then", "else", "elif", "do", "while", "until", "!", "{"];
/// Reserved words that end a compound command.
const CLOSERS: &[&str] = &["fi", "done", "esac", "}"];
/// Marks, inside a word's text, an expansion (`$…`, a backtick) or a hole.
const EXPANSION: char = '\u{1}';
const HOLE: char = '\0';

const NOT_A_PROGRAM: &str = "a template cannot name the program to run: write the program in the design and pass the value as an argument";

/// The first construct in a script's literal text in which bash evaluates the contents of variables
/// as arithmetic (array subscripts and substring offsets included), if any.
fn evaluating_construct(text: &str) -> Option<&'static str> {
    let bytes = text.as_bytes();
    let at = |i: usize, s: &str| bytes.get(i..i + s.len()) == Some(s.as_bytes());
    for i in 0..bytes.len() {
        if at(i, "((") {
            return Some("((…)) arithmetic");
        }
        if at(i, "$[") {
            return Some("$[…] arithmetic");
        }
        if at(i, "[[") {
            return Some("[[ … ]]");
        }
        if at(i, "${") {
            // `${name[…]}` (a subscript) or `${name:offset}` (a substring).
            let rest = &text[i + 2..];
            let rest = rest.strip_prefix(['#', '!']).unwrap_or(rest);
            let name_len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
            let after = &rest[name_len..];
            if name_len > 0 && (after.starts_with('[') || (after.starts_with(':') && !after[1..].starts_with(['-', '=', '?', '+']))) {
                return Some("${…} subscripts or offsets");
            }
        }
    }
    let words: Vec<&str> = text.split_whitespace().collect();
    for pair in words.windows(2) {
        if matches!(pair[0], "local" | "export" | "readonly") && pair[1].starts_with('-') {
            return Some("an attribute option (such as -i)");
        }
    }
    None
}

/// `true` when `name` is an environment variable whose value can load or choose code.
pub fn is_code_variable(name: &str) -> bool {
    CODE_VARIABLES.contains(&name) || name.starts_with("LD_") || name.starts_with("DYLD_") || name.starts_with("BASH_FUNC_")
}

/// Checks the holes of a command's `argv` (no shell: each element is one argument) with the same
/// rules as a simple command in `run`.
pub fn check_argv(argv: &[Template]) -> Result<(), PlacementError> {
    let mut words = Words::default();
    for element in argv {
        for segment in &element.segments {
            match segment {
                Segment::Text(t) => words.current.push_str(t),
                Segment::Ref(r) => {
                    if let Some(why) = words.code_position() {
                        return Err(PlacementError(format!("{} in \"argv\": {why}", shown(r))));
                    }
                    words.current.push(HOLE);
                }
            }
        }
        words.in_word = true;
        words.end_word();
    }
    Ok(())
}

/// Compiles a parsed `run` template into a script whose holes read environment variables.
pub fn compile(template: &Template) -> Result<Script, PlacementError> {
    // The design's own text must not read a value variable: such a mention would put a value
    // where the placement rules below never look (`$VWF_VALUE_1 {{…}}` runs the value). A hole
    // cannot complete a partial name, as every spelling of a hole starts with `"`, `$` or `'`.
    let written = template.segments.iter().map(|s| match s {
        Segment::Text(t) => t.as_str(),
        Segment::Ref(_) => "\0",
    });
    if written.collect::<String>().contains(VALUE_VAR_PREFIX) {
        return Err(PlacementError(format!(
            "\"run\" mentions {VALUE_VAR_PREFIX}…: names starting with {VALUE_VAR_PREFIX} are reserved for the template values of the command; write {{{{…}}}} where a value goes"
        )));
    }
    let mut toks = Vec::new();
    let mut refs = Vec::new();
    for segment in &template.segments {
        match segment {
            Segment::Text(t) => toks.extend(t.chars().map(Tok::Char)),
            Segment::Ref(r) => {
                toks.push(Tok::Hole(refs.len()));
                refs.push(r.clone());
            }
        }
    }
    if let Some(first) = refs.first() {
        let text: String =
            template.segments.iter().filter_map(|s| if let Segment::Text(t) = s { Some(t.as_str()) } else { None }).collect();
        if let Some(word) = text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).find(|w| SCRIPT_WIDE.contains(w)) {
            return Err(PlacementError(format!(
                "{} in \"run\": a script that uses {word} takes no template values, because {word} can change which program a word runs or make an assignment arithmetic: move that part to its own step",
                shown(first)
            )));
        }
    }
    let mut lexer =
        Lexer { toks: &toks, pos: 0, out: String::new(), refs: &refs, values: Vec::new(), heredocs: Vec::new(), ambiguous_heredoc: false };
    lexer.command(None)?;
    if lexer.ambiguous_heredoc
        && let Some(first) = refs.first()
    {
        return Err(PlacementError(format!(
            "{} in \"run\": a here-document's end line carries more than its delimiter, which shells read differently: put the delimiter alone on its line",
            shown(first)
        )));
    }
    let text: String = template.segments.iter().filter_map(|s| if let Segment::Text(t) = s { Some(t.as_str()) } else { None }).collect();
    Ok(Script { text: lexer.out, values: lexer.values, arithmetic: evaluating_construct(&text) })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Char(char),
    Hole(usize),
}

/// How a hole is spelled, by context.
#[derive(Clone, Copy)]
enum Spelling {
    Unquoted,
    InDouble,
    InSingle,
}

/// A here-document announced on the current line, read after its newline.
struct HereDoc {
    delimiter: String,
    quoted: bool,
    strip_tabs: bool,
}

/// The words of the simple command being read, enough to tell a program name from its arguments.
#[derive(Default)]
struct Words {
    /// Completed words of this command, quotes removed (holes as [`HOLE`], expansions as
    /// [`EXPANSION`]).
    done: Vec<String>,
    /// The word being read.
    current: String,
    in_word: bool,
    /// The next word is a redirection target, not a command word.
    redirect_next: bool,
    /// Inside `[[ … ]]`: no value may be placed until its unquoted `]]`.
    double_bracket: bool,
    /// The current word has a quoted part.
    quoted: bool,
    /// `case` commands open in this frame: a `)` ends a pattern, not the frame.
    case_depth: usize,
    /// A `case` was read in this frame.
    saw_case: bool,
}

impl Words {
    fn push_char(&mut self, c: char) {
        self.current.push(c);
        self.in_word = true;
    }
    fn touch(&mut self) {
        self.in_word = true;
    }
    fn quote(&mut self) {
        self.in_word = true;
        self.quoted = true;
    }
    fn end_word(&mut self) {
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
    fn end_command(&mut self) {
        self.end_word();
        self.done.clear();
        self.redirect_next = false;
        self.double_bracket = false;
    }

    /// Index in `done` of the word that names the program, if one has been read (assignments
    /// before it are skipped).
    fn command_name_index(&self) -> Option<usize> {
        self.done.iter().position(|w| !is_assignment(w))
    }

    /// Why a hole in the current word would let its value choose or become code, if it would.
    fn code_position(&self) -> Option<String> {
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

/// A reference as the design writes it (`{{trigger.x}}`).
fn shown(r: &Ref) -> String {
    let body = match r {
        Ref::Node { reference } => format!("nodes.{reference}"),
        Ref::Trigger { path } if path.is_empty() => "trigger".into(),
        Ref::Trigger { path } => format!("trigger.{path}"),
        Ref::Item { path } if path.is_empty() => "item".into(),
        Ref::Item { path } => format!("item.{path}"),
        Ref::LoopIndex => "loop.index".into(),
        Ref::RunId => "run.id".into(),
        Ref::RunDesign => "run.design".into(),
        Ref::Secret { name } => format!("secrets.{name}"),
    };
    format!("{{{{{body}}}}}")
}

fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

fn is_assignment(word: &str) -> bool {
    assignment_name(word).is_some()
}

struct Lexer<'a> {
    toks: &'a [Tok],
    pos: usize,
    out: String,
    refs: &'a [Ref],
    values: Vec<(String, Ref)>,
    heredocs: Vec<HereDoc>,
    /// A here-document line started with its delimiter and went on (`EOF)`): bash may end the
    /// document there, dash does not.
    ambiguous_heredoc: bool,
}

impl Lexer<'_> {
    fn peek(&self, ahead: usize) -> Option<Tok> {
        self.toks.get(self.pos + ahead).copied()
    }
    fn peek_char(&self, ahead: usize) -> Option<char> {
        match self.peek(ahead) {
            Some(Tok::Char(c)) => Some(c),
            _ => None,
        }
    }
    /// Copies the next token (a character) to the output.
    fn copy(&mut self) -> Option<char> {
        let c = self.peek_char(0)?;
        self.out.push(c);
        self.pos += 1;
        Some(c)
    }
    fn refuse<T>(&self, hole: usize, why: &str) -> Result<T, PlacementError> {
        Err(PlacementError(format!("{} in \"run\": {why}", shown(&self.refs[hole]))))
    }
    fn place(&mut self, hole: usize, spelling: Spelling) {
        let var = format!("{VALUE_VAR_PREFIX}{}", self.values.len() + 1);
        match spelling {
            Spelling::Unquoted => self.out.push_str(&format!("\"${{{var}}}\"")),
            Spelling::InDouble => self.out.push_str(&format!("${{{var}}}")),
            Spelling::InSingle => self.out.push_str(&format!("'\"${{{var}}}\"'")),
        }
        self.values.push((var, self.refs[hole].clone()));
        self.pos += 1;
    }
    /// The first hole in `toks[from..to]`, if any.
    fn hole_in(&self, from: usize, to: usize) -> Option<usize> {
        self.toks[from..to].iter().find_map(|t| match t {
            Tok::Hole(h) => Some(*h),
            Tok::Char(_) => None,
        })
    }

    /// Shell commands until the end, or until the `)` that closes a `$(` (`close` is then `')'`).
    /// Answers whether a `case` was read.
    fn command(&mut self, close: Option<char>) -> Result<bool, PlacementError> {
        let mut words = Words::default();
        let mut depth = 0usize;
        while let Some(tok) = self.peek(0) {
            let c = match tok {
                Tok::Hole(h) => {
                    if let Some(why) = words.code_position() {
                        return self.refuse(h, &why);
                    }
                    words.touch();
                    words.current.push(HOLE);
                    self.place(h, Spelling::Unquoted);
                    continue;
                }
                Tok::Char(c) => c,
            };
            match c {
                '&' | '|' | '(' | ')' | '\n' | '<' | '>' if words.double_bracket => {
                    // Inside `[[ … ]]` these are its own operators (and it may span lines).
                    words.end_word();
                    self.copy();
                }
                '\\' => {
                    self.copy();
                    match self.peek(0) {
                        Some(Tok::Hole(h)) => return self.refuse(h, "a template right after a backslash: remove the backslash"),
                        Some(Tok::Char('\n')) => {
                            self.copy();
                        }
                        Some(Tok::Char(e)) => {
                            words.push_char(e);
                            self.copy();
                        }
                        None => {}
                    }
                }
                '\'' => {
                    words.quote();
                    self.copy();
                    self.single(Some(&mut words))?;
                }
                '"' => {
                    words.quote();
                    self.copy();
                    self.double(Some(&mut words), false)?;
                }
                '`' => {
                    words.push_char(EXPANSION);
                    self.backtick()?;
                }
                '$' => {
                    words.push_char(EXPANSION);
                    self.dollar(Spelling::Unquoted, Some(&mut words))?;
                }
                '#' if !words.in_word => self.comment(),
                '\n' => {
                    words.end_command();
                    self.copy();
                    self.read_heredocs()?;
                }
                ' ' | '\t' => {
                    words.end_word();
                    self.copy();
                }
                ';' | '&' | '|' => {
                    words.end_command();
                    self.copy();
                }
                '(' => {
                    if !words.in_word && self.peek_char(1) == Some('(') {
                        // `((…))` and `for ((…))`: bash arithmetic, read raw (its `<<` is a shift).
                        self.arithmetic(self.pos, "arithmetic ((…)) can run code hidden in a value: compute in a separate step")?;
                        continue;
                    }
                    words.end_word();
                    words.end_command();
                    depth += 1;
                    self.copy();
                }
                ')' => {
                    words.end_command();
                    if depth > 0 {
                        depth -= 1;
                    } else if words.case_depth == 0 && close == Some(')') {
                        // Outside a `case`, this `)` closes the `$(`; inside one it ends a pattern.
                        self.copy();
                        return Ok(words.saw_case);
                    }
                    self.copy();
                }
                '<' | '>' => {
                    // A word of digits right before is the file descriptor, not a command word.
                    if words.in_word && words.current.chars().all(|c| c.is_ascii_digit()) {
                        words.current.clear();
                        words.in_word = false;
                    }
                    words.end_word();
                    if c == '<' && self.peek_char(1) == Some('<') && self.peek_char(2) != Some('<') {
                        self.copy();
                        self.copy();
                        let strip_tabs = self.peek_char(0) == Some('-');
                        if strip_tabs {
                            self.copy();
                        }
                        self.heredoc_delimiter(strip_tabs)?;
                        continue;
                    }
                    while matches!(self.peek_char(0), Some('<' | '>' | '&' | '|')) {
                        self.copy();
                    }
                    words.redirect_next = true;
                }
                '[' if !words.in_word && words.command_name_index().is_none() && self.peek_char(1) == Some('[') => {
                    // `[[` as a command: lexed as usual, but no value may be placed in it.
                    words.double_bracket = true;
                    words.push_char('[');
                    self.copy();
                }
                _ => {
                    words.push_char(c);
                    self.copy();
                }
            }
        }
        Ok(words.saw_case)
    }

    /// A hole inside quotes: refused where the word it is part of would choose or become code.
    fn quoted_hole(&mut self, hole: usize, words: Option<&mut Words>, spelling: Spelling) -> Result<(), PlacementError> {
        if let Some(w) = words {
            if let Some(why) = w.code_position() {
                return self.refuse(hole, &why);
            }
            w.current.push(HOLE);
        }
        self.place(hole, spelling);
        Ok(())
    }

    /// Inside `'…'`, after the opening quote: copies up to and including the closing quote.
    fn single(&mut self, mut words: Option<&mut Words>) -> Result<(), PlacementError> {
        while let Some(tok) = self.peek(0) {
            match tok {
                Tok::Hole(h) => self.quoted_hole(h, words.as_deref_mut(), Spelling::InSingle)?,
                Tok::Char('\'') => {
                    self.copy();
                    return Ok(());
                }
                Tok::Char(c) => {
                    if let Some(w) = words.as_deref_mut() {
                        w.current.push(c);
                    }
                    self.copy();
                }
            }
        }
        Ok(())
    }

    /// Inside `"…"` (after the opening quote) or an unquoted here-document body (`heredoc`: `"` is
    /// an ordinary character and the body ends with the caller's delimiter line, so this reads one
    /// line). Copies up to and including the closing quote or the newline.
    fn double(&mut self, mut words: Option<&mut Words>, heredoc: bool) -> Result<(), PlacementError> {
        while let Some(tok) = self.peek(0) {
            let c = match tok {
                Tok::Hole(h) => {
                    self.quoted_hole(h, words.as_deref_mut(), Spelling::InDouble)?;
                    continue;
                }
                Tok::Char(c) => c,
            };
            match c {
                '"' if !heredoc => {
                    self.copy();
                    return Ok(());
                }
                '\n' if heredoc => {
                    self.copy();
                    return Ok(());
                }
                '\\' => {
                    self.copy();
                    match self.peek(0) {
                        Some(Tok::Hole(h)) => return self.refuse(h, "a template right after a backslash: remove the backslash"),
                        Some(Tok::Char('\n')) if heredoc => {}
                        Some(Tok::Char(e)) => {
                            if let Some(w) = words.as_deref_mut() {
                                w.current.push(e);
                            }
                            self.copy();
                        }
                        None => {}
                    }
                }
                '`' => {
                    if let Some(w) = words.as_deref_mut() {
                        w.current.push(EXPANSION);
                    }
                    self.backtick()?;
                }
                '$' => {
                    if let Some(w) = words.as_deref_mut() {
                        w.current.push(EXPANSION);
                    }
                    self.dollar(Spelling::InDouble, words.as_deref_mut())?;
                }
                _ => {
                    if let Some(w) = words.as_deref_mut() {
                        w.current.push(c);
                    }
                    self.copy();
                }
            }
        }
        Ok(())
    }

    /// At a `$`: parameter expansion, command substitution, arithmetic, `$'…'` or a plain `$`.
    /// `words` is the simple command the expansion is part of, when it is part of one.
    fn dollar(&mut self, outer: Spelling, words: Option<&mut Words>) -> Result<(), PlacementError> {
        self.copy();
        match self.peek(0) {
            Some(Tok::Hole(h)) => self.refuse(h, "a template right after \"$\": remove the \"$\" (the value is inserted as it is)"),
            Some(Tok::Char('(')) if self.peek_char(1) == Some('(') => {
                self.arithmetic(self.pos, "arithmetic $((…)) can run code hidden in a value: compute in a separate step")
            }
            Some(Tok::Char('[')) => self.arithmetic(self.pos, "arithmetic $[…] can run code hidden in a value: compute in a separate step"),
            Some(Tok::Char('(')) => {
                self.copy();
                let start = self.pos;
                // A `case` inside `$(…)`: its pattern `)`s make the end of the `$(` uncertain.
                if self.command(Some(')'))?
                    && let Some(h) = self.hole_in(start, self.toks.len())
                {
                    return self.refuse(
                        h,
                        "a case inside $(…) makes its end hard to tell apart from a pattern's \")\": move the case to its own step",
                    );
                }
                Ok(())
            }
            Some(Tok::Char('{')) => {
                self.copy();
                self.parameter(outer, words)
            }
            Some(Tok::Char('\'')) if matches!(outer, Spelling::Unquoted) => {
                if let Some(h) = self.hole_in(self.pos, self.toks.len()) {
                    return self.refuse(h, "$'…' quoting is read differently by different shells: write the text in '…' or \"…\" instead");
                }
                let end = (self.pos + 1..self.toks.len()).find(|&i| self.toks[i] == Tok::Char('\'')).map_or(self.toks.len(), |i| i + 1);
                while self.pos < end {
                    self.copy();
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Inside `${…}`, after the brace: the name, then an operator and its word up to the closing
    /// brace. Only the word of `-`, `=`, `?`, `+`, `#`, `%` and `/` (with or without `:`) may take a
    /// value: offsets, subscripts and case changes are arithmetic or patterns bash evaluates.
    fn parameter(&mut self, outer: Spelling, mut words: Option<&mut Words>) -> Result<(), PlacementError> {
        let mut in_name = true;
        let mut name = String::new();
        let mut arithmetic = false;
        let mut assigns_code = false;
        while let Some(tok) = self.peek(0) {
            let c = match tok {
                Tok::Hole(h) if in_name => {
                    return self.refuse(h, "a template cannot be a variable's name: name the variable in the design");
                }
                Tok::Hole(h) if assigns_code => {
                    return self.refuse(h, &format!("{name} decides which code runs, so it cannot take a template value"));
                }
                Tok::Hole(h) if arithmetic => {
                    return self.refuse(
                        h,
                        "offsets, subscripts and case changes in ${…} are evaluated as arithmetic or patterns: use ${name:-…} forms only",
                    );
                }
                Tok::Hole(h) => {
                    if let Some(w) = words.as_deref_mut() {
                        if let Some(why) = w.code_position() {
                            return self.refuse(h, &why);
                        }
                        w.current.push(HOLE);
                    }
                    self.place(h, Spelling::Unquoted);
                    continue;
                }
                Tok::Char(c) => c,
            };
            // The name: `#` (length) or one special parameter first, then letters, digits and `_`.
            let special = name.is_empty() && matches!(c, '#' | '@' | '*' | '?' | '!' | '$' | '-');
            if in_name && !(special || c.is_ascii_alphanumeric() || c == '_') {
                in_name = false;
                let next = self.peek_char(1);
                arithmetic = match c {
                    ':' => !matches!(next, Some('-' | '=' | '?' | '+')),
                    '-' | '=' | '?' | '+' | '#' | '%' | '/' | '}' => false,
                    _ => true,
                };
                assigns_code = (c == '=' || (c == ':' && next == Some('='))) && is_code_variable(&name);
            }
            if in_name {
                name.push(c);
            }
            match c {
                '}' => {
                    self.copy();
                    return Ok(());
                }
                '\\' => {
                    self.copy();
                    match self.peek(0) {
                        Some(Tok::Hole(h)) => return self.refuse(h, "a template right after a backslash: remove the backslash"),
                        Some(Tok::Char(_)) => {
                            self.copy();
                        }
                        None => {}
                    }
                }
                '\'' if matches!(outer, Spelling::Unquoted) => {
                    self.copy();
                    self.single(words.as_deref_mut())?;
                }
                '\'' => {
                    // Inside "…", shells disagree on whether this quotes: no value after it.
                    if let Some(h) = self.hole_in(self.pos, self.toks.len()) {
                        return self.refuse(h, "a single quote inside ${…} within \"…\" or a here-document is read differently by different shells: leave it out");
                    }
                    self.copy();
                }
                '"' => {
                    self.copy();
                    self.double(words.as_deref_mut(), false)?;
                }
                '`' => self.backtick()?,
                '$' => self.dollar(outer, words.as_deref_mut())?,
                _ => {
                    self.copy();
                }
            }
        }
        Ok(())
    }

    /// Arithmetic at `from` (`((`, `$((` after its `$`, or `$[` after its `$`): copied raw to its
    /// closing bracket, refusing any hole inside.
    fn arithmetic(&mut self, from: usize, why: &str) -> Result<(), PlacementError> {
        let (open, close) = if self.toks.get(from) == Some(&Tok::Char('[')) { ('[', ']') } else { ('(', ')') };
        let mut depth = 0usize;
        let mut end = self.toks.len();
        for i in from..self.toks.len() {
            match self.toks[i] {
                Tok::Char(c) if c == open => depth += 1,
                Tok::Char(c) if c == close => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        if let Some(h) = self.hole_in(from, end) {
            return self.refuse(h, why);
        }
        while self.pos < end {
            self.copy();
        }
        Ok(())
    }

    /// At a backtick: copies the old-style command substitution, refusing holes inside it.
    fn backtick(&mut self) -> Result<(), PlacementError> {
        let start = self.pos;
        let mut end = start + 1;
        while end < self.toks.len() {
            match self.toks[end] {
                Tok::Char('\\') => end += 2,
                Tok::Char('`') => break,
                _ => end += 1,
            }
        }
        let end = (end + 1).min(self.toks.len());
        if let Some(h) = self.hole_in(start, end) {
            return self.refuse(h, "backticks re-read their text with different quoting rules: write $(…) instead of `…`");
        }
        while self.pos < end {
            self.copy();
        }
        Ok(())
    }

    /// A comment, to the end of the line (holes in it are placed; the shell ignores them).
    fn comment(&mut self) {
        while let Some(tok) = self.peek(0) {
            match tok {
                Tok::Char('\n') => return,
                Tok::Char(_) => {
                    self.copy();
                }
                Tok::Hole(h) => self.place(h, Spelling::Unquoted),
            }
        }
    }

    /// The delimiter word after `<<` or `<<-`.
    fn heredoc_delimiter(&mut self, strip_tabs: bool) -> Result<(), PlacementError> {
        while matches!(self.peek_char(0), Some(' ' | '\t')) {
            self.copy();
        }
        let mut delimiter = String::new();
        let mut quoted = false;
        let mut quote: Option<char> = None;
        while let Some(tok) = self.peek(0) {
            let c = match tok {
                Tok::Hole(h) => {
                    return self.refuse(h, "a template cannot be a here-document's delimiter: write the delimiter in the design");
                }
                Tok::Char(c) => c,
            };
            match (quote, c) {
                (None, ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')') => break,
                (None, '\'' | '"') => {
                    quoted = true;
                    quote = Some(c);
                }
                (None, '\\') => {
                    quoted = true;
                    self.copy();
                    if let Some(e) = self.peek_char(0) {
                        delimiter.push(e);
                    } else {
                        continue;
                    }
                }
                (Some(q), c) if c == q => quote = None,
                _ => delimiter.push(c),
            }
            self.copy();
        }
        self.heredocs.push(HereDoc { delimiter, quoted, strip_tabs });
        Ok(())
    }

    /// After a newline: the bodies of the here-documents announced on the line just read.
    fn read_heredocs(&mut self) -> Result<(), PlacementError> {
        for doc in std::mem::take(&mut self.heredocs) {
            loop {
                let Some(_) = self.peek(0) else { return Ok(()) };
                let line_end = (self.pos..self.toks.len()).find(|&i| self.toks[i] == Tok::Char('\n')).unwrap_or(self.toks.len());
                let line: Option<String> = self.toks[self.pos..line_end]
                    .iter()
                    .map(|t| match t {
                        Tok::Char(c) => Some(*c),
                        Tok::Hole(_) => None,
                    })
                    .collect();
                let is_end = line.as_deref().is_some_and(|l| {
                    let l = if doc.strip_tabs { l.trim_start_matches('\t') } else { l };
                    l == doc.delimiter
                });
                if !is_end
                    && line.as_deref().is_some_and(|l| {
                        let l = if doc.strip_tabs { l.trim_start_matches('\t') } else { l };
                        !doc.delimiter.is_empty() && l.starts_with(&doc.delimiter)
                    })
                {
                    self.ambiguous_heredoc = true;
                }
                if is_end {
                    while self.pos < line_end {
                        self.copy();
                    }
                    if self.peek(0).is_some() {
                        self.copy();
                    }
                    break;
                }
                if doc.quoted {
                    if let Some(h) = self.hole_in(self.pos, line_end) {
                        return self.refuse(
                            h,
                            "a here-document with a quoted delimiter (<<'EOF') expands nothing: use an unquoted delimiter (<<EOF); the value is still inserted exactly",
                        );
                    }
                    while self.pos < line_end {
                        self.copy();
                    }
                    if self.peek(0).is_some() {
                        self.copy();
                    }
                } else {
                    self.double(None, true)?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template;

    fn script(src: &str) -> Result<String, String> {
        compile(&template::parse(src).unwrap()).map(|s| s.text).map_err(|e| e.0)
    }

    #[test]
    fn holes_are_spelled_for_their_context() {
        assert_eq!(script("echo {{trigger.x}}").unwrap(), "echo \"${VWF_VALUE_1}\"");
        assert_eq!(script("echo \"got: {{trigger.x}}\"").unwrap(), "echo \"got: ${VWF_VALUE_1}\"");
        assert_eq!(script("echo 'got: {{trigger.x}}'").unwrap(), "echo 'got: '\"${VWF_VALUE_1}\"''");
        assert_eq!(script("echo $(printf %s {{trigger.x}})").unwrap(), "echo $(printf %s \"${VWF_VALUE_1}\")");
        assert_eq!(script("v={{trigger.x}}; echo \"$v\"").unwrap(), "v=\"${VWF_VALUE_1}\"; echo \"$v\"");
        assert_eq!(script("echo \"${X:-{{trigger.x}}}\"").unwrap(), "echo \"${X:-\"${VWF_VALUE_1}\"}\"");
        assert_eq!(script("cat <<EOF\n{{trigger.x}}\nEOF\n").unwrap(), "cat <<EOF\n${VWF_VALUE_1}\nEOF\n");
        assert_eq!(script("echo {{run.id}} {{run.id}}").unwrap(), "echo \"${VWF_VALUE_1}\" \"${VWF_VALUE_2}\"");
    }

    #[test]
    fn placements_that_cannot_be_made_safe_are_refused_with_advice() {
        for (src, advice) in [
            // The value would name the program.
            ("{{trigger.x}} --help", "name the program"),
            ("A=1 {{trigger.x}}", "name the program"),
            ("echo ok; {{trigger.x}}", "name the program"),
            ("echo ok | \"{{trigger.x}}\"", "name the program"),
            ("\"${X:-{{trigger.x}}}\" arg", "name the program"),
            ("${X:-{{trigger.x}}} arg", "name the program"),
            ("echo \"$(case a in a) {{trigger.x}};; esac)\"", "name the program"),
            ("case a in a) {{trigger.x}};; esac", "name the program"),
            // Programs that run their arguments, whatever their options.
            ("sudo {{trigger.x}}", "sudo can run"),
            ("sudo -u me {{trigger.x}}", "sudo can run"),
            ("timeout -s KILL 5 {{trigger.x}}", "timeout can run"),
            ("xargs -I {} {{trigger.x}}", "xargs can run"),
            ("chroot /srv {{trigger.x}}", "chroot can run"),
            ("flock /tmp/l -c 'echo {{trigger.x}}'", "flock can run"),
            ("exec -a n {{trigger.x}}", "exec can run"),
            ("env -S\"{{trigger.x}}\"", "env can run"),
            ("env --split-string={{trigger.x}}", "env can run"),
            ("env P={{trigger.x}} printenv P", "env can run"),
            ("watch echo {{trigger.x}}", "watch can run"),
            ("su -c 'echo {{trigger.x}}'", "su can run"),
            (". {{trigger.x}}", ". can run"),
            ("source {{trigger.x}}", "source can run"),
            ("eval echo {{trigger.x}}", "eval can run"),
            ("trap 'echo {{trigger.x}}' EXIT", "trap can run"),
            ("let n={{trigger.x}}", "uses let"),
            ("read {{trigger.x}}", "read can run"),
            ("ssh host echo {{trigger.x}}", "ssh can run"),
            ("coproc {{trigger.x}}", "coproc can run"),
            ("command {{trigger.x}}", "command can run"),
            // The program is not written out.
            ("$SHELL -c 'echo {{trigger.x}}'", "not written out"),
            ("$(echo eval) {{trigger.x}}", "not written out"),
            ("E=eval; $E {{trigger.x}}", "not written out"),
            ("/bin/s? -c 'echo {{trigger.x}}'", "not written out"),
            // Shells and interpreters: only positional parameters.
            ("sh -c 'echo {{trigger.x}}'", "positional parameter"),
            ("bash -c \"echo {{trigger.x}}\"", "positional parameter"),
            ("sh {{trigger.x}}", "positional parameter"),
            ("bash -ec 'echo {{trigger.x}}'", "positional parameter"),
            ("find . -exec sh -c 'echo {{trigger.x}}' \\;", "find -exec"),
            ("find . -exec {{trigger.x}} \\;", "find -exec"),
            ("python3 -c \"print('{{trigger.x}}')\"", "program text of python3"),
            ("perl -e 'print \"{{trigger.x}}\"'", "program text of perl"),
            ("awk '{print \"{{trigger.x}}\"}' f", "program text of awk"),
            ("sed 's/a/{{trigger.x}}/' f", "program text of sed"),
            ("sed -e 's/a/{{trigger.x}}/' f", "program text of sed"),
            ("printf -v {{trigger.x}} %s a", "printf's format"),
            ("[ -v {{trigger.x}} ]", "test -v"),
            // Variables whose value decides what runs.
            ("PATH={{trigger.x}} ls", "PATH decides"),
            ("LD_PRELOAD={{trigger.x}} ls", "LD_PRELOAD decides"),
            ("PS4={{trigger.x}}; set -x; echo", "PS4 decides"),
            ("export PATH={{trigger.x}}", "PATH decides"),
            ("export -n X={{trigger.x}}", "no options"),
            // Arithmetic, however it is written.
            ("echo $(({{trigger.x}} + 1))", "arithmetic"),
            ("echo $[{{trigger.x}}]", "arithmetic"),
            ("(( {{trigger.x}} ))", "arithmetic"),
            ("for ((i=0; i<{{trigger.x}}; i++)); do :; done", "arithmetic"),
            ("[[ {{trigger.x}} -eq 1 ]]", "[[ … ]]"),
            ("[[ -n x && {{trigger.x}} ]]", "[[ … ]]"),
            ("echo [[ \"]]\"; {{trigger.x}} \"\"", "name the program"),
            ("echo \"]]\"; {{trigger.x}} \"\"", "name the program"),
            ("echo ${X:{{trigger.x}}}", "arithmetic"),
            ("echo \"${a[{{trigger.x}}]}\"", "arithmetic"),
            ("echo ${X^{{trigger.x}}}", "arithmetic"),
            // Scripts that change what words mean.
            ("alias a=echo\na {{trigger.x}}", "alias"),
            ("declare -i n; n={{trigger.x}}", "declare"),
            ("typeset -i n; n={{trigger.x}}", "typeset"),
            // Quoting shells read differently, and quoting that expands nothing.
            ("echo `printf %s {{trigger.x}}`", "$(…) instead"),
            ("cat <<'EOF'\n{{trigger.x}}\nEOF", "unquoted delimiter"),
            ("cat <<\"EOF\"\n{{trigger.x}}\nEOF", "unquoted delimiter"),
            ("cat <<{{trigger.x}}\nx\n", "delimiter"),
            ("echo \"$(cat <<EOF\na\nEOF)\"\n{{trigger.x}}\nEOF", "delimiter alone"),
            ("echo \\{{trigger.x}}", "backslash"),
            ("echo \"\\{{trigger.x}}\"", "backslash"),
            ("echo ${#{{trigger.x}}}", "variable's name"),
            ("echo ${{trigger.x}}", "right after \"$\""),
            ("echo $'a{{trigger.x}}'", "$'…'"),
            ("echo \"${v#'{{trigger.x}}'}\"", "single quote inside"),
            // Found by review: quoting the shells read differently, and values flowing into
            // arithmetic through variables.
            (
                "cat <<EOF\nBuilt by ${B:-the team's bot}\nEOF\necho \"That's it\"\nfind . -name \"{{trigger.x}}.log\"",
                "single quote inside",
            ),
            ("echo \"${G:-Hi, it's me}\"\necho \"Now it's time\"\nfind . -name {{trigger.x}}", "single quote inside"),
            ("echo \"Found: $( (case \"$M\" in f) echo q;; esac); find . -name {{trigger.x}} )\"", "case inside $(…)"),
            ("echo \"$(case a in a) printf %s {{trigger.x}};; esac)\"", "case inside $(…)"),
            ("[[ -f /etc/passwd && ( 0 -lt {{trigger.x}} ) ]]", "[[ … ]]"),
            ("[[ $s == \"]]\" || 0 -lt {{trigger.x}} ]]", "[[ … ]]"),
            ("[[ -f x &&\n 0 -lt {{trigger.x}} ]]", "[[ … ]]"),
            ("[[ a < b || 0 -lt {{trigger.x}} ]]", "[[ … ]]"),
            ("function greet { sh -c \"echo {{trigger.x}}\"; }; greet", "uses function"),
            ("time -p sh -c \"echo {{trigger.x}}\"", "time can run"),
            ("{fd}>f eval {{trigger.x}}", "not written out"),
            ("arr=(a b); unset \"arr[{{trigger.x}}]\"", "unset can run"),
            ("printf \"{{trigger.x}}\" a", "printf's format"),
            ("printf {{trigger.x}}%s a", "printf's format"),
            (": \"${GIT_SSH_COMMAND:={{trigger.x}}}\"; git ls-remote r", "GIT_SSH_COMMAND decides"),
        ] {
            let e = script(src).expect_err(src);
            assert!(e.contains(advice), "{src}: {e}");
            assert!(e.starts_with("{{trigger.x}} in \"run\""), "{src}: {e}");
        }
    }

    #[test]
    fn a_run_string_that_names_a_value_variable_itself_is_refused() {
        // Such a mention reads a value where the placement rules do not look: in the program
        // name (`$VWF_VALUE_1 {{…}}` runs the value), a here-document delimiter, and so on.
        for src in [
            "$VWF_VALUE_1 {{trigger.x}}",
            "\"${VWF_VALUE_1}\" --help; echo {{trigger.x}}",
            "cat <<-EO${VWF_VALUE_1}er\nx\n",
            "eval \"$VWF_VALUE_2\"",
            "echo VWF_VA{{trigger.x}}LUE_1",
        ] {
            let result = script(src);
            if src.contains(VALUE_VAR_PREFIX) {
                let e = result.expect_err(src);
                assert!(e.contains("reserved") && e.contains("{{"), "{src}: {e}");
            } else {
                // Split by a hole, the letters never form a name: the hole starts with a quote.
                assert_eq!(result.as_deref(), Ok("echo VWF_VA\"${VWF_VALUE_1}\"LUE_1"), "{src}");
            }
        }
    }

    /// A value may reach arithmetic through a variable: such scripts are marked, and `bind` refuses
    /// values bash would run there.
    #[test]
    fn scripts_that_evaluate_arithmetic_are_marked() {
        for src in [
            "n={{trigger.x}}; echo \"next: $((n + 1))\"",
            "n={{trigger.x}}; if [[ $n -gt 5 ]]; then echo; fi",
            "echo $((1 + 2)) {{trigger.x}}",
            "s={{trigger.x}}; echo ${s:1}",
            "echo ${a[1]} {{trigger.x}}",
            "cd {{trigger.x}} && n=$((n + 1))",
            "f() { local -i n; n={{trigger.x}}; }; f",
        ] {
            let c = compile(&template::parse(src).unwrap()).unwrap_or_else(|e| panic!("{src}: {e}"));
            assert!(c.arithmetic.is_some(), "{src}");
        }
        for src in ["echo {{trigger.x}}", "echo ${X:-1} {{trigger.x}}", "[ \"{{trigger.x}}\" -gt 1 ]"] {
            assert_eq!(compile(&template::parse(src).unwrap()).unwrap().arithmetic, None, "{src}");
        }
    }

    #[test]
    fn safe_neighbours_of_refused_placements_are_accepted() {
        for src in [
            "sh -c 'printf %s \"$1\"' _ {{trigger.x}}",
            "bash -ec 'printf %s \"$1\"' name {{trigger.x}} {{trigger.x}}",
            "python3 -c 'import sys; print(sys.argv[1])' {{trigger.x}}",
            "awk -v v={{trigger.x}} 'BEGIN { print v }'",
            "awk -F {{trigger.x}} '{ print $1 }' f",
            "awk '{ print }' {{trigger.x}}",
            "sed -e 's/a/b/' {{trigger.x}}",
            "printf %s {{trigger.x}} > /dev/null",
            "printf %s x > {{trigger.x}}",
            "printf %s x 2>{{trigger.x}}",
            "cat <<EOF | wc -c\n{{trigger.x}}\nEOF",
            "cat <<-EOF\n\t{{trigger.x}}\n\tEOF",
            "for f in {{trigger.x}}; do echo \"$f\"; done",
            "case {{trigger.x}} in a) echo a;; *) echo b;; esac",
            "if [ \"{{trigger.x}}\" = a ]; then echo yes; fi",
            "test -n {{trigger.x}}",
            "# say {{trigger.x}}\necho hi",
            "echo `date` {{trigger.x}}",
            "x={{trigger.x}} && printf %s \"$x\"",
            "printf '\\377{{trigger.x}}'",
            "export X={{trigger.x}} && printf %s \"$X\"",
            "echo ${X:-'{{trigger.x}}'}",
            "echo \"${X:-{{trigger.x}}}\"",
            "v=x; echo \"${v#x{{trigger.x}}}\" ${#v}",
            "echo \"$(cat <<EOF\n{{trigger.x}}\nEOF\n)\"",
        ] {
            script(src).unwrap_or_else(|e| panic!("{src}: {e}"));
        }
    }
}
