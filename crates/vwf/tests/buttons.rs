//! Gates that people answer where they are: a gate's `notify` sends its question to local servers
//! that speak Telegram's Bot API and Slack's Web API (wiremock), with a button per option; a tap
//! comes back as Telegram does it (`getUpdates` returning a `callback_query`, or a webhook post
//! with its `secret_token`) or as Slack does (a signed, form-encoded interaction post) and answers
//! the gate through the real `vwf serve`. Forged buttons, bad signatures, old requests and people
//! not allowed change nothing; each is told so in the chat.

use std::time::{SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use wiremock::matchers::{method, path, path_regex};
use wiremock::{Mock, ResponseTemplate};

use crate::common::Home;
use crate::common::peer::Peer;
use crate::common::server::{Options, Server, eventually, write_config};

const TG_TOKEN: &str = "4242:AAH-gate-buttons-test-token";
const SLACK_TOKEN: &str = "xoxb-gate-buttons-test-token";
const SLACK_SECRET: &str = "slack-signing-secret-for-gates";
const TG_HOOK_SECRET: &str = "telegram-webhook-secret-token";

fn tg(method_name: &str) -> String {
    format!("/bot{TG_TOKEN}/{method_name}")
}

/// A Telegram Bot API peer: messages are sent and edited, taps answered, and `getUpdates` holds
/// a moment and finds nothing until a test queues an update.
fn telegram_peer() -> Peer {
    let peer = Peer::start();
    peer.mount(
        Mock::given(method("POST"))
            .and(path(tg("sendMessage")))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"ok": true, "result": {"message_id": 42, "chat": {"id": 555}}}))),
    );
    peer.mount(
        Mock::given(method("POST"))
            .and(path(tg("answerCallbackQuery")))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"ok": true, "result": true}))),
    );
    peer.mount(
        Mock::given(method("POST"))
            .and(path(tg("editMessageText")))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"ok": true, "result": {"message_id": 42}}))),
    );
    peer.mount(Mock::given(method("POST")).and(path(tg("getUpdates"))).respond_with(
        ResponseTemplate::new(200).set_body_json(json!({"ok": true, "result": []})).set_delay(std::time::Duration::from_millis(200)),
    ));
    peer.mount(Mock::given(method("POST")).and(path("/audit")).respond_with(ResponseTemplate::new(200)));
    peer
}

/// Queues one update for the next `getUpdates`: a tap by `user` on a button with `data`.
fn queue_tap(peer: &Peer, update_id: i64, user: i64, username: &str, data: &str) {
    let update = json!({"update_id": update_id, "callback_query": {
        "id": format!("q{update_id}"),
        "from": {"id": user, "is_bot": false, "first_name": username, "username": username},
        "message": {"message_id": 42, "chat": {"id": 555, "type": "group"}, "text": "Ship the release?", "reply_markup": {"inline_keyboard": [[{"text": "approve", "callback_data": data}]]}},
        "chat_instance": "1",
        "data": data
    }});
    peer.mount(
        Mock::given(method("POST"))
            .and(path(tg("getUpdates")))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"ok": true, "result": [update]})))
            .with_priority(1)
            .up_to_n_times(1),
    );
}

fn bodies(peer: &Peer, suffix: &str) -> Vec<Value> {
    peer.requests().iter().filter(|r| r.url.path().ends_with(suffix)).filter_map(|r| serde_json::from_slice(&r.body).ok()).collect()
}

/// The note Telegram was asked to show for tap `q<update_id>`.
fn tap_note(peer: &Peer, update_id: i64) -> Value {
    let id = format!("q{update_id}");
    eventually("the tap's answer", 30, || bodies(peer, "/answerCallbackQuery").into_iter().find(|b| b["callback_query_id"] == id.as_str()))
}

fn reviewed(notify: Value, approvers: Value, timeout_minutes: Value) -> Value {
    json!({"nodes": [
        {"id": "start", "type": "trigger", "mode": "manual"},
        {"id": "gate", "type": "approval", "question": "Ship the release?", "options": ["approve", "reject"], "notify": notify,
         "approvers": approvers, "context": "Release notes: {{trigger.notes}}", "timeout_minutes": timeout_minutes},
        {"id": "out", "type": "output", "template": "shipped by {{nodes.gate.by}}"}
    ], "edges": [{"from": "start", "to": "gate"}, {"from": "gate", "to": "out", "label": "approve"}]})
}

