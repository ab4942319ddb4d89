//! Rate limits steps share (`[limits.<name>]`, `rate_limit` on http and agent steps), through a
//! real server and a real local HTTP endpoint that notes when each request reaches it: 300 http
//! steps of 30 runs under `per_second = 20, burst = 2` all succeed, and the endpoint never sees
//! more than 22 requests within any second; steps over the limit wait (`waiting`, with the limit
//! named) instead of failing; a step naming a limit the config lacks fails saying so.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::Home;
use common::server::{Server, eventually, write_config};
use serde_json::{Value, json};

/// A local HTTP/1.1 endpoint answering `200 ok` to every request, noting when each arrived.
struct Endpoint {
    port: u16,
    arrivals: Arc<Mutex<Vec<Instant>>>,
}

impl Endpoint {
    fn start() -> Endpoint {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        let noted = arrivals.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let noted = noted.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                    let mut stream = stream;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        noted.lock().expect("arrivals").push(Instant::now());
                        // The rest of the head (GET: no body).
                        loop {
                            let mut header = String::new();
                            if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                                break;
                            }
                        }
                        if stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok").is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Endpoint { port, arrivals }
    }

    /// The most requests that arrived within any one second.
    fn busiest_second(&self) -> usize {
        let mut at = self.arrivals.lock().expect("arrivals").clone();
        at.sort();
        (0..at.len()).map(|i| at[i..].iter().take_while(|t| t.duration_since(at[i]) < Duration::from_secs(1)).count()).max().unwrap_or(0)
    }

    fn count(&self) -> usize {
        self.arrivals.lock().expect("arrivals").len()
    }
}

fn fetcher(port: u16, limit: &str) -> Value {
    json!({"nodes": [
        {"id": "start", "type": "trigger", "mode": "manual"},
        {"id": "each", "type": "loop", "over": "{{trigger.items}}", "concurrency": 10},
        {"id": "fetch", "type": "http", "url": format!("http://127.0.0.1:{port}/item/{{{{item}}}}"), "rate_limit": limit}
    ], "edges": [{"from": "start", "to": "each"}, {"from": "each", "to": "fetch", "label": "each"}]})
}

/// Timed against the wall clock at the endpoint, so it runs alone: `scripts/test` runs it after
/// the suite, when no other test competes for the machine's cores.
#[test]
#[ignore = "timing: run alone by scripts/test after the suite"]
fn three_hundred_steps_under_a_shared_limit_never_pass_it_and_none_fail() {
    let endpoint = Endpoint::start();
    let home = Home::new();
    write_config(&home, "[http]\nallow = [\"127.0.0.1\"]\n\n[limits.local]\nper_second = 20\nburst = 2\n");
    let server = Server::start(&home);
    // Three designs share the limit.
    for name in ["fetch-a", "fetch-b", "fetch-c"] {
        server.save(name, fetcher(endpoint.port, "local"));
    }
    let ids: Vec<String> = (0..30)
        .map(|i| {
            let design = ["fetch-a", "fetch-b", "fetch-c"][i % 3];
            let (s, run) =
                server.post(&format!("/designs/{design}/run"), json!({"input": {"items": (0..10).collect::<Vec<_>>()}, "wait": false}));
            assert_eq!(s, 200, "{run}");
            run["run_id"].as_str().expect("run id").to_string()
        })
        .collect();
    // Some step waits for the limit meanwhile, and says which.
    let waiting = eventually("a step to wait for the limit", 60, || {
        ids.iter().find_map(|id| {
            let (_, run) = server.get(&format!("/runs/{id}"));
            let pending = run["pending"].clone();
            (pending["type"] == "wait" && pending["rate_limit"] == "local").then_some(run)
        })
    });
    assert!(waiting["status"] == "waiting" || waiting["status"] == "running", "the run goes on with its other steps: {waiting}");
    let runs = eventually("every run to end", 240, || {
        let runs: Vec<Value> = ids.iter().map(|id| server.get(&format!("/runs/{id}")).1).collect();
        runs.iter().all(|r| r["status"] == "done" || r["status"] == "failed").then_some(runs)
    });
    for run in &runs {
        assert_eq!(run["status"], "done", "no step fails for the limit: {run}");
    }
    assert_eq!(endpoint.count(), 300);
    let busiest = endpoint.busiest_second();
    assert!(busiest <= 22, "{busiest} requests reached the endpoint within one second (limit 20 + burst 2)");
    eprintln!("busiest second: {busiest} requests");
}

#[test]
fn a_step_naming_a_limit_the_config_lacks_fails_saying_so() {
    let endpoint = Endpoint::start();
    let home = Home::new();
    write_config(&home, "[http]\nallow = [\"127.0.0.1\"]\n");
    let server = Server::start(&home);
    server.save("unknown", fetcher(endpoint.port, "nowhere"));
    let (s, run) = server.post("/designs/unknown/run", json!({"input": {"items": [1]}}));
    assert_eq!((s, run["status"].as_str()), (200, Some("failed")), "{run}");
    assert!(run["error"].as_str().is_some_and(|e| e.contains("rate limit \"nowhere\" is not in the config")), "{run}");
    assert_eq!(endpoint.count(), 0);
}
