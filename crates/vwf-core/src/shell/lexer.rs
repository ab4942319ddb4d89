//! The quoting lexer of a `run` script: copies the design's text into the script, spelling each
//! hole for the quoting context it sits in (the table in [`super`]), and refuses a hole where no
//! spelling is safe.
//!
//! The script it writes is the design's text with each hole replaced by a variable reference and
//! nothing else changed; the variables are numbered in the order the holes appear. Each refusal
//! names the hole and how to write it instead. Where the context is uncertain (a here-document's
//! end line, a `case` inside `$(…)`, `$'…'`) it refuses, never guesses.

use super::words::{EXPANSION, HOLE, Words, is_code_variable};
use super::{PlacementError, VALUE_VAR_PREFIX, shown};
use crate::template::Ref;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tok {
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

pub(super) struct Lexer<'a> {
    toks: &'a [Tok],
    pos: usize,
    pub(super) out: String,
    refs: &'a [Ref],
    pub(super) values: Vec<(String, Ref)>,
    heredocs: Vec<HereDoc>,
    /// A here-document line started with its delimiter and went on (`EOF)`): bash may end the
    /// document there, dash does not.
    pub(super) ambiguous_heredoc: bool,
}

impl<'a> Lexer<'a> {
    /// A lexer at the start of `toks`, whose holes index `refs`.
    pub(super) fn new(toks: &'a [Tok], refs: &'a [Ref]) -> Self {
        Lexer { toks, pos: 0, out: String::new(), refs, values: Vec::new(), heredocs: Vec::new(), ambiguous_heredoc: false }
    }
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
    pub(super) fn command(&mut self, close: Option<char>) -> Result<bool, PlacementError> {
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