fn telegram_config(peer: &Peer, extra: &str) -> String {
    format!(
        "[server]\npublic_url = \"https://vwf.example.org/\"\n\n[channels.telegram]\ntoken_env = \"VWF_TEST_TG_TOKEN\"\napi_base = \"{}\"\n{extra}\n\n[channels.webhook.audit]\nurl = \"{}\"\n",
        peer.uri(),
        peer.url("/audit")
    )
}

fn status(server: &Server, id: &str) -> Value {
    server.get(&format!("/runs/{id}")).1
}

fn votes(run: &Value) -> usize {
    run["pending"]["votes"].as_array().map_or(0, Vec::len)
}

#[test]
fn telegram_buttons_answer_a_gate_two_people_must_approve() {
    let peer = telegram_peer();
    let home = Home::new();
    write_config(&home, &telegram_config(&peer, ""));
    let server = Server::start_with(&home, Options { env: vec![("VWF_TEST_TG_TOKEN", TG_TOKEN.into())], ..Options::default() });
    let approvers = json!({"required": 2, "allowed": ["telegram:777", "telegram:778"]});
    server.save("release", reviewed(json!(["telegram:555", "webhook:audit"]), approvers, Value::Null));
    let id = server.run_id("release", json!({"notes": "faster <b>builds</b>"}));

    // The gate told the chat and the webhook, and the run records what each platform answered.
    let run = eventually("the gate's announcements", 30, || {
        Some(status(&server, &id)).filter(|r| r["deliveries"].as_array().is_some_and(|d| d.len() == 2))
    });
    assert_eq!(run["status"], "awaiting_approval");
    let d = &run["deliveries"];
    assert_eq!(
        (&d[0]["node"], &d[0]["target"], &d[0]["ok"], &d[0]["detail"]),
        (&json!("gate"), &json!("telegram:555"), &json!(true), &json!("message_id 42")),
        "{d}"
    );
    assert_eq!((&d[1]["target"], &d[1]["ok"]), (&json!("webhook:audit"), &json!(true)), "{d}");
    let sent = bodies(&peer, "/sendMessage").pop().expect("sendMessage");
    assert_eq!(sent["chat_id"], 555);
    let text = sent["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("Ship the release?\n\nRelease notes: faster <b>builds</b>"), "{text}");
    assert!(text.contains(&format!("Run: https://vwf.example.org/#/runs/{id}")), "{text}");
    let keyboard = &sent["reply_markup"]["inline_keyboard"][0];
    assert_eq!((keyboard[0]["text"].as_str(), keyboard[1]["text"].as_str()), (Some("approve"), Some("reject")), "{sent}");
    let approve = keyboard[0]["callback_data"].as_str().expect("callback_data").to_string();
    assert!(approve.len() <= 64, "{approve}");
    let hook = bodies(&peer, "/audit").pop().expect("the webhook");
    assert_eq!(
        (hook["event"].as_str(), hook["run_id"].as_str(), hook["node"].as_str()),
        (Some("gate.opened"), Some(id.as_str()), Some("gate"))
    );

    // A forged button (its option changed), and a tap by someone not allowed: refused in the
    // chat, nothing recorded.
    let forged = approve.replacen(":0:", ":1:", 1);
    queue_tap(&peer, 1, 777, "ann", &forged);
    let note = tap_note(&peer, 1);
    assert!(note["text"].as_str().unwrap_or_default().contains("not made by this vwf"), "{note}");
    queue_tap(&peer, 2, 999, "mallory", &approve);
    let note = tap_note(&peer, 2);
    assert!(note["text"].as_str().unwrap_or_default().contains("not one of the people"), "{note}");
    assert_eq!(note["show_alert"], true);
    // Nobody claims a Telegram identity through the API.
    let (code, body) = server.post(&format!("/runs/{id}/respond"), json!({"node": "gate", "answer": "approve", "by": "telegram:777"}));
    assert_eq!(code, 400, "{body}");
    let run = status(&server, &id);
    assert_eq!((run["status"].as_str(), votes(&run)), (Some("awaiting_approval"), 0), "{run}");

    // The first allowed tap is counted, the message shows it and keeps its buttons.
    queue_tap(&peer, 3, 777, "ann", &approve);
    assert!(tap_note(&peer, 3)["text"].as_str().unwrap_or_default().contains("Counted: approve (1 of 2)"));
    let edit = eventually("the message edited", 30, || bodies(&peer, "/editMessageText").pop());
    assert!(edit["text"].as_str().unwrap_or_default().ends_with("☑ approve — @ann (1 of 2)"), "{edit}");
    assert_eq!(edit["reply_markup"]["inline_keyboard"][0][0]["callback_data"], approve.as_str(), "more answers are wanted: {edit}");
    assert_eq!(votes(&status(&server, &id)), 1);

    // The same person again is told so; the second person decides the gate.
    queue_tap(&peer, 4, 777, "ann", &approve);
    assert!(tap_note(&peer, 4)["text"].as_str().unwrap_or_default().contains("already answered"));
    queue_tap(&peer, 5, 778, "bo", &approve);
    assert!(tap_note(&peer, 5)["text"].as_str().unwrap_or_default().contains("Answered: approve"));
    let run = eventually("the run done", 30, || Some(status(&server, &id)).filter(|r| r["status"] == "done"));
    let gate = &run["outputs"]["gate"];
    assert_eq!((gate["answer"].as_str(), gate["by"].as_str()), (Some("approve"), Some("telegram:778")), "{gate}");
    let who: Vec<(&str, &str)> =
        gate["approvers"].as_array().unwrap().iter().map(|v| (v["by"].as_str().unwrap(), v["via"].as_str().unwrap())).collect();
    assert_eq!(who, [("telegram:777", "telegram"), ("telegram:778", "telegram")]);
    assert_eq!(run["outputs"]["out"]["text"], "shipped by telegram:778");
    let edit = eventually("the message edited again", 30, || {
        bodies(&peer, "/editMessageText").into_iter().find(|e| e["text"].as_str().is_some_and(|t| t.contains("✅")))
    });
    assert!(edit["text"].as_str().unwrap_or_default().ends_with("✅ approve — @bo"), "{edit}");
    assert_eq!(edit["reply_markup"]["inline_keyboard"], json!([]), "decided: the buttons go");

    // A tap on a gate already decided says who decided it.
    queue_tap(&peer, 6, 777, "ann", &approve);
    assert!(tap_note(&peer, 6)["text"].as_str().unwrap_or_default().contains("Already answered: approve by telegram:778"));
    assert_eq!(bodies(&peer, "/sendMessage").len(), 1, "announced once");
}

#[test]
fn a_late_telegram_tap_gets_the_timed_out_verdict() {
    let peer = telegram_peer();
    let home = Home::new();
    write_config(&home, &telegram_config(&peer, "allowed_users = [777]"));
    let env = |now: &str| vec![("VWF_TEST_TG_TOKEN", TG_TOKEN.to_string()), ("VWF_NOW", now.to_string())];
    let server = Server::start_with(&home, Options { env: env("2026-12-01T09:00:00Z"), ..Options::default() });
    server.save("release", reviewed(json!(["telegram:555"]), Value::Null, json!(5)));
    let id = server.run_id("release", json!({"notes": "n"}));
    eventually("the announcement", 30, || bodies(&peer, "/sendMessage").pop());
    let approve = bodies(&peer, "/sendMessage")[0]["reply_markup"]["inline_keyboard"][0][0]["callback_data"].as_str().unwrap().to_string();
    drop(server);
    // Ten minutes later the deadline has passed: the tap is told so and answers nothing.
    let server = Server::start_with(&home, Options { env: env("2026-12-01T09:10:00Z"), ..Options::default() });
    queue_tap(&peer, 1, 777, "ann", &approve);
    let note = tap_note(&peer, 1);
    assert!(note["text"].as_str().unwrap_or_default().contains("timed out"), "{note}");
    let run = status(&server, &id);
    assert_eq!((run["status"].as_str(), run["error"].as_str()), (Some("failed"), Some("approval timed out")), "{run}");
    assert!(run["outputs"]["gate"].get("answer").is_none(), "{run}");
}

#[test]
fn a_telegram_webhook_update_needs_the_secret_token() {
    let peer = telegram_peer();
    let home = Home::new();
    write_config(
        &home,
        &telegram_config(&peer, "answers = \"webhook\"\nwebhook_secret_env = \"VWF_TEST_TG_HOOK\"\nallowed_users = [\"777\"]"),
    );
    let env = vec![("VWF_TEST_TG_TOKEN", TG_TOKEN.to_string()), ("VWF_TEST_TG_HOOK", TG_HOOK_SECRET.to_string())];
    let server = Server::start_with(&home, Options { env, ..Options::default() });
    server.save("release", reviewed(json!(["telegram:555"]), Value::Null, Value::Null));
    let id = server.run_id("release", json!({"notes": "n"}));
    eventually("the announcement", 30, || bodies(&peer, "/sendMessage").pop());
    let approve = bodies(&peer, "/sendMessage")[0]["reply_markup"]["inline_keyboard"][0][0]["callback_data"].as_str().unwrap().to_string();
    let update = json!({"update_id": 9, "callback_query": {"id": "q9", "from": {"id": 777, "username": "ann"}, "message": {"message_id": 42, "chat": {"id": 555}, "text": "Ship the release?"}, "data": approve}});
    let post = |secret: Option<&str>| {
        let mut req = server.bare.post(format!("{}/channels/telegram/updates", server.base)).json(&update);
        if let Some(s) = secret {
            req = req.header("X-Telegram-Bot-Api-Secret-Token", s);
        }
        req.send().expect("post").status().as_u16()
    };
    assert_eq!(post(None), 401);
    assert_eq!(post(Some("wrong")), 401);
    assert_eq!(status(&server, &id)["status"], "awaiting_approval", "refused posts change nothing");
    assert!(bodies(&peer, "/getUpdates").is_empty(), "answers = webhook: nobody polls");
    assert_eq!(post(Some(TG_HOOK_SECRET)), 200);
    let run = eventually("the run done", 30, || Some(status(&server, &id)).filter(|r| r["status"] == "done"));
    assert_eq!(run["outputs"]["gate"]["by"], "telegram:777");
    assert!(tap_note(&peer, 9)["text"].as_str().unwrap_or_default().contains("Answered: approve"));
}

// ---- Slack ---------------------------------------------------------------------------------

fn slack_sign(t: i64, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(SLACK_SECRET.as_bytes()).unwrap();
    mac.update(format!("v0:{t}:{body}").as_bytes());
    format!("v0={}", hex::encode(mac.finalize().into_bytes()))
}

fn unix_now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64
}

