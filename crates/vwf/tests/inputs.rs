//! What each step received, and where secrets may go: one design uses every kind of secret a run
//! can meet — the ones the config names (an agent API key, Telegram and Slack bot tokens, a
//! Discord webhook URL, a webhook signing key, all read from the environment) and the ones a
//! design itself holds (a command's `env` entry and a URL's user info), and the `{{secrets.NAME}}`
//! references of `[secrets]` (in `Authorization` and `X-Api-Key` headers and a command's `env`,
//! with a peer and a command that echo them back). After runs of it (a failure, its retry from the failed step and from the
//! start) every file of the home, and on PostgreSQL every row, is scanned: a config secret (a
//! `[secrets]` value included) is in none, a design secret only in the design, its versions and the runs' copy of it (`plan`, which
//! a retry from the failed step runs). The run result shows each step's inputs with secrets as
//! `***`.

use crate::common;
use crate::on_both_backends;

on_both_backends!(no_secret_is_stored);

use common::peer::Peer;
use common::{Backend, Home, run_file};
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path, path_regex};
use wiremock::{Mock, ResponseTemplate};

/// A fresh random secret per test run, so nothing else in the home can hold it by chance.
fn secret(tag: &str) -> String {
    let mut bytes = [0u8; 12];
    getrandom::fill(&mut bytes).expect("random");
    format!("{tag}{}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

struct Secrets {
    agent_key: String,
    telegram: String,
    slack: String,
    discord: String,
    signing: String,
    command_env: String,
    authorization: String,
    api_key: String,
    userinfo: String,
}

impl Secrets {
    fn new() -> Secrets {
        Secrets {
            agent_key: secret("sk-"),
            telegram: format!("123:{}", secret("AAH")),
            slack: secret("xoxb-"),
            discord: secret("dwh"),
            signing: secret("sig"),
            command_env: secret("cmd"),
            authorization: secret("bearer"),
            api_key: secret("apikey"),
            userinfo: secret("pw"),
        }
    }
    fn named_by_config(&self) -> [&str; 7] {
        [&self.agent_key, &self.telegram, &self.slack, &self.discord, &self.signing, &self.authorization, &self.api_key]
    }
    fn written_in_design(&self) -> [&str; 2] {
        [&self.command_env, &self.userinfo]
    }
}

/// Answers every platform and the model like the real services do.
fn peer_for(s: &Secrets) -> Peer {
    let peer = Peer::start();
    let ok = |body: Value| ResponseTemplate::new(200).set_body_json(body);
    peer.mount(Mock::given(method("POST")).and(path("/v1/chat/completions")).respond_with(ok(json!({
        "choices": [{"message": {"role": "assistant", "content": "a sunny brief"}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
    }))));
    peer.mount(
        Mock::given(method("POST"))
            .and(path(format!("/bot{}/sendMessage", s.telegram)))
            .respond_with(ok(json!({"ok": true, "result": {"message_id": 7}}))),
    );
    peer.mount(Mock::given(method("POST")).and(path("/chat.postMessage")).respond_with(ok(json!({"ok": true, "ts": "1.2"}))));
    peer.mount(Mock::given(method("POST")).and(path(format!("/api/webhooks/1/{}", s.discord))).respond_with(ok(json!({"id": "99"}))));
    peer.mount(Mock::given(method("POST")).and(path("/hook")).respond_with(ResponseTemplate::new(200).set_body_string("ok")));
    // The weather service echoes the key it was sent, as some services do in errors and debug fields.
    peer.mount(
        Mock::given(method("GET"))
            .and(path_regex("^/weather"))
            .and(header("x-api-key", s.api_key.as_str()))
            .and(header("authorization", format!("Bearer {}", s.authorization).as_str()))
            .respond_with(ok(json!({"sky": "clear", "echo": {"key": s.api_key}}))),
    );
    peer
}

fn config(peer: &Peer) -> String {
    let uri = peer.uri();
    format!(
        "[agent]\nbackend = \"openai\"\nbase_url = \"{uri}/v1\"\napi_key_env = \"VWF_T_AGENT_KEY\"\ndefault_model = \"m1\"\n\n\
         [channels.telegram]\ntoken_env = \"VWF_T_TG\"\nhome = \"1\"\napi_base = \"{uri}\"\n\n\
         [channels.slack]\ntoken_env = \"VWF_T_SLACK\"\nhome = \"#ops\"\napi_base = \"{uri}\"\n\n\
         [channels.discord.webhooks]\nalerts = \"VWF_T_DISCORD\"\n\n\
         [channels.webhook.alerts]\nurl = \"{uri}/hook\"\nsecret_env = \"VWF_T_SIGNING\"\n\n\
         [secrets]\nAUTH = \"VWF_T_AUTH\"\nAPI_KEY = \"VWF_T_API_KEY\"\n\n{}",
        common::LOCAL_HTTP
    )
}

/// A command that reads a file the test creates later (so the first run fails there), an http
/// call, an agent, and a delivery to each platform.
fn design(s: &Secrets, peer: &Peer, gate_file: &str) -> Value {
    let host = peer.uri().replace("http://", "");
    json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "look", "type": "command", "run": "cat {{trigger.file}} && printf '%s' \"$KEY\" >&2",
             "env": {"API_TOKEN": s.command_env, "KEY": "{{secrets.API_KEY}}"}},
            {"id": "call", "type": "http", "url": format!("http://me:{}@{host}/weather?city={{{{nodes.look}}}}", s.userinfo),
             "headers": {"Authorization": "Bearer {{secrets.AUTH}}", "X-Api-Key": "{{secrets.API_KEY}}", "Accept": "application/json"}},
            {"id": "brief", "type": "agent", "prompt": "Brief on {{nodes.call.body.sky}} skies"},
            {"id": "tg", "type": "output", "deliver": "channel", "target": "telegram:1", "template": "{{nodes.brief}}"},
            {"id": "slack", "type": "output", "deliver": "notification", "target": "slack", "template": "{{nodes.brief}}"},
            {"id": "discord", "type": "output", "deliver": "channel", "target": "discord:alerts", "template": "{{nodes.brief}}"},
            {"id": "hook", "type": "output", "deliver": "channel", "target": "webhook:alerts", "template": "{{nodes.brief}}"},
            {"id": "tell", "type": "emit", "event": "brief.sent", "payload": {"file": gate_file}}
        ],
        "edges": [
            {"from": "start", "to": "look"}, {"from": "look", "to": "call"}, {"from": "call", "to": "brief"},
            {"from": "brief", "to": "tg"}, {"from": "brief", "to": "slack"}, {"from": "brief", "to": "discord"},
            {"from": "brief", "to": "hook"}, {"from": "brief", "to": "tell"}
        ]
    })
}

