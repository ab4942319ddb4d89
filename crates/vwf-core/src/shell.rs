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

/// Programs that run their first non-option argument as a program (`sudo rm …`, `timeout 5 cmd`).
const PRECOMMANDS: &[&str] = &[
    "builtin", "chroot", "command", "doas", "env", "exec", "ionice", "nice", "nohup", "setsid", "stdbuf", "sudo",
    "taskset", "time", "timeout", "xargs", "watch", "flock", "chrt", "unbuffer", "strace", "busybox",
];
/// Shells whose `-c` argument is a script.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "fish", "csh", "tcsh", "posh"];
/// Reserved words after which a command name follows.
const KEYWORDS: &[&str] = &["if", "then", "else", "elif", "do", "while", "until", "!", "{", "time"];
/// Reserved words that end a compound command.
const CLOSERS: &[&str] = &["fi", "done", "esac", "}"];

/// Compiles a parsed `run` template into a script whose holes read environment variables.
pub fn compile(template: &Template) -> Result<Script, PlacementError> {
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
    let mut lexer = Lexer { toks: &toks, pos: 0, out: String::new(), refs: &refs, values: Vec::new(), heredocs: Vec::new() };
    lexer.command(None)?;
    Ok(Script { text: lexer.out, values: lexer.values })
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
    /// Completed words of this command, quotes removed (holes as `\0`).
    done: Vec<String>,
    /// The word being read.
    current: String,
    in_word: bool,
    /// The next word is a redirection target, not a command word.
    redirect_next: bool,
}

impl Words {
    fn push_char(&mut self, c: char) {
        self.current.push(c);
        self.in_word = true;
    }
    fn touch(&mut self) {
        self.in_word = true;
    }
    fn end_word(&mut self) {
        if !self.in_word {
            return;
        }
        let w = std::mem::take(&mut self.current);
        self.in_word = false;
        if std::mem::take(&mut self.redirect_next) {
            return;
        }
        if CLOSERS.contains(&w.as_str()) {
            self.done.clear();
            return;
        }
        if KEYWORDS.contains(&w.as_str()) && self.command_name_index().is_none() {
            self.done.clear();
            return;
        }
        self.done.push(w);
    }
    fn end_command(&mut self) {
        self.end_word();
        self.done.clear();
        self.redirect_next = false;
    }

    /// Index in `done` of the word that names the program, if one has been read.
    fn command_name_index(&self) -> Option<usize> {
        let mut want_name = true;
        let mut after_exec = false;
        let mut found = None;
        for (i, w) in self.done.iter().enumerate() {
            if after_exec {
                after_exec = false;
                found = Some(i);
                continue;
            }
            if EXEC_FLAGS.contains(&w.as_str()) {
                after_exec = true;
                continue;
            }
            if !want_name {
                continue;
            }
            if found.is_none() && is_assignment(w) {
                continue;
            }
            match found {
                None => {
                    found = Some(i);
                    want_name = PRECOMMANDS.contains(&basename(w));
                }
                Some(prev) if PRECOMMANDS.contains(&basename(&self.done[prev])) || want_name => {
                    if w.starts_with('-') || is_assignment(w) || w.chars().next().is_some_and(|c| c.is_ascii_digit()) {
                        continue;
                    }
                    found = Some(i);
                    want_name = PRECOMMANDS.contains(&basename(w));
                }
                Some(_) => {}
            }
        }
        found
    }

    /// Why a hole in the current word would let its value choose or become code, if it would.
    fn code_position(&self) -> Option<String> {
        if self.redirect_next {
            return None;
        }
        let name = self.command_name_index();
        let after_exec = self.done.last().is_some_and(|w| EXEC_FLAGS.contains(&w.as_str()));
        let wants_name = match name {
            None => !is_assignment(&self.current),
            Some(i) => PRECOMMANDS.contains(&basename(&self.done[i])) && !self.current.starts_with('-') && !is_assignment(&self.current),
        };
        if wants_name || after_exec {
            return Some(
                "a template cannot name the program to run: write the program in the design and pass the value as an argument"
                    .into(),
            );
        }
        let i = name?;
        match basename(&self.done[i]) {
            program @ ("eval" | "trap") => {
                return Some(format!(
                    "{program} runs its arguments as shell code, so a value there would run: use the value directly as an argument, or pass it as a positional parameter (sh -c '… \"$1\" …' _ {{{{…}}}})"
                ));
            }
            "let" => return Some("let evaluates arithmetic, which can run code hidden in a value in some shells: compute in a separate step".into()),
            _ => {}
        }
        // A shell or ssh anywhere in the command (`sudo -u me sh -c …`, `xargs sh -c …`).
        for (j, word) in self.done.iter().enumerate().skip(i) {
            let program = basename(word);
            if program == "ssh" {
                return Some(
                    "ssh hands its command to the remote shell, which would parse the value as code: send the value on standard input instead".into(),
                );
            }
            if SHELLS.contains(&program) {
                // `sh -c SCRIPT [name args…]`: the hole must not be in SCRIPT.
                let args = &self.done[j + 1..];
                let flag = args.iter().position(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('c'));
                if flag.is_some_and(|f| args[f + 1..].iter().all(|a| a.starts_with('-'))) {
                    return Some(format!(
                        "the script of {program} -c is parsed as shell code, so a value in it would run: pass the value as a positional parameter instead ({program} -c '… \"$1\" …' _ {{{{…}}}})"
                    ));
                }
            }
        }
        None
    }
}

