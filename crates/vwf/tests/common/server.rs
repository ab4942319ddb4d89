//! The real `vwf serve` in a child process on a free loopback port, and a blocking HTTP client
//! for it. The server prints its address on its first line of standard output (`--bind
//! 127.0.0.1:0` lets the system choose the port); `start` waits for that line, never for a delay.
//! The server always has an API token: the one given in `Options::token`, else the one it made and
//! wrote to `<home>/workflow-serve-<port>.token` before that line; `client` sends it on every
//! request, `bare` sends none.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

use reqwest::blocking::{Client, RequestBuilder};
use serde_json::{Value, json};

use super::Home;

pub const PREFIX: &str = "/api/plugins/visual-workflow";
pub const TOKEN_VAR: &str = "VWF_API_TEST_TOKEN";
/// Variables a test's vwf must not inherit: they would send its traces somewhere.
pub const OTEL_VARS: [&str; 3] = ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED"];

/// A running `vwf serve`; stopped (killed) when dropped.
pub struct Server {
    pub child: Child,
    /// Kept open so the server's later writes to standard output never fail.
    _stdout: BufReader<ChildStdout>,
    /// `http://127.0.0.1:<port>`
    pub base: String,
    pub port: u16,
    /// Sends `Authorization: Bearer <token>` on every request (a request's own header wins).
    pub client: Client,
    /// Sends no token: what a caller that is not the person at the terminal sends.
    pub bare: Client,
    pub token: Option<String>,
}

pub struct Options<'a> {
    pub env: Vec<(&'a str, String)>,
    pub bind: Option<&'a str>,
    pub token: Option<&'a str>,
    /// Where the server's standard error goes (default: the test's own).
    pub stderr: Option<&'a Path>,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options { env: Vec::new(), bind: Some("127.0.0.1:0"), token: None, stderr: None }
    }
}

pub fn vwf(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_vwf"));
    c.arg("--home").arg(home);
    for var in ["VWF_HOME", "HERMES_HOME", "VWF_NOW", "VWF_WEB_DIR", "VWF_DATABASE_URL", TOKEN_VAR].into_iter().chain(OTEL_VARS) {
        c.env_remove(var);
    }
    c.env("VWF_EXAMPLES_DIR", super::examples_dir());
    c
}

impl Server {
    pub fn start(home: &Home) -> Server {
        Server::start_with(home, Options::default())
    }

