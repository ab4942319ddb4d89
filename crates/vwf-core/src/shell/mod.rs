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

mod lexer;
mod words;

use crate::limits::COMMAND_VALUE_BYTES;
use crate::template::{self, Context, Ref, Segment, Template};
use lexer::{Lexer, Tok};
pub use words::is_code_variable;
use words::{HOLE, SCRIPT_WIDE, Words};

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
    let mut lexer = Lexer::new(&toks, &refs);
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
        Ref::RunTotals { path } => format!("run.{path}"),
        Ref::Secret { name } => format!("secrets.{name}"),
    };
    format!("{{{{{body}}}}}")
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
