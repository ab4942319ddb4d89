//! Crash safety of the server under load (SPEC §1, §7): a `vwf serve` killed with SIGKILL at
//! random moments while concurrent clients start and retry runs, then started again on the same
//! home, many times over.
//!
//! The design's side-effect steps are commands that append `<run id> <step id>` to a log file,
//! with typed steps (conditions, collect-only outputs) between them, so the log tells how often
//! each step really ran. After every kill, with no writer alive, the test reads the store and
//! checks:
//! - every run whose HTTP answer arrived (200, status done) is done on disk, every step done with
//!   its output: an answer is sent only once the run is durable;
//! - every stored run reads whole, its done steps a prefix of the plan with their outputs, and a
//!   step recorded done keeps its record and never runs again (no new log line for it, whatever
//!   retries, kills and restarts come later); a step killed mid-way may run twice;
//! - runs left in flight read as interrupted once a server is back, and `POST /runs/{id}/retry`
//!   finishes them done with the outputs of an unkilled run.
//!
//! At the end a server stops cleanly, and `vwf runs` lists every run readable and done and
//! `vwf doctor` finds nothing left to repair. Kill delays come from a seeded xorshift, so a
//! failing sequence can be replayed (timing still varies from one machine to another).

use crate::common;
use crate::on_both_backends;
use vwf_store::Wait;

on_both_backends!(a_server_killed_under_load_keeps_answered_runs_and_never_reruns_a_finished_step);

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::server::{Options, PREFIX, Server};
use common::{Backend, Home, XorShift};
use reqwest::blocking::Client;
use serde_json::{Value, json};
use vwf::store::Store;
use vwf_core::names::RunId;

/// Clients sending requests at once.
const CLIENTS: usize = 8;
/// Side-effect steps of the design, each followed by a condition and a collect-only output.
const COMMANDS: usize = 3;
const SEED: u64 = 0xc4a5_4e55_e4e5_0b0e;
const DESIGN: &str = "crash";

/// Server kills per backend: PostgreSQL's server takes longer to start and to answer, so it
/// gets fewer kills in about the same time.
fn kills(backend: Backend) -> usize {
    match backend {
        Backend::Files => 200,
        Backend::Postgres => 160,
    }
}
/// Homes the kills are spread over. A server's start reads the home's recent runs (to mark the
/// ones a dead process left), so its cost grows with the runs a home holds; a few smaller homes
/// keep each restart quick, and each home gets the checks of a home at rest at its end.
const HOMES: usize = 8;

/// The plan's steps in order: s1 c1 o1 s2 c2 o2 …
fn plan_ids() -> Vec<String> {
    (1..=COMMANDS).flat_map(|i| [format!("s{i}"), format!("c{i}"), format!("o{i}")]).collect()
}

fn is_side_effect(node: &str) -> bool {
    node.starts_with('s')
}

/// trigger → s1 (command: appends "<run id> s1" to `log`) → c1 (condition) -true→ o1 (output,
/// collect only) → s2 → … → o3. The command's output does not name the run, so every run that
/// finishes has the same outputs.
fn design(log: &Path) -> Value {
    let script = r#"printf '%s %s\n' "$1" "$2" >> "$3" && printf 'ran %s' "$2""#;
    let log = log.to_str().expect("a UTF-8 temp path");
    let mut nodes = vec![json!({"id": "start", "type": "trigger", "mode": "manual"})];
    let mut edges = Vec::new();
    let mut prev = "start".to_string();
    for i in 1..=COMMANDS {
        let (s, c, o) = (format!("s{i}"), format!("c{i}"), format!("o{i}"));
        nodes.push(json!({"id": s, "type": "command", "argv": ["sh", "-c", script, "sh", "{{run.id}}", s, log]}));
        nodes.push(json!({"id": c, "type": "condition", "expr": format!("out.{s}.exit_code == 0")}));
        nodes.push(json!({"id": o, "type": "output", "template": format!("{o}: {{{{nodes.{s}}}}}")}));
        edges.push(json!({"from": prev, "to": s}));
        edges.push(json!({"from": s, "to": c}));
        edges.push(json!({"from": c, "to": o, "label": "true"}));
        prev = o;
    }
    json!({"nodes": nodes, "edges": edges})
}

