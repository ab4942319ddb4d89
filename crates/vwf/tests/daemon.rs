//! The daemon (SPEC §3 wait, §9 deadlines, §10 heartbeat, folder and watch triggers).
//!
//! Time-based work is tested at the library level: an `App` on a temporary home with a fixed
//! clock, and `Daemon::tick(now)` driven with chosen instants, so nothing sleeps. Folder and watch
//! triggers need the outside world: they run the real `vwf daemon` and poll the runs directory
//! with a bounded deadline.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Duration as Span, Timelike, Utc};
use common::Home;
use serde_json::{Value, json};
use vwf::app::App;
use vwf::clock::FixedClock;
use vwf::daemon::Daemon;
use vwf::tools;

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).expect("time").to_utc()
}

/// An app on `home` whose clock stands at `t`.
fn app_at(home: &Path, t: DateTime<Utc>) -> App {
    App { clock: Box::new(FixedClock::new(t)), ..App::open(home.to_path_buf()).expect("open app") }
}

fn save(app: &App, name: &str, graph: Value) {
    let reply = tools::call(app, "workflow_design_save", &json!({"name": name, "graph": graph}));
    assert_eq!(reply.body["ok"], true, "save {name}: {}", reply.body);
}

/// Every readable run file of the home.
fn runs(home: &Path) -> Vec<Value> {
    let Ok(entries) = std::fs::read_dir(home.join("workflow-runs")) else { return Vec::new() };
    let mut out: Vec<Value> = entries
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.ends_with(".json") && !name.starts_with('.')
        })
        .filter_map(|e| std::fs::read(e.path()).ok())
        .filter_map(|b| serde_json::from_slice(&b).ok())
        .collect();
    out.sort_by(|a, b| a["created_at"].as_str().cmp(&b["created_at"].as_str()));
    out
}

fn read_run(home: &Path, id: &str) -> Value {
    serde_json::from_slice(&std::fs::read(home.join("workflow-runs").join(format!("{id}.json"))).expect("run file")).expect("run JSON")
}

#[test]
fn a_due_wait_is_resumed_by_the_daemon() {
    let home = Home::new();
    let t0 = at("2026-06-03T10:00:00Z");
    let app = app_at(home.path(), t0);
    save(
        &app,
        "pause",
        json!({"nodes": [{"id": "t", "type": "trigger", "mode": "manual"},
                         {"id": "w", "type": "wait", "seconds": 60},
                         {"id": "o", "type": "output", "template": "after the wait"}],
               "edges": [{"from": "t", "to": "w"}, {"from": "w", "to": "o"}]}),
    );
    let reply = tools::call(&app, "workflow_design_run", &json!({"name": "pause"}));
    assert_eq!(reply.body["status"], "waiting", "{}", reply.body);
    let id = reply.body["run_id"].as_str().expect("run id").to_string();

    let mut daemon = Daemon::new(&app);
    let early = daemon.tick(t0 + Span::seconds(30));
    assert!(early.resumed.is_empty(), "{early:?}");
    assert_eq!(read_run(home.path(), &id)["status"], "waiting");

    let due = daemon.tick(t0 + Span::seconds(61));
    assert_eq!(due.resumed, vec![id.clone()]);
    let run = read_run(home.path(), &id);
    assert_eq!(run["status"], "done", "{run}");
    assert_eq!(run["outputs"]["o"]["text"], "after the wait");
    assert!(daemon.tick(t0 + Span::seconds(62)).resumed.is_empty(), "a finished run is left alone");
}

#[test]
fn a_gate_past_its_deadline_is_failed_by_the_daemon() {
    let home = Home::new();
    let t0 = at("2026-06-03T10:00:00Z");
    let app = app_at(home.path(), t0);
    save(
        &app,
        "ask",
        json!({"nodes": [{"id": "t", "type": "trigger", "mode": "manual"},
                         {"id": "gate", "type": "approval", "question": "Ship it?", "timeout_minutes": 5},
                         {"id": "o", "type": "output"}],
               "edges": [{"from": "t", "to": "gate"}, {"from": "gate", "to": "o"}]}),
    );
    let reply = tools::call(&app, "workflow_design_run", &json!({"name": "ask"}));
    assert_eq!(reply.body["status"], "awaiting_approval", "{}", reply.body);
    let id = reply.body["run_id"].as_str().expect("run id").to_string();

    let mut daemon = Daemon::new(&app);
    assert!(daemon.tick(t0 + Span::minutes(4)).timed_out.is_empty());
    assert_eq!(read_run(home.path(), &id)["status"], "awaiting_approval");

    let report = daemon.tick(t0 + Span::minutes(6));
    assert_eq!(report.timed_out, vec![id.clone()]);
    let run = read_run(home.path(), &id);
    assert_eq!(run["status"], "failed");
    assert_eq!(run["error"], "approval timed out");
}

