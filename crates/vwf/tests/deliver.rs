//! Deliveries as a user meets them: `vwf run` in a child process sends an output node's message
//! to local servers that speak the real wire formats of Telegram, Slack, Discord and a signed
//! webhook (wiremock). The config lives in `<home>/visual-workflow.toml`, secrets reach the child
//! only through its environment, and the run records exactly what the platform answered.
//!
//! The servers live on a multi-threaded tokio runtime owned by the test; the CLI child runs in
//! `spawn_blocking` on that runtime while its workers answer the requests.

use crate::common;

use std::path::Path;

use common::Home;
use common::peer::Peer;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use wiremock::matchers::{body_json, header, method, path, query_param};
use wiremock::{Mock, ResponseTemplate};

const TG_TOKEN: &str = "123456789:AAH-test-token-do-not-leak";
const SLACK_TOKEN: &str = "xoxb-test-slack-token-do-not-leak";
const WEBHOOK_SECRET: &str = "webhook-signing-secret-do-not-leak";
const DISCORD_TOKEN: &str = "discordWebhookTokenDoNotLeak";

impl Peer {
    /// Runs the CLI on a blocking thread of this runtime while the server answers.
    fn run(&self, home: &Home, deliver: &str, target: &str, env: &[(&str, &str)]) -> Outcome {
        let mut cmd = home.vwf();
        for (k, v) in env {
            cmd.env(k, v);
        }
        run_with(&self.rt, home, cmd, deliver, target)
    }
}

/// What one `vwf run` printed and answered.
struct Outcome {
    code: i32,
    run: Value,
    stdout: String,
    stderr: String,
}

impl Outcome {
    fn delivery(&self) -> &Value {
        let d = &self.run["deliveries"];
        assert_eq!(d.as_array().map(Vec::len), Some(1), "one delivery expected: {}", self.run);
        &d[0]
    }

    fn assert_delivered(&self, target: &str, detail: &str) {
        assert_eq!((self.code, self.run["status"].as_str()), (0, Some("done")), "{}\nstderr: {}", self.run, self.stderr);
        let d = self.delivery();
        assert_eq!(
            (&d["node"], &d["target"], &d["ok"], &d["detail"]),
            (&json!("send"), &json!(target), &json!(true), &json!(detail)),
            "{}",
            self.run
        );
        assert_eq!(self.run["outputs"]["send"]["deliveries"][0], *d, "{}", self.run);
        assert_eq!(self.run["outputs"]["send"]["text"], "hello world", "{}", self.run);
    }

    fn assert_failed(&self, target: &str, detail: &str) {
        assert_eq!((self.code, self.run["status"].as_str()), (1, Some("failed")), "{}", self.run);
        assert_eq!(self.run["failed_node"], "send", "{}", self.run);
        let d = self.delivery();
        assert_eq!((&d["target"], &d["ok"], &d["detail"]), (&json!(target), &json!(false), &json!(detail)), "{}", self.run);
        assert_eq!(self.run["error"], format!("delivery to {target} failed: {detail}"), "{}", self.run);
    }
}

/// A trigger and one output node `send` that delivers "hello {{trigger.who}}".
fn graph(deliver: &str, target: &str) -> Value {
    json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "send", "type": "output", "deliver": deliver, "target": target, "template": "hello {{trigger.who}}"}
        ],
        "edges": [{"from": "start", "to": "send"}]
    })
}