/// A Slack peer (`chat.postMessage`, `response_url`s under `/actions/`) and the config of a Slack
/// app on it whose `allowed_users` are `users`.
fn slack_peer(peer: &Peer) {
    peer.mount(
        Mock::given(method("POST"))
            .and(path("/api/chat.postMessage"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"ok": true, "channel": "C1", "ts": "1700000000.000100"}))),
    );
    peer.mount(Mock::given(method("POST")).and(path_regex("^/actions/")).respond_with(ResponseTemplate::new(200).set_body_string("ok")));
}

fn slack_config(peer: &Peer, users: &str) -> String {
    format!(
        "[channels.slack]\ntoken_env = \"VWF_TEST_SLACK_TOKEN\"\napi_base = \"{}/api\"\nsigning_secret_env = \"VWF_TEST_SLACK_SECRET\"\nallowed_users = [{users}]\nresponse_base = \"{}/actions\"\n",
        peer.uri(),
        peer.uri()
    )
}

fn slack_env() -> Vec<(&'static str, String)> {
    vec![("VWF_TEST_SLACK_TOKEN", SLACK_TOKEN.to_string()), ("VWF_TEST_SLACK_SECRET", SLACK_SECRET.to_string())]
}

/// Posts an interaction `body` as Slack does, signed at `t` with `signature`; the status.
fn post_interaction(server: &Server, body: &str, t: i64, signature: &str) -> u16 {
    server
        .bare
        .post(format!("{}/channels/slack/interactions", server.base))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("X-Slack-Request-Timestamp", t.to_string())
        .header("X-Slack-Signature", signature)
        .body(body.to_string())
        .send()
        .expect("post")
        .status()
        .as_u16()
}