#[test]
fn a_run_left_running_by_a_dead_process_is_marked_interrupted() {
    let home = Home::new();
    let t0 = at("2026-06-03T10:00:00Z");
    let app = app_at(home.path(), t0);
    save(
        &app,
        "work",
        json!({"nodes": [{"id": "t", "type": "trigger", "mode": "manual"}, {"id": "o", "type": "output"}],
               "edges": [{"from": "t", "to": "o"}]}),
    );
    let reply = tools::call(&app, "workflow_design_run", &json!({"name": "work"}));
    let id = reply.body["run_id"].as_str().expect("run id").to_string();
    // Rewind the file to how a killed process leaves it: `running`, its step unfinished.
    let path = home.path().join("workflow-runs").join(format!("{id}.json"));
    let mut run = read_run(home.path(), &id);
    run["status"] = json!("running");
    run["steps"] = json!([{"node": "o", "status": "running", "attempts": 1, "started_at": "2026-06-03T10:00:00.000Z", "finished_at": null, "error": null}]);
    run["outputs"] = json!({});
    std::fs::write(&path, serde_json::to_vec(&run).expect("json")).expect("write");

    let report = Daemon::new(&app).tick(t0 + Span::seconds(5));
    assert_eq!(report.interrupted, vec![id.clone()]);
    let run = read_run(home.path(), &id);
    assert_eq!(run["status"], "failed");
    assert!(run["error"].as_str().is_some_and(|e| e.contains("interrupted")), "{run}");
}

fn heartbeat_design() -> Value {
    json!({"nodes": [{"id": "t", "type": "trigger", "mode": "heartbeat", "every": "1h", "window": "08:00-18:00"},
                     {"id": "o", "type": "output", "template": "beat at {{trigger.fired_at}}"}],
           "edges": [{"from": "t", "to": "o"}]})
}

#[test]
fn heartbeat_fires_every_interval_inside_its_window_only() {
    let home = Home::new();
    let day = at("2026-06-03T00:00:00Z");
    let app = app_at(home.path(), day);
    save(&app, "beat", heartbeat_design());
    let mut daemon = Daemon::new(&app);
    let mut fired = Vec::new();
    // A tick every five minutes across the whole day, then a bit of the next night.
    for i in 0..(24 * 12 + 12) {
        let now = day + Span::minutes(5 * i);
        for f in daemon.tick(now).fired {
            assert_eq!((f.design.as_str(), f.mode.as_str()), ("beat", "heartbeat"));
            assert!(f.run_id.is_some() && f.error.is_none(), "{f:?}");
            fired.push(now);
        }
    }
    let hours: Vec<u32> = fired.iter().map(|t| t.hour()).collect();
    assert_eq!(hours, (8..18).collect::<Vec<u32>>(), "once an hour from the window's opening, none outside it");
    assert!(fired.iter().all(|t| t.minute() == 0));

    let runs = runs(home.path());
    assert_eq!(runs.len(), 10);
    for run in &runs {
        assert_eq!(run["trigger"]["mode"], "heartbeat");
        assert_eq!(run["status"], "done");
        let fired_at = run["trigger"]["input"]["fired_at"].as_str().expect("fired_at");
        let hour = at(fired_at).hour();
        assert!((8..18).contains(&hour), "{fired_at}");
        assert_eq!(run["created_at"].as_str(), Some(fired_at), "the run is dated by the tick");
        assert_eq!(run["outputs"]["o"]["text"], format!("beat at {fired_at}"));
    }
    let state: Value =
        serde_json::from_slice(&std::fs::read(home.path().join("workflow-schedules/trigger-beat.json")).expect("state")).expect("json");
    assert_eq!(state["last_fired_at"], "2026-06-03T17:00:00.000Z");
}

