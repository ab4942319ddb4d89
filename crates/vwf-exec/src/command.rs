//! The command driver: runs a command step's `run` string through `sh -c`, or its `argv` with no
//! shell at all, and reports standard output as the step's text, byte for byte.
//!
//! Invariants:
//! - The child runs in its own process group, killed whole when the step ends, with bounded
//!   memory for its output (see `process`).
//! - Nothing timing-dependent enters the outcome: the same command and input give the same output.
//! - Every failure is an `Outcome::Failed`; this module never panics.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Map, Value};
use vwf_core::limits::STEP_OUTPUT_BYTES;
use vwf_core::recovery::Cause;
use vwf_core::run::Outcome;
use vwf_core::spec::{CommandStep, Program};

use super::process::{self, Finished};
use crate::config::Config;

pub fn perform(step: &CommandStep, config: &Config) -> Outcome {
    run(step, config).unwrap_or_else(|e| Outcome::Failed { error: e.to_string(), cause: e.cause() })
}

impl CommandError {
    /// How the step failed, for its retry policy (`retry.on`: exit codes, `"timeout"`).
    pub fn cause(&self) -> Cause {
        match self {
            CommandError::Ended { ended: Ended::Exit(code), .. } => Cause::Exit(*code),
            CommandError::Ended { ended: Ended::TimedOut(_) | Ended::OutputHeld(_), .. } => Cause::Timeout,
            _ => Cause::Error,
        }
    }
}

/// Why a command step failed; its text is the step's error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CommandError {
    #[error("command steps are disabled in the config ([commands] enabled = false)")]
    Disabled,
    #[error("command step has an empty \"argv\"")]
    EmptyArgv,
    #[error("command working directory {0:?} does not exist or is not a directory")]
    NoDirectory(String),
    #[error("cannot start command {program:?}: {cause}")]
    Start { program: String, cause: String },
    /// The command ran but gave no output to keep; `stderr` is the tail of its standard error.
    #[error("{ended}{}", if .stderr.is_empty() { String::new() } else { format!("\nstderr: {}", .stderr) })]
    Ended { ended: Ended, stderr: String },
    #[error("command output is over the {STEP_OUTPUT_BYTES}-byte limit for output kept inline")]
    OverLimit,
}

/// How a command ended without success.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Ended {
    #[error("command timed out after {0} s")]
    TimedOut(u64),
    #[error("command could not be waited for")]
    NotWaited,
    #[error("command exited with code {0}")]
    Exit(i32),
    #[error("command was killed by signal {0}")]
    Signal(i32),
    #[error("command ended abnormally ({0})")]
    Abnormal(String),
    #[error("command timed out after {0} s: a process it started outside its process group still holds its output open")]
    OutputHeld(u64),
}

fn run(step: &CommandStep, config: &Config) -> Result<Outcome, CommandError> {
    let CommandStep { program, cwd, env, timeout_seconds } = step;
    if !config.commands.enabled {
        return Err(CommandError::Disabled);
    }
    let (mut command, program) = match program {
        Program::Shell(run) => {
            let mut c = Command::new("sh");
            c.arg("-c").arg(run);
            (c, "sh".to_string())
        }
        Program::Argv(argv) => match argv.split_first() {
            Some((program, args)) if !program.is_empty() => {
                let mut c = Command::new(program);
                c.args(args);
                (c, program.clone())
            }
            _ => return Err(CommandError::EmptyArgv),
        },
    };
    if let Some(cwd) = cwd {
        if !Path::new(cwd).is_dir() {
            return Err(CommandError::NoDirectory(cwd.clone()));
        }
        command.current_dir(cwd);
    }
    command.envs(env).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let child =
        process::spawn(&mut command, &process::ChildEnv::new(config)).map_err(|e| CommandError::Start { program, cause: e.to_string() })?;
    supervise(child, Duration::from_secs(*timeout_seconds))
}

fn supervise(child: Child, timeout: Duration) -> Result<Outcome, CommandError> {
    conclude(process::supervise(child, None, timeout), timeout)
}