fn run_with(rt: &tokio::runtime::Runtime, home: &Home, mut cmd: assert_cmd::Command, deliver: &str, target: &str) -> Outcome {
    home.save("deliver", &graph(deliver, target));
    cmd.args(["--json", "run", "deliver", "--input", r#"{"who": "world"}"#]);
    let out = rt.block_on(rt.spawn_blocking(move || cmd.output().expect("run vwf"))).expect("the CLI thread");
    Outcome {
        code: common::code(&out),
        run: common::parse(&out),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A home whose config is `toml`.
fn home_with(toml: &str) -> Home {
    let home = Home::new();
    std::fs::write(home.path().join("visual-workflow.toml"), toml).expect("write config");
    home
}

fn hmac_hex(key: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key.as_bytes()).expect("hmac key");
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

/// Every file under `dir` with its bytes.
fn every_file(dir: &Path, out: &mut Vec<(std::path::PathBuf, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let p = entry.path();
        if p.is_dir() {
            every_file(&p, out);
        } else {
            let bytes = std::fs::read(&p).unwrap_or_default();
            out.push((p, bytes));
        }
    }
}

fn assert_nowhere_under(home: &Home, secrets: &[&str]) {
    let mut files = Vec::new();
    every_file(home.path(), &mut files);
    assert!(
        files.iter().any(|(p, _)| p.extension().is_some_and(|e| e == "json") && p.starts_with(home.runs_dir())),
        "no run file was written"
    );
    for (p, bytes) in files {
        let text = String::from_utf8_lossy(&bytes);
        for s in secrets {
            assert!(!text.contains(s), "{} holds a secret", p.display());
        }
    }
}

fn telegram_config(peer: &Peer, home_chat: &str) -> String {
    format!("[channels.telegram]\ntoken_env = \"VWF_TEST_TG_TOKEN\"\nhome = {home_chat}\napi_base = \"{}\"\n", peer.uri())
}

#[test]
fn telegram_delivery_records_the_message_id() {
    let peer = Peer::start();
    peer.mount(
        Mock::given(method("POST"))
            .and(path(format!("/bot{TG_TOKEN}/sendMessage")))
            .and(header("content-type", "application/json"))
            .and(body_json(json!({"chat_id": -100123, "text": "hello world", "message_thread_id": 17585})))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "ok": true,
                "result": {"message_id": 42, "chat": {"id": -100123, "type": "supergroup"}, "date": 1700000000, "text": "hello world"}
            })))
            .expect(1),
    );
    let home = home_with(&telegram_config(&peer, "\"123456\""));
    let out = peer.run(&home, "channel", "telegram:-100123:17585", &[("VWF_TEST_TG_TOKEN", TG_TOKEN)]);
    out.assert_delivered("telegram:-100123:17585", "message_id 42");
    peer.verify();
}

#[test]
fn telegram_error_is_recorded_and_fails_the_run() {
    let peer = Peer::start();
    peer.mount(
        Mock::given(method("POST"))
            .and(path(format!("/bot{TG_TOKEN}/sendMessage")))
            .respond_with(
                ResponseTemplate::new(400)
                    .set_body_json(json!({"ok": false, "error_code": 400, "description": "Bad Request: chat not found"})),
            )
            .expect(1),
    );
    let home = home_with(&telegram_config(&peer, "\"123456\""));
    let out = peer.run(&home, "channel", "telegram:999", &[("VWF_TEST_TG_TOKEN", TG_TOKEN)]);
    out.assert_failed("telegram:999", "telegram error 400: Bad Request: chat not found");
    let id = out.run["run_id"].as_str().expect("run_id");
    let file = common::run_file(&home, id);
    assert_eq!(file["deliveries"][0]["ok"], false);
    assert!(!file.to_string().contains(TG_TOKEN), "the token is in the run file");
    peer.verify();
}