/// The form-encoded body of a tap by `user` on a button with `data`, answered at `response`.
fn interaction(user: &str, data: &str, response: &str) -> String {
    let p = json!({"type": "block_actions", "user": {"id": user, "username": "ann"}, "response_url": response,
        "message": {"text": "Ship the release?"}, "actions": [{"action_id": "vwf_gate_0", "block_id": "vwf_gate", "value": data, "type": "button"}]});
    format!("payload={}", url_encode(&p.to_string()))
}

#[test]
fn slack_buttons_answer_through_signed_interactions() {
    let peer = Peer::start();
    slack_peer(&peer);
    let home = Home::new();
    write_config(&home, &slack_config(&peer, "\"U777\""));
    let server = Server::start_with(&home, Options { env: slack_env(), ..Options::default() });
    server.save("release", reviewed(json!(["slack:#ops"]), Value::Null, Value::Null));
    let id = server.run_id("release", json!({"notes": "a & b"}));
    let run = eventually("the announcement", 30, || {
        Some(status(&server, &id)).filter(|r| r["deliveries"].as_array().is_some_and(|d| !d.is_empty()))
    });
    assert_eq!((&run["deliveries"][0]["ok"], &run["deliveries"][0]["detail"]), (&json!(true), &json!("ts 1700000000.000100")), "{run}");
    let posted = bodies(&peer, "/chat.postMessage").pop().expect("chat.postMessage");
    assert_eq!(posted["channel"], "#ops");
    assert!(posted["blocks"][0]["text"]["text"].as_str().unwrap_or_default().contains("Release notes: a &amp; b"), "{posted}");
    let buttons = &posted["blocks"][1]["elements"];
    assert_eq!((buttons[0]["text"]["text"].as_str(), buttons[1]["text"]["text"].as_str()), (Some("approve"), Some("reject")));
    let approve = buttons[0]["value"].as_str().unwrap().to_string();

    let payload = |user: &str, n: u32| interaction(user, &approve, &peer.url(&format!("/actions/{n}")));
    let post = |body: &str, t: i64, signature: &str| post_interaction(&server, body, t, signature);
    let responses = |n: u32| -> Vec<Value> { bodies(&peer, &format!("/actions/{n}")) };

    // A bad signature, and a correctly signed request older than five minutes: 401, nothing done.
    let body = payload("U777", 1);
    let now = unix_now();
    assert_eq!(post(&body, now, &slack_sign(now, &body.replace("U777", "U778"))), 401);
    assert_eq!(post(&body, now, "v0=00"), 401);
    assert_eq!(post(&body, now - 400, &slack_sign(now - 400, &body)), 401);
    assert_eq!(status(&server, &id)["status"], "awaiting_approval");
    assert!(responses(1).is_empty());

    // Someone not allowed is told, only them, and nothing is recorded.
    let body = payload("U999", 2);
    assert_eq!(post(&body, now, &slack_sign(now, &body)), 200);
    let told = eventually("the refusal", 30, || responses(2).pop());
    assert_eq!((told["response_type"].as_str(), told["replace_original"].as_bool()), (Some("ephemeral"), Some(false)), "{told}");
    assert!(told["text"].as_str().unwrap_or_default().contains("not one of the people"), "{told}");
    assert_eq!(status(&server, &id)["status"], "awaiting_approval");

    // An allowed tap answers the gate and replaces the message.
    let body = payload("U777", 3);
    assert_eq!(post(&body, now, &slack_sign(now, &body)), 200);
    let run = eventually("the run done", 30, || Some(status(&server, &id)).filter(|r| r["status"] == "done"));
    assert_eq!(run["outputs"]["gate"]["by"], "slack:U777");
    let replaced = eventually("the message replaced", 30, || responses(3).pop());
    assert_eq!(replaced["replace_original"], true);
    assert!(replaced["text"].as_str().unwrap_or_default().ends_with("✅ approve — @ann"), "{replaced}");

    // The same request again (a replay within the window) answers nothing more.
    assert_eq!(post(&body, now, &slack_sign(now, &body)), 200);
    let again = eventually("the second answer", 30, || Some(responses(3)).filter(|r| r.len() == 2));
    assert!(again[1]["text"].as_str().unwrap_or_default().contains("Already answered: approve by slack:U777"), "{again:?}");
}

