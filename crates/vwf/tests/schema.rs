//! The design model (`GET /schema`, `vwf schema`) and the copy of it the canvas embeds for use
//! from disk: the real server is asked over a real socket, the real binary is run, and the copy
//! is read from `web/designer.html` as it is in the repository and as the server serves it.

use crate::common;

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

/// The canvas's script is written from its modules (`web/designer/*.js`, in name order, inside
/// the strict-mode function `scripts/designer` writes around them): the page in the repository
/// holds exactly what they assemble to, so nobody edits the page's script by hand.
#[test]
fn the_canvas_script_is_its_modules_assembled() {
    let repo = common::repo();
    let page = std::fs::read_to_string(repo.join("web/designer.html")).expect("read the canvas");
    let mut modules: Vec<_> = std::fs::read_dir(repo.join("web/designer"))
        .expect("web/designer")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "js"))
        .collect();
    modules.sort();
    assert!(modules.len() > 10, "{modules:?}");
    let mut want = String::from("'use strict';\n(() => {\n");
    for m in &modules {
        want.push_str(&std::fs::read_to_string(m).expect("read a module"));
    }
    want.push_str("})();\n");
    let start = page.find("\n<script>\n").expect("the page's script") + "\n<script>\n".len();
    let len = page[start..].find("</script>").expect("closed");
    assert!(page[start..start + len] == want, "web/designer.html's script differs from web/designer/*.js: run scripts/designer");
}