#[test]
fn heartbeat_does_not_double_fire_after_a_restart() {
    let home = Home::new();
    let t = at("2026-06-03T09:00:00Z");
    let app = app_at(home.path(), t);
    save(&app, "beat", heartbeat_design());

    let mut first = Daemon::new(&app);
    assert_eq!(first.tick(t).fired.len(), 1, "inside the window, a heartbeat that never fired fires now");
    drop(first);

    let mut second = Daemon::new(&app);
    assert!(second.tick(t).fired.is_empty(), "same instant after a restart: no second fire");
    assert!(second.tick(t + Span::minutes(59)).fired.is_empty());
    drop(second);

    let mut third = Daemon::new(&app);
    assert_eq!(third.tick(t + Span::minutes(60)).fired.len(), 1, "nor is the next beat forgotten");
    assert_eq!(runs(home.path()).len(), 2);
    let schedules: Vec<String> = std::fs::read_dir(home.path().join("workflow-schedules"))
        .expect("schedules dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    assert_eq!(schedules, vec!["trigger-beat.json".to_string()]);
}

#[test]
fn schedule_jobs_fire_from_the_daemon() {
    let home = Home::new();
    let t = at("2026-06-03T08:00:00Z");
    let app = app_at(home.path(), t);
    save(
        &app,
        "brief",
        json!({"nodes": [{"id": "t", "type": "trigger", "mode": "schedule", "schedule": {"preset": "daily", "time": "09:00"}},
                         {"id": "o", "type": "output", "template": "brief"}],
               "edges": [{"from": "t", "to": "o"}]}),
    );
    let design = vwf_core::names::DesignName::parse("brief").expect("name");
    vwf::schedules::upsert(&app, &design, &json!({"preset": "daily", "time": "09:00"}), t).expect("schedule job");

    let mut daemon = Daemon::new(&app);
    assert!(daemon.tick(at("2026-06-03T08:59:00Z")).scheduled.is_empty());
    let due = daemon.tick(at("2026-06-03T09:00:00Z")).scheduled;
    assert_eq!(due.len(), 1, "{due:?}");
    assert!(due[0].run_id.is_some(), "{due:?}");
    assert!(daemon.tick(at("2026-06-03T09:00:30Z")).scheduled.is_empty(), "one fire, one run");
    let runs = runs(home.path());
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["trigger"]["mode"], "schedule");
    let watching = daemon.watching();
    assert!(watching[0].detail.contains("Daily at 09:00"), "{watching:?}");
}

#[test]
fn the_daemon_lists_what_it_watches() {
    let home = Home::new();
    let t = at("2026-06-03T03:00:00Z");
    let app = app_at(home.path(), t);
    save(&app, "beat", heartbeat_design());
    save(
        &app,
        "hook",
        json!({"nodes": [{"id": "t", "type": "trigger", "mode": "event", "sources": ["a.*"]}, {"id": "o", "type": "output"}],
               "edges": [{"from": "t", "to": "o"}]}),
    );
    let mut daemon = Daemon::new(&app);
    assert!(daemon.tick(t).fired.is_empty(), "03:00 is outside the window");
    let watching = daemon.watching();
    let modes: Vec<(&str, &str)> = watching.iter().map(|w| (w.design.as_str(), w.mode.as_str())).collect();
    assert_eq!(modes, vec![("beat", "heartbeat"), ("hook", "event")]);
    assert!(watching[0].detail.contains("every 1h") && watching[0].detail.contains("08:00-18:00"), "{watching:?}");
}

// ---------------------------------------------------------------------------------------------
// End to end: the real `vwf daemon`
// ---------------------------------------------------------------------------------------------

/// A running `vwf daemon`: stdout lines arrive on a channel, stderr is kept for failure messages.
/// Dropping it stops the daemon with SIGTERM (SIGKILL if it does not stop in time).
struct Running {
    child: Child,
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
}