/// `vwf --json <args>` with the secrets in the environment, on a thread the peer's runtime lends.
fn vwf(peer: &Peer, home: &Home, s: &Secrets, args: &[&str]) -> (i32, Value) {
    let discord = format!("{}/api/webhooks/1/{}", peer.uri(), s.discord);
    let mut cmd = home.vwf();
    cmd.env("VWF_T_AGENT_KEY", &s.agent_key)
        .env("VWF_T_TG", &s.telegram)
        .env("VWF_T_SLACK", &s.slack)
        .env("VWF_T_DISCORD", discord)
        .env("VWF_T_SIGNING", &s.signing)
        .env("VWF_T_AUTH", &s.authorization)
        .env("VWF_T_API_KEY", &s.api_key)
        .arg("--json")
        .args(args);
    let out = peer.rt.block_on(peer.rt.spawn_blocking(move || cmd.output().expect("run vwf"))).expect("the CLI thread");
    (common::code(&out), common::parse(&out))
}

/// Runs the design once failing (the command's file is missing), retries it from the failed
/// step and from the start once the file exists; returns the first run's id and its retry's.
fn runs_with_every_secret(home: &Home, peer: &Peer, s: &Secrets) -> (String, String) {
    std::fs::write(home.path().join("visual-workflow.toml"), config(peer)).expect("write config");
    let gate = home.path().join("city.txt");
    let gate = gate.to_str().expect("utf-8 path");
    home.save("brief", &design(s, peer, gate));
    let input = json!({"file": gate}).to_string();
    let (code, failed) = vwf(peer, home, s, &["run", "brief", "--input", &input]);
    assert_eq!((code, failed["failed_node"].as_str()), (1, Some("look")), "{failed:#}");
    std::fs::write(gate, "Oslo").expect("write file");
    let id = failed["run_id"].as_str().expect("id").to_string();
    let (code, retried) = vwf(peer, home, s, &["run", "retry", &id]);
    assert_eq!((code, retried["status"].as_str()), (0, Some("done")), "{retried:#}");
    let (code, again) = vwf(peer, home, s, &["run", "retry", &id, "--from-start"]);
    assert_eq!((code, again["status"].as_str(), again["retry_of"].as_str()), (0, Some("done"), Some(id.as_str())), "{again:#}");
    assert_eq!(retried["deliveries"].as_array().map(Vec::len), Some(4), "{retried:#}");
    // The secrets reached the peer (it answers only when both headers carry them) and the
    // command's environment, and what echoed them back is recorded with `***` in their place.
    assert_eq!(retried["outputs"]["call"]["body"]["echo"]["key"], "***", "{retried:#}");
    assert_eq!(retried["outputs"]["look"]["stderr"], "***", "{retried:#}");
    let again = again["run_id"].as_str().expect("id").to_string();
    (id, again)
}