#[test]
fn slack_chat_post_message_and_incoming_webhook() {
    let peer = Peer::start();
    let bearer = format!("Bearer {SLACK_TOKEN}");
    peer.mount(
        Mock::given(method("POST"))
            .and(path("/api/chat.postMessage"))
            .and(header("authorization", bearer.as_str()))
            .and(body_json(json!({"channel": "#ops", "text": "hello world"})))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"ok": true, "channel": "C123", "ts": "1700000000.000100"})))
            .expect(1),
    );
    peer.mount(
        Mock::given(method("POST"))
            .and(path("/api/chat.postMessage"))
            .and(body_json(json!({"channel": "C404", "text": "hello world"})))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"ok": false, "error": "channel_not_found"})))
            .expect(1),
    );
    peer.mount(
        Mock::given(method("POST"))
            .and(path("/services/T000/B000/XXXXXXXXXXXX"))
            .and(body_json(json!({"text": "hello world"})))
            .respond_with(ResponseTemplate::new(200).set_body_string("ok"))
            .expect(1),
    );

    let api = format!("[channels.slack]\ntoken_env = \"VWF_TEST_SLACK_TOKEN\"\nhome = \"#ops\"\napi_base = \"{}/api\"\n", peer.uri());
    let home = home_with(&api);
    let out = peer.run(&home, "channel", "slack:#ops", &[("VWF_TEST_SLACK_TOKEN", SLACK_TOKEN)]);
    out.assert_delivered("slack:#ops", "ts 1700000000.000100");
    let refused = peer.run(&home, "channel", "slack:C404", &[("VWF_TEST_SLACK_TOKEN", SLACK_TOKEN)]);
    refused.assert_failed("slack:C404", "slack error: channel_not_found");

    let webhook = "[channels.slack]\nwebhook_url_env = \"VWF_TEST_SLACK_WEBHOOK\"\nhome = \"#ops\"\n";
    let home = home_with(webhook);
    let hook_url = format!("{}/services/T000/B000/XXXXXXXXXXXX", peer.uri());
    let out = peer.run(&home, "notification", "slack", &[("VWF_TEST_SLACK_WEBHOOK", hook_url.as_str())]);
    out.assert_delivered("slack", "webhook ok");
    peer.verify();
}

#[test]
fn discord_webhook_records_the_message_id() {
    let peer = Peer::start();
    peer.mount(
        Mock::given(method("POST"))
            .and(path(format!("/api/webhooks/1234/{DISCORD_TOKEN}")))
            .and(query_param("wait", "true"))
            .and(body_json(json!({"content": "hello world"})))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "id": "1100000000000000001", "type": 0, "content": "hello world", "channel_id": "987", "webhook_id": "1234"
            })))
            .expect(1),
    );
    peer.mount(
        Mock::given(method("POST"))
            .and(path(format!("/api/webhooks/404/{DISCORD_TOKEN}")))
            .respond_with(ResponseTemplate::new(404).set_body_json(json!({"message": "Unknown Webhook", "code": 10015})))
            .expect(1),
    );
    let home = home_with("[channels.discord.webhooks]\nalerts = \"VWF_TEST_DISCORD_ALERTS\"\ngone = \"VWF_TEST_DISCORD_GONE\"\n");
    let alerts = format!("{}/api/webhooks/1234/{DISCORD_TOKEN}", peer.uri());
    let gone = format!("{}/api/webhooks/404/{DISCORD_TOKEN}", peer.uri());
    let env = [("VWF_TEST_DISCORD_ALERTS", alerts.as_str()), ("VWF_TEST_DISCORD_GONE", gone.as_str())];

    let out = peer.run(&home, "channel", "discord:alerts", &env);
    out.assert_delivered("discord:alerts", "message_id 1100000000000000001");
    let out = peer.run(&home, "channel", "discord:gone", &env);
    out.assert_failed("discord:gone", r#"discord answered HTTP 404: {"message":"Unknown Webhook","code":10015}"#);
    peer.verify();
    assert_nowhere_under(&home, &[DISCORD_TOKEN]);
}

