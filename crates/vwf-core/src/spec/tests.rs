use super::*;
use serde_json::json;

fn node(v: Value) -> Node {
    let raw = v.as_object().cloned().unwrap_or_default();
    Node::new(raw["id"].as_str().unwrap_or("n").to_string(), raw)
}

#[test]
fn retries_zero_to_three_and_only_agents_retry() {
    for r in 0..=3 {
        assert!(Spec::parse(&node(json!({"id": "a", "type": "agent", "prompt": "p", "retries": r}))).is_ok());
    }
    let e = Spec::parse(&node(json!({"id": "a", "type": "agent", "prompt": "p", "retries": 4}))).unwrap_err();
    assert_eq!(e[0].field.as_deref(), Some("retries"));
    let e = Spec::parse(&node(json!({"id": "c", "type": "condition", "expr": "out.a.x > 1", "retries": 1}))).unwrap_err();
    assert!(e[0].message.contains("only agent steps take \"retries\""), "{e:?}");
    let e = Spec::parse(&node(json!({"id": "g", "type": "approval", "question": "q", "retries": 1}))).unwrap_err();
    assert!(e[0].message.contains("only agent steps take \"retries\""));
}

#[test]
fn delivery_targets() {
    for ok in ["telegram:123456", "telegram:-100123:17585", "slack:#ops", "discord:alerts", "webhook:alerts"] {
        assert!(check_target(&Deliver::Channel, ok).is_ok(), "{ok}");
    }
    for bad in ["telegram", "telegram:abc", "slack:", "sms:123", "discord:a b", "telegram:1:2:3"] {
        assert!(check_target(&Deliver::Channel, bad).is_err(), "{bad}");
    }
    assert!(check_target(&Deliver::Notification, "telegram").is_ok());
    assert!(check_target(&Deliver::Notification, "discord").is_err());
}

#[test]
fn defaults_apply() {
    let s = Spec::parse(&node(json!({"id": "g", "type": "approval", "question": "q"}))).unwrap();
    assert_eq!(
        s,
        Spec::Approval {
            question: "q".into(),
            options: vec!["approve".into(), "reject".into()],
            timeout_minutes: None,
            on_timeout: OnTimeout::Reject,
            fields: Vec::new(),
            edit: Vec::new(),
            approvers: None,
            notify: Vec::new(),
            context: None,
        }
    );
    let s = Spec::parse(&node(json!({"id": "h", "type": "http", "url": "https://x", "accept": ["2xx", 404]}))).unwrap();
    assert!(matches!(s, Spec::Http(HttpStep { ref accept, timeout_seconds: 30, .. }) if accept == &vec![(200, 299), (404, 404)]));
}

#[test]
fn a_command_runs_a_shell_string_or_an_argv() {
    let spec = |v: Value| match Spec::parse(&node(v)) {
        Ok(Spec::Command(c)) => c.program,
        other => panic!("{other:?}"),
    };
    assert_eq!(spec(json!({"id": "c", "type": "command", "run": "echo hi"})), Program::Shell("echo hi".into()));
    assert_eq!(spec(json!({"id": "c", "type": "command", "argv": ["echo", "hi"]})), Program::Argv(vec!["echo".into(), "hi".into()]));
    for bad in [json!({}), json!({"run": "true", "argv": ["true"]}), json!({"argv": []}), json!({"run": " "})] {
        let mut v = json!({"id": "c", "type": "command"});
        v.as_object_mut().unwrap().extend(bad.as_object().unwrap().clone());
        assert!(Spec::parse(&node(v.clone())).is_err(), "{v}");
    }
}

#[test]
fn hermes_deliver_keeps_the_targets_hermes_can_reach() {
    let design = |outputs: Value| {
        let mut nodes = vec![json!({"id": "t", "type": "trigger", "mode": "manual"})];
        for (i, o) in outputs.as_array().unwrap().iter().enumerate() {
            let mut node = json!({"id": format!("o{i}"), "type": "output"});
            node.as_object_mut().unwrap().extend(o.as_object().unwrap().clone());
            nodes.push(node);
        }
        Design::from_value(&json!({"nodes": nodes, "edges": []})).unwrap()
    };
    let cases = [
        (json!([]), None),
        (json!([{}]), None),
        (json!([{"deliver": "notification", "target": "telegram"}]), Some("telegram")),
        (json!([{"deliver": "channel", "target": "telegram:-100123:17585"}]), Some("telegram:-100123:17585")),
        (json!([{"deliver": "channel", "target": "slack:#ops"}, {"deliver": "notification", "target": "slack"}]), Some("slack:#ops,slack")),
        // vwf's own webhooks are not Hermes destinations.
        (json!([{"deliver": "channel", "target": "discord:alerts"}, {"deliver": "channel", "target": "webhook:ci"}]), None),
        (json!([{"deliver": "channel", "target": "discord:alerts"}, {"deliver": "channel", "target": "telegram:42"}]), Some("telegram:42")),
        // Repeats once; a bad target is not guessed at.
        (json!([{"deliver": "channel", "target": "telegram:42"}, {"deliver": "channel", "target": " telegram:42 "}]), Some("telegram:42")),
        (json!([{"deliver": "channel", "target": "telegram:not-a-chat"}, {"deliver": "notification", "target": "discord"}]), None),
        (json!([{"deliver": "channel", "target": "telegram,slack:x"}]), None),
    ];
    for (outputs, want) in cases {
        assert_eq!(hermes_deliver(&design(outputs.clone())).as_deref(), want, "{outputs}");
    }
}