/// Where a stored text lives, and whether a design secret may be in it (the design as the user
/// wrote it, or a run document whose `plan` copies it).
#[derive(Debug, PartialEq)]
enum Place {
    Design,
    /// A run document: a design secret may be in its `plan` only.
    RunDocument,
    Other,
}

/// Every stored byte of the home: its files, and on PostgreSQL every row of every table plus
/// each run's document as a reader assembles it.
fn everything_stored(home: &Home) -> Vec<(String, Place, String)> {
    let mut all: Vec<(String, Place, String)> = common::snapshot(home)
        .into_iter()
        .map(|(p, b)| {
            let name = p.display().to_string();
            // The design, and its versions (each a copy of the design as saved).
            let place = if name.contains("brief") && (name.contains("design") || p.starts_with("workflow-versions")) {
                Place::Design
            } else if p.starts_with("workflow-runs") && name.ends_with(".json") {
                Place::RunDocument
            } else {
                Place::Other
            };
            (name, place, String::from_utf8_lossy(&b).into_owned())
        })
        .collect();
    if let Some(url) = &home.database {
        for (table, row) in common::pg::every_row(url) {
            // Design and version rows hold the design; a whole run row too (its JSON is checked below).
            let place =
                if ["vwf_designs", "vwf_design_versions", "vwf_runs"].contains(&table.as_str()) { Place::Design } else { Place::Other };
            all.push((format!("a row of {table}"), place, row));
        }
        for id in home.stored_run_ids() {
            all.push((format!("run {id} as read"), Place::RunDocument, common::pg::stored_run(url, &id).unwrap_or_default()));
        }
    }
    all
}

/// After runs that meet every kind of secret, no stored byte holds a config secret, and a
/// design secret is only where the user wrote it (the design, and the runs' copies of it).
fn no_secret_is_stored(backend: Backend) {
    let home = Home::with_backend(backend);
    let s = Secrets::new();
    let peer = peer_for(&s);
    let (first, second) = runs_with_every_secret(&home, &peer, &s);
    let stored = everything_stored(&home);
    assert!(stored.len() > 2, "nothing was stored: {stored:?}");
    assert!(stored.iter().filter(|(_, p, _)| *p == Place::RunDocument).count() >= 2, "the runs are not stored");
    for (name, place, text) in &stored {
        for secret in s.named_by_config() {
            assert!(!text.contains(secret), "{name} holds a secret the config names");
        }
        let checked = match place {
            Place::Design => continue,
            Place::RunDocument => {
                let mut doc: serde_json::Map<String, Value> =
                    serde_json::from_str(text).unwrap_or_else(|e| panic!("{name} is not a run document ({e})"));
                doc.remove("plan");
                Value::Object(doc).to_string()
            }
            Place::Other => text.clone(),
        };
        for secret in s.written_in_design() {
            assert!(!checked.contains(secret), "{name} holds a design secret outside the plan: {checked}");
        }
    }
    for id in [&first, &second] {
        let (_, shown) = vwf(&peer, &home, &s, &["show", id]);
        let text = shown.to_string();
        for secret in s.named_by_config().into_iter().chain(s.written_in_design()) {
            assert!(!text.contains(secret), "the run result of {id} holds a secret");
        }
    }
}

/// The inputs each kind of step received, as the run result shows them (volatile values
/// replaced: the local server's port, the temporary file).
#[test]
fn the_inputs_of_each_step_kind() {
    let home = Home::new();
    let s = Secrets::new();
    let peer = peer_for(&s);
    let (_, second) = runs_with_every_secret(&home, &peer, &s);
    let run = run_file(&home, &second);
    let mut inputs = serde_json::Map::new();
    for step in run["steps"].as_array().expect("steps") {
        let node = step["node"].as_str().expect("node").to_string();
        let text = step["inputs"]
            .to_string()
            .replace(&peer.uri().replace("http://", ""), "PEER")
            .replace(home.path().to_str().expect("utf-8"), "HOME");
        inputs.insert(node, serde_json::from_str(&text).expect("json"));
    }
    insta::assert_json_snapshot!("inputs_of_each_step_kind", inputs);
}