#[test]
fn signed_webhook_carries_a_timestamped_hmac_and_the_old_one() {
    let peer = Peer::start();
    peer.mount(Mock::given(method("POST")).and(path("/hooks/signed")).respond_with(ResponseTemplate::new(202)).expect(1));
    peer.mount(Mock::given(method("POST")).and(path("/hooks/plain")).respond_with(ResponseTemplate::new(200)).expect(1));
    let home = home_with(&format!(
        "[channels.webhook.alerts]\nurl = \"{0}/hooks/signed\"\nsecret_env = \"VWF_TEST_WEBHOOK_SECRET\"\n[channels.webhook.plain]\nurl = \"{0}/hooks/plain\"\n",
        peer.uri()
    ));
    let env = [("VWF_TEST_WEBHOOK_SECRET", WEBHOOK_SECRET)];
    let before = chrono::Utc::now().timestamp();
    let alerts = peer.run(&home, "channel", "webhook:alerts", &env);
    let after = chrono::Utc::now().timestamp();
    alerts.assert_delivered("webhook:alerts", "http 202");
    peer.run(&home, "channel", "webhook:plain", &env).assert_delivered("webhook:plain", "http 200");
    peer.verify();

    let requests = peer.requests();
    let signed = requests.iter().find(|r| r.url.path() == "/hooks/signed").expect("the signed request");
    let body: Value = serde_json::from_slice(&signed.body).expect("a JSON body");
    assert_eq!(body, json!({"text": "hello world", "node": "send", "target": "webhook:alerts"}));
    assert_eq!(signed.headers.get("content-type").and_then(|v| v.to_str().ok()), Some("application/json"));
    let header = |r: &wiremock::Request, name: &str| r.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string);

    // The timestamp is the step's time: the delivery's recorded `at`, within the run.
    let timestamp = header(signed, "x-vwf-timestamp").expect("X-Vwf-Timestamp");
    let t: i64 = timestamp.parse().expect("Unix seconds");
    assert!((before..=after).contains(&t), "{t} outside the run [{before}, {after}]");
    let at = alerts.delivery()["at"].as_str().and_then(|a| chrono::DateTime::parse_from_rfc3339(a).ok()).expect("the delivery's at");
    assert_eq!(at.timestamp(), t, "the signed time is the step's now");

    // X-Vwf-Signature-256: t=<ts>,v1=<hex HMAC-SHA256(secret, "<ts>.<body>")>, checked as a receiver
    // would: parse, compare t with the timestamp header, recompute over the exact bytes received.
    let signature_256 = header(signed, "x-vwf-signature-256").expect("X-Vwf-Signature-256");
    let (t_part, v1_part) = signature_256.split_once(',').expect("t=…,v1=…");
    assert_eq!(t_part, format!("t={timestamp}"), "{signature_256}");
    let v1 = v1_part.strip_prefix("v1=").expect("v1=");
    let mut signed_payload = format!("{timestamp}.").into_bytes();
    signed_payload.extend_from_slice(&signed.body);
    assert_eq!(v1, hmac_hex(WEBHOOK_SECRET, &signed_payload), "v1 is the hex HMAC-SHA256 of <timestamp>.<body>");
    assert_ne!(v1, hmac_hex(WEBHOOK_SECRET, &signed.body), "the timestamp is part of what is signed");
    let mut replayed = format!("{}.", t + 1).into_bytes();
    replayed.extend_from_slice(&signed.body);
    assert_ne!(v1, hmac_hex(WEBHOOK_SECRET, &replayed), "another timestamp does not verify");

    // The deprecated body-only signature is still sent for one release.
    let signature = header(signed, "x-vwf-signature").expect("X-Vwf-Signature");
    assert_eq!(signature, hmac_hex(WEBHOOK_SECRET, &signed.body), "the old signature is the hex HMAC-SHA256 of the exact body");
    assert_ne!(signature, hmac_hex("another secret", &signed.body));

    let plain = requests.iter().find(|r| r.url.path() == "/hooks/plain").expect("the plain request");
    assert!(header(plain, "x-vwf-timestamp").is_some_and(|p| p.parse::<i64>().is_ok()), "every webhook carries its time");
    assert!(plain.headers.get("x-vwf-signature").is_none(), "no secret_env, no signature");
    assert!(plain.headers.get("x-vwf-signature-256").is_none(), "no secret_env, no signature");
    assert_nowhere_under(&home, &[WEBHOOK_SECRET]);
}

