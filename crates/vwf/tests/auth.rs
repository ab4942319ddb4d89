//! Who may call the API (SPEC §17), over real sockets against the real `vwf serve`: the server
//! always has a token, made at start when none is configured, and hands it only to the person at
//! the terminal (a 0600 file under the home, a login link on standard error). A caller with
//! neither the token nor the session cookie the login sets (an http step of a design, a page on
//! another site) gets 401 on every API route and `/mcp`; pages stay open. And every answer says
//! who may frame it.

use crate::common;

use std::os::unix::fs::PermissionsExt;

use common::Home;
use common::server::{Options, PREFIX, Server, TOKEN_VAR, send, token_file, write_config};
use reqwest::blocking::Client;
use serde_json::{Value, json};

fn hello() -> Value {
    json!({"nodes": [
        {"id": "start", "type": "trigger", "mode": "manual"},
        {"id": "out", "type": "output", "template": "hello"}
    ], "edges": [{"from": "start", "to": "out"}]})
}

/// Every API route the server's own OpenAPI document lists, as (method, path) with its path
/// parameters filled in with well-formed values.
fn every_route(server: &Server) -> Vec<(String, String)> {
    let (status, doc) = server.get("/openapi.json");
    assert_eq!(status, 200, "{doc}");
    let mut routes = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        let filled = path
            .replace("{name}", "hello")
            .replace("{run_id}", "0123456789ab")
            .replace("{job_id}", "wf-hello")
            .replace("{action}", "pause")
            .replace("{version}", "1");
        for method in item.as_object().expect("path item").keys() {
            routes.push((method.to_ascii_uppercase(), filled.clone()));
        }
    }
    assert!(routes.len() >= 25, "{routes:?}");
    assert!(routes.iter().any(|(m, _)| m == "GET") && routes.iter().any(|(m, _)| m == "POST"));
    routes
}

fn request(client: &Client, method: &str, url: &str) -> reqwest::blocking::RequestBuilder {
    match method {
        "GET" => client.get(url),
        "DELETE" => client.delete(url),
        _ => client.post(url).json(&json!({})),
    }
}

fn no_redirects() -> Client {
    Client::builder().no_proxy().redirect(reqwest::redirect::Policy::none()).build().expect("http client")
}

/// The session cookie a login answer sets: (`name=value`, its attributes).
fn session_cookie(res: &reqwest::blocking::Response) -> (String, String) {
    let set = res.headers().get("set-cookie").and_then(|v| v.to_str().ok()).expect("a Set-Cookie header").to_string();
    let (pair, attributes) = set.split_once(';').expect("cookie attributes");
    (pair.trim().to_string(), attributes.to_string())
}

