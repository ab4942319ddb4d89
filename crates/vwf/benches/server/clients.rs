//! The closed-loop clients of the load phases: tasks that all start together, each sending its
//! requests one after another, and the check every answer must pass.
//!
//! Every request's latency is kept, whatever it answered; an answer is right only when it is a 200
//! with the body its route promises.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::load::{Answers, Request};
use crate::{DESIGN, LIST_LIMIT, input};

/// `clients` closed-loop tasks, each sending `per_client` requests one after another; all start
/// together. Every request's latency is kept.
pub(super) async fn drive(client: &reqwest::Client, api: &Arc<String>, request: Request, clients: usize, per_client: usize) -> Answers {
    let start = Arc::new(tokio::sync::Barrier::new(clients + 1));
    let mut tasks = Vec::with_capacity(clients);
    for c in 0..clients {
        let (client, api, start) = (client.clone(), api.clone(), start.clone());
        tasks.push(tokio::spawn(async move {
            let mut out = Answers { times: Vec::with_capacity(per_client), wall: Duration::ZERO, errors: Vec::new(), run_ids: Vec::new() };
            start.wait().await;
            for k in 0..per_client {
                let i = c * per_client + k;
                let t = Instant::now();
                let answer = match request {
                    Request::Run => client.post(format!("{api}/designs/{DESIGN}/run")).json(&json!({"input": input(i)})).send().await,
                    Request::List => client.get(format!("{api}/runs?limit={LIST_LIMIT}")).send().await,
                };
                let checked = check(request, answer).await;
                out.times.push(t.elapsed());
                match checked {
                    Ok(Some(id)) => out.run_ids.push(id),
                    Ok(None) => {}
                    Err(e) => out.errors.push(e),
                }
            }
            out
        }));
    }
    start.wait().await;
    let t = Instant::now();
    gather(tasks, t).await
}

/// `GET /runs/{id}` of every id, shared out to `clients` closed-loop tasks.
pub(super) async fn drive_ids(client: &reqwest::Client, api: &Arc<String>, clients: usize, ids: &Arc<[String]>) -> Answers {
    let clients = clients.min(ids.len()).max(1);
    let start = Arc::new(tokio::sync::Barrier::new(clients + 1));
    let mut tasks = Vec::with_capacity(clients);
    for c in 0..clients {
        let (client, api, start, ids) = (client.clone(), api.clone(), start.clone(), ids.clone());
        tasks.push(tokio::spawn(async move {
            let mut out = Answers { times: Vec::new(), wall: Duration::ZERO, errors: Vec::new(), run_ids: Vec::new() };
            start.wait().await;
            for id in ids.iter().skip(c).step_by(clients) {
                let t = Instant::now();
                let answer = client.get(format!("{api}/runs/{id}")).send().await;
                // `GET /runs/{id}` answers a run like `POST …/run` does.
                let checked = check(Request::Run, answer).await;
                out.times.push(t.elapsed());
                match checked {
                    Ok(Some(got)) if got == *id => out.run_ids.push(got),
                    Ok(other) => out.errors.push(format!("GET /runs/{id} answered run {other:?}")),
                    Err(e) => out.errors.push(format!("GET /runs/{id}: {e}")),
                }
            }
            out
        }));
    }
    start.wait().await;
    let t = Instant::now();
    gather(tasks, t).await
}

async fn gather(tasks: Vec<tokio::task::JoinHandle<Answers>>, began: Instant) -> Answers {
    let mut all = Answers { times: Vec::new(), wall: Duration::ZERO, errors: Vec::new(), run_ids: Vec::new() };
    for task in tasks {
        match task.await {
            Ok(a) => {
                all.times.extend(a.times);
                all.errors.extend(a.errors);
                all.run_ids.extend(a.run_ids);
            }
            Err(e) => all.errors.push(format!("a client task failed: {e}")),
        }
    }
    all.wall = began.elapsed();
    all
}

/// An answer is right when it is a 200 with the body its route promises: a `done` run (its id
/// returned), or a listing of `LIST_LIMIT` readable runs.
async fn check(request: Request, answer: reqwest::Result<reqwest::Response>) -> Result<Option<String>, String> {
    let response = answer.map_err(|e| format!("transport: {e}"))?;
    let status = response.status();
    let text = response.text().await.map_err(|e| format!("{status}, body unread: {e}"))?;
    let body: Value = serde_json::from_str(&text).map_err(|_| format!("{status}, not JSON: {}", short(&text)))?;
    if status != 200 {
        return Err(format!("{status}: {}", short(&text)));
    }
    match request {
        Request::Run => {
            if body["status"] != json!("done") {
                return Err(format!("run not done: {}", short(&text)));
            }
            body["run_id"].as_str().map(|id| Some(id.to_string())).ok_or_else(|| format!("no run_id: {}", short(&text)))
        }
        Request::List => {
            let runs = body["runs"].as_array().ok_or_else(|| format!("no runs: {}", short(&text)))?;
            if body["ok"] != json!(true) || runs.len() != LIST_LIMIT {
                return Err(format!("ok={} and {} runs (expected {LIST_LIMIT})", body["ok"], runs.len()));
            }
            if let Some(bad) = runs.iter().find(|r| r["ok"] == json!(false) || r["status"] != json!("done")) {
                return Err(format!("a listed run is not a done run: {}", short(&bad.to_string())));
            }
            Ok(None)
        }
    }
}

pub(super) fn short(text: &str) -> String {
    let t: String = text.chars().take(300).collect();
    if t.len() < text.len() { format!("{t}…") } else { t }
}
