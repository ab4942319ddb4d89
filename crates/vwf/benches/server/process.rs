//! The server process: the real `vwf serve` on a fresh home, its API address and token read from
//! its first line and its token file, its later output drained by threads, and its stop.
//!
//! A server is never left behind: `stop` sends SIGTERM and kills it after the grace period, and a
//! server dropped without `stop` (an early error) is killed.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::STOP_GRACE;

pub(super) struct Server {
    pub(super) child: Child,
    pub(super) home: PathBuf,
    /// `http://127.0.0.1:<port>/api/plugins/visual-workflow`
    pub(super) api: String,
    /// The API token the server made at start, from `<home>/workflow-serve-<port>.token`.
    pub(super) token: String,
    /// What the server wrote after its first line (stdout) and on stderr, collected by threads.
    output: Arc<Mutex<Vec<String>>>,
    readers: Vec<std::thread::JoinHandle<()>>,
}

impl Server {
    pub(super) fn start(home: &Path) -> Result<Server, String> {
        let binary = env!("CARGO_BIN_EXE_vwf");
        let mut cmd = Command::new(binary);
        cmd.arg("--home").arg(home).args(["serve", "--bind", "127.0.0.1:0", "--json"]);
        for var in ["HERMES_HOME", "VWF_NOW", "VWF_WEB_DIR"] {
            cmd.env_remove(var);
        }
        cmd.env("VWF_HOME", home);
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {binary}: {e}"))?;
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            let _ = child.kill();
            return Err("the server's output is not piped".into());
        };
        let mut stdout = BufReader::new(stdout);
        let mut line = String::new();
        let read = stdout.read_line(&mut line);
        let first: Value = match read {
            Ok(n) if n > 0 => serde_json::from_str(line.trim()).unwrap_or(Value::Null),
            _ => Value::Null,
        };
        let Some(api) = first["api"].as_str().filter(|_| first["ok"] == json!(true)).map(String::from) else {
            let _ = child.kill();
            let mut err = String::new();
            let _ = BufReader::new(stderr).read_to_string(&mut err);
            let _ = child.wait();
            return Err(format!("vwf serve printed {:?} instead of {{ok, url, api}}; stderr: {}", line.trim(), err.trim()));
        };
        // The token file is written before the first line, so it is there now.
        let port = api.split('/').nth(2).and_then(|host| host.rsplit(':').next()).unwrap_or("");
        let token_file = home.join(format!("workflow-serve-{port}.token"));
        let Ok(token) = std::fs::read_to_string(&token_file).map(|t| t.trim().to_string()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("vwf serve wrote no API token to {}", token_file.display()));
        };
        let output = Arc::new(Mutex::new(Vec::new()));
        // Drained to the end, so a server writing more never blocks on a full pipe.
        let readers = vec![drain(stdout, "stdout", &output), drain(BufReader::new(stderr), "stderr", &output)];
        Ok(Server { child, home: home.to_path_buf(), api: api.trim_end_matches('/').to_string(), token, output, readers })
    }

    /// SIGTERM, then waits for the graceful stop (in-flight requests finish); kills it if that
    /// takes longer than the grace period. Answers how it ended and what it wrote.
    pub(super) fn stop(mut self) -> (Result<String, String>, Vec<String>) {
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: plain kill(2) on our own child's pid, which we have not waited for yet.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
        let deadline = Instant::now() + STOP_GRACE;
        let status: Result<ExitStatus, String> = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break Ok(status),
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                Ok(None) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break Err(format!("the server did not stop within {} s of SIGTERM; killed", STOP_GRACE.as_secs()));
                }
                Err(e) => break Err(format!("cannot wait for the server: {e}")),
            }
        };
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
        let output = self.output.lock().map(|o| o.clone()).unwrap_or_default();
        let status =
            status.and_then(|s| if s.success() { Ok(s.to_string()) } else { Err(format!("the server exited with {s} after SIGTERM")) });
        (status, output)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Only reached without `stop` (an early error): never leave the server behind.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn drain(reader: impl BufRead + Send + 'static, name: &'static str, into: &Arc<Mutex<Vec<String>>>) -> std::thread::JoinHandle<()> {
    let into = into.clone();
    std::thread::spawn(move || {
        for line in reader.lines().map_while(Result::ok) {
            if let Ok(mut v) = into.lock() {
                v.push(format!("[{name}] {line}"));
            }
        }
    })
}
