//! The `vwf` command line: the clap definitions, one function per command (in `commands`), and
//! how answers print. A command parses its arguments into typed requests, calls the service layer
//! (or the runner, schedules, daemon and server it starts), and prints the typed answer: the
//! contract JSON with `--json`, else human text.
//!
//! Exit codes: 0 success (a run finished `done`); 1 the run failed; 2 bad usage or a bad request
//! (malformed JSON, bad name, answer not in options); 3 not found (design, run or node);
//! 4 conflict (the run is not waiting on that node, or is not retryable); 5 the design has
//! validation errors; 6 the run is parked (waiting for an approval, an agent or a timer);
//! 7 the agent backend is missing or failed; 70 internal error (store, disk).

/// Prints a line on standard output; a closed pipe (`vwf runs | head`) is not an error.
macro_rules! say {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

pub mod args;
mod commands;
mod progress;
pub mod schedule;
mod stats;
mod store;
mod versions;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use serde_json::{Value, json};
use vwf_core::run::{Run, Status};

pub use store::StoreCmd;
use vwf_api::failure::Failure;
use vwf_api::render;
use vwf_api::service::Service;
use vwf_runtime::app::App;
use vwf_runtime::runner::Progress;

/// `vwf --version`: the package version and the commit it was built from (`unknown` outside git).
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("VWF_COMMIT"), ")");

