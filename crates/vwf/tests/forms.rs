//! Gates with forms and edits, through the real server and CLI on both stores: the gate shows
//! its form and the texts a person may change; an answer with values and an edit goes on with
//! them (later steps read the edited text, the run keeps the original's digest and who changed
//! it); every answer that does not fit is a 400 naming the field, and writes nothing.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::common::server::Server;
use crate::common::{self, Home};

/// trigger → `draft` (an agent step: no backend, so a person writes it) → gate `g` with a form
/// and `edit: [draft]` → output `say`, which reads the (edited) draft and the form.
fn reviewed() -> Value {
    json!({"nodes": [
        {"id": "start", "type": "trigger", "mode": "manual"},
        {"id": "draft", "type": "agent", "prompt": "Write about {{trigger.topic}}"},
        {"id": "g", "type": "approval", "question": "Send it?", "options": ["send", "drop"], "edit": ["draft"], "fields": [
            {"name": "note", "type": "text", "label": "Note for the reader", "required": true, "max_length": 20},
            {"name": "copies", "type": "number", "default": 1},
            {"name": "urgent", "type": "boolean"},
            {"name": "channel", "type": "choice", "options": ["email", "chat"]},
            {"name": "extra", "type": "json"}
        ]},
        {"id": "say", "type": "output", "template": "{{nodes.draft}} | {{nodes.g.fields.note}} | {{nodes.g.fields.copies}} | {{nodes.g.fields.urgent}} | {{nodes.g.fields.channel}} | {{nodes.draft.edited.by}}"}
    ], "edges": [{"from": "start", "to": "draft"}, {"from": "draft", "to": "g"}, {"from": "g", "to": "say", "label": "send"}]})
}

/// A run of `reviewed` parked at its gate, its draft written by a person.
fn at_the_gate(server: &Server) -> String {
    let id = server.run_id("reviewed", json!({"topic": "tides"}));
    let (status, run) = server.post(&format!("/runs/{id}/respond"), json!({"node": "draft", "output": "Tides rise twice a day."}));
    assert_eq!((status, run["status"].as_str()), (200, Some("awaiting_approval")), "{run}");
    id
}