#[test]
fn an_unconfigured_platform_fails_clearly() {
    let peer = Peer::start();
    let bare = Home::new();
    peer.run(&bare, "channel", "telegram:123456", &[])
        .assert_failed("telegram:123456", "no telegram channel is configured; nothing was sent");
    peer.run(&bare, "notification", "slack", &[]).assert_failed("slack", "no slack channel is configured; nothing was sent");

    let home = home_with(&format!(
        "[channels.discord.webhooks]\nalerts = \"VWF_TEST_DISCORD_ALERTS\"\n[channels.webhook.audit]\nurl = \"{}/audit\"\n",
        peer.uri()
    ));
    peer.run(&home, "channel", "discord:ops", &[])
        .assert_failed("discord:ops", "no discord webhook named \"ops\" is configured (channels.discord.webhooks); nothing was sent");
    peer.run(&home, "channel", "webhook:alerts", &[])
        .assert_failed("webhook:alerts", "no webhook named \"alerts\" is configured (channels.webhook.alerts); nothing was sent");
    peer.run(&home, "notification", "telegram", &[]).assert_failed("telegram", "no telegram channel is configured; nothing was sent");
    assert!(peer.requests().is_empty(), "nothing may be sent");
}

#[test]
fn a_missing_secret_fails_without_leaking() {
    let peer = Peer::start();
    peer.mount(
        Mock::given(method("POST")).respond_with(ResponseTemplate::new(200).set_body_json(json!({"ok": true, "ts": "1"}))).expect(0),
    );
    let home = home_with(&format!(
        "{}[channels.webhook.alerts]\nurl = \"{}/hook\"\nsecret_env = \"VWF_TEST_WEBHOOK_SECRET\"\n[channels.slack]\ntoken_env = \"VWF_TEST_SLACK_TOKEN\"\nwebhook_url_env = \"VWF_TEST_SLACK_WEBHOOK\"\napi_base = \"{}\"\n",
        telegram_config(&peer, "123456"),
        peer.uri(),
        peer.uri()
    ));
    let run = |deliver: &str, target: &str, blank: &str| {
        let mut cmd = home.vwf();
        for name in ["VWF_TEST_TG_TOKEN", "VWF_TEST_WEBHOOK_SECRET", "VWF_TEST_SLACK_TOKEN", "VWF_TEST_SLACK_WEBHOOK"] {
            cmd.env_remove(name);
        }
        // A variable set to blanks counts as not set; the other secrets are set and must not show.
        cmd.env(blank, "   ");
        cmd.env("VWF_TEST_SLACK_TOKEN", "").env("VWF_TEST_OTHER", SLACK_TOKEN);
        run_with(&peer.rt, &home, cmd, deliver, target)
    };
    let out = run("notification", "telegram", "VWF_TEST_TG_TOKEN");
    out.assert_failed("telegram", "VWF_TEST_TG_TOKEN is not set; nothing was sent");
    let out = run("channel", "webhook:alerts", "VWF_TEST_WEBHOOK_SECRET");
    out.assert_failed("webhook:alerts", "VWF_TEST_WEBHOOK_SECRET is not set; nothing was sent");
    let out = run("channel", "slack:#ops", "VWF_TEST_SLACK_WEBHOOK");
    out.assert_failed("slack:#ops", "neither VWF_TEST_SLACK_TOKEN nor VWF_TEST_SLACK_WEBHOOK is set; nothing was sent");
    assert!(!out.stdout.contains(SLACK_TOKEN) && !out.stderr.contains(SLACK_TOKEN));
    peer.verify();
    assert!(peer.requests().is_empty(), "an unsigned or unauthenticated request went out");
}