fn conclude(f: Finished, timeout: Duration) -> Result<Outcome, CommandError> {
    let tail = f.stderr_tail;
    let ended = |ended: Ended| CommandError::Ended { ended, stderr: tail.trim_end().to_string() };
    if f.timed_out {
        return Err(ended(Ended::TimedOut(timeout.as_secs())));
    }
    let Some(status) = f.status else {
        return Err(ended(Ended::NotWaited));
    };
    match (status.code(), status.signal()) {
        (Some(0), _) => {}
        (Some(code), _) => return Err(ended(Ended::Exit(code))),
        (None, Some(signal)) => return Err(ended(Ended::Signal(signal))),
        (None, None) => return Err(ended(Ended::Abnormal(status.to_string()))),
    }
    let (Some(stdout), true) = (f.stdout, f.stderr_closed) else {
        return Err(ended(Ended::OutputHeld(timeout.as_secs())));
    };
    if stdout.len() > STEP_OUTPUT_BYTES {
        return Err(CommandError::OverLimit);
    }
    let mut extra = Map::new();
    let text = match String::from_utf8(stdout) {
        Ok(text) => text,
        Err(e) => {
            extra.insert("encoding".into(), Value::from("base64"));
            format!("base64:{}", base64::engine::general_purpose::STANDARD.encode(e.into_bytes()))
        }
    };
    extra.insert("exit_code".into(), Value::from(0));
    extra.insert("stderr".into(), Value::from(tail));
    Ok(Outcome::Done { text, extra, tokens: 0 })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn step(program: Program, cwd: Option<&str>) -> CommandStep {
        CommandStep { program, cwd: cwd.map(String::from), env: BTreeMap::new(), timeout_seconds: 10 }
    }

    fn shell(run: &str) -> CommandStep {
        step(Program::Shell(run.into()), None)
    }

    /// Each way a command step fails is its own error, and its text is the step's error.
    #[test]
    fn failures_are_typed() {
        let on = Config::default();
        let off: Config = toml::from_str("[commands]\nenabled = false\n").expect("config");
        let cases: Vec<(CommandStep, &Config, CommandError, &str)> = vec![
            (shell("true"), &off, CommandError::Disabled, "command steps are disabled in the config ([commands] enabled = false)"),
            (step(Program::Argv(vec![]), None), &on, CommandError::EmptyArgv, "command step has an empty \"argv\""),
            (
                step(Program::Shell("true".into()), Some("/nonexistent/dir")),
                &on,
                CommandError::NoDirectory("/nonexistent/dir".into()),
                "command working directory \"/nonexistent/dir\" does not exist or is not a directory",
            ),
            (
                shell("echo oops >&2; exit 3"),
                &on,
                CommandError::Ended { ended: Ended::Exit(3), stderr: "oops".into() },
                "command exited with code 3\nstderr: oops",
            ),
            (shell("exit 4"), &on, CommandError::Ended { ended: Ended::Exit(4), stderr: String::new() }, "command exited with code 4"),
            (
                shell("kill -9 $$"),
                &on,
                CommandError::Ended { ended: Ended::Signal(9), stderr: String::new() },
                "command was killed by signal 9",
            ),
        ];
        for (step, config, want, text) in cases {
            let got = run(&step, config).unwrap_err();
            assert_eq!(got, want);
            assert_eq!(got.to_string(), text);
            // The outcome carries why, for the step's retry policy.
            assert_eq!(perform(&step, config), Outcome::Failed { error: text.into(), cause: want.cause() });
        }
        assert_eq!(CommandError::Ended { ended: Ended::Exit(3), stderr: String::new() }.cause(), Cause::Exit(3));
        assert_eq!(CommandError::Ended { ended: Ended::TimedOut(1), stderr: String::new() }.cause(), Cause::Timeout);
        assert_eq!(CommandError::Disabled.cause(), Cause::Error);
        let missing = run(&step(Program::Argv(vec!["/nonexistent/program".into()]), None), &on).unwrap_err();
        assert!(matches!(&missing, CommandError::Start { program, .. } if program == "/nonexistent/program"), "{missing:?}");
        assert!(matches!(run(&shell("printf hi"), &on), Ok(Outcome::Done { ref text, .. }) if text == "hi"));
    }
}