/// What the clients of one server life saw, shared between their threads.
#[derive(Default)]
struct Round {
    /// Runs still to finish, taken one at a time by the clients, who retry them.
    to_retry: Mutex<Vec<String>>,
    /// Every 200 answer whose run is done: (run id, the answer's body).
    answered: Mutex<Vec<(String, Value)>>,
    /// Retries sent (of runs found interrupted), and 503 answers (work refused, nothing started).
    retries: AtomicUsize,
    refused: AtomicUsize,
}

/// A request's status and JSON body, or `None` when the server is gone (connection refused or
/// reset, a body cut short).
fn call(req: reqwest::blocking::RequestBuilder) -> Option<(u16, Value)> {
    let res = req.send().ok()?;
    let status = res.status().as_u16();
    let text = res.text().ok()?;
    let body = serde_json::from_str(&text).unwrap_or_else(|e| panic!("status {status}: the answer is not JSON ({e}): {text}"));
    Some((status, body))
}

/// One client: retries the interrupted runs it is given, else starts a new run, until the
/// server is gone.
fn client(http: &Client, base: &str, round: &Round, reference: &Value) {
    loop {
        let next = round.to_retry.lock().expect("queue").pop();
        let answer = match next {
            Some(id) => {
                let Some((status, shown)) = call(http.get(format!("{base}{PREFIX}/runs/{id}"))) else { return };
                assert_eq!(status, 200, "GET run {id}: {shown}");
                if shown["status"] == "running" {
                    // Its dead owner's lock is not released yet (a database session closing).
                    continue;
                }
                assert_interrupted(&id, &shown);
                round.retries.fetch_add(1, Ordering::Relaxed);
                call(http.post(format!("{base}{PREFIX}/runs/{id}/retry")).json(&json!({})))
            }
            None => call(http.post(format!("{base}{PREFIX}/designs/{DESIGN}/run")).json(&json!({}))),
        };
        let Some((status, body)) = answer else { return };
        match status {
            200 => {
                assert_eq!(body["status"], "done", "an answered run is done: {body}");
                assert_eq!(body["outputs"], reference["outputs"], "an answered run has the outputs of an unkilled run");
                let id = body["run_id"].as_str().unwrap_or_else(|| panic!("no run_id: {body}")).to_string();
                round.answered.lock().expect("answered").push((id, body));
            }
            503 => {
                round.refused.fetch_add(1, Ordering::Relaxed);
            }
            other => panic!("unexpected answer {other}: {body}"),
        }
    }
}

/// A run a dead server left: failed, "interrupted during step X", X the first step not done.
fn assert_interrupted(id: &str, shown: &Value) {
    assert_eq!(shown["status"], "failed", "{id}: a run left in flight reads as interrupted: {shown}");
    let failed_node = shown["failed_node"].as_str().unwrap_or_else(|| panic!("{id}: no failed_node: {shown}"));
    assert_eq!(shown["error"], format!("interrupted during step {failed_node}"), "{id}: {shown}");
    let done = done_steps(shown).len();
    assert_eq!(
        plan_ids().get(done).map(String::as_str),
        Some(failed_node),
        "{id}: the interrupted step is the first one not done: {shown}"
    );
}

fn steps(run: &Value) -> &Vec<Value> {
    run["steps"].as_array().unwrap_or_else(|| panic!("no steps array: {run}"))
}

fn done_steps(run: &Value) -> Vec<&Value> {
    steps(run).iter().filter(|s| s["status"] == "done").collect()
}

/// What every stored run satisfies whenever no writer is alive: its done steps are a prefix of
/// the plan (it is saved at least at every side effect, in plan order), each with its output, and
/// no output without a done step.
fn assert_consistent(id: &str, run: &Value) {
    assert_eq!(run["run_id"], id, "run {id} names another run");
    let outputs = run["outputs"].as_object().unwrap_or_else(|| panic!("{id}: no outputs object: {run}"));
    let done: Vec<&str> = done_steps(run).iter().map(|s| s["node"].as_str().unwrap_or_default()).collect();
    assert_eq!(done, plan_ids()[..done.len()], "{id}: done steps are not a prefix of the plan: {run}");
    for node in &done {
        assert!(outputs.contains_key(*node), "{id}: step {node} is done without its output: {run}");
    }
    for node in outputs.keys() {
        assert!(done.contains(&node.as_str()), "{id}: output {node} without a done step: {run}");
    }
}