/// `application/x-www-form-urlencoded` value encoding.
fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => (b as char).to_string(),
            b' ' => "+".to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[test]
fn people_named_in_the_config_answer_under_their_names_from_chat_and_api() {
    let peer = telegram_peer();
    let home = Home::new();
    let extra = "\n[people.ann]\ntelegram = 777\n\n[people.bo]\nslack = \"U778\"\n\n[gates]\nknown_names_only = true\n";
    write_config(&home, &format!("{}{extra}", telegram_config(&peer, "")));
    let server = Server::start_with(&home, Options { env: vec![("VWF_TEST_TG_TOKEN", TG_TOKEN.into())], ..Options::default() });
    server.save("release", reviewed(json!(["telegram:555"]), json!({"required": 2, "allowed": ["ann", "bo"]}), Value::Null));
    let id = server.run_id("release", json!({"notes": "n"}));
    eventually("the announcement", 30, || bodies(&peer, "/sendMessage").pop());
    let approve = bodies(&peer, "/sendMessage")[0]["reply_markup"]["inline_keyboard"][0][0]["callback_data"].as_str().unwrap().to_string();

    // Through the API, only names of [people] answer; a made-up one is refused and writes nothing.
    let (code, body) = server.post(&format!("/runs/{id}/respond"), json!({"node": "gate", "answer": "approve", "by": "eve"}));
    assert_eq!(code, 403, "{body}");
    assert!(body["error"].as_str().unwrap_or_default().contains("known_names_only"), "{body}");
    assert_eq!(votes(&status(&server, &id)), 0);
    let (code, body) = server.post(&format!("/runs/{id}/respond"), json!({"node": "gate", "answer": "approve", "by": "bo"}));
    assert_eq!(code, 200, "{body}");

    // Ann's tap is recorded under her name, from Telegram, and decides the gate.
    queue_tap(&peer, 1, 777, "ann_t", &approve);
    assert!(tap_note(&peer, 1)["text"].as_str().unwrap_or_default().contains("Answered: approve"));
    let run = eventually("the run done", 30, || Some(status(&server, &id)).filter(|r| r["status"] == "done"));
    let who: Vec<(&str, &str)> = run["outputs"]["gate"]["approvers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["by"].as_str().unwrap(), v["via"].as_str().unwrap()))
        .collect();
    assert_eq!(who, [("bo", "api"), ("ann", "telegram")]);
}

#[test]
fn a_gate_announced_on_telegram_and_slack_takes_a_tap_from_each() {
    let peer = telegram_peer();
    slack_peer(&peer);
    let home = Home::new();
    write_config(&home, &format!("{}\n{}", telegram_config(&peer, "allowed_users = [777]"), slack_config(&peer, "\"U9\"")));
    let mut env = slack_env();
    env.push(("VWF_TEST_TG_TOKEN", TG_TOKEN.to_string()));
    let server = Server::start_with(&home, Options { env, ..Options::default() });
    server.save("release", reviewed(json!(["telegram:555", "slack:#ops"]), json!({"required": 2}), Value::Null));
    let id = server.run_id("release", json!({"notes": "n"}));
    let run = eventually("both announcements", 30, || {
        Some(status(&server, &id)).filter(|r| r["deliveries"].as_array().is_some_and(|d| d.len() == 2))
    });
    assert!(run["deliveries"].as_array().unwrap().iter().all(|d| d["ok"] == true), "{run}");
    let tg_approve =
        bodies(&peer, "/sendMessage")[0]["reply_markup"]["inline_keyboard"][0][0]["callback_data"].as_str().unwrap().to_string();
    let slack_approve = bodies(&peer, "/chat.postMessage")[0]["blocks"][1]["elements"][0]["value"].as_str().unwrap().to_string();

    queue_tap(&peer, 1, 777, "ann", &tg_approve);
    assert!(tap_note(&peer, 1)["text"].as_str().unwrap_or_default().contains("Counted: approve (1 of 2)"));
    let body = interaction("U9", &slack_approve, &peer.url("/actions/9")).replace("%22ann%22", "%22bo%22");
    let now = unix_now();
    assert_eq!(post_interaction(&server, &body, now, &slack_sign(now, &body)), 200);
    let run = eventually("the run done", 30, || Some(status(&server, &id)).filter(|r| r["status"] == "done"));
    let who: Vec<&str> = run["outputs"]["gate"]["approvers"].as_array().unwrap().iter().map(|v| v["by"].as_str().unwrap()).collect();
    assert_eq!(who, ["telegram:777", "slack:U9"]);
    let replaced = eventually("the Slack message replaced", 30, || bodies(&peer, "/actions/9").pop());
    assert!(replaced["text"].as_str().unwrap_or_default().ends_with("✅ approve — @bo"), "{replaced}");
}

#[test]
fn a_bot_that_only_delivers_is_never_polled_for_taps() {
    let peer = telegram_peer();
    let home = Home::new();
    write_config(&home, &telegram_config(&peer, ""));
    let server = Server::start_with(&home, Options { env: vec![("VWF_TEST_TG_TOKEN", TG_TOKEN.into())], ..Options::default() });
    server.save(
        "report",
        json!({"nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "send", "type": "output", "template": "done", "deliver": "channel", "target": "telegram:555"}
        ], "edges": [{"from": "start", "to": "send"}]}),
    );
    let id = server.run_id("report", Value::Null);
    let run = eventually("the delivery", 30, || Some(status(&server, &id)).filter(|r| r["status"] == "done"));
    assert_eq!(run["deliveries"][0]["ok"], true, "{run}");
    // Its updates may belong to another program (a chat gateway on the same bot): no gate
    // notifies Telegram, so vwf never asks for them.
    assert!(bodies(&peer, "/getUpdates").is_empty());
}

