use vwf_core::trigger::FolderEvent;

use super::*;

#[test]
fn a_daemon_can_be_moved_to_a_thread() {
    fn send<T: Send>() {}
    send::<Daemon<'static>>();
}

#[test]
fn trigger_nodes_become_specs_with_defaults() {
    let node = |v: Value| v.as_object().cloned().unwrap();
    assert_eq!(
        trigger_from_node(&node(json!({"mode": "folder", "path": "/tmp/in"}))),
        Trigger::Folder(FolderTrigger {
            path: "/tmp/in".into(),
            pattern: "*".into(),
            events: vec![FolderEvent::Create, FolderEvent::Modify],
            debounce_ms: 500
        })
    );
    assert_eq!(
        trigger_from_node(&node(json!({"mode": "watch", "command": "tail -f x"}))),
        Trigger::Watch(WatchTrigger {
            argv: vec!["sh".into(), "-c".into(), "tail -f x".into()],
            restart_delay_seconds: 5,
            dedupe_minutes: 10
        })
    );
    assert_eq!(trigger_from_node(&node(json!({"mode": "event", "sources": ["a"]}))), Trigger::Other(TriggerMode::Event));
    assert!(matches!(trigger_from_node(&node(json!({"mode": "heartbeat", "every": "5s"}))), Trigger::Invalid(_)));
}