#[test]
fn without_a_configured_token_the_server_makes_one_writes_it_0600_and_needs_it_on_every_api_route() {
    let home = Home::new();
    let server = Server::start(&home);
    let file = token_file(home.path(), server.port);
    let held = std::fs::read_to_string(&file).expect("the token file");
    let token = held.trim();
    assert_eq!(Some(token), server.token.as_deref());
    assert!(token.len() == 64 && token.bytes().all(|b| b.is_ascii_hexdigit()), "32 random bytes in hex: {token:?}");
    assert_eq!(std::fs::metadata(&file).expect("stat").permissions().mode() & 0o777, 0o600, "only its owner reads it");
    server.save("hello", hello());
    let before = common::snapshot(&home);

    // No token, a wrong one, a wrong cookie: 401 on every route of the document, GET and POST.
    let routes = every_route(&server);
    let wrong_cookie = format!("vwf-session-{}=0000", server.port);
    let other_port = format!("vwf-session-{}={token}", server.port + 1);
    for (method, path) in &routes {
        let url = server.url(path);
        for (case, req) in [
            ("no token", request(&server.bare, method, &url)),
            ("wrong token", request(&server.bare, method, &url).bearer_auth("0".repeat(64))),
            ("wrong cookie", request(&server.bare, method, &url).header("cookie", wrong_cookie.as_str())),
            ("the token as another server's cookie", request(&server.bare, method, &url).header("cookie", other_port.as_str())),
        ] {
            let (status, body) = send(req);
            assert_eq!(status, 401, "{case}: {method} {path}: {body}");
            assert!(body["error"].as_str().unwrap_or("").contains(&format!("workflow-serve-{}.token", server.port)), "{body}");
        }
    }
    let mcp = format!("{}/mcp", server.base);
    let (status, _) = send(server.bare.post(&mcp).header("accept", "application/json, text/event-stream").json(&json!({})));
    assert_eq!(status, 401, "/mcp needs the token too");
    assert_eq!(common::snapshot(&home), before, "refused calls wrote nothing");

    // With the token: in.
    let (status, body) = send(server.bare.get(server.url("/designs")).bearer_auth(token));
    assert_eq!((status, &body["designs"]), (200, &json!(["hello"])));
    let (status, body) = send(server.bare.post(server.url("/designs/hello/run")).bearer_auth(token).json(&json!({})));
    assert_eq!((status, &body["status"]), (200, &json!("done")), "{body}");

    // Pages and probes hold no data: open without it.
    for page in ["/", "/designer.html", "/app.js", "/healthz"] {
        let res = server.bare.get(format!("{}{page}", server.base)).send().expect("page");
        assert_eq!(res.status().as_u16(), 200, "{page}");
    }

    // The token dies with the server: a clean stop removes its file.
    assert_eq!(server.terminate(), Some(0));
    assert!(!file.exists(), "the token file outlived its server");
}

#[test]
fn the_login_link_sets_a_strict_http_only_cookie_that_opens_the_api() {
    let home = Home::new();
    let work = tempfile::tempdir().expect("tempdir");
    let log = work.path().join("serve.err");
    let server = Server::start_with(&home, Options { stderr: Some(&log), ..Options::default() });
    let token = server.token.clone().expect("a token");
    // The link is printed before the server's first line of standard output.
    let printed = std::fs::read_to_string(&log).expect("stderr");
    let link = printed
        .split_whitespace()
        .find(|w| w.starts_with("http://") && w.contains("/login?token="))
        .unwrap_or_else(|| panic!("no login link on standard error:\n{printed}"));
    assert_eq!(link, format!("{}/login?token={token}", server.base));

    let browser = no_redirects();
    let res = browser.get(link).send().expect("login");
    assert_eq!(res.status().as_u16(), 303);
    assert_eq!(res.headers().get("location").and_then(|v| v.to_str().ok()), Some("/"), "on to the dashboard");
    let (cookie, attributes) = session_cookie(&res);
    let attributes: Vec<&str> = attributes.split(';').map(str::trim).collect();
    for wanted in ["Path=/", "HttpOnly", "SameSite=Strict"] {
        assert!(attributes.contains(&wanted), "{wanted} in {attributes:?}");
    }
    let (name, value) = cookie.split_once('=').expect("name=value");
    assert_eq!(name, format!("vwf-session-{}", server.port), "one cookie per server: cookies ignore ports");
    assert_ne!(value, token, "the cookie is not the token itself");

    // The cookie opens the API, GET and POST (a page of this server sends no foreign Origin).
    let with_cookie = |req: reqwest::blocking::RequestBuilder| send(req.header("cookie", cookie.as_str()));
    let (status, body) = with_cookie(server.bare.post(server.url("/designs/hello")).json(&json!({"graph": hello()})));
    assert_eq!((status, &body["ok"]), (200, &json!(true)), "{body}");
    let (status, body) = with_cookie(server.bare.get(server.url("/designs")));
    assert_eq!((status, &body["designs"]), (200, &json!(["hello"])));
    let (status, body) =
        with_cookie(server.bare.post(server.url("/designs/hello/run")).header("origin", server.base.as_str()).json(&json!({})));
    assert_eq!((status, &body["status"]), (200, &json!("done")), "{body}");
    // ...but not a state change another site's page asks for.
    let (status, _) =
        with_cookie(server.bare.post(server.url("/designs/hello/run")).header("origin", "http://evil.example").json(&json!({})));
    assert_eq!(status, 403);

    // A wrong or missing token logs nobody in and sets nothing.
    for bad in ["/login?token=nope", "/login", &format!("/login?token={token}x")] {
        let res = browser.get(format!("{}{bad}", server.base)).send().expect("login");
        assert_eq!(res.status().as_u16(), 401, "{bad}");
        assert!(res.headers().get("set-cookie").is_none(), "{bad}");
    }
}

