//! One function per `vwf` command: each parses its arguments, calls the service layer (or the
//! part it starts), prints the answer, and gives the exit code.

use std::io::Write;

use serde_json::{Value, json};
use vwf_core::listing::RunFilter;
use vwf_core::names::{DesignName, RunId, StepPath};
use vwf_core::pins::TestScope;
use vwf_core::run::{Response, Run, Status};

use super::args::{parse_json, read_arg};
use super::{REFUSED, failure_code, pretty, run_code, show_run};
use crate::cli::schedule::ScheduleCmd;
use crate::{slash as chat, tools};
use vwf_api::failure::Failure;
use vwf_api::keys::IdempotencyKey;
use vwf_api::render;
use vwf_api::service::{ContractBody, Draft, ImportStatus, PinSource, SaveMode, Service, Start};
use vwf_runtime::app::App;
use vwf_runtime::runner::Answer;

/// How many recent runs `vwf run` looks at for timed waits that are due.
const RESUME_SCAN: usize = 200;

pub(super) fn design_name(name: &str) -> Result<DesignName, Failure> {
    DesignName::parse(name).map_err(Failure::BadRequest)
}

fn run_id(id: &str) -> Result<RunId, Failure> {
    RunId::parse(id).map_err(Failure::BadRequest)
}

fn step_path(node: &str) -> Result<StepPath, Failure> {
    StepPath::parse(node).map_err(Failure::BadRequest)
}

/// Prints a design's refusal: its body with `--json`, else the summary and each error on
/// standard error.
pub(super) fn refused(body: &Value, json: bool) -> u8 {
    if json {
        say!("{}", pretty(body));
    } else {
        eprintln!("error: {}", body.get("error").and_then(Value::as_str).unwrap_or(""));
        for e in body.get("errors").and_then(Value::as_array).into_iter().flatten() {
            eprintln!("  - {}", e.get("message").and_then(Value::as_str).unwrap_or(""));
        }
    }
    REFUSED
}

pub(super) fn list(service: &Service<'_>, json: bool) -> Result<u8, Failure> {
    let names = service.designs()?;
    let disabled = service.disabled(&names);
    if json {
        say!("{}", pretty(&json!({"ok": true, "designs": names, "disabled": disabled})));
    } else if names.is_empty() {
        say!("No saved designs in {}. Create one with `vwf new <name>`.", service.app.home.display());
    } else {
        let state = |n: &String| if disabled.contains(n) { "disabled (vwf enable)" } else { "enabled" };
        let rows: Vec<Vec<String>> = names.iter().map(|n| vec![n.clone(), state(n).to_string()]).collect();
        say!("{}", render::table(&["DESIGN", "TRIGGER"], &rows));
    }
    Ok(0)
}

/// `vwf templates`: the built-in templates, as `GET /templates` lists them (`--json`: the same
/// answer, graphs included).
pub(super) fn templates(json: bool) -> Result<u8, Failure> {
    let answer = vwf_api::assets::templates();
    if json {
        say!("{}", pretty(&answer));
        return Ok(0);
    }
    let rows: Vec<Vec<String>> = answer["templates"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| vec![t["name"].as_str().unwrap_or("?").to_string(), t["description"].as_str().unwrap_or("").to_string()])
        .collect();
    say!("{}", render::table(&["TEMPLATE", "DESCRIPTION"], &rows));
    say!("Copy one with `vwf new NAME --from TEMPLATE`.");
    Ok(0)
}

/// `vwf enable` and `vwf disable`: turns a design's automatic trigger on or off.
pub(super) fn enable(service: &Service<'_>, json: bool, name: &str, on: bool) -> Result<u8, Failure> {
    let done = service.set_enabled(&design_name(name)?, on)?;
    if json {
        say!("{}", pretty(&done.body()));
    } else if on {
        say!("Enabled {name}: its trigger fires from now on.");
    } else {
        say!("Disabled {name}: its trigger does not fire until `vwf enable {name}` (a run by hand still runs).");
    }
    Ok(0)
}

pub(super) fn new(service: &Service<'_>, json: bool, name: &str, from: Option<&str>) -> Result<u8, Failure> {
    let created = service.create(name, from)?;
    let path = &created.path;
    if json {
        say!("{}", pretty(&json!({"ok": true, "path": path, "graph": created.graph})));
    } else if let Some(template) = from {
        say!("Created design {name} from template {template} at {path}\nEdit it, then `vwf validate {name}` and `vwf run {name}`.");
    } else {
        say!(
            "Created blank design {name} at {path}\nEdit it (or save a graph with `vwf save {name} @file.json`), then `vwf validate {name}`."
        );
    }
    Ok(0)
}

