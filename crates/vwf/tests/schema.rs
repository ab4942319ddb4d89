//! The design model (`GET /schema`, `vwf schema`) and the copy of it the canvas embeds for use
//! from disk: the real server is asked over a real socket, the real binary is run, and the copy
//! is read from `web/designer.html` as it is in the repository and as the server serves it.

mod common;

use common::Home;
use common::server::Server;
use serde_json::Value;

const OPEN: &str = r#"<script type="application/json" id="vwf-schema">"#;
const CLOSE: &str = "</script>";
const REGENERATE: &str =
    "the canvas's embedded schema differs from what vwf serves; run scripts/schema to copy `vwf schema` into web/designer.html";

/// The text between the canvas's schema markers.
fn embedded(page: &str) -> &str {
    let start = page.find(OPEN).unwrap_or_else(|| panic!("no {OPEN} block in the canvas; {REGENERATE}")) + OPEN.len();
    let len = page[start..].find(CLOSE).expect("the schema block is closed");
    &page[start..start + len]
}

#[test]
fn the_canvas_embeds_exactly_what_the_binary_serves() {
    let home = Home::new();
    let server = Server::start(&home);
    let (status, served) = server.get("/schema");
    assert_eq!(status, 200, "{served}");

    let out = home.vwf().arg("schema").output().expect("run vwf schema");
    assert!(out.status.success(), "{out:?}");
    let printed = String::from_utf8(out.stdout).expect("UTF-8");
    assert_eq!(
        serde_json::from_str::<Value>(&printed).expect("vwf schema prints JSON"),
        served,
        "vwf schema prints what GET /schema answers"
    );

    let file = std::fs::read_to_string(common::repo().join("web/designer.html")).expect("read the canvas");
    let copy = embedded(&file);
    assert!(serde_json::from_str::<Value>(copy).is_ok_and(|v| v == served), "{REGENERATE}");
    assert_eq!(copy.trim(), printed.trim(), "{REGENERATE}");

    let page = server.client.get(format!("{}/designer.html", server.base)).send().and_then(|r| r.text()).expect("fetch the canvas");
    assert_eq!(embedded(&page), copy, "the served canvas carries the same copy");

    // What the copy is for: the canvas from disk offers what the parser takes.
    let http = served["node_types"].as_array().and_then(|t| t.iter().find(|t| t["type"] == "http")).expect("an http type");
    let method = http["fields"].as_array().and_then(|f| f.iter().find(|f| f["name"] == "method")).expect("a method field");
    assert!(method["values"].as_array().is_some_and(|v| v.contains(&Value::from("OPTIONS"))), "{method}");
    assert_eq!(method["default"], "GET");
}