/// A run that finished: done, every step of the plan done, the outputs of an unkilled run.
fn assert_complete(id: &str, run: &Value, reference: &Value) {
    assert_consistent(id, run);
    assert_eq!(run["status"], "done", "{id}: {run}");
    assert_eq!(done_steps(run).len(), plan_ids().len(), "{id}: not every step is done: {run}");
    assert_eq!(run["outputs"], reference["outputs"], "{id}: outputs differ from an unkilled run");
}

/// The side-effect log, read as it grows: how many times each (run, step) ran.
struct SideEffects {
    path: PathBuf,
    read: u64,
    ran: HashMap<(String, String), usize>,
}

impl SideEffects {
    /// Reads the lines appended since the last call and returns them counted.
    fn read_new(&mut self) -> BTreeMap<(String, String), usize> {
        let mut new = BTreeMap::new();
        let Ok(mut file) = std::fs::File::open(&self.path) else { return new };
        let mut bytes = Vec::new();
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(self.read)).expect("seek the log");
        file.read_to_end(&mut bytes).expect("read the log");
        // Every writer has exited (see `wait_for_orphans`), so the log ends on a whole line.
        let text = std::str::from_utf8(&bytes).expect("the log is text");
        assert!(text.is_empty() || text.ends_with('\n'), "a torn log line: {text:?}");
        self.read += bytes.len() as u64;
        for line in text.lines() {
            let (run, step) = line.split_once(' ').unwrap_or_else(|| panic!("a bad log line: {line:?}"));
            let key = (run.to_string(), step.to_string());
            *new.entry(key.clone()).or_default() += 1;
            *self.ran.entry(key).or_default() += 1;
        }
        new
    }

    fn count(&self, run: &str, step: &str) -> usize {
        self.ran.get(&(run.to_string(), step.to_string())).copied().unwrap_or(0)
    }
}