pub(super) fn delete(service: &Service<'_>, json: bool, name: &str) -> Result<u8, Failure> {
    let deleted = service.delete(&design_name(name)?)?;
    if json {
        say!("{}", pretty(&deleted.body()));
    } else {
        say!("Deleted design {name}; its runs stay readable (`vwf runs --design {name}`).");
        if let Some(job) = &deleted.schedule {
            say!("Its schedule job {} is paused until the design is saved again and the job resumed.", job.job_id);
        }
    }
    Ok(0)
}

pub(super) fn open(service: &Service<'_>, json: bool, name: &str) -> Result<u8, Failure> {
    let graph = service.load(&design_name(name)?)?;
    if json {
        say!("{}", pretty(&json!({"ok": true, "graph": graph})));
    } else {
        say!("{}\n# saved at {}", pretty(&graph), name);
    }
    Ok(0)
}

pub(super) fn save(service: &Service<'_>, json: bool, name: &str, graph: &str) -> Result<u8, Failure> {
    let graph = parse_json(&read_arg(graph)?, "the graph")?;
    let saved = service.save(&design_name(name)?, &graph, SaveMode::Replace)?;
    if json {
        say!("{}", pretty(&saved.body()));
    } else {
        say!("Saved {name} ({} nodes) to {}", saved.nodes, saved.path);
    }
    Ok(0)
}

/// `vwf pin` and `vwf unpin` (`pin: None`): what step `node` of design `name` gives in test runs.
pub(super) fn pin(service: &Service<'_>, json: bool, name: &str, node: &str, pin: Option<PinFrom<'_>>) -> Result<u8, Failure> {
    let source = match pin {
        None => None,
        Some(PinFrom::Run(id)) => Some(PinSource::Run(run_id(id)?)),
        // JSON of an object or a string as written, anything else as its text.
        Some(PinFrom::Output(arg)) => {
            let text = read_arg(arg)?;
            Some(PinSource::Output(match vwf_core::json::parse(&text) {
                Ok(v) if v.is_object() || v.is_string() => v,
                _ => Value::String(text),
            }))
        }
    };
    let pinned = source.is_some();
    let saved = service.pin(&design_name(name)?, node, source)?;
    if json {
        say!("{}", pretty(&saved.body()));
    } else if pinned {
        say!("Pinned the output of {node} on {name}: test runs (vwf run {name} --test) use it instead of running {node}.");
    } else {
        say!("{node} of {name} has no pin now: test runs run it.");
    }
    Ok(0)
}