#[derive(Parser)]
#[command(name = "vwf", version = VERSION, about = "Design, validate and durably run agent workflows.")]
pub struct Cli {
    /// Home directory (default: $VWF_HOME, else $HERMES_HOME, else ~/.hermes).
    #[arg(long, global = true, value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// Print the contract JSON instead of human text.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Subcommand)]
pub enum Cmd {
    /// List saved designs.
    List,
    /// List the built-in templates (`vwf new NAME --from TEMPLATE` copies one).
    Templates,
    /// Create a blank design, or a copy of a built-in template (`vwf new NAME --from TEMPLATE`).
    New {
        /// Name of the new design (letters, digits, '.', '_', '-'; up to 64).
        name: String,
        /// The template to copy (the names `GET /templates` lists, e.g. morning-brief).
        #[arg(long, value_name = "TEMPLATE")]
        from: Option<String>,
    },
    /// Delete a saved design: its runs stay readable, its schedule job (if any) is paused.
    Delete {
        /// The design's name.
        name: String,
    },
    /// A design's recorded versions, oldest first: number, hash, when saved, node and edge counts.
    Versions {
        /// The design's name.
        name: String,
    },
    /// How version B of a design differs from version A, node by node and edge by edge.
    Diff {
        /// The design's name.
        name: String,
        /// The older version's number.
        a: u64,
        /// The newer version's number.
        b: u64,
    },
    /// Save an old version's content as the design's newest version.
    Restore {
        /// The design's name.
        name: String,
        /// The version to restore.
        version: u64,
    },
    /// Pin a step's output on a design: test runs (`vwf run NAME --test`) use it instead of
    /// running the step; normal runs never do.
    Pin {
        /// The design's name.
        name: String,
        /// The step's id.
        node: String,
        /// Take what the step gave in this run.
        #[arg(long, value_name = "RUN_ID", conflicts_with = "output", required_unless_present = "output")]
        from: Option<String>,
        /// The output: a text, or JSON of an output view like {"text": "...", "data": ...}
        /// (text, @file or -).
        #[arg(long)]
        output: Option<String>,
    },
    /// Turn a design's automatic trigger (schedule, heartbeat, event, folder, watch) on; imported
    /// designs with one arrive disabled.
    Enable {
        /// The design's name.
        name: String,
    },
    /// Turn a design's automatic trigger off: it does not fire until `vwf enable`; a run by hand
    /// still runs.
    Disable {
        /// The design's name.
        name: String,
    },
    /// Remove a step's pin.
    Unpin {
        /// The design's name.
        name: String,
        /// The step's id.
        node: String,
    },
    /// Print a saved design.
    Open {
        /// The design's name.
        name: String,
    },
    /// Validate and save a design: JSON text, @file or - for standard input.
    Save {
        /// The design's name.
        name: String,
        /// The design document: JSON text, @file or - for standard input.
        graph: String,
    },
    /// Check a saved design (or @file / - for a draft).
    Validate {
        /// The design's name, or @file / - for a draft document.
        name: String,
    },
    /// Run a design now (`vwf run retry <run_id>` retries a failed run from its failed step;
    /// with `--from-start`, a finished run from the start with the design as saved now).
    Run {
        /// The design's name (or `retry`, followed by the failed run's id).
        name: String,
        /// After `retry`: the id of the failed run to retry.
        run_id: Option<String>,
        /// The run's input as JSON (text, @file or -).
        #[arg(long)]
        input: Option<String>,
        /// With `retry`: start a new run of the design's current version with the same input,
        /// linked to the old one (`retry_of`), instead of resuming at the failed step.
        #[arg(long, conflicts_with = "input")]
        from_start: bool,
        /// A test run: pinned steps give their pinned output instead of running.
        #[arg(long, conflicts_with = "from_start")]
        test: bool,
        /// A test run of this step alone, from the outputs of pins and the design's past runs
        /// (and the newest run's input, unless --input gives one).
        #[arg(long, value_name = "NODE", conflicts_with_all = ["from_start", "until"])]
        only: Option<String>,
        /// A test run of this step and every step leading to it.
        #[arg(long, value_name = "NODE", conflicts_with = "from_start")]
        until: Option<String>,
        /// An idempotency key: a second `vwf run` (or API start) with it within the retention
        /// window answers the first run and starts nothing.
        #[arg(long, value_name = "KEY", conflicts_with = "from_start")]
        key: Option<String>,
    },
    /// Answer an approval gate.
    Approve {
        /// The run waiting at the gate.
        run_id: String,
        /// The approval node's id.
        node: String,
        /// One of the gate's options.
        answer: String,
    },
    /// Answer a parked step: a gate's answer, an agent's output, or generate it with the backend.
    Respond {
        /// The parked run.
        run_id: String,
        /// The node it waits on.
        node: String,
        /// A gate's answer (one of its options).
        #[arg(long, conflicts_with_all = ["output", "generate"])]
        answer: Option<String>,
        /// The agent step's text (text, @file or -).
        #[arg(long, conflicts_with = "generate")]
        output: Option<String>,
        /// Perform the agent step through the configured backend.
        #[arg(long)]
        generate: bool,
        /// With --answer: the values of the gate's form, a JSON object by field name (text, @file or -).
        #[arg(long, requires = "answer", value_name = "JSON")]
        fields: Option<String>,
        /// With --answer: a new text for a step the gate lets be edited, as NODE=TEXT (TEXT may be @file); repeatable.
        #[arg(long = "edit", requires = "answer", value_name = "NODE=TEXT")]
        edits: Vec<String>,
        /// With --answer: who answers, kept with the answer and any edit.
        #[arg(long, requires = "answer", value_name = "NAME")]
        by: Option<String>,
    },
    /// Runs, newest first, a page at a time (`--before` the last id shown for the next page).
    Runs {
        /// How many runs to list (1-1000).
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..=1000))]
        limit: u16,
        /// Only runs of this design.
        #[arg(long, value_name = "NAME")]
        design: Option<String>,
        /// Only runs with this status: running, waiting, awaiting_approval, awaiting_agent, awaiting_event, awaiting_child, done or failed.
        #[arg(long)]
        status: Option<String>,
        /// Only runs started by this trigger mode: manual, schedule, heartbeat, event, folder, watch, failure or parent.
        #[arg(long, value_name = "MODE")]
        trigger: Option<String>,
        /// Only runs whose id starts with this.
        #[arg(long, value_name = "PREFIX")]
        id: Option<String>,
        /// Only runs the design steps of this run started.
        #[arg(long, value_name = "RUN_ID")]
        parent: Option<String>,
        /// Only runs older than this run (the `next` of the previous page).
        #[arg(long, value_name = "RUN_ID")]
        before: Option<String>,
        /// Only runs started at or after this time (RFC 3339, or YYYY-MM-DD: UTC midnight).
        #[arg(long, value_name = "WHEN")]
        from: Option<String>,
        /// Only runs started before this time.
        #[arg(long, value_name = "WHEN")]
        to: Option<String>,
        /// Only runs that took at least this long (30s, 5m, 1h30m).
        #[arg(long, value_name = "DURATION")]
        min_duration: Option<String>,
    },
    /// What the runs that ended in a period did, by hour or day: runs by status, failure rate,
    /// p50 and p95 duration, tokens and cost, and the slowest and costliest steps.
    Stats {
        /// Only runs of this design.
        #[arg(long, value_name = "NAME")]
        design: Option<String>,
        /// The period's start: an RFC 3339 time or a YYYY-MM-DD date (default: 7 days before --to, 1 day with --bucket hour).
        #[arg(long, value_name = "WHEN")]
        from: Option<String>,
        /// The period's end, exclusive (default: now).
        #[arg(long, value_name = "WHEN")]
        to: Option<String>,
        /// hour or day (default day).
        #[arg(long)]
        bucket: Option<String>,
    },
    /// One run.
    Show {
        /// The run's id (12 hex characters).
        run_id: String,
    },
    /// Run a /workflow chat command and print the reply.
    Slash {
        /// The command text, e.g. "/workflow list".
        text: String,
    },
    /// Call an agent tool with JSON arguments (text, @file or -).
    Tool {
        /// workflow_design_save, _load, _validate, _run or _respond.
        name: String,
        /// The tool's arguments as a JSON object (text, @file or -).
        args: String,
    },
    /// The saved designs offered to agents as tools (`"tool": true`): each tool's name, description
    /// and argument schema (the design's `inputs`), as `vwf mcp` lists them.
    Tools,
    /// Schedule jobs: run a design on a cron schedule (set, list, pause, resume, run, remove, tick).
    Schedule {
        #[command(subcommand)]
        cmd: crate::cli::schedule::ScheduleCmd,
    },
    /// Turn an agent.json file's workflows into saved designs (file path or -).
    Import {
        /// The agent.json file, or - for standard input.
        file: String,
        /// Replace designs that already exist (default: leave them alone).
        #[arg(long)]
        overwrite: bool,
    },
    /// Emit an event: every design whose event trigger takes it starts a run.
    Emit {
        /// The event's name (letters, digits, '_', '.', ':', '-').
        event: String,
        /// The event's payload as JSON (text, @file or -).
        #[arg(long)]
        payload: Option<String>,
        /// An idempotency key: a second emit with it within the retention window answers the
        /// first one's result and starts nothing.
        #[arg(long, value_name = "KEY")]
        key: Option<String>,
    },
    /// The store as a whole: migrate its schema, export it to a file store, import one into it.
    Store {
        #[command(subcommand)]
        cmd: StoreCmd,
    },
    /// Fire heartbeat, folder and watch triggers and resume due waits until stopped (Ctrl-C).
    Daemon,
    /// Check a home: every design, run and schedule file parses, the run index matches the run
    /// files, no temp or lock file was left by a killed writer. Exit 1 while problems remain.
    Doctor {
        /// Remove what killed writers left and repair the run index (never a design, run or
        /// schedule file); prints what it did.
        #[arg(long)]
        fix: bool,
    },
    /// Serve the agent tools over MCP on standard input and output (for Hermes and other MCP clients).
    Mcp,
    /// Serve the HTTP API, the dashboard and the canvas until stopped (Ctrl-C).
    Serve {
        /// Where to listen, ADDR:PORT (default: [server] bind, else 127.0.0.1:8765; port 0 picks a free port).
        #[arg(long, value_name = "ADDR:PORT")]
        bind: Option<String>,
    },
    /// Print the design model as JSON: node types and their fields (kinds, defaults, ranges), trigger
    /// modes, schedule presets and limits, as `GET /schema` answers it (`scripts/schema` copies it
    /// into the canvas for use from disk).
    Schema,
    /// Print a shell completion script (e.g. `vwf completions bash > /etc/bash_completion.d/vwf`).
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), or write vwf.1 and a page per subcommand into DIR.
    Man {
        /// Write the pages into this directory instead of printing vwf.1.
        #[arg(value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// Runs a command that needs a home and gives the process its exit code.
pub fn execute(app: &App, cli: &Cli) -> ExitCode {
    match dispatch(app, cli) {
        Ok(code) => ExitCode::from(code),
        Err(f) => fail(&f, cli.json),
    }
}

fn dispatch(app: &App, cli: &Cli) -> Result<u8, Failure> {
    use commands as c;
    let json = cli.json;
    let live = progress::Live::new();
    let show = |p: Progress<'_>| live.show(p);
    let observer: &dyn Fn(Progress<'_>) = if json { &no_progress } else { &show };
    let service = Service::foreground(app, observer);
    let s = &service;
    match &cli.cmd {
        Cmd::List => c::list(s, json),
        Cmd::Templates => c::templates(json),
        Cmd::New { name, from } => c::new(s, json, name, from.as_deref()),
        Cmd::Delete { name } => c::delete(s, json, name),
        Cmd::Open { name } => c::open(s, json, name),
        Cmd::Versions { name } => versions::list(s, json, name),
        Cmd::Diff { name, a, b } => versions::diff(s, json, name, *a, *b),
        Cmd::Restore { name, version } => versions::restore(s, json, name, *version),
        Cmd::Save { name, graph } => c::save(s, json, name, graph),
        Cmd::Pin { name, node, from, output } => {
            let from = match (from, output) {
                (Some(run), _) => c::PinFrom::Run(run),
                (None, Some(output)) => c::PinFrom::Output(output),
                (None, None) => return Err(Failure::BadRequest("give --from RUN_ID or --output".into())),
            };
            c::pin(s, json, name, node, Some(from))
        }
        Cmd::Unpin { name, node } => c::pin(s, json, name, node, None),
        Cmd::Enable { name } => c::enable(s, json, name, true),
        Cmd::Disable { name } => c::enable(s, json, name, false),
        Cmd::Validate { name } => c::validate(s, json, name),
        Cmd::Run { name, run_id, from_start, test: false, only: None, until: None, .. } if name == "retry" => {
            c::retry(s, json, run_id.as_deref(), *from_start)
        }
        Cmd::Run { from_start: true, .. } => Err(Failure::BadRequest("--from-start goes with `vwf run retry <run_id>`".into())),
        Cmd::Run { name, run_id, input, test, only, until, key, .. } => {
            let scope = vwf_core::pins::scope_of(*test, only.as_deref(), until.as_deref()).map_err(Failure::BadRequest)?;
            let key = key.as_deref().map(vwf_api::keys::IdempotencyKey::parse).transpose().map_err(Failure::BadRequest)?;
            c::run(s, json, name, run_id.as_deref(), input.as_deref(), scope, key)
        }
        Cmd::Approve { run_id, node, answer } => c::approve(s, json, run_id, node, answer),
        Cmd::Respond { run_id, node, answer, output, generate, fields, edits, by } => {
            let form = c::Form {
                answer: answer.as_deref(),
                output: output.as_deref(),
                generate: *generate,
                fields: fields.as_deref(),
                edits,
                by: by.as_deref(),
            };
            c::respond(s, json, run_id, node, form)
        }
        Cmd::Runs { limit, design, status, trigger, id, parent, before, from, to, min_duration } => c::runs(
            s,
            json,
            *limit,
            c::RunsQuery {
                design: design.as_deref(),
                status: status.as_deref(),
                trigger: trigger.as_deref(),
                id: id.as_deref(),
                parent: parent.as_deref(),
                from: from.as_deref(),
                to: to.as_deref(),
                min_duration: min_duration.as_deref(),
            },
            before.as_deref(),
        ),
        Cmd::Stats { design, from, to, bucket } => stats::stats(
            s,
            json,
            stats::StatsArgs { design: design.as_deref(), from: from.as_deref(), to: to.as_deref(), bucket: bucket.as_deref() },
        ),
        Cmd::Show { run_id } => c::show(s, json, run_id),
        Cmd::Slash { text } => c::slash(app, json, text),
        Cmd::Import { file, overwrite } => c::import(s, json, file, *overwrite),
        Cmd::Emit { event, payload, key } => {
            let key = key.as_deref().map(vwf_api::keys::IdempotencyKey::parse).transpose().map_err(Failure::BadRequest)?;
            c::emit(s, json, event, payload.as_deref(), key)
        }
        Cmd::Doctor { fix } => c::doctor(app, json, *fix),
        Cmd::Daemon => c::daemon(app, json),
        Cmd::Schedule { cmd } => c::schedule(app, json, cmd),
        Cmd::Store { cmd: StoreCmd::Export { to } } => store::export(app, json, to),
        Cmd::Store { cmd: StoreCmd::Import { from } } => store::import(app, json, from),
        Cmd::Serve { bind } => c::serve(app, json, bind.as_deref()),
        Cmd::Mcp => c::mcp(app),
        Cmd::Tool { name, args } => c::tool(app, name, args),
        Cmd::Tools => c::design_tools(app, json),
        // Answered before a home's store is opened.
        Cmd::Store { cmd: StoreCmd::Migrate } => store::migrate(&app.home, json),
        Cmd::Completions { .. } | Cmd::Man { .. } | Cmd::Schema => Ok(0),
    }
}

/// `vwf store migrate`: run before the home's store is opened, since opening a database store
/// applies the migrations itself and there would be nothing left to report.
pub fn migrate(home: &std::path::Path, json: bool) -> ExitCode {
    match store::migrate(home, json) {
        Ok(code) => ExitCode::from(code),
        Err(f) => fail(&f, json),
    }
}

/// `vwf completions SHELL`: generated from the clap definitions; needs no home.
pub fn completions(shell: clap_complete::Shell) -> ExitCode {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    clap_complete::generate(shell, &mut cmd, "vwf", &mut std::io::stdout());
    ExitCode::SUCCESS
}

/// `vwf schema`: the design model, pretty-printed (the canvas embeds exactly this text).
pub fn schema() -> ExitCode {
    say!("{}", pretty(&vwf_core::schema::schema_json()));
    ExitCode::SUCCESS
}

/// `vwf man [DIR]`: generated from the clap definitions; needs no home.
pub fn man(dir: Option<&std::path::Path>, json: bool) -> ExitCode {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    // Built as `generate_to` builds it (with the `help` subcommand), so both ways print one page.
    cmd.build();
    let written = match dir {
        None => clap_mangen::Man::new(cmd).render(&mut std::io::stdout()).map(|()| None),
        Some(dir) => std::fs::create_dir_all(dir).and_then(|()| clap_mangen::generate_to(cmd, dir)).map(Some),
    };
    match written {
        Ok(None) => ExitCode::SUCCESS,
        Ok(Some(())) => {
            let page = dir.map(|d| d.join("vwf.1")).unwrap_or_default();
            if json {
                say!("{}", pretty(&json!({"ok": true, "path": page})));
            } else {
                say!("Wrote {} and a page per subcommand beside it.", page.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail(&Failure::Internal(format!("cannot write the man pages: {e}")), json),
    }
}

/// Prints a failure (its body with `--json`, else `error: …` on standard error) and gives its
/// exit code.
pub fn fail(f: &Failure, json: bool) -> ExitCode {
    match f {
        Failure::Refused(_) => return ExitCode::from(commands::refused(&f.body(), json)),
        _ if json => say!("{}", pretty(&f.body_with_detail())),
        _ => eprintln!("error: {f}"),
    }
    ExitCode::from(failure_code(f))
}

fn failure_code(f: &Failure) -> u8 {
    match f {
        Failure::Refused(_) => REFUSED,
        Failure::BadRequest(_) => 2,
        Failure::NotFound(_) => 3,
        Failure::Conflict(_) | Failure::Forbidden(_) => 4,
        Failure::Unavailable(_) | Failure::Busy(_) | Failure::BadGateway(_) | Failure::Storage { status: 503 | 507, .. } => 7,
        Failure::Storage { .. } | Failure::Internal(_) => 70,
    }
}

/// The exit code of a design refused for its errors.
const REFUSED: u8 = 5;

fn run_code(status: Status) -> u8 {
    match status {
        Status::Done => 0,
        Status::Failed => 1,
        Status::Queued
        | Status::Running
        | Status::Waiting
        | Status::AwaitingApproval
        | Status::AwaitingAgent
        | Status::AwaitingEvent
        | Status::AwaitingChild => 6,
    }
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

/// Prints a live line per step on standard error while a run works.
fn no_progress(_: Progress<'_>) {}

/// Prints a run (summary or JSON) and gives its exit code.
fn show_run(run: &Run, json: bool, live_shown: bool) -> u8 {
    let result = run.result();
    if json {
        say!("{}", pretty(&result));
    } else {
        say!("{}", render::summary(&result, !live_shown, render::Reader::Cli));
    }
    run_code(run.status())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every subcommand and every argument of the whole tree (`vwf schedule set --tz` included)
    /// says what it is in `--help`.
    #[test]
    fn every_cli_argument_has_a_help_line() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>, seen: &mut usize) {
            for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
                *seen += 1;
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} {}", arg.get_id()));
                }
            }
            for sub in cmd.get_subcommands() {
                let path = format!("{path} {}", sub.get_name());
                if sub.get_about().is_none() && sub.get_long_about().is_none() {
                    missing.push(path.clone());
                }
                walk(sub, &path, missing, seen);
            }
        }
        let mut cmd = super::Cli::command();
        cmd.build();
        let (mut missing, mut seen) = (Vec::new(), 0);
        walk(&cmd, "vwf", &mut missing, &mut seen);
        assert!(seen > 40, "only {seen} arguments walked");
        assert!(missing.is_empty(), "without a help line: {missing:#?}");
    }
}