#[test]
fn a_configured_token_logs_in_the_same_way_and_is_never_printed_or_written() {
    let home = Home::new();
    write_config(&home, &format!("[server]\ntoken_env = \"{TOKEN_VAR}\"\n"));
    let work = tempfile::tempdir().expect("tempdir");
    let log = work.path().join("serve.err");
    let secret = "configured-s3cret-token";
    let server = Server::start_with(&home, Options { token: Some(secret), stderr: Some(&log), ..Options::default() });
    assert!(!token_file(home.path(), server.port).exists(), "a configured token is not copied to disk");
    let printed = std::fs::read_to_string(&log).expect("stderr");
    assert!(printed.contains(&format!("/login?token=<the value of {TOKEN_VAR}>")), "{printed}");
    assert!(!printed.contains(secret), "{printed}");

    let res = no_redirects().get(format!("{}/login?token={secret}", server.base)).send().expect("login");
    assert_eq!(res.status().as_u16(), 303);
    let (cookie, _) = session_cookie(&res);
    let (status, _) = send(server.bare.get(server.url("/designs")).header("cookie", cookie.as_str()));
    assert_eq!(status, 200);
    let (status, _) = send(server.bare.get(server.url("/designs")));
    assert_eq!(status, 401);
}

/// The attack the token answers: a design whose http step saves and runs a command design
/// through this server's own API. Loopback is opened to http steps here (`[http] allow`), so
/// only the token stands in the way; the step carries neither it nor the cookie.
#[test]
fn an_http_step_cannot_save_or_run_a_design_through_the_api() {
    let home = Home::new();
    write_config(&home, "[http]\nallow = [\"127.0.0.1\"]\n");
    let server = Server::start(&home);
    let evil = json!({"nodes": [
        {"id": "start", "type": "trigger", "mode": "manual"},
        {"id": "touch", "type": "command", "run": "touch pwned"}
    ], "edges": [{"from": "start", "to": "touch"}]});
    let attack = json!({"nodes": [
        {"id": "start", "type": "trigger", "mode": "manual"},
        {"id": "save", "type": "http", "method": "POST", "url": server.url("/designs/pwned"), "body": {"graph": evil}},
        {"id": "run", "type": "http", "method": "POST", "url": server.url("/designs/pwned/run"), "body": {}}
    ], "edges": [{"from": "start", "to": "save"}, {"from": "save", "to": "run"}]});
    server.save("attack", attack);
    let (status, run) = server.post("/designs/attack/run", json!({}));
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["status"], "failed", "{run}");
    let error = run["error"].as_str().unwrap_or("");
    assert!(error.contains("HTTP 401"), "refused by the API, not by the egress policy: {run}");
    let (_, designs) = server.get("/designs");
    assert_eq!(designs["designs"], json!(["attack"]), "nothing saved through the API");
}

/// `(Content-Security-Policy, X-Frame-Options, X-Content-Type-Options)` of an answer.
fn framing(res: &reqwest::blocking::Response) -> (String, Option<String>, String) {
    let header = |name: &str| res.headers().get(name).and_then(|v| v.to_str().ok()).map(String::from);
    (header("content-security-policy").unwrap_or_default(), header("x-frame-options"), header("x-content-type-options").unwrap_or_default())
}