    pub fn start_with(home: &Home, options: Options<'_>) -> Server {
        let mut cmd = vwf(home.path());
        home.backend_env(&mut cmd);
        cmd.arg("serve");
        if let Some(bind) = options.bind {
            cmd.arg("--bind").arg(bind);
        }
        for (k, v) in &options.env {
            cmd.env(k, v);
        }
        if let Some(token) = options.token {
            cmd.env(TOKEN_VAR, token);
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(match options.stderr {
                Some(path) => Stdio::from(std::fs::File::create(path).expect("create the stderr file")),
                None => Stdio::inherit(),
            })
            .spawn()
            .expect("start vwf serve");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("read the server's first line");
        let url = line.split_whitespace().find(|w| w.starts_with("http://")).unwrap_or_else(|| {
            let _ = child.kill();
            panic!("no URL on the server's first line: {line:?}")
        });
        let base = url.trim_end_matches('/').to_string();
        let port = base.rsplit(':').next().and_then(|p| p.parse().ok()).expect("port in the URL");
        let token = options.token.map(String::from).or_else(|| made_token(home.path(), port));
        let builder = || Client::builder().no_proxy().timeout(Duration::from_secs(60));
        let bare = builder().build().expect("http client");
        let client = match &token {
            Some(t) => {
                let mut value = reqwest::header::HeaderValue::from_str(&format!("Bearer {t}")).expect("token header");
                value.set_sensitive(true);
                let headers = reqwest::header::HeaderMap::from_iter([(reqwest::header::AUTHORIZATION, value)]);
                builder().default_headers(headers).build().expect("http client")
            }
            None => bare.clone(),
        };
        Server { child, _stdout: stdout, base, port, client, bare, token }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{PREFIX}{path}", self.base)
    }

    pub fn authed(&self, req: RequestBuilder) -> RequestBuilder {
        match &self.token {
            Some(t) => req.bearer_auth(t),
            None => req,
        }
    }

    pub fn get(&self, path: &str) -> (u16, Value) {
        send(self.authed(self.client.get(self.url(path))))
    }

    pub fn post(&self, path: &str, body: Value) -> (u16, Value) {
        send(self.authed(self.client.post(self.url(path)).json(&body)))
    }

    /// A POST without any body.
    pub fn post_empty(&self, path: &str) -> (u16, Value) {
        send(self.authed(self.client.post(self.url(path))))
    }

    pub fn save(&self, name: &str, graph: Value) {
        let (status, body) = self.post(&format!("/designs/{name}"), json!({"graph": graph}));
        assert_eq!((status, &body["ok"]), (200, &json!(true)), "save {name}: {body}");
    }

    pub fn run_id(&self, name: &str, input: Value) -> String {
        let (status, body) = self.post(&format!("/designs/{name}/run"), json!({"input": input}));
        assert_eq!(status, 200, "{body}");
        body["run_id"].as_str().unwrap_or_else(|| panic!("no run_id in {body}")).to_string()
    }

    /// The value of a metric without labels (a gauge or a counter, `name` as exposed, e.g.
    /// `vwf_live_waiters`) from the server's `GET /metrics`.
    pub fn metric(&self, name: &str) -> f64 {
        let text = self.authed(self.client.get(self.url("/metrics"))).send().expect("scrape").text().expect("metrics text");
        let line = text.lines().find(|l| l.split_whitespace().next() == Some(name)).unwrap_or_else(|| panic!("no {name} in {text}"));
        line[name.len()..].trim().parse::<f64>().unwrap_or_else(|_| panic!("{name} is not a number: {line}"))
    }

    /// Sends SIGTERM and waits for the exit code.
    pub fn terminate(mut self) -> Option<i32> {
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        self.child.wait().expect("wait for vwf serve").code()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The file where a server without a configured token wrote the one it made.
pub fn token_file(home: &Path, port: u16) -> std::path::PathBuf {
    home.join(format!("workflow-serve-{port}.token"))
}

/// The token a server on `port` made at start, read from its file (written before the server's
/// first line); `None` when it wrote none (its token is configured).
pub fn made_token(home: &Path, port: u16) -> Option<String> {
    std::fs::read_to_string(token_file(home, port)).ok().map(|t| t.trim().to_string())
}

/// Sends a request; the answer must be JSON, and an error answer `{ok:false, error}`.
pub fn send(req: RequestBuilder) -> (u16, Value) {
    let res = req.send().expect("request");
    let status = res.status().as_u16();
    let kind = res.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let text = res.text().expect("response body");
    assert!(kind.starts_with("application/json"), "status {status}: content type {kind:?}, body {text:?}");
    let body: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("status {status}: body is not JSON ({e}): {text}"));
    if status >= 400 {
        assert_eq!(body["ok"], false, "error answer without ok:false: {body}");
        assert!(body["error"].as_str().is_some_and(|e| !e.is_empty()), "error answer without error text: {body}");
        assert_eq!(body.as_object().map(|o| o.len()), Some(2), "an error body is exactly {{ok, error}}: {body}");
    }
    (status, body)
}

/// Writes the home's `visual-workflow.toml`.
pub fn write_config(home: &Home, toml: &str) {
    std::fs::write(home.path().join("visual-workflow.toml"), toml).expect("write config");
}

/// Polls `check` on a real process's work until it holds, for at most `seconds`.
pub fn eventually<T>(what: &str, seconds: u64, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + Duration::from_secs(seconds);
    loop {
        if let Some(found) = check() {
            return found;
        }
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Four typed nodes: manual trigger → condition on the input → two collect-only outputs.
pub fn small() -> Value {
    json!({"nodes": [
        {"id": "start", "type": "trigger", "mode": "manual"},
        {"id": "check", "type": "condition", "expr": "out.start.n >= 5"},
        {"id": "big", "type": "output", "template": "big {{trigger.n}}"},
        {"id": "small", "type": "output", "template": "small {{trigger.n}}"}
    ], "edges": [
        {"from": "start", "to": "check"},
        {"from": "check", "to": "big", "label": "true"},
        {"from": "check", "to": "small", "label": "false"}
    ]})
}

/// trigger → approval gate (send/skip) → output on `send`.
pub fn gated() -> Value {
    json!({"nodes": [
        {"id": "start", "type": "trigger", "mode": "manual"},
        {"id": "gate", "type": "approval", "question": "Send it?", "options": ["send", "skip"], "timeout_minutes": 600},
        {"id": "out", "type": "output", "template": "sent"}
    ], "edges": [{"from": "start", "to": "gate"}, {"from": "gate", "to": "out", "label": "send"}]})
}

/// Every run the instances list, paging with `before`, each page asked of the next instance.
pub fn list_all(servers: &[Server], query: &str) -> Vec<Value> {
    let mut all = Vec::new();
    let mut before: Option<String> = None;
    for page in 0.. {
        let cursor = before.as_ref().map(|b| format!("&before={b}")).unwrap_or_default();
        let (status, body) = servers[page % servers.len()].get(&format!("/runs?limit=1000{query}{cursor}"));
        assert_eq!(status, 200, "{body}");
        all.extend(body["runs"].as_array().expect("runs").iter().cloned());
        match body["next"].as_str() {
            Some(next) => before = Some(next.to_string()),
            None => return all,
        }
    }
    unreachable!()
}