/// Where `vwf pin` takes a step's output from.
pub(super) enum PinFrom<'a> {
    /// What the step gave in this run.
    Run(&'a str),
    /// A text or an output view (text, @file or -).
    Output(&'a str),
}

pub(super) fn validate(service: &Service<'_>, json: bool, name: &str) -> Result<u8, Failure> {
    let draft = if name == "-" || name.starts_with('@') {
        Draft::Graph(parse_json(&read_arg(name)?, "the graph")?)
    } else {
        Draft::Saved(design_name(name)?)
    };
    let report = service.validate(&draft)?;
    let body = serde_json::to_value(&report).map_err(|e| Failure::Internal(e.to_string()))?;
    if json {
        say!("{}", pretty(&body));
    } else {
        say!("{}", render::report(name, &body));
    }
    Ok(if report.ok { 0 } else { REFUSED })
}

/// `vwf run retry <run_id> [--from-start]`.
pub(super) fn retry(service: &Service<'_>, json: bool, run_id: Option<&str>, from_start: bool) -> Result<u8, Failure> {
    let Some(id) = run_id else {
        return Err(Failure::BadRequest(
            "`vwf run retry` needs the id of the failed run to retry: vwf run retry <run_id> (`vwf runs --status failed` lists them)"
                .into(),
        ));
    };
    let id = self::run_id(id)?;
    if !from_start {
        return Ok(show_run(&service.retry(&id)?, json, true));
    }
    show_started(service.retry_from_start(&id), json, &format!("the design of run {id}"))
}

/// A run, or the validator's report of the design (`name`) it could not start with.
fn show_started(run: Result<Run, Failure>, json: bool, name: &str) -> Result<u8, Failure> {
    match run {
        Ok(run) => Ok(show_run(&run, json, true)),
        Err(Failure::Refused(report)) if !json => {
            eprintln!("{}", render::report(name, &serde_json::to_value(&report).unwrap_or_default()));
            Ok(REFUSED)
        }
        Err(e) => Err(e),
    }
}

pub(super) fn run(
    service: &Service<'_>,
    json: bool,
    name: &str,
    run_id: Option<&str>,
    input: Option<&str>,
    test: Option<TestScope>,
    key: Option<IdempotencyKey>,
) -> Result<u8, Failure> {
    if let Some(extra) = run_id {
        return Err(Failure::BadRequest(format!("unexpected argument {extra:?}; use --input for the run's input")));
    }
    let name = design_name(name)?;
    // Looking for due waits is a courtesy: a listing that fails must not stop this run.
    match service.runner().resume_due(RESUME_SCAN) {
        Ok(resumed) if !json => {
            for run in resumed {
                eprintln!("resumed run {} of {} after its wait: {}", run.run_id(), run.design(), run.status().as_str().replace('_', " "));
            }
        }
        Ok(_) => {}
        Err(e) => eprintln!("warning: cannot look for runs whose wait is due: {e}"),
    }
    let input = input.map(|text| parse_json(&read_arg(text)?, "--input")).transpose()?;
    let start = match test {
        None => Start { key, ..Start::with_input(input.unwrap_or(Value::Null)) },
        Some(scope) => Start { input, test: Some(scope), key, trace: None },
    };
    show_started(service.run(&name, start), json, name.as_str())
}

pub(super) fn approve(service: &Service<'_>, json: bool, id: &str, node: &str, answer: &str) -> Result<u8, Failure> {
    let run = service.respond(&run_id(id)?, &step_path(node)?, Answer::Respond(Response::Answer(answer.into())))?;
    Ok(show_run(&run, json, true))
}

/// What `vwf respond` gives: a gate's answer (with the form's values, edits and who answers),
/// an agent step's output, or `--generate`.
pub(super) struct Form<'a> {
    pub answer: Option<&'a str>,
    pub output: Option<&'a str>,
    pub generate: bool,
    pub fields: Option<&'a str>,
    pub edits: &'a [String],
    pub by: Option<&'a str>,
}

impl Form<'_> {
    /// The reply `answer` makes with these.
    fn reply(&self, answer: &str) -> Result<vwf_core::run::Reply, Failure> {
        let fields = match self.fields.map(|f| parse_json(&read_arg(f)?, "--fields")).transpose()? {
            None => serde_json::Map::new(),
            Some(Value::Object(map)) => map,
            Some(_) => return Err(Failure::BadRequest("--fields is a JSON object of the form's values by field name".into())),
        };
        let mut edits = std::collections::BTreeMap::new();
        for edit in self.edits {
            let Some((node, text)) = edit.split_once('=') else {
                return Err(Failure::BadRequest(format!("--edit {edit:?}: write NODE=TEXT (TEXT may be @file)")));
            };
            edits.insert(node.to_string(), read_arg(text)?);
        }
        Ok(vwf_core::run::Reply {
            answer: answer.to_string(),
            fields,
            edits,
            by: self.by.map(String::from),
            via: Some("cli".into()),
            tap: None,
        })
    }
}

pub(super) fn respond(service: &Service<'_>, json: bool, id: &str, node: &str, form: Form<'_>) -> Result<u8, Failure> {
    let how = match (form.answer, form.output, form.generate) {
        (Some(a), None, false) => Answer::Respond(Response::Answer(form.reply(a)?)),
        (None, Some(o), false) => Answer::Respond(Response::Output(read_arg(o)?)),
        (None, None, true) => Answer::Generate,
        _ => return Err(Failure::BadRequest("give exactly one of --answer, --output or --generate".into())),
    };
    let run = service.respond(&run_id(id)?, &step_path(node)?, how)?;
    Ok(show_run(&run, json, true))
}

/// The filters of `vwf runs`, as given.
pub(super) struct RunsQuery<'q> {
    pub design: Option<&'q str>,
    pub status: Option<&'q str>,
    pub trigger: Option<&'q str>,
    pub id: Option<&'q str>,
    pub parent: Option<&'q str>,
    pub from: Option<&'q str>,
    pub to: Option<&'q str>,
    pub min_duration: Option<&'q str>,
}