/// Commands are started in process groups of their own, so a killed server's commands live on
/// for a moment: waits (polling, bounded) until none of them is left, so the log is final.
pub(crate) fn wait_for_orphans(log: &Path) {
    let marker = log.as_os_str().as_encoded_bytes().to_vec();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let alive = std::fs::read_dir("/proc").expect("/proc").flatten().any(|entry| {
            std::fs::read(entry.path().join("cmdline")).is_ok_and(|cmdline| cmdline.windows(marker.len()).any(|w| w == marker))
        });
        if !alive {
            return;
        }
        assert!(Instant::now() < deadline, "commands of a killed server still run after 30 s");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// What the test knows of every run between kills.
struct Ledger {
    store: Box<dyn Store>,
    reference: Value,
    /// Every run id stored so far.
    known: BTreeSet<String>,
    /// Runs not finished yet: they are read again after every kill and retried.
    open: BTreeSet<String>,
    /// Every step seen recorded done: its record, which never changes again.
    done: HashMap<(String, String), Value>,
    log: SideEffects,
    /// Runs a kill left in flight (seen running on disk), once or more.
    left_in_flight: BTreeSet<String>,
}

impl Ledger {
    fn read(&self, id: &str) -> Value {
        let run_id = RunId::parse(id).expect("a stored run id");
        self.store.read_run(&run_id).wait().unwrap_or_else(|e| panic!("run {id} does not read whole: {e}"))
    }

    /// After a kill (or a clean stop): checks what the log and the store hold now.
    fn check(&mut self, home: &Home, answered: &[(String, Value)]) {
        // What a process opening the home now finds: a fresh handle first applies what the
        // killed server's commit log holds (a run started there may be in no run file yet).
        self.store = home.store();
        self.store.list_run_ids(None, 1).wait().expect("open the store");
        // No step recorded done before has run again.
        for ((run, step), times) in self.log.read_new() {
            let key = (run.clone(), step.clone());
            assert!(!self.done.contains_key(&key), "run {run}: step {step}, recorded done before, ran again ({times} more times)");
        }
        // Every answered run is complete on disk.
        for (id, body) in answered {
            let stored = self.read(id);
            assert_complete(id, &stored, &self.reference);
            assert_eq!(steps(&stored), steps(body), "{id}: the stored steps differ from the answer's");
        }
        let stored_ids = home.stored_run_ids();
        let new: Vec<String> = stored_ids.difference(&self.known).cloned().collect();
        self.known.extend(new.iter().cloned());
        self.open.extend(new);
        for id in std::mem::take(&mut self.open) {
            let run = self.read(&id);
            assert_consistent(&id, &run);
            for step in done_steps(&run) {
                let node = step["node"].as_str().unwrap_or_default().to_string();
                if is_side_effect(&node) {
                    assert!(self.log.count(&id, &node) >= 1, "{id}: step {node} is done but never ran");
                }
                let before = self.done.entry((id.clone(), node.clone())).or_insert_with(|| step.clone());
                assert_eq!(&*before, step, "{id}: the record of step {node}, done before, changed");
            }
            match run["status"].as_str() {
                Some("done") => assert_complete(&id, &run, &self.reference),
                Some("running") => {
                    self.left_in_flight.insert(id.clone());
                    self.open.insert(id);
                }
                // Marked interrupted by a server's start or a read, not retried yet.
                Some("failed") => {
                    assert_interrupted(&id, &run);
                    self.open.insert(id);
                }
                other => panic!("{id}: status {other:?} after a kill: {run}"),
            }
        }
    }
}

/// What the kills of a test came to, over its homes.
#[derive(Default)]
struct Tally {
    runs: usize,
    answered: usize,
    left_in_flight: usize,
    retries: usize,
    refused: usize,
    ran_twice: usize,
}

fn a_server_killed_under_load_keeps_answered_runs_and_never_reruns_a_finished_step(backend: Backend) {
    let began = Instant::now();
    let mut rng = XorShift(SEED);
    let mut tally = Tally::default();
    for _ in 0..HOMES {
        kill_a_loaded_server_again_and_again(backend, kills(backend) / HOMES, &mut rng, &mut tally);
    }
    let Tally { runs, answered, left_in_flight, retries, refused, ran_twice } = tally;
    eprintln!(
        "{backend:?}: {} kills over {HOMES} homes in {:?}; {runs} runs, {answered} answered under kills, {left_in_flight} left \
         in flight, {retries} retries, {refused} refused; {ran_twice} side effects ran twice (killed mid-step)",
        kills(backend),
        began.elapsed(),
    );
    assert!(answered > 0, "no run was answered between kills");
    assert!(left_in_flight >= kills(backend) / 4, "few kills landed mid-run: the test proves little");
    assert!(retries > 0, "no interrupted run was retried under load");
}

/// One home: a reference run and unkilled load, `kills` servers killed under load and started
/// again on it, then a server that finishes what is left and stops cleanly, and the checks of a
/// home at rest.
fn kill_a_loaded_server_again_and_again(backend: Backend, kills: usize, rng: &mut XorShift, tally: &mut Tally) {
    let home = Home::with_backend(backend);
    let work = tempfile::tempdir().expect("tempdir");
    let log = work.path().join("side-effects.log");
    let serve_err = work.path().join("serve.err");
    let start = || Server::start_with(&home, Options { stderr: Some(&serve_err), ..Options::default() });
    home.save(DESIGN, &design(&log));

    // An unkilled run gives the reference outputs; a few rounds of unkilled load give the time a
    // run takes with every client busy, which sets the window the kills land in.
    let server = start();
    let (status, reference) = common::server::send(server.client.post(server.url(&format!("/designs/{DESIGN}/run"))).json(&json!({})));
    assert_eq!(status, 200, "{reference}");
    assert_complete(reference["run_id"].as_str().expect("run_id"), &reference, &reference);
    let warm = Round::default();
    let timed = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..CLIENTS {
            s.spawn(|| {
                for _ in 0..3 {
                    let (status, body) = call(server.client.post(server.url(&format!("/designs/{DESIGN}/run"))).json(&json!({})))
                        .expect("an unkilled server answers");
                    assert_eq!((status, &body["status"]), (200, &json!("done")), "{body}");
                    warm.answered.lock().expect("answered").push((body["run_id"].as_str().expect("run_id").to_string(), body));
                }
            });
        }
    });
    let window = timed.elapsed() * 2 / 3; // two runs' time under load
    assert_eq!(server.terminate(), Some(0), "a clean stop");

    let mut ledger = Ledger {
        store: home.store(),
        reference: reference.clone(),
        known: BTreeSet::new(),
        open: BTreeSet::new(),
        done: HashMap::new(),
        log: SideEffects { path: log.clone(), read: 0, ran: HashMap::new() },
        left_in_flight: BTreeSet::new(),
    };
    ledger.check(&home, &warm.answered.lock().expect("answered"));
    assert!(ledger.open.is_empty(), "unkilled runs all finished: {:?}", ledger.open);

    for kill in 0..kills {
        let mut server = start();
        let round = Round { to_retry: Mutex::new(ledger.open.iter().cloned().collect()), ..Round::default() };
        let delay = rng.below(window);
        let (http, base) = (server.client.clone(), server.base.clone());
        std::thread::scope(|s| {
            for _ in 0..CLIENTS {
                s.spawn(|| client(&http, &base, &round, &reference));
            }
            std::thread::sleep(delay); // the kill moment, not a wait for a result
            let _ = server.child.kill(); // SIGKILL
            server.child.wait().expect("wait for the killed server");
        });
        wait_for_orphans(&log);
        let answered = round.answered.into_inner().expect("answered");
        let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ledger.check(&home, &answered)));
        if let Err(e) = checked {
            eprintln!(
                "kill {kill} (delay {delay:?}); the server's standard error:\n{}",
                std::fs::read_to_string(&serve_err).unwrap_or_default()
            );
            std::panic::resume_unwind(e);
        }
        tally.answered += answered.len();
        tally.retries += round.retries.into_inner();
        tally.refused += round.refused.into_inner();
    }

    // A server that starts, finishes what the kills left, and stops cleanly.
    let server = start();
    let mut last_answers = Vec::new();
    for id in &ledger.open {
        let shown = common::server::eventually(&format!("run {id} to read as interrupted"), 30, || {
            let (status, shown) = server.get(&format!("/runs/{id}"));
            assert_eq!(status, 200, "{shown}");
            (shown["status"] != "running").then_some(shown)
        });
        assert_interrupted(id, &shown);
        let (status, body) = server.post(&format!("/runs/{id}/retry"), json!({}));
        assert_eq!(status, 200, "retry {id}: {body}");
        last_answers.push((id.clone(), body));
    }
    tally.retries += last_answers.len();
    assert_eq!(server.terminate(), Some(0), "a clean stop after the kills");
    ledger.check(&home, &last_answers);
    assert!(ledger.open.is_empty(), "runs not finished after their retry: {:?}", ledger.open);

    // Every run is listed, readable and done; every side effect of a finished run ran.
    let mut listed = BTreeSet::new();
    let mut before: Option<String> = None;
    loop {
        let mut args = vec!["runs", "--limit", "1000"];
        if let Some(b) = &before {
            args.extend(["--before", b.as_str()]);
        }
        let (code, page) = home.json(&args);
        assert_eq!(code, 0, "{page}");
        for r in page["runs"].as_array().expect("runs") {
            assert_ne!(r["ok"], false, "an unreadable run: {r}");
            assert_eq!(r["status"], "done", "every run ends done: {r}");
            listed.insert(r["run_id"].as_str().expect("run_id").to_string());
        }
        match page["next"].as_str() {
            Some(next) => before = Some(next.to_string()),
            None => break,
        }
    }
    assert_eq!(listed, ledger.known, "the listing and the stored runs differ");
    for id in &ledger.known {
        for i in 1..=COMMANDS {
            assert!(ledger.log.count(id, &format!("s{i}")) >= 1, "{id}: step s{i} is done but never ran");
        }
    }
    let (code, doctor) = home.json(&["doctor"]);
    assert_eq!(code, 0, "{doctor}");
    assert_eq!(doctor["ok"], true, "{doctor}");
    assert_eq!(doctor["problems"], json!([]), "the home is clean after a clean stop: {doctor}");

    tally.runs += ledger.known.len();
    tally.left_in_flight += ledger.left_in_flight.len();
    tally.ran_twice += ledger.log.ran.values().map(|n| n - 1).sum::<usize>();
}