impl Running {
    fn start(home: &Home) -> Running {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("vwf"))
            .arg("--home")
            .arg(home.path())
            .arg("daemon")
            .env_remove("VWF_HOME")
            .env_remove("HERMES_HOME")
            .env_remove("VWF_NOW")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start vwf daemon");
        let (tx, lines) = mpsc::channel();
        let stdout = child.stdout.take().expect("stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        let err = child.stderr.take().expect("stderr");
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let mut s = sink.lock().unwrap_or_else(|e| e.into_inner());
                s.push_str(&line);
                s.push('\n');
            }
        });
        Running { child, lines, stderr }
    }

    /// Waits (at most `limit`) for a stdout line containing `needle`.
    fn wait_for_line(&self, needle: &str, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return line,
                Ok(_) => {}
                Err(_) => panic!("no line with {needle:?} within {limit:?}; stderr:\n{}", self.stderr()),
            }
        }
    }

    /// Waits (bounded) until the daemon's log (standard error) has a line with `needle`.
    fn wait_for_log(&self, needle: &str, limit: Duration) {
        let deadline = Instant::now() + limit;
        while !self.stderr().contains(needle) {
            assert!(Instant::now() < deadline, "no log line with {needle:?} within {limit:?}; stderr:\n{}", self.stderr());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// SIGTERM, then waits (bounded) for a clean exit; returns the exit code.
    fn stop(&mut self) -> Option<i32> {
        // SAFETY: sends a signal to the child we spawned.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        None
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.stop();
        }
    }
}