#[test]
fn notification_goes_to_the_home_channel() {
    let peer = Peer::start();
    peer.mount(
        Mock::given(method("POST"))
            .and(path(format!("/bot{TG_TOKEN}/sendMessage")))
            .and(body_json(json!({"chat_id": 123456, "text": "hello world"})))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"ok": true, "result": {"message_id": 7}})))
            .expect(1),
    );
    peer.mount(
        Mock::given(method("POST"))
            .and(path("/chat.postMessage"))
            .and(body_json(json!({"channel": "#ops", "text": "hello world"})))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"ok": true, "ts": "1700000000.000200"})))
            .expect(1),
    );
    // `home` written as a TOML number is the chat id all the same.
    let home = home_with(&format!(
        "{}[channels.slack]\ntoken_env = \"VWF_TEST_SLACK_TOKEN\"\nhome = \"#ops\"\napi_base = \"{}/\"\n",
        telegram_config(&peer, "123456"),
        peer.uri()
    ));
    let env = [("VWF_TEST_TG_TOKEN", TG_TOKEN), ("VWF_TEST_SLACK_TOKEN", SLACK_TOKEN)];
    peer.run(&home, "notification", "telegram", &env).assert_delivered("telegram", "message_id 7");
    peer.run(&home, "notification", "slack", &env).assert_delivered("slack", "ts 1700000000.000200");
    peer.verify();
}

#[test]
fn the_token_never_appears_in_run_files() {
    let peer = Peer::start();
    // A success, a refusal, a peer that echoes the request path with the token, and a closed port.
    peer.mount(
        Mock::given(path(format!("/bot{TG_TOKEN}/sendMessage")))
            .and(body_json(json!({"chat_id": 1, "text": "hello world"})))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"ok": true, "result": {"message_id": 1}}))),
    );
    peer.mount(
        Mock::given(path(format!("/bot{TG_TOKEN}/sendMessage")))
            .and(body_json(json!({"chat_id": 2, "text": "hello world"})))
            .respond_with(ResponseTemplate::new(401).set_body_json(json!({"ok": false, "error_code": 401, "description": "Unauthorized"}))),
    );
    peer.mount(
        Mock::given(path(format!("/bot{TG_TOKEN}/sendMessage")))
            .and(body_json(json!({"chat_id": 3, "text": "hello world"})))
            .respond_with(ResponseTemplate::new(502).set_body_string(format!("<html>bad gateway for /bot{TG_TOKEN}/sendMessage</html>"))),
    );
    let home = home_with(&telegram_config(&peer, "1"));
    let env = [("VWF_TEST_TG_TOKEN", TG_TOKEN)];
    let mut outcomes = vec![
        peer.run(&home, "channel", "telegram:1", &env),
        peer.run(&home, "channel", "telegram:2", &env),
        peer.run(&home, "channel", "telegram:3", &env),
    ];
    outcomes[0].assert_delivered("telegram:1", "message_id 1");
    outcomes[1].assert_failed("telegram:2", "telegram error 401: Unauthorized");
    outcomes[2].assert_failed("telegram:3", "telegram answered HTTP 502: <html>bad gateway for /bot***/sendMessage</html>");

    // Nothing listens on port 9 of loopback: the error must not quote the URL holding the token.
    std::fs::write(
        home.path().join("visual-workflow.toml"),
        "[channels.telegram]\ntoken_env = \"VWF_TEST_TG_TOKEN\"\napi_base = \"http://127.0.0.1:9\"\n",
    )
    .expect("write config");
    let down = peer.run(&home, "channel", "telegram:4", &env);
    assert_eq!(down.delivery()["ok"], false, "{}", down.run);
    let detail = down.delivery()["detail"].as_str().expect("detail");
    assert!(detail.starts_with("cannot reach telegram") && detail.ends_with("nothing was sent"), "{detail}");
    outcomes.push(down);

    for out in &outcomes {
        assert!(!out.stdout.contains(TG_TOKEN) && !out.stderr.contains(TG_TOKEN), "the token is in the CLI output");
    }
    assert_nowhere_under(&home, &[TG_TOKEN, "AAH-test-token"]);
}
