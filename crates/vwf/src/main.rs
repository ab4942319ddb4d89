//! `vwf`: design, validate and durably run agent workflows.
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

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use serde_json::{Value, json};
use vwf_core::listing::RunFilter;
use vwf_core::names::{DesignName, RunId};
use vwf_core::run::{Response, Run, Status, TriggerInfo};

use vwf::app::{self, App, parse_json, read_arg};
use vwf::failure::Failure;
use vwf::runner::{Answer, Progress};
use vwf::{render, slash, tools};

/// `vwf --version`: the package version and the commit it was built from (`unknown` outside git).
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("VWF_COMMIT"), ")");

#[derive(Parser)]
#[command(name = "vwf", version = VERSION, about = "Design, validate and durably run agent workflows.")]
struct Cli {
    /// Home directory (default: $VWF_HOME, else $HERMES_HOME, else ~/.hermes).
    #[arg(long, global = true, value_name = "DIR")]
    home: Option<PathBuf>,
    /// Print the contract JSON instead of human text.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// List saved designs.
    List,
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
    /// Run a design now (`vwf run retry <run_id>` retries a failed run).
    Run {
        /// The design's name (or `retry`, followed by the failed run's id).
        name: String,
        /// After `retry`: the id of the failed run to retry.
        run_id: Option<String>,
        /// The run's input as JSON (text, @file or -).
        #[arg(long)]
        input: Option<String>,
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
    },
    /// Runs, newest first, a page at a time (`--before` the last id shown for the next page).
    Runs {
        /// How many runs to list (1-1000).
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..=1000))]
        limit: u16,
        /// Only runs of this design.
        #[arg(long, value_name = "NAME")]
        design: Option<String>,
        /// Only runs with this status: running, waiting, awaiting_approval, awaiting_agent, done or failed.
        #[arg(long)]
        status: Option<String>,
        /// Only runs started by this trigger mode: manual, schedule, heartbeat, event, folder or watch.
        #[arg(long, value_name = "MODE")]
        trigger: Option<String>,
        /// Only runs whose id starts with this.
        #[arg(long, value_name = "PREFIX")]
        id: Option<String>,
        /// Only runs older than this run (the `next` of the previous page).
        #[arg(long, value_name = "RUN_ID")]
        before: Option<String>,
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
    /// Schedule jobs: run a design on a cron schedule (set, list, pause, resume, run, remove, tick).
    Schedule {
        #[command(subcommand)]
        cmd: vwf::schedules::cli::ScheduleCmd,
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

/// `vwf schema`: the design model, pretty-printed (the canvas embeds exactly this text).
fn schema() -> ExitCode {
    say!("{}", pretty(&vwf_core::schema::schema_json()));
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Generated from the clap definitions; they need no home.
    match &cli.cmd {
        Cmd::Completions { shell } => return completions(*shell),
        Cmd::Schema => return schema(),
        Cmd::Man { dir } => return man(dir.as_deref(), cli.json),
        _ => {}
    }
    vwf::logs::init_if_asked();
    let home = app::resolve_home(cli.home.as_deref());
    let app = match App::open(home) {
        Ok(a) => a,
        Err(f) => return fail(&f, cli.json),
    };
    match execute(&app, &cli) {
        Ok(code) => ExitCode::from(code),
        Err(f) => fail(&f, cli.json),
    }
}

fn completions(shell: clap_complete::Shell) -> ExitCode {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    clap_complete::generate(shell, &mut cmd, "vwf", &mut std::io::stdout());
    ExitCode::SUCCESS
}

fn man(dir: Option<&std::path::Path>, json: bool) -> ExitCode {
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

/// How many recent runs `vwf run` looks at for timed waits that are due.
const RESUME_SCAN: usize = 200;

fn fail(f: &Failure, json: bool) -> ExitCode {
    if json {
        say!("{}", pretty(&f.body()));
    } else {
        eprintln!("error: {f}");
    }
    ExitCode::from(failure_code(f))
}

fn failure_code(f: &Failure) -> u8 {
    match f {
        Failure::BadRequest(_) => 2,
        Failure::NotFound(_) => 3,
        Failure::Conflict(_) => 4,
        Failure::Unavailable(_) | Failure::BadGateway(_) => 7,
        Failure::Internal(_) => 70,
    }
}

fn run_code(status: Status) -> u8 {
    match status {
        Status::Done => 0,
        Status::Failed => 1,
        Status::Running | Status::Waiting | Status::AwaitingApproval | Status::AwaitingAgent => 6,
    }
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

/// Prints a live line per step on standard error while a run works.
fn live(progress: Progress<'_>) {
    let mut err = std::io::stderr();
    match progress {
        Progress::Started { node, .. } => {
            if err.is_terminal() {
                let _ = write!(err, "  … {node}\r");
                let _ = err.flush();
            }
        }
        Progress::Settled { run, node } => {
            if let Some(step) = run.record(node).and_then(|r| serde_json::to_value(r).ok()) {
                let _ = writeln!(err, "{}", render::step_line(&step));
            }
        }
    }
}

fn no_progress(_: Progress<'_>) {}

/// Prints a run (summary or JSON) and gives its exit code.
fn show_run(run: &Run, json: bool, live_shown: bool) -> u8 {
    let result = run.result();
    if json {
        say!("{}", pretty(&result));
    } else {
        say!("{}", render::summary(&result, !live_shown, render::Reader::Cli));
    }
    run_code(run.status)
}

fn execute(app: &App, cli: &Cli) -> Result<u8, Failure> {
    let json = cli.json;
    let observer: &dyn Fn(Progress<'_>) = if json { &no_progress } else { &live };
    let runner = app.runner(observer, true);
    match &cli.cmd {
        Cmd::List => {
            let names = app.store.list_designs()?;
            if json {
                say!("{}", pretty(&json!({"ok": true, "designs": names})));
            } else if names.is_empty() {
                say!("No saved designs in {}. Create one with `vwf new <name>`.", app.home.display());
            } else {
                let rows: Vec<Vec<String>> = names.iter().map(|n| vec![n.clone()]).collect();
                say!("{}", render::table(&["DESIGN"], &rows));
            }
            Ok(0)
        }
        Cmd::New { name, from } => {
            let (path, graph) = tools::new_design(app, name, from.as_deref())?;
            if json {
                say!("{}", pretty(&json!({"ok": true, "path": path, "graph": graph})));
            } else if let Some(template) = from {
                say!("Created design {name} from template {template} at {path}\nEdit it, then `vwf validate {name}` and `vwf run {name}`.");
            } else {
                say!(
                    "Created blank design {name} at {path}\nEdit it (or save a graph with `vwf save {name} @file.json`), then `vwf validate {name}`."
                );
            }
            Ok(0)
        }
        Cmd::Delete { name } => {
            let name = DesignName::parse(name).map_err(Failure::BadRequest)?;
            let body = tools::delete_design(app, &name)?;
            if json {
                say!("{}", pretty(&body));
            } else {
                say!("Deleted design {name}; its runs stay readable (`vwf runs --design {name}`).");
                if let Some(job) = body["schedule"]["job_id"].as_str() {
                    say!("Its schedule job {job} is paused until the design is saved again and the job resumed.");
                }
            }
            Ok(0)
        }
        Cmd::Open { name } => {
            tool_out(app, "workflow_design_load", &json!({"name": name}), json, |b| format!("{}\n# saved at {}", pretty(&b["graph"]), name))
        }
        Cmd::Save { name, graph } => {
            let graph = parse_json(&read_arg(graph)?, "the graph")?;
            tool_out(app, "workflow_design_save", &json!({"name": name, "graph": graph}), json, |b| {
                format!("Saved {name} ({} nodes) to {}", b["nodes"], b["path"].as_str().unwrap_or(""))
            })
        }
        Cmd::Validate { name } => {
            let args = if name == "-" || name.starts_with('@') {
                json!({"graph": parse_json(&read_arg(name)?, "the graph")?})
            } else {
                DesignName::parse(name).map_err(Failure::BadRequest)?;
                json!({"name": name})
            };
            let reply = tools::call(app, "workflow_design_validate", &args);
            if reply.status != 200 {
                return Err(reply_failure(&reply));
            }
            if json {
                say!("{}", pretty(&reply.body));
            } else {
                say!("{}", render::report(name, &reply.body));
            }
            Ok(if reply.body["ok"] == true { 0 } else { 5 })
        }
        Cmd::Run { name, run_id, input } => {
            if name == "retry" {
                let Some(id) = run_id else {
                    return Err(Failure::BadRequest(
                        "`vwf run retry` needs the id of the failed run to retry: vwf run retry <run_id> (`vwf runs --status failed` lists them)".into(),
                    ));
                };
                let run = runner.retry(id)?;
                return Ok(show_run(&run, json, true));
            } else if let Some(extra) = run_id {
                return Err(Failure::BadRequest(format!("unexpected argument {extra:?}; use --input for the run's input")));
            }
            let name = DesignName::parse(name).map_err(Failure::BadRequest)?;
            // Looking for due waits is a courtesy: a listing that fails must not stop this run.
            match runner.resume_due(RESUME_SCAN) {
                Ok(resumed) if !json => {
                    for run in resumed {
                        eprintln!("resumed run {} of {} after its wait: {}", run.run_id, run.design, run.status.as_str().replace('_', " "));
                    }
                }
                Ok(_) => {}
                Err(e) => eprintln!("warning: cannot look for runs whose wait is due: {e}"),
            }
            let input = match input {
                Some(text) => parse_json(&read_arg(text)?, "--input")?,
                None => Value::Null,
            };
            let plan = match runner.compile(&name)? {
                Ok(plan) => plan,
                Err(report) => {
                    let body = json!({"ok": false, "error": report.refusal(), "errors": report.errors});
                    if json {
                        say!("{}", pretty(&body));
                    } else {
                        eprintln!("{}", render::report(name.as_str(), &serde_json::to_value(&report).unwrap_or_default()));
                    }
                    return Ok(5);
                }
            };
            let run = runner.start(plan, TriggerInfo::new("manual", input))?;
            Ok(show_run(&run, json, true))
        }
        Cmd::Approve { run_id, node, answer } => {
            let run = runner.respond(run_id, node, Answer::Respond(Response::Answer(answer.clone())))?;
            Ok(show_run(&run, json, true))
        }
        Cmd::Respond { run_id, node, answer, output, generate } => {
            let how = match (answer, output, generate) {
                (Some(a), None, false) => Answer::Respond(Response::Answer(a.clone())),
                (None, Some(o), false) => Answer::Respond(Response::Output(read_arg(o)?)),
                (None, None, true) => Answer::Generate,
                _ => return Err(Failure::BadRequest("give exactly one of --answer, --output or --generate".into())),
            };
            let run = runner.respond(run_id, node, how)?;
            Ok(show_run(&run, json, true))
        }
        Cmd::Runs { limit, design, status, trigger, id, before } => {
            let filter =
                RunFilter::parse(design.as_deref(), status.as_deref(), trigger.as_deref(), id.as_deref()).map_err(Failure::BadRequest)?;
            let before = before.as_deref().map(RunId::parse).transpose().map_err(Failure::BadRequest)?;
            let page = runner.list_page(&filter, before.as_ref(), usize::from(*limit))?;
            if json {
                say!("{}", pretty(&json!({"ok": true, "runs": page.runs, "next": page.next})));
                return Ok(0);
            }
            let filtered = filter != RunFilter::default() || before.is_some();
            if page.runs.is_empty() {
                say!("{}", if filtered { "No matching runs." } else { "No runs yet." });
            } else {
                let rows: Vec<Vec<String>> = page.runs.iter().map(render::run_row).collect();
                say!("{}", render::table(&["RUN", "DESIGN", "STATUS", "CREATED", "NOTE"], &rows));
            }
            if let Some(next) = &page.next {
                say!("Older runs may match: add --before {next}");
            }
            Ok(0)
        }
        Cmd::Show { run_id } => {
            let run = runner.open(run_id)?;
            Ok(show_run(&run, json, false))
        }
        Cmd::Slash { text } => {
            let reply = slash::handle(app, text);
            if json {
                say!("{}", pretty(&json!({"ok": true, "reply": reply})));
            } else {
                say!("{reply}");
            }
            Ok(0)
        }
        Cmd::Import { file, overwrite } => {
            let text = read_arg(&if file == "-" { file.clone() } else { format!("@{file}") })?;
            let doc = parse_json(&text, "the agent.json file")?;
            let report = vwf_core::import::import_agent_json(&doc);
            let mut designs = Vec::new();
            let mut code = 0;
            for (name, graph) in &report.designs {
                let exists = DesignName::parse(name).map(|n| app.store.design_exists(&n)).unwrap_or(false);
                if exists && !overwrite {
                    designs.push(json!({"name": name, "status": "skipped", "reason": "a design with this name exists (use --overwrite)"}));
                    continue;
                }
                let reply = tools::call(app, "workflow_design_save", &json!({"name": name, "graph": graph}));
                if reply.body["ok"] == true {
                    designs.push(json!({"name": name, "status": "saved", "path": reply.body["path"]}));
                } else {
                    code = 5;
                    designs
                        .push(json!({"name": name, "status": "refused", "error": reply.body["error"], "errors": reply.body.get("errors")}));
                }
            }
            if json {
                say!("{}", pretty(&json!({"ok": code == 0, "designs": designs, "notes": report.notes})));
            } else {
                let rows: Vec<Vec<String>> = designs
                    .iter()
                    .map(|d| {
                        let detail =
                            d.get("path").or_else(|| d.get("reason")).or_else(|| d.get("error")).and_then(Value::as_str).unwrap_or("");
                        vec![
                            d["name"].as_str().unwrap_or("").to_string(),
                            d["status"].as_str().unwrap_or("").to_string(),
                            detail.to_string(),
                        ]
                    })
                    .collect();
                if rows.is_empty() {
                    say!("No workflows found in {file}.");
                } else {
                    say!("{}", render::table(&["DESIGN", "RESULT", "DETAIL"], &rows));
                }
                for note in &report.notes {
                    say!("note: {note}");
                }
            }
            Ok(code)
        }
        Cmd::Emit { event, payload } => {
            let payload = match payload {
                Some(text) => parse_json(&read_arg(text)?, "--payload")?,
                None => Value::Null,
            };
            let emission = runner.emit(event, payload, 0)?;
            let runs: Vec<Value> = emission.runs.iter().map(Run::result).collect();
            let skipped: Vec<Value> = emission.skipped.iter().map(|(d, why)| json!({"design": d, "reason": why})).collect();
            if json {
                say!("{}", pretty(&json!({"ok": true, "event": event, "runs": runs, "skipped": skipped})));
            } else if runs.is_empty() && skipped.is_empty() {
                say!("No design listens to {event}.");
            } else {
                for run in &runs {
                    say!("{}", render::summary(run, false, render::Reader::Cli));
                }
                for (d, why) in &emission.skipped {
                    say!("{d}: not started ({why})");
                }
            }
            Ok(if emission.runs.iter().any(|r| r.status == Status::Failed) { 1 } else { 0 })
        }
        Cmd::Doctor { fix } => {
            let report = vwf::doctor::examine(app, *fix);
            if json {
                say!("{}", pretty(&report.to_json(&app.home)));
            } else {
                say!("{}", report.to_text(&app.home));
            }
            Ok(if report.ok() { 0 } else { 1 })
        }
        Cmd::Daemon => {
            let _claim = vwf::daemon::claim_home(app)?;
            vwf::doctor::tidy_at_start(&app.home, "vwf daemon");
            let stop = vwf::signals::stop_flag().map_err(|e| Failure::Internal(format!("cannot listen for SIGINT/SIGTERM: {e}")))?;
            let mut daemon = vwf::daemon::Daemon::new(app);
            daemon.tick(vwf::clock::Clock::now(app.clock.as_ref()));
            let watching = daemon.watching();
            if json {
                let designs: Vec<Value> =
                    watching.iter().map(|w| json!({"design": w.design, "mode": w.mode, "detail": w.detail})).collect();
                say!("{}", json!({"ok": true, "home": app.home, "watching": designs}));
            } else if watching.is_empty() {
                say!("vwf daemon on {}: no designs yet; saved designs are picked up as they appear. Stop with Ctrl-C.", app.home.display());
            } else {
                say!("vwf daemon on {} (stop with Ctrl-C)", app.home.display());
                let rows: Vec<Vec<String>> = watching.iter().map(|w| vec![w.design.clone(), w.mode.clone(), w.detail.clone()]).collect();
                say!("{}", render::table(&["DESIGN", "TRIGGER", "WHAT"], &rows));
            }
            daemon.run(&stop);
            Ok(0)
        }
        Cmd::Schedule { cmd } => {
            let out = vwf::schedules::cli::execute(app, cmd)?;
            if json {
                say!("{}", pretty(&out.body));
            } else {
                say!("{}", out.text);
            }
            Ok(match out.status {
                Some(status) => run_code(status),
                None if out.body["ok"] == false => 5,
                None => 0,
            })
        }
        Cmd::Serve { bind } => {
            vwf::logs::init();
            let server = vwf::server::prepare(App::open(app.home.clone())?, bind.as_deref())?;
            // One line first, so whoever started the server learns its address from it.
            if json {
                say!("{}", json!({"ok": true, "url": server.url(), "api": server.api_url()}));
            } else {
                say!("visual-workflow serving {} (API at {}; stop with Ctrl-C)", server.url(), server.api_url());
            }
            server.run()?;
            Ok(0)
        }
        Cmd::Mcp => {
            // Standard output carries the protocol from here on: nothing else is printed there.
            vwf::mcp::serve_stdio(App::open(app.home.clone())?)?;
            Ok(0)
        }
        Cmd::Tool { name, args } => {
            let reply = tools::call_text(app, name, &read_arg(args)?);
            say!("{}", pretty(&reply.body));
            Ok(reply_code(&reply))
        }
        // Answered in `main` before a home is opened.
        Cmd::Completions { .. } | Cmd::Man { .. } | Cmd::Schema => Ok(0),
    }
}

fn reply_failure(reply: &tools::Reply) -> Failure {
    let msg = reply.body.get("error").and_then(Value::as_str).unwrap_or("error").to_string();
    match reply.status {
        400 => Failure::BadRequest(msg),
        404 => Failure::NotFound(msg),
        409 => Failure::Conflict(msg),
        502 => Failure::BadGateway(msg),
        503 => Failure::Unavailable(msg),
        _ => Failure::Internal(msg),
    }
}

/// Exit code of a tool reply: failures by status, run results by run status.
fn reply_code(reply: &tools::Reply) -> u8 {
    if reply.status != 200 {
        return failure_code(&reply_failure(reply));
    }
    let body = &reply.body;
    if let Some(status) = body.get("status").and_then(|s| serde_json::from_value::<Status>(s.clone()).ok()) {
        return run_code(status);
    }
    match body.get("ok") {
        Some(Value::Bool(false)) if body.get("errors").is_some() => 5,
        Some(Value::Bool(false)) => 2,
        _ => 0,
    }
}

/// Calls a tool and prints its answer: JSON, or `human(body)` on success.
fn tool_out(app: &App, name: &str, args: &Value, json: bool, human: impl Fn(&Value) -> String) -> Result<u8, Failure> {
    let reply = tools::call(app, name, args);
    if reply.status != 200 {
        return Err(reply_failure(&reply));
    }
    let code = reply_code(&reply);
    if json {
        say!("{}", pretty(&reply.body));
    } else if code == 0 {
        say!("{}", human(&reply.body));
    } else {
        eprintln!("error: {}", reply.body.get("error").and_then(Value::as_str).unwrap_or(""));
        for e in reply.body.get("errors").and_then(Value::as_array).into_iter().flatten() {
            eprintln!("  - {}", e.get("message").and_then(Value::as_str).unwrap_or(""));
        }
    }
    Ok(code)
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