fn answers_with_forms_and_edits(backend: common::Backend) {
    let home = Home::with_backend(backend);
    let server = Server::start(&home);
    server.save("reviewed", reviewed());
    let id = at_the_gate(&server);

    // The gate says what it asks: its form as declared, and the text the person may change.
    let (_, run) = server.get(&format!("/runs/{id}"));
    let pending = &run["pending"];
    assert_eq!(pending["fields"].as_array().map(Vec::len), Some(5), "{pending}");
    assert_eq!(pending["fields"][0]["label"], "Note for the reader");
    assert_eq!(pending["edit"], json!({"draft": "Tides rise twice a day."}));

    // Every answer that does not fit is refused, naming the field, and writes nothing.
    let stored = home.stored_run_bytes(&id);
    let refused = [
        (json!({"answer": "send"}), "fields.note: is required"),
        (json!({"answer": "send", "fields": {"note": "   "}}), "fields.note: is required and must not be empty"),
        (json!({"answer": "send", "fields": {"note": "x".repeat(21)}}), "fields.note: must be at most 20 characters"),
        (json!({"answer": "send", "fields": {"note": "ok", "copies": "2"}}), "fields.copies: must be a number"),
        (json!({"answer": "send", "fields": {"note": "ok", "urgent": 1}}), "fields.urgent: must be true or false"),
        (json!({"answer": "send", "fields": {"note": "ok", "channel": "fax"}}), "fields.channel: must be one of email, chat"),
        (json!({"answer": "send", "fields": {"note": "ok", "colour": "red"}}), "fields.colour: this gate asks for note, copies"),
        (json!({"answer": "send", "fields": {"note": "ok"}, "edits": {"say": "x"}}), "edits.say: this gate lets draft be edited"),
        (json!({"answer": "send", "fields": {"note": "ok"}, "by": "a\u{7}b"}), "by: who answers"),
        (json!({"answer": "maybe", "fields": {"note": "ok"}}), "is not one of the options"),
        (json!({"output": "x", "fields": {"note": "ok"}}), "go with an \"answer\""),
    ];
    for (mut body, says) in refused {
        body["node"] = json!("g");
        let (status, answer) = server.post(&format!("/runs/{id}/respond"), body.clone());
        assert_eq!(status, 400, "{body}: {answer}");
        let error = answer["error"].as_str().unwrap_or_default();
        assert!(error.contains(says), "{body}: {error}");
        assert_eq!(home.stored_run_bytes(&id), stored, "{body} wrote something");
    }

    // A fitting answer: the run goes on with the values and the edited text.
    let body = json!({"node": "g", "answer": "SEND", "fields": {"note": "read me", "urgent": true, "extra": {"k": [1]}},
                      "edits": {"draft": "Tides rise and fall twice a day."}, "by": "ada"});
    let (status, run) = server.post(&format!("/runs/{id}/respond"), body);
    assert_eq!((status, run["status"].as_str()), (200, Some("done")), "{run}");
    assert_eq!(run["outputs"]["say"]["text"], "Tides rise and fall twice a day. | read me | 1 | true | null | ada");
    let gate = &run["outputs"]["g"];
    assert_eq!((gate["answer"].as_str(), gate["by"].as_str()), (Some("send"), Some("ada")));
    assert_eq!(gate["fields"], json!({"note": "read me", "copies": 1, "urgent": true, "channel": null, "extra": {"k": [1]}}));
    let edited = &run["outputs"]["draft"]["edited"];
    let digest: String = Sha256::digest(b"Tides rise twice a day.").iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(edited["original_sha256"], digest);
    assert_eq!((edited["by"].as_str(), edited["original"].as_str()), (Some("ada"), Some("Tides rise twice a day.")));
    // What was written reads back the same, from the store.
    let (_, again) = server.get(&format!("/runs/{id}"));
    assert_eq!(again["outputs"], run["outputs"]);
}

crate::on_both_backends!(answers_with_forms_and_edits);

#[test]
fn the_cli_answers_with_a_form_and_an_edit_from_a_file() {
    let home = Home::new();
    home.save("reviewed", &reviewed());
    let (_, run) = home.json(&["run", "reviewed", "--input", r#"{"topic": "tides"}"#]);
    let id = run["run_id"].as_str().expect("run id").to_string();
    let (code, run) = home.json(&["respond", &id, "draft", "--output", "first words"]);
    assert_eq!((code, run["status"].as_str()), (6, Some("awaiting_approval")), "parked again: {run}");
    let file = home.path().join("fixed.txt");
    std::fs::write(&file, "better words").expect("write the edit");
    let edit = format!("draft=@{}", file.display());
    let args =
        ["respond", &id, "g", "--answer", "send", "--fields", r#"{"note": "hi", "channel": "chat"}"#, "--edit", &edit, "--by", "ada"];
    let (code, run) = home.json(&args);
    assert_eq!((code, run["status"].as_str()), (0, Some("done")), "{run}");
    assert_eq!(run["outputs"]["say"]["text"], "better words | hi | 1 | false | chat | ada");
    // A form given with no answer is refused by the command line itself.
    let out = home.vwf().args(["respond", &id, "g", "--fields", "{}"]).output().expect("run vwf");
    assert_eq!(common::code(&out), 2, "a usage error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--answer"));
}

#[test]
fn a_form_or_an_edit_that_does_not_hold_is_refused_at_save() {
    let home = Home::new();
    let mut design = reviewed();
    design["nodes"][2]["fields"][1]["type"] = json!("date");
    design["nodes"][2]["edit"] = json!(["say"]);
    let (code, report) = home.json(&["save", "broken", &design.to_string()]);
    assert_ne!(code, 0, "{report}");
    let errors = report["errors"].as_array().cloned().unwrap_or_default();
    assert!(errors.iter().any(|e| e["field"] == "fields" && e["message"].as_str().is_some_and(|m| m.contains("fields[1]"))), "{report}");
    assert!(errors.iter().any(|e| e["field"] == "edit"), "{report}");
}