/// Polls (at most `limit`) until the home holds `n` runs that have settled; returns them.
fn wait_for_runs(home: &Home, n: usize, limit: Duration, daemon: &Running) -> Vec<Value> {
    let deadline = Instant::now() + limit;
    loop {
        let runs = runs(home.path());
        if runs.len() >= n && runs.iter().all(|r| r["status"] != "running") {
            return runs;
        }
        if Instant::now() >= deadline {
            panic!("expected {n} runs within {limit:?}, found {}: {runs:?}\nstderr:\n{}", runs.len(), daemon.stderr());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether process `pid` is gone (or only a zombie waiting to be reaped).
fn process_gone(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return true;
    }
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')))
        .unwrap_or(true)
}

#[test]
fn folder_trigger_fires_once_per_matching_file_change() {
    let home = Home::new();
    let inbox = tempfile::tempdir().expect("inbox");
    let inbox_path = std::fs::canonicalize(inbox.path()).expect("canonical inbox");
    home.save(
        "inbox",
        &json!({"nodes": [{"id": "t", "type": "trigger", "mode": "folder", "path": inbox_path, "pattern": "*.csv", "debounce_ms": 100},
                          {"id": "o", "type": "output", "template": "got {{trigger.path}}"}],
                "edges": [{"from": "t", "to": "o"}]}),
    );
    let daemon = Running::start(&home);
    // The listing comes after the first tick, which started the folder's watcher.
    let line = daemon.wait_for_line("inbox", Duration::from_secs(10));
    assert!(line.contains("folder") && line.contains("*.csv"), "{line}");

    // Written under another name and renamed in, so the file appears in one change even on a
    // loaded machine (a plain write is a create then a modify, which a short debounce may split).
    std::fs::write(inbox_path.join("a.csv.part"), "x,y\n1,2\n").expect("write a.csv.part");
    std::fs::rename(inbox_path.join("a.csv.part"), inbox_path.join("a.csv")).expect("rename a.csv");
    std::fs::write(inbox_path.join("b.txt"), "not a csv\n").expect("write b.txt");
    let runs = wait_for_runs(&home, 1, Duration::from_secs(10), &daemon);
    let run = runs[0].clone();
    // The watcher reports changes in order: once c.csv (renamed in after b.txt was written) has
    // fired, b.txt was handled too, and had it matched, its run would be there.
    std::fs::write(inbox_path.join("c.csv.part"), "x\n").expect("write c.csv.part");
    std::fs::rename(inbox_path.join("c.csv.part"), inbox_path.join("c.csv")).expect("rename c.csv");
    let runs = wait_for_runs(&home, 2, Duration::from_secs(10), &daemon);
    let c = inbox_path.join("c.csv").to_string_lossy().into_owned();
    let inputs: Vec<&Value> = runs.iter().map(|r| &r["trigger"]["input"]).collect();
    assert_eq!(inputs.len(), 2, "only the .csv files fire: {inputs:?}\n{}", daemon.stderr());
    assert_eq!(inputs[1], &json!({"path": c, "kind": "create"}));
    let a = inbox_path.join("a.csv").to_string_lossy().into_owned();
    assert_eq!(run["design"], "inbox");
    assert_eq!(run["trigger"]["mode"], "folder");
    assert_eq!(run["trigger"]["input"], json!({"path": a, "kind": "create"}));
    assert_eq!(run["outputs"]["o"]["text"], format!("got {a}"));

    // Writing the same file again is a modification: one more run.
    std::fs::write(inbox_path.join("a.csv"), "x,y\n1,2\n3,4\n").expect("rewrite a.csv");
    let runs = wait_for_runs(&home, 3, Duration::from_secs(10), &daemon);
    assert_eq!(runs[2]["trigger"]["input"], json!({"path": a, "kind": "modify"}));
}

#[test]
fn watch_trigger_fires_a_run_per_new_ndjson_line_and_dedupes() {
    let home = Home::new();
    let pidfile = home.path().join("watch.pid");
    let script = format!("echo $$ > '{}'; printf '{{\"n\":1}}\\n{{\"n\":1}}\\n{{\"n\":2}}\\nnot json\\n'; sleep 30", pidfile.display());
    home.save(
        "feed",
        &json!({"nodes": [{"id": "t", "type": "trigger", "mode": "watch", "command": script},
                          {"id": "o", "type": "output", "template": "n = {{trigger.n}}"}],
                "edges": [{"from": "t", "to": "o"}]}),
    );
    let mut daemon = Running::start(&home);
    daemon.wait_for_line("feed", Duration::from_secs(10));
    let runs = wait_for_runs(&home, 2, Duration::from_secs(10), &daemon);
    // The lines are handled in order: once the daemon has said what it did with the last one
    // (the text line), the duplicate before it was handled too, and neither fired anything.
    daemon.wait_for_log("ignored a line", Duration::from_secs(10));
    let runs_after = self::runs(home.path());
    assert_eq!(runs_after.len(), 2, "{runs_after:?}\n{}", daemon.stderr());
    assert!(daemon.stderr().contains("duplicate line within 10 min, not fired"), "{}", daemon.stderr());
    let inputs: Vec<&Value> = runs.iter().map(|r| &r["trigger"]["input"]).collect();
    assert_eq!(inputs, vec![&json!({"n": 1}), &json!({"n": 2})]);
    assert!(runs.iter().all(|r| r["trigger"]["mode"] == "watch" && r["status"] == "done"));
    let stderr = daemon.stderr();
    assert!(stderr.contains("not valid JSON"), "the text line is logged: {stderr}");

    // Stopping the daemon stops the command's whole process group.
    let pid: i32 = std::fs::read_to_string(&pidfile).expect("pid file").trim().parse().expect("pid");
    assert!(!process_gone(pid), "the watch command is still running before the stop");
    assert_eq!(daemon.stop(), Some(0), "a clean stop; stderr:\n{}", daemon.stderr());
    let deadline = Instant::now() + Duration::from_secs(5);
    while !process_gone(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(process_gone(pid), "the watch command outlived the daemon");
}

#[test]
fn watch_triggers_respect_commands_disabled() {
    let home = Home::new();
    std::fs::write(home.path().join("visual-workflow.toml"), "[commands]\nenabled = false\n").expect("config");
    let marker = home.path().join("started");
    let script = format!("touch '{}'; printf '{{\"n\":1}}\\n'; sleep 30", marker.display());
    home.save(
        "feed",
        &json!({"nodes": [{"id": "t", "type": "trigger", "mode": "watch", "command": script}, {"id": "o", "type": "output"}],
                "edges": [{"from": "t", "to": "o"}]}),
    );
    let mut daemon = Running::start(&home);
    let line = daemon.wait_for_line("feed", Duration::from_secs(10));
    assert!(line.contains("disabled"), "the listing says why the watch is off: {line}");
    daemon.wait_for_log("commands are disabled", Duration::from_secs(10));
    // A clean stop ends every watch command the daemon started (and waits for it): none may have
    // run, nor started a run.
    assert_eq!(daemon.stop(), Some(0), "a clean stop; stderr:\n{}", daemon.stderr());
    assert!(!daemon.stderr().contains("starting watch command"), "{}", daemon.stderr());
    assert!(!marker.exists(), "the watch command must not run");
    assert!(runs(home.path()).is_empty());
}

#[test]
fn a_second_daemon_on_the_same_home_is_refused() {
    let home = Home::new();
    let first = Running::start(&home);
    first.wait_for_line("vwf daemon", Duration::from_secs(10));
    let out = home.vwf().arg("daemon").output().expect("second daemon");
    assert_eq!(common::code(&out), 4, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("already running"));
}