#[test]
fn a_gate_whose_answer_needs_its_form_sends_people_to_the_run_page() {
    let peer = telegram_peer();
    let home = Home::new();
    write_config(&home, &telegram_config(&peer, "allowed_users = [777]"));
    let server = Server::start_with(&home, Options { env: vec![("VWF_TEST_TG_TOKEN", TG_TOKEN.into())], ..Options::default() });
    let mut design = reviewed(json!(["telegram:555"]), Value::Null, Value::Null);
    design["nodes"][1]["fields"] = json!([{"name": "reason", "type": "text", "required": true}]);
    server.save("release", design);
    let id = server.run_id("release", json!({"notes": "n"}));
    let sent = eventually("the announcement", 30, || bodies(&peer, "/sendMessage").pop());
    let link = format!("https://vwf.example.org/#/runs/{id}");
    assert!(
        sent["text"].as_str().unwrap_or_default().contains(&format!("This answer needs its form: open the run page: {link}")),
        "{sent}"
    );
    assert!(sent.get("reply_markup").is_none(), "no option buttons: {sent}");
    // Even a rightly signed button cannot answer without the form's values. (No keyboard was
    // sent, so this server does not poll until it looks at the designs again: a new one does at
    // its start.)
    drop(server);
    let server = Server::start_with(&home, Options { env: vec![("VWF_TEST_TG_TOKEN", TG_TOKEN.into())], ..Options::default() });
    let key = vwf_core::approvers::button_key(TG_TOKEN.as_bytes());
    let approve = vwf_core::approvers::Button::sign(&key, &id, "gate", 0);
    queue_tap(&peer, 1, 777, "ann", &approve);
    let note = tap_note(&peer, 1);
    assert_eq!(note["text"].as_str().unwrap_or_default(), format!("This answer needs the gate's form: open {link}"), "{note}");
    assert_eq!(status(&server, &id)["status"], "awaiting_approval");
}

