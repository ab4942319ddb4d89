//! Signed inbound webhooks (`mode: webhook`, `POST /hooks/<path>`), against a real `vwf serve`
//! without the API token: GitHub, Stripe, Slack and plain HMAC-SHA256 signatures computed here
//! by each sender's published algorithm start runs (202 at once, the run driven on); the same
//! signatures are cross-checked with `slack_sdk` and `stripe` (the senders' own libraries), and
//! the headers those libraries compute are accepted too. A flipped byte, another secret, a stale
//! timestamp, a replay, a missing header, an oversized body and an unknown path are refused,
//! write nothing, and the 401s are counted in `/metrics`.

use crate::common;

use common::Home;
use common::server::{Options, Server, eventually, send};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

const SECRET: &str = "It's a Secret to Everybody";

/// A delivery's headers, by name.
type Headers = Vec<(String, String)>;

fn sign(parts: &[&[u8]]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).expect("key");
    for p in parts {
        mac.update(p);
    }
    mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

fn hooked(path: &str, signature: &str, extra: Value) -> Value {
    let mut trigger =
        json!({"id": "start", "type": "trigger", "mode": "webhook", "path": path, "secret_env": "HOOK_SECRET", "signature": signature});
    for (k, v) in extra.as_object().expect("extra fields") {
        trigger[k] = v.clone();
    }
    json!({"nodes": [trigger, {"id": "said", "type": "output", "template": "got {{trigger.payload.n}}"}],
           "edges": [{"from": "start", "to": "said"}]})
}

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs() as i64
}

/// POSTs `body` to `/hooks/<path>` with `headers`, with no API token.
fn deliver(server: &Server, path: &str, headers: &[(String, String)], body: &[u8]) -> (u16, Value) {
    let mut req = server.bare.post(format!("{}/hooks/{path}", server.base)).header("content-type", "application/json").body(body.to_vec());
    for (k, v) in headers {
        req = req.header(k.as_str(), v.as_str());
    }
    send(req)
}

