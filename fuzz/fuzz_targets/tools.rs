//! A request body through the tool layer: `<selector byte><arguments text>`, the selector picking
//! one of the five tools (or an unknown name), on an `App` opened on a scratch home.
//!
//! No input can reach the outside world: the home's config disables commands and has no agent
//! backend or channels, every proxy variable points at a closed local port (so an http step
//! fails at once), and the clock is pinned. Checked: no panic (the tools catch panics and answer
//! 500, and libFuzzer's panic hook aborts first, so either way a panic is a crash), never a 500,
//! and every answer is a JSON object with a boolean `ok`.
//! The home is replaced every [`RESET_EVERY`] inputs so it stays small.
#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use vwf::app::App;
use vwf::tools::{self, TOOL_NAMES};

const RESET_EVERY: usize = 2_000;

struct Home {
    _dir: tempfile::TempDir,
    app: App,
    calls: usize,
}

thread_local! {
    static HOME: RefCell<Option<Home>> = const { RefCell::new(None) };
}

fn open_home() -> Home {
    // SAFETY: set before any thread of this process reads the environment.
    unsafe {
        for var in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"] {
            std::env::set_var(var, "http://127.0.0.1:9");
        }
        std::env::remove_var("NO_PROXY");
        std::env::remove_var("no_proxy");
        std::env::set_var("VWF_NOW", "2026-11-29T09:00:00Z");
    }
    let base = if std::path::Path::new("/dev/shm").is_dir() { "/dev/shm" } else { "/tmp" };
    let dir = tempfile::Builder::new().prefix("vwf-fuzz-tools").tempdir_in(base).expect("scratch home");
    std::fs::write(dir.path().join("visual-workflow.toml"), "[agent]\nbackend = \"none\"\n[commands]\nenabled = false\n")
        .expect("write config");
    let app = App::open(dir.path().to_path_buf()).expect("open app");
    Home { _dir: dir, app, calls: 0 }
}

fuzz_target!(|data: &[u8]| {
    let Some((selector, args)) = data.split_first() else { return };
    let Ok(args) = std::str::from_utf8(args) else { return };
    let name = TOOL_NAMES.get(usize::from(*selector) % (TOOL_NAMES.len() + 1)).copied().unwrap_or("workflow_design_nope");
    HOME.with_borrow_mut(|slot| {
        if slot.as_ref().is_none_or(|h| h.calls >= RESET_EVERY) {
            *slot = None;
            *slot = Some(open_home());
        }
        let Some(home) = slot.as_mut() else { return };
        home.calls += 1;
        let reply = tools::call_text(&home.app, name, args);
        assert_ne!(reply.status, 500, "{name} answered 500: {}", reply.body);
        assert!(matches!(reply.body.get("ok"), Some(Value::Bool(_))), "{name} answered without ok: {}", reply.body);
    });
});