#[test]
fn a_gate_a_dead_process_never_announced_is_announced_by_the_next() {
    let peer = telegram_peer();
    let home = Home::new();
    write_config(&home, &telegram_config(&peer, "allowed_users = [777]"));
    let env = || vec![("VWF_TEST_TG_TOKEN", TG_TOKEN.to_string())];
    let server = Server::start_with(&home, Options { env: env(), ..Options::default() });
    server.save("release", reviewed(json!(["telegram:555"]), Value::Null, Value::Null));
    let id = server.run_id("release", json!({"notes": "n"}));
    eventually("the announcement", 30, || Some(status(&server, &id)).filter(|r| r["pending"]["notified"] == true));
    drop(server);
    // What a process that died between saving the park and sending leaves: the gate unannounced.
    let stored = String::from_utf8(home.stored_run_bytes(&id).expect("stored")).unwrap();
    let mut doc: Value = serde_json::from_str(&stored).unwrap();
    for gate in doc["parked"].as_array_mut().expect("parked") {
        gate.as_object_mut().unwrap().remove("notified");
    }
    doc["pending"].as_object_mut().unwrap().remove("notified");
    doc["deliveries"] = json!([]);
    let _ = std::fs::remove_file(home.runs_dir().join(format!("{id}.journal")));
    home.write_stored_run(&id, doc.to_string().as_bytes());
    let server = Server::start_with(&home, Options { env: env(), ..Options::default() });
    let run = eventually("the gate announced again", 30, || Some(status(&server, &id)).filter(|r| r["pending"]["notified"] == true));
    assert_eq!(run["deliveries"].as_array().map(Vec::len), Some(1), "{run}");
    assert_eq!(bodies(&peer, "/sendMessage").len(), 2, "sent again by the next process, once");
}