/// `find` options whose next word is a program.
const EXEC_FLAGS: &[&str] = &["-exec", "-execdir", "-ok", "-okdir"];

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
    };
    format!("{{{{{body}}}}}")
}

fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            let mut chars = name.chars();
            chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

struct Lexer<'a> {
    toks: &'a [Tok],
    pos: usize,
    out: String,
    refs: &'a [Ref],
    values: Vec<(String, Ref)>,
    heredocs: Vec<HereDoc>,
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
    fn command(&mut self, close: Option<char>) -> Result<(), PlacementError> {
        let mut words = Words::default();
        let mut depth = 0usize;
        while let Some(tok) = self.peek(0) {
            let c = match tok {
                Tok::Hole(h) => {
                    if let Some(why) = words.code_position() {
                        return self.refuse(h, &why);
                    }
                    words.touch();
                    words.current.push('\0');
                    self.place(h, Spelling::Unquoted);
                    continue;
                }
                Tok::Char(c) => c,
            };
            match c {
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
                    words.touch();
                    self.copy();
                    self.single(Some(&mut words))?;
                }
                '"' => {
                    words.touch();
                    self.copy();
                    self.double(Some(&mut words), false)?;
                }
                '`' => {
                    words.touch();
                    self.backtick()?;
                }
                '$' => {
                    words.touch();
                    self.dollar(Spelling::Unquoted)?;
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
                    words.end_word();
                    if words.done.is_empty() && self.peek_char(1) == Some('(') {
                        // `((…))`: bash arithmetic.
                        let end = self.find_close_parens(self.pos);
                        if let Some(h) = self.hole_in(self.pos, end) {
                            return self.refuse(h, "arithmetic ((…)) can run code hidden in a value: compute in a separate step");
                        }
                        while self.pos < end {
                            self.copy();
                        }
                        continue;
                    }
                    words.end_command();
                    depth += 1;
                    self.copy();
                }
                ')' => {
                    words.end_command();
                    if depth == 0 && close == Some(')') {
                        self.copy();
                        return Ok(());
                    }
                    depth = depth.saturating_sub(1);
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
                '[' if !words.in_word && self.peek_char(1) == Some('[') => {
                    let end = self.find_double_bracket_end(self.pos);
                    if let Some(h) = self.hole_in(self.pos, end) {
                        return self.refuse(h, "[[ … ]] evaluates arithmetic in some shells, which can run code hidden in a value: use [ \"…\" = … ] or test");
                    }
                    while self.pos < end {
                        self.copy();
                    }
                }
                _ => {
                    words.push_char(c);
                    self.copy();
                }
            }
        }
        Ok(())
    }

    /// A hole inside quotes: refused where the word it is part of would choose or become code.
    fn quoted_hole(&mut self, hole: usize, words: Option<&mut Words>, spelling: Spelling) -> Result<(), PlacementError> {
        if let Some(w) = words {
            if let Some(why) = w.code_position() {
                return self.refuse(hole, &why);
            }
            w.current.push('\0');
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
                '`' => self.backtick()?,
                '$' => self.dollar(Spelling::InDouble)?,
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
    fn dollar(&mut self, outer: Spelling) -> Result<(), PlacementError> {
        self.copy();
        match self.peek(0) {
            Some(Tok::Hole(h)) => self.refuse(h, "a template right after \"$\": remove the \"$\" (the value is inserted as it is)"),
            Some(Tok::Char('(')) if self.peek_char(1) == Some('(') => {
                let end = self.find_close_parens(self.pos);
                if let Some(h) = self.hole_in(self.pos, end) {
                    return self.refuse(h, "arithmetic $((…)) can run code hidden in a value: compute in a separate step");
                }
                while self.pos < end {
                    self.copy();
                }
                Ok(())
            }
            Some(Tok::Char('(')) => {
                self.copy();
                self.command(Some(')'))
            }
            Some(Tok::Char('{')) => {
                self.copy();
                self.parameter(outer)
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

    /// Inside `${…}`, after the brace: the name, then an operator word up to the closing brace.
    fn parameter(&mut self, outer: Spelling) -> Result<(), PlacementError> {
        let mut in_name = true;
        let mut name_len = 0usize;
        while let Some(tok) = self.peek(0) {
            let c = match tok {
                Tok::Hole(h) if in_name => return self.refuse(h, "a template cannot be a variable's name: name the variable in the design"),
                Tok::Hole(h) => {
                    self.place(h, Spelling::Unquoted);
                    continue;
                }
                Tok::Char(c) => c,
            };
            // The name: `#` (length) or one special parameter first, then letters, digits and `_`.
            let special = name_len == 0 && matches!(c, '#' | '@' | '*' | '?' | '!' | '$' | '-');
            if in_name && !(special || c.is_ascii_alphanumeric() || c == '_') {
                in_name = false;
            }
            name_len += 1;
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
                    self.single(None)?;
                }
                '"' => {
                    self.copy();
                    self.double(None, false)?;
                }
                '`' => self.backtick()?,
                '$' => self.dollar(outer)?,
                _ => {
                    self.copy();
                }
            }
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
                Tok::Hole(h) => return self.refuse(h, "a template cannot be a here-document's delimiter: write the delimiter in the design"),
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

    /// The index just past the `))` that closes the `((` at `from`.
    fn find_close_parens(&self, from: usize) -> usize {
        let mut depth = 0i64;
        let mut i = from;
        while i < self.toks.len() {
            match self.toks[i] {
                Tok::Char('(') => depth += 1,
                Tok::Char(')') => {
                    depth -= 1;
                    if depth == 0 {
                        return i + 1;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        self.toks.len()
    }

    /// The index just past the `]]` that closes the `[[` at `from`.
    fn find_double_bracket_end(&self, from: usize) -> usize {
        (from + 2..self.toks.len().saturating_sub(1))
            .find(|&i| self.toks[i] == Tok::Char(']') && self.toks[i + 1] == Tok::Char(']'))
            .map_or(self.toks.len(), |i| i + 2)
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
            ("{{trigger.x}} --help", "name the program"),
            ("sudo {{trigger.x}}", "name the program"),
            ("timeout 5 {{trigger.x}}", "name the program"),
            ("A=1 {{trigger.x}}", "name the program"),
            ("echo ok; {{trigger.x}}", "name the program"),
            ("echo ok | \"{{trigger.x}}\"", "name the program"),
            ("find . -exec {{trigger.x}} \\;", "name the program"),
            ("echo `printf %s {{trigger.x}}`", "$(…) instead"),
            ("echo $(({{trigger.x}} + 1))", "arithmetic"),
            ("(( {{trigger.x}} ))", "arithmetic"),
            ("[[ {{trigger.x}} -eq 1 ]]", "[[ … ]]"),
            ("let n={{trigger.x}}", "let"),
            ("cat <<'EOF'\n{{trigger.x}}\nEOF", "unquoted delimiter"),
            ("cat <<\"EOF\"\n{{trigger.x}}\nEOF", "unquoted delimiter"),
            ("cat <<{{trigger.x}}\nx\n", "delimiter"),
            ("echo \\{{trigger.x}}", "backslash"),
            ("echo \"\\{{trigger.x}}\"", "backslash"),
            ("echo ${#{{trigger.x}}}", "variable's name"),
            ("echo ${{trigger.x}}", "right after \"$\""),
            ("eval echo {{trigger.x}}", "eval"),
            ("trap 'echo {{trigger.x}}' EXIT", "trap"),
            ("sh -c 'echo {{trigger.x}}'", "positional parameter"),
            ("bash -c \"echo {{trigger.x}}\"", "positional parameter"),
            ("sudo -u me sh -ec 'echo {{trigger.x}}'", "positional parameter"),
            ("find . -exec sh -c 'echo {{trigger.x}}' \\;", "positional parameter"),
            ("ssh host echo {{trigger.x}}", "ssh"),
            ("echo $'a{{trigger.x}}'", "$'…'"),
        ] {
            let e = script(src).expect_err(src);
            assert!(e.contains(advice), "{src}: {e}");
            assert!(e.starts_with("{{trigger.x}} in \"run\""), "{src}: {e}");
        }
    }

    #[test]
    fn safe_neighbours_of_refused_placements_are_accepted() {
        for src in [
            "sh -c 'printf %s \"$1\"' _ {{trigger.x}}",
            "printf %s {{trigger.x}} > /dev/null",
            "printf %s x > {{trigger.x}}",
            "cat <<EOF | wc -c\n{{trigger.x}}\nEOF",
            "cat <<-EOF\n\t{{trigger.x}}\n\tEOF",
            "for f in {{trigger.x}}; do echo \"$f\"; done",
            "case {{trigger.x}} in a) echo a;; *) echo b;; esac",
            "if [ \"{{trigger.x}}\" = a ]; then echo yes; fi",
            "echo $((1 + 2)) {{trigger.x}}",
            "# say {{trigger.x}}\necho hi",
            "env FOO={{trigger.x}} printenv FOO",
            "echo `date` {{trigger.x}}",
            "x={{trigger.x}} && printf %s \"$x\"",
            "echo ${X:-'{{trigger.x}}'}",
            "v=x; echo \"${v#x{{trigger.x}}}\" ${#v}",
            "sudo -u me printf %s {{trigger.x}}",
        ] {
            script(src).unwrap_or_else(|e| panic!("{src}: {e}"));
        }
    }
}
