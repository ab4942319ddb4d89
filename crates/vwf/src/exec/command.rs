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
use vwf_core::run::Outcome;
use vwf_core::spec::{CommandStep, Program};

use super::process::{self, Finished};
use crate::config::Config;

pub fn perform(step: &CommandStep, config: &Config) -> Outcome {
    let CommandStep { program, cwd, env, timeout_seconds } = step;
    if !config.commands.enabled {
        return failed("command steps are disabled in the config ([commands] enabled = false)");
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
            _ => return failed("command step has an empty \"argv\""),
        },
    };
    if let Some(cwd) = cwd {
        if !Path::new(cwd).is_dir() {
            return failed(&format!("command working directory {cwd:?} does not exist or is not a directory"));
        }
        command.current_dir(cwd);
    }
    command.envs(env).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = match process::spawn(&mut command) {
        Ok(child) => child,
        Err(e) => return failed(&format!("cannot start command {program:?}: {e}")),
    };
    supervise(child, Duration::from_secs(*timeout_seconds))
}

fn supervise(child: Child, timeout: Duration) -> Outcome {
    conclude(process::supervise(child, None, timeout), timeout)
}

fn conclude(f: Finished, timeout: Duration) -> Outcome {
    let tail = f.stderr_tail;
    let with_tail = |msg: String| {
        let trimmed = tail.trim_end();
        if trimmed.is_empty() { msg } else { format!("{msg}\nstderr: {trimmed}") }
    };
    if f.timed_out {
        return failed(&with_tail(format!("command timed out after {} s", timeout.as_secs())));
    }
    let Some(status) = f.status else {
        return failed(&with_tail("command could not be waited for".into()));
    };
    match (status.code(), status.signal()) {
        (Some(0), _) => {}
        (Some(code), _) => return failed(&with_tail(format!("command exited with code {code}"))),
        (None, Some(signal)) => return failed(&with_tail(format!("command was killed by signal {signal}"))),
        (None, None) => return failed(&with_tail(format!("command ended abnormally ({status})"))),
    }
    let (Some(stdout), true) = (f.stdout, f.stderr_closed) else {
        return failed(&with_tail(format!(
            "command timed out after {} s: a process it started outside its process group still holds its output open",
            timeout.as_secs()
        )));
    };
    if stdout.len() > STEP_OUTPUT_BYTES {
        return failed(&format!("command output is over the {STEP_OUTPUT_BYTES}-byte limit for output kept inline"));
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
    Outcome::Done { text, extra, tokens: 0 }
}

fn failed(error: &str) -> Outcome {
    Outcome::Failed { error: error.to_string() }
}