#[test]
fn a_slack_request_replayed_within_the_window_counts_once() {
    let peer = Peer::start();
    slack_peer(&peer);
    let home = Home::new();
    write_config(&home, &slack_config(&peer, "\"U777\""));
    let server = Server::start_with(&home, Options { env: slack_env(), ..Options::default() });
    // One person may answer twice (not distinct): only a replay must not count as a second answer.
    server.save("release", reviewed(json!(["slack:#ops"]), json!({"required": 2, "distinct": false}), Value::Null));
    let id = server.run_id("release", json!({"notes": "n"}));
    eventually("the announcement", 30, || bodies(&peer, "/chat.postMessage").pop());
    let approve = bodies(&peer, "/chat.postMessage")[0]["blocks"][1]["elements"][0]["value"].as_str().unwrap().to_string();
    let body = interaction("U777", &approve, &peer.url("/actions/1"));
    let post = |t: i64| post_interaction(&server, &body, t, &slack_sign(t, &body));
    let now = unix_now();
    assert_eq!(post(now), 200);
    eventually("the first answer counted", 30, || (votes(&status(&server, &id)) == 1).then_some(()));
    // The tap is answered after it is acknowledged: its reply first, so the replay's comes second.
    eventually("the first answer's reply", 30, || Some(bodies(&peer, "/actions/1")).filter(|b| b.len() == 1));
    assert_eq!(post(now), 200, "the same signed request again");
    let told = eventually("the replay's answer", 30, || Some(bodies(&peer, "/actions/1")).filter(|b| b.len() == 2));
    assert!(told[1]["text"].as_str().unwrap_or_default().contains("counted already"), "{told:?}");
    assert_eq!(votes(&status(&server, &id)), 1, "a replay counts once");
    // A new tap by the same person (a new request) is a second answer here, and decides.
    assert_eq!(post(now + 1), 200);
    let run = eventually("the run done", 30, || Some(status(&server, &id)).filter(|r| r["status"] == "done"));
    assert_eq!(run["outputs"]["gate"]["approvers"].as_array().map(Vec::len), Some(2), "{run}");
}