fn h(pairs: &[(&str, String)]) -> Headers {
    pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

fn runs_of(server: &Server, design: &str) -> usize {
    let (_, body) = server.get(&format!("/runs?design={design}&limit=1000"));
    body["runs"].as_array().map_or(0, Vec::len)
}

#[test]
fn signed_deliveries_start_runs_and_every_bad_one_is_refused_and_writes_nothing() {
    let home = Home::new();
    let server = Server::start_with(&home, Options { env: vec![("HOOK_SECRET", SECRET.to_string())], ..Options::default() });
    server.save("gh", hooked("github-prs", "github", json!({})));
    server.save("st", hooked("stripe-events", "stripe", json!({})));
    server.save("sl", hooked("slack-cmd", "slack", json!({})));
    server.save("plain", hooked("plain", "hmac-sha256", json!({"header": "X-Custom-Sig"})));
    server.save("unset", json!({"nodes": [{"id": "t", "type": "trigger", "mode": "webhook", "path": "unset", "secret_env": "NOT_SET_ANYWHERE", "signature": "github"}], "edges": []}));

    let body = br#"{"n": 7, "action": "closed"}"#;
    let t = now().to_string();
    let good: Vec<(&str, &str, Headers)> = vec![
        (
            "gh",
            "github-prs",
            h(&[
                ("X-Hub-Signature-256", format!("sha256={}", sign(&[body]))),
                ("X-GitHub-Delivery", "72d3162e".into()),
                ("X-GitHub-Event", "pull_request".into()),
            ]),
        ),
        ("st", "stripe-events", h(&[("Stripe-Signature", format!("t={t},v1={}", sign(&[t.as_bytes(), b".", body])))])),
        (
            "sl",
            "slack-cmd",
            h(&[
                ("X-Slack-Request-Timestamp", t.clone()),
                ("X-Slack-Signature", format!("v0={}", sign(&[b"v0:", t.as_bytes(), b":", body]))),
            ]),
        ),
        ("plain", "plain", h(&[("X-Custom-Sig", format!("sha256={}", sign(&[body])))])),
    ];
    for (design, path, headers) in &good {
        let (s, run) = deliver(&server, path, headers, body);
        assert_eq!(s, 202, "{design}: {run}");
        let id = run["run_id"].as_str().expect("run id").to_string();
        let done = eventually(&format!("{design}'s run to end"), 30, || {
            let (_, r) = server.get(&format!("/runs/{id}"));
            (r["status"] == "done").then_some(r)
        });
        assert_eq!(done["trigger"]["mode"], "webhook");
        assert_eq!(done["trigger"]["input"]["payload"], json!({"n": 7, "action": "closed"}));
        assert_eq!(done["trigger"]["input"]["hook"], json!(path));
        assert_eq!(done["outputs"]["said"]["text"], "got 7");
        eventually(&format!("{design}'s run to be listed"), 10, || (runs_of(&server, design) == 1).then_some(()));
    }
    let (_, gh) = server.get("/runs?design=gh&limit=1");
    let gh_run = gh["runs"][0]["run_id"].as_str().unwrap().to_string();
    let (_, gh_run) = server.get(&format!("/runs/{gh_run}"));
    assert_eq!(gh_run["trigger"]["input"]["headers"]["x-github-event"], "pull_request");
    assert!(gh_run["trigger"]["input"]["headers"].get("x-hub-signature-256").is_none(), "no signature is kept");

    // Every bad delivery: refused, nothing written (the names of the home's files, but for the
    // commit log, which the runs above may still be checkpointing).
    let written = || home.files().into_iter().filter(|f| !f.starts_with("workflow-runs/.commit")).collect::<Vec<_>>();
    let files = written();
    let stale = (now() - 600).to_string();
    let mut flipped = body.to_vec();
    flipped[3] ^= 1;
    let other_secret = {
        let mut mac = Hmac::<Sha256>::new_from_slice(b"another secret").unwrap();
        mac.update(body);
        mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    let bad: Vec<(&str, &str, Headers, Vec<u8>, u16)> = vec![
        ("a flipped byte", "github-prs", good[0].2.clone(), flipped.clone(), 401),
        (
            "another secret",
            "github-prs",
            h(&[("X-Hub-Signature-256", format!("sha256={other_secret}")), ("X-GitHub-Delivery", "other".into())]),
            body.to_vec(),
            401,
        ),
        ("a missing header", "github-prs", h(&[("X-GitHub-Delivery", "nosig".into())]), body.to_vec(), 401),
        ("a malformed header", "github-prs", h(&[("X-Hub-Signature-256", "md5=abc".into())]), body.to_vec(), 401),
        (
            "a stale stripe timestamp",
            "stripe-events",
            h(&[("Stripe-Signature", format!("t={stale},v1={}", sign(&[stale.as_bytes(), b".", body])))]),
            body.to_vec(),
            401,
        ),
        (
            "a stale slack timestamp",
            "slack-cmd",
            h(&[
                ("X-Slack-Request-Timestamp", stale.clone()),
                ("X-Slack-Signature", format!("v0={}", sign(&[b"v0:", stale.as_bytes(), b":", body]))),
            ]),
            body.to_vec(),
            401,
        ),
        ("a flipped slack byte", "slack-cmd", good[2].2.clone(), flipped.clone(), 401),
        ("an unset secret", "unset", good[0].2.clone(), body.to_vec(), 401),
        ("a github replay", "github-prs", good[0].2.clone(), body.to_vec(), 409),
        (
            "a github replay under a new delivery id",
            "github-prs",
            h(&[("X-Hub-Signature-256", format!("sha256={}", sign(&[body]))), ("X-GitHub-Delivery", "forged".into())]),
            body.to_vec(),
            409,
        ),
        ("a stripe replay", "stripe-events", good[1].2.clone(), body.to_vec(), 409),
        ("a slack replay", "slack-cmd", good[2].2.clone(), body.to_vec(), 409),
        ("a plain replay", "plain", good[3].2.clone(), body.to_vec(), 409),
        ("an unknown path", "nobody-here", good[0].2.clone(), body.to_vec(), 404),
        ("a bad path", "a.b", good[0].2.clone(), body.to_vec(), 404),
        ("an oversized body", "github-prs", good[0].2.clone(), vec![b' '; 2 * 1024 * 1024], 413),
    ];
    for (what, path, headers, body, status) in &bad {
        let (s, b) = deliver(&server, path, headers, body);
        assert_eq!(s, *status, "{what}: {b}");
        assert_eq!(b["ok"], false, "{what}: {b}");
    }
    assert_eq!(written(), files, "a refused delivery writes nothing");
    for design in ["gh", "st", "sl", "plain"] {
        assert_eq!(runs_of(&server, design), 1, "{design}");
    }
    assert_eq!(runs_of(&server, "unset"), 0);
    let (_, replay) = deliver(&server, "github-prs", &good[0].2, body);
    assert!(
        replay["error"].as_str().is_some_and(|e| e.contains("replay") && e.contains(gh["runs"][0]["run_id"].as_str().unwrap())),
        "{replay}"
    );

    // The refusals are counted by reason.
    let metrics = server
        .bare
        .get(server.url("/metrics"))
        .bearer_auth(server.token.as_deref().unwrap_or(""))
        .send()
        .expect("metrics")
        .text()
        .expect("text");
    for (reason, at_least) in [("mismatch", 3.0), ("missing", 1.0), ("malformed", 1.0), ("stale", 2.0), ("no_secret", 1.0)] {
        let line = metrics
            .lines()
            .find(|l| l.starts_with(&format!("vwf_webhooks_refused_total{{reason=\"{reason}\"}}")))
            .unwrap_or_else(|| panic!("no {reason} count:\n{metrics}"));
        let n: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        assert!(n >= at_least, "{line}");
    }

    // Slack's check of a new Events API URL is answered with its challenge, and starts no run.
    let check = br#"{"token": "x", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", "type": "url_verification"}"#;
    let ts = now().to_string();
    let headers = h(&[
        ("X-Slack-Request-Timestamp", ts.clone()),
        ("X-Slack-Signature", format!("v0={}", sign(&[b"v0:", ts.as_bytes(), b":", check]))),
    ]);
    let (s, b) = deliver(&server, "slack-cmd", &headers, check);
    assert_eq!((s, &b), (200, &json!({"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"})));
    assert_eq!(runs_of(&server, "sl"), 1);

    // A path starts one design: another design saved with it is refused, naming the holder.
    let (s, b) = server.post("/designs/copycat", json!({"graph": hooked("github-prs", "github", json!({}))}));
    assert_eq!((s, &b["ok"]), (200, &json!(false)), "{b}");
    assert!(
        b["errors"]
            .as_array()
            .is_some_and(|e| e.iter().any(|i| i["field"] == "path" && i["message"].as_str().is_some_and(|m| m.contains("gh")))),
        "{b}"
    );
    server.save("gh", hooked("github-prs", "github", json!({"tolerance_seconds": 60})));

    // A disabled design's hook starts nothing.
    let (s, _) = server.post("/designs/plain/disable", json!({}));
    assert_eq!(s, 200);
    let fresh = br#"{"n": 8}"#;
    let (s, b) = deliver(&server, "plain", &h(&[("X-Custom-Sig", sign(&[fresh]))]), fresh);
    assert_eq!(s, 409, "{b}");
    assert_eq!(runs_of(&server, "plain"), 1);
}

#[test]
fn the_senders_own_libraries_agree_with_vwf_on_stripe_and_slack_signatures() {
    let Some(python) = common::python_env("hooks") else { return };
    let home = Home::new();
    let server = Server::start_with(&home, Options { env: vec![("HOOK_SECRET", SECRET.to_string())], ..Options::default() });
    server.save("st", hooked("stripe-events", "stripe", json!({})));
    server.save("sl", hooked("slack-cmd", "slack", json!({})));
    let body = r#"{"n": 9, "type": "invoice.paid"}"#;
    let t = now().to_string();
    let slack = format!("v0={}", sign(&[b"v0:", t.as_bytes(), b":", body.as_bytes()]));
    let stripe = format!("t={t},v1={}", sign(&[t.as_bytes(), b".", body.as_bytes()]));
    let script = common::repo().join("tests/python/webhook_signatures.py");
    let out = std::process::Command::new(python).arg(script).args([SECRET, body, &t, &slack, &stripe]).output().expect("run python");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let checked: Value = serde_json::from_slice(&out.stdout).expect("the script's JSON");
    assert_eq!(checked["accepts"], json!({"slack": true, "stripe": true}), "the libraries accept the signatures vwf checks");
    for (path, scheme) in [("slack-cmd", "slack"), ("stripe-events", "stripe")] {
        let headers: Vec<(String, String)> = checked["signed"][scheme]
            .as_object()
            .expect("headers")
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
            .collect();
        let (s, b) = deliver(&server, path, &headers, body.as_bytes());
        assert_eq!(s, 202, "{scheme}: vwf accepts what the library signed: {b}");
    }
}

/// A webhook whose trigger debounces per PR, and one that throttles: a held delivery answers 202
/// with what became of it and starts nothing now; a dropped one is counted.
#[test]
fn a_debounced_or_throttled_webhook_answers_what_became_of_the_delivery() {
    let home = Home::new();
    let server = Server::start_with(&home, Options { env: vec![("HOOK_SECRET", SECRET.to_string())], ..Options::default() });
    server.save("per-pr", hooked("prs", "github", json!({"debounce": {"period": "1h", "key": "{{trigger.payload.pr}}"}})));
    server.save("gentle", hooked("gentle", "github", json!({"throttle": {"limit": 1, "period": "1h"}})));
    let github = |path: &str, body: &str| {
        let headers = h(&[("X-Hub-Signature-256", format!("sha256={}", sign(&[body.as_bytes()])))]);
        deliver(&server, path, &headers, body.as_bytes())
    };
    let counts: Vec<(u16, Value, Value)> = [r#"{"pr": 5, "n": 1}"#, r#"{"pr": 5, "n": 2}"#, r#"{"pr": 6, "n": 3}"#]
        .iter()
        .map(|body| {
            let (s, held) = github("prs", body);
            (s, held["held"].clone(), held["count"].clone())
        })
        .collect();
    assert_eq!(
        counts,
        [(202, json!("debounced"), json!(1)), (202, json!("debounced"), json!(2)), (202, json!("debounced"), json!(1))],
        "each delivery folds into its PR's burst"
    );
    assert_eq!(runs_of(&server, "per-pr"), 0, "a burst starts nothing until it is quiet for its period");
    // The same delivery again is a replay: refused, not one more arrival.
    let (s, replay) = github("prs", r#"{"pr": 5, "n": 1}"#);
    assert_eq!(s, 409, "{replay}");
    assert!(replay["error"].as_str().is_some_and(|e| e.contains("held by the trigger's debounce or throttle")), "{replay}");

    let (s, first) = github("gentle", r#"{"n": 1}"#);
    assert!(s == 202 && first["run_id"].is_string(), "{first}");
    let (s, second) = github("gentle", r#"{"n": 2}"#);
    assert_eq!((s, second["held"].as_str(), second["run_id"].clone()), (202, Some("dropped"), Value::Null), "{second}");
    assert!(second["reason"].as_str().is_some_and(|r| r.starts_with("throttled")), "{second}");
    assert_eq!(runs_of(&server, "gentle"), 1);
    assert_eq!(server.metric("vwf_trigger_arrivals_dropped_total{design=\"gentle\"}"), 1.0);
}