pub(super) fn runs(service: &Service<'_>, json: bool, limit: u16, query: RunsQuery<'_>, before: Option<&str>) -> Result<u8, Failure> {
    let filter = RunFilter::parse(query.design, query.status, query.trigger, query.id, query.parent)
        .and_then(|f| f.with_period(query.from, query.to, query.min_duration))
        .map_err(Failure::BadRequest)?;
    let before = before.map(run_id).transpose()?;
    let page = service.runs(&filter, before.as_ref(), usize::from(limit))?;
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

pub(super) fn show(service: &Service<'_>, json: bool, id: &str) -> Result<u8, Failure> {
    let run = service.open(&run_id(id)?)?;
    Ok(show_run(&run, json, false))
}

pub(super) fn slash(app: &App, json: bool, text: &str) -> Result<u8, Failure> {
    let reply = chat::handle(app, text);
    if json {
        say!("{}", pretty(&json!({"ok": true, "reply": reply})));
    } else {
        say!("{reply}");
    }
    Ok(0)
}

pub(super) fn import(service: &Service<'_>, json: bool, file: &str, overwrite: bool) -> Result<u8, Failure> {
    let text = read_arg(&if file == "-" { file.to_string() } else { format!("@{file}") })?;
    let doc = parse_json(&text, "the agent.json file")?;
    let report = service.import(&doc, overwrite);
    let code = if report.ok() { 0 } else { REFUSED };
    if json {
        say!("{}", pretty(&report.body("--overwrite")));
        return Ok(code);
    }
    let rows: Vec<Vec<String>> = report
        .designs
        .iter()
        .map(|d| {
            let (status, detail) = match &d.status {
                ImportStatus::Saved { path, enabled: true } => ("saved", path.clone()),
                ImportStatus::Saved { path, enabled: false } => {
                    ("saved", format!("{path} (disabled: its trigger fires once you run `vwf enable {}`)", d.name))
                }
                ImportStatus::Skipped => ("skipped", "a design with this name exists (use --overwrite)".to_string()),
                ImportStatus::Refused { error, .. } => ("refused", error.clone()),
            };
            vec![d.name.clone(), status.to_string(), detail]
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
    Ok(code)
}

pub(super) fn emit(
    service: &Service<'_>,
    json: bool,
    event: &str,
    payload: Option<&str>,
    key: Option<IdempotencyKey>,
) -> Result<u8, Failure> {
    let payload = match payload {
        Some(text) => parse_json(&read_arg(text)?, "--payload")?,
        None => Value::Null,
    };
    if let Some(key) = key {
        return emit_keyed(service, json, event, payload, &key);
    }
    let emitted = service.emit(event, payload)?;
    let emission = &emitted.emission;
    if json {
        say!("{}", pretty(&emitted.body()));
    } else if emission.runs.is_empty() && emission.skipped.is_empty() && emission.resumed.is_empty() {
        say!("No design listens to {event}, and no run waits for it.");
    } else {
        for id in &emission.resumed {
            say!("run {id}: went on with {event}");
        }
        for run in &emission.runs {
            say!("{}", render::summary(&run.result(), false, render::Reader::Cli));
        }
        for (d, why) in &emission.skipped {
            say!("{d}: not started ({why})");
        }
    }
    Ok(if emission.runs.iter().any(|r| r.status() == Status::Failed) { 1 } else { 0 })
}

/// `vwf emit --key`: the answer (the first emit's, when the key was used before) as the API
/// gives it, or a line per run it names.
fn emit_keyed(service: &Service<'_>, json: bool, event: &str, payload: Value, key: &IdempotencyKey) -> Result<u8, Failure> {
    let body = service.emit_keyed(event, payload, Some(key))?;
    if !json {
        for id in body["resumed"].as_array().into_iter().flatten().filter_map(Value::as_str) {
            say!("run {id}: went on with {event}");
        }
        for run in body["runs"].as_array().into_iter().flatten() {
            say!("{}", render::summary(run, false, render::Reader::Cli));
        }
        for skipped in body["skipped"].as_array().into_iter().flatten() {
            say!("{}: not started ({})", skipped["design"].as_str().unwrap_or("?"), skipped["reason"].as_str().unwrap_or("?"));
        }
    } else {
        say!("{}", pretty(&body));
    }
    let failed = body["runs"].as_array().into_iter().flatten().any(|run| run["status"] == "failed");
    Ok(u8::from(failed))
}

pub(super) fn doctor(app: &App, json: bool, fix: bool) -> Result<u8, Failure> {
    let report = crate::doctor::examine(app, fix);
    if json {
        say!("{}", pretty(&report.to_json(&app.home)));
    } else {
        say!("{}", report.to_text(&app.home));
    }
    Ok(if report.ok() { 0 } else { 1 })
}

pub(super) fn daemon(app: &App, json: bool) -> Result<u8, Failure> {
    let _claim = vwf_runtime::daemon::claim_home(app)?;
    vwf_runtime::app::tidy_at_start(&app.home, "vwf daemon");
    let stop = vwf_api::signals::stop_flag().map_err(|e| Failure::Internal(format!("cannot listen for SIGINT/SIGTERM: {e}")))?;
    let mut daemon = vwf_runtime::daemon::Daemon::new(app);
    daemon.tick(vwf_runtime::clock::Clock::now(app.clock.as_ref()));
    let watching = daemon.watching();
    if json {
        let designs: Vec<Value> = watching.iter().map(|w| json!({"design": w.design, "mode": w.mode, "detail": w.detail})).collect();
        say!("{}", json!({"ok": true, "home": app.home, "watching": designs}));
    } else if watching.is_empty() {
        say!("vwf daemon on {}: no designs yet; saved designs are picked up as they appear. Stop with Ctrl-C.", app.home.display());
    } else {
        say!("vwf daemon on {} (stop with Ctrl-C)", app.home.display());
        let rows: Vec<Vec<String>> = watching.iter().map(|w| vec![w.design.clone(), w.mode.clone(), w.detail.clone()]).collect();
        say!("{}", render::table(&["DESIGN", "TRIGGER", "WHAT"], &rows));
    }
    // The daemon keeps the timers, so it also takes taps on Telegram gate buttons.
    let active = std::sync::atomic::AtomicBool::new(true);
    std::thread::scope(|scope| {
        if vwf_api::buttons::polls_telegram(app) {
            scope.spawn(|| vwf_api::buttons::poll_telegram(app, &active, &stop));
        }
        daemon.run(&stop);
    });
    Ok(0)
}

pub(super) fn schedule(app: &App, json: bool, cmd: &ScheduleCmd) -> Result<u8, Failure> {
    let out = crate::cli::schedule::execute(app, cmd)?;
    if json {
        say!("{}", pretty(&out.body));
    } else {
        say!("{}", out.text);
    }
    Ok(match out.status {
        Some(status) => run_code(status),
        None if out.body["ok"] == false => REFUSED,
        None => 0,
    })
}

pub(super) fn serve(app: &App, json: bool, bind: Option<&str>) -> Result<u8, Failure> {
    // The server writes its token file into the home before anything else would create it.
    vwf_store::fs::create_home(&app.home).map_err(|e| Failure::Internal(format!("cannot create {}: {e}", app.home.display())))?;
    let server = vwf_api::server::prepare(open_in_runtime(app)?, bind)?;
    // One line first, so whoever started the server learns its address from it.
    if json {
        say!("{}", json!({"ok": true, "url": server.url(), "api": server.api_url()}));
    } else {
        say!("visual-workflow serving {} (API at {}; stop with Ctrl-C)", server.url(), server.api_url());
    }
    server.run()?;
    Ok(0)
}

/// `app`'s home opened again inside the process's runtime, so a PostgreSQL store runs on the
/// server's runtime (see [`vwf_api::runtime`]).
fn open_in_runtime(app: &App) -> Result<App, Failure> {
    let _entered = vwf_api::runtime()?.enter();
    Ok(App::open(app.home.clone())?)
}

pub(super) fn mcp(app: &App) -> Result<u8, Failure> {
    // Standard output carries the protocol from here on: nothing else is printed there.
    vwf_api::mcp::serve_stdio(open_in_runtime(app)?)?;
    Ok(0)
}

/// `vwf tool NAME ARGS`: the agent tool's body, always as JSON; the exit code is the failure's,
/// else the run's, else 5 for a design's errors.
pub(super) fn design_tools(app: &App, json: bool) -> Result<u8, Failure> {
    let listed = tools::design_tools(app);
    if json {
        say!("{}", pretty(&json!({"ok": true, "tools": listed.iter().map(tools::DesignTool::host_form).collect::<Vec<_>>()})));
    } else if listed.is_empty() {
        say!("No design is offered as a tool; mark one with \"tool\": true.");
    } else {
        for t in &listed {
            say!("{}  {}", t.name, t.description);
        }
    }
    Ok(0)
}

pub(super) fn tool(app: &App, name: &str, args: &str) -> Result<u8, Failure> {
    let (body, code) = match tools::answer_text(app, name, &read_arg(args)?) {
        Ok(body) => {
            let code = match body.get("status").and_then(|s| serde_json::from_value::<Status>(s.clone()).ok()) {
                Some(status) => run_code(status),
                None if body["ok"] == false && body.get("errors").is_some() => REFUSED,
                None if body["ok"] == false => 2,
                None => 0,
            };
            (body, code)
        }
        Err(f) => (f.body(), failure_code(&f)),
    };
    say!("{}", pretty(&body));
    Ok(code)
}