#[test]
fn every_answer_refuses_framing_but_the_canvas_to_its_own_dashboard() {
    let home = Home::new();
    let server = Server::start(&home);
    server.save("hello", hello());
    let deny = ("frame-ancestors 'none'".to_string(), Some("DENY".to_string()), "nosniff".to_string());
    let page = |path: &str| format!("{}{path}", server.base);
    let cases = [
        (server.client.get(page("/")), 200, deny.clone()),
        (server.client.get(page("/index.html")), 200, deny.clone()),
        (server.client.get(page("/app.js")), 200, deny.clone()),
        (server.client.get(page("/style.css")), 200, deny.clone()),
        (server.client.get(page("/no-such-page.html")), 404, deny.clone()),
        (server.client.get(page("/healthz")), 200, deny.clone()),
        (server.client.get(page("/login?token=nope")), 401, deny.clone()),
        (server.client.get(server.url("/designs")), 200, deny.clone()),
        (server.client.post(server.url("/designs/hello/run")).json(&json!({})), 200, deny.clone()),
        (server.bare.get(server.url("/designs")), 401, deny.clone()),
        (server.client.get(server.url("/no/such/route")), 404, deny.clone()),
        (server.client.get(page("/")).header("host", "evil.example"), 403, deny.clone()),
        // The dashboard embeds the canvas (same origin); nobody else may.
        (server.client.get(page("/designer.html")), 200, ("frame-ancestors 'self'".into(), Some("SAMEORIGIN".into()), "nosniff".into())),
    ];
    for (req, status, expected) in cases {
        let res = req.send().expect("request");
        let what = format!("{} {}", res.status(), res.url());
        assert_eq!(res.status().as_u16(), status, "{what}");
        assert_eq!(framing(&res), expected, "{what}");
    }
    // A page revalidated from the cache (304) says it too.
    let etag = server.client.get(page("/")).send().expect("page").headers()["etag"].to_str().expect("etag").to_string();
    let res = server.client.get(page("/")).header("if-none-match", etag).send().expect("page");
    assert_eq!((res.status().as_u16(), framing(&res)), (304, deny));
}

#[test]
fn configured_frame_ancestors_may_frame_the_dashboard_and_the_canvas_and_nothing_else() {
    let home = Home::new();
    write_config(&home, "[server]\nframe_ancestors = [\"http://127.0.0.1:9119\", \"https://Hermes.example.org/\"]\n");
    let server = Server::start(&home);
    let listed = "http://127.0.0.1:9119 https://hermes.example.org";
    let page = |path: &str| server.client.get(format!("{}{path}", server.base)).send().expect("page");
    assert_eq!(framing(&page("/")), (format!("frame-ancestors {listed}"), None, "nosniff".into()), "X-Frame-Options cannot list origins");
    assert_eq!(framing(&page("/designer.html")), (format!("frame-ancestors 'self' {listed}"), None, "nosniff".into()));
    let deny = ("frame-ancestors 'none'".to_string(), Some("DENY".to_string()), "nosniff".to_string());
    assert_eq!(framing(&page("/app.js")), deny);
    assert_eq!(framing(&server.client.get(server.url("/designs")).send().expect("api")), deny, "the API is never framed");
}

#[test]
fn a_frame_ancestor_that_is_not_an_origin_refuses_to_start() {
    let home = Home::new();
    for bad in
        ["[\"*\"]", "[\"http://127.0.0.1:9119/path\"]", "[\"127.0.0.1:9119\"]", "\"http://127.0.0.1:9119\"", "[\"http://h; script-src *\"]"]
    {
        write_config(&home, &format!("[server]\nframe_ancestors = {bad}\n"));
        let out = common::server::vwf(home.path())
            .args(["serve", "--bind", "127.0.0.1:0"])
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run vwf serve");
        assert_eq!(out.status.code(), Some(2), "{bad}: {out:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("frame_ancestors"), "{bad}: {out:?}");
    }
    assert!(!home.path().read_dir().expect("home").any(|e| e.is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".token"))));
}

#[test]
fn the_prefix_itself_is_guarded() {
    let home = Home::new();
    let server = Server::start(&home);
    let (status, _) = send(server.bare.get(format!("{}{PREFIX}", server.base)));
    assert_eq!(status, 401);
}
