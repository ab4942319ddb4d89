//! The egress policy of http steps as an attacker meets it: URLs that come from an event's
//! payload or from a model's answer (a prompt injection in a fetched page), aimed at this machine
//! in every spelling, at private, link-local and unique-local addresses, through redirects from
//! an allowed peer and through names that resolve to local addresses. Listeners stand at every
//! address aimed at and count the connections that reach them: none may.
//!
//! Private, link-local and unique-local addresses are given to the loopback interface of a
//! network namespace this test makes (`unshare --net --mount`, with its own `/etc/hosts`), so
//! no packet ever leaves the machine, even if the policy failed.

use crate::common;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::process::Command;

use common::Home;
use common::peer::Peer;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, Request, Respond, ResponseTemplate};

/// Listeners at `addrs` that never answer; [`Trap::connections`] counts who reached them.
struct Trap {
    listeners: Vec<TcpListener>,
}

impl Trap {
    fn at(addrs: &[SocketAddr]) -> Trap {
        let listeners = addrs
            .iter()
            .map(|a| {
                let l = TcpListener::bind(a).unwrap_or_else(|e| panic!("listen on {a}: {e}"));
                l.set_nonblocking(true).expect("nonblocking");
                l
            })
            .collect();
        Trap { listeners }
    }

    /// Loopback, IPv4 and IPv6, on one port.
    fn loopback() -> (Trap, u16) {
        for _ in 0..20 {
            let v4 = TcpListener::bind("127.0.0.1:0").expect("listen");
            let port = v4.local_addr().expect("addr").port();
            if let Ok(v6) = TcpListener::bind(("::1", port)) {
                for l in [&v4, &v6] {
                    l.set_nonblocking(true).expect("nonblocking");
                }
                return (Trap { listeners: vec![v4, v6] }, port);
            }
        }
        panic!("no port free on both 127.0.0.1 and ::1")
    }

    /// Connections that arrived since the last call (a connection completes in the kernel's
    /// backlog whether or not it is accepted, so none can be missed).
    fn connections(&self) -> usize {
        let mut n = 0;
        for l in &self.listeners {
            loop {
                match l.accept() {
                    Ok(_) => n += 1,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) => panic!("accept: {e}"),
                }
            }
        }
        n
    }
}

/// How the URL reaches the http step.
#[derive(Clone, Copy, Debug)]
enum Source {
    /// `vwf emit fetch.url --payload {"url": …}`: the step reads `{{trigger.payload.url}}`.
    Event,
    /// A model asked about the input answers with the URL: the step reads `{{nodes.pick}}`.
    Agent,
}

/// The OpenAI-compatible model: it answers with whatever follows "URL: " in its prompt, as a
/// model steered by an injected instruction would.
struct Steered;

impl Respond for Steered {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let prompt = body["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).unwrap_or("");
        let url = prompt.split_once("URL: ").map_or("", |(_, u)| u).trim();
        ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{"message": {"role": "assistant", "content": url}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        }))
    }
}

/// A home with the two designs and the model, and `extra` config lines (`[http]` entries).
struct Lab {
    home: Home,
    /// Kept alive for the runs of the lab: the model answering `from-agent`.
    _model: Peer,
}

impl Lab {
    fn new(extra: &str) -> Lab {
        let home = Home::new();
        let model = Peer::start();
        model.mount(Mock::given(method("POST")).and(path("/v1/chat/completions")).respond_with(Steered));
        let config = format!("[agent]\nbackend = \"openai\"\nbase_url = \"{}/v1\"\ndefault_model = \"m\"\n\n{extra}", model.uri());
        std::fs::write(home.path().join("visual-workflow.toml"), config).expect("config");
        let fetch = |url: &str| json!({"id": "get", "type": "http", "url": url, "timeout_seconds": 5});
        home.save(
            "from-event",
            &json!({"nodes": [{"id": "start", "type": "trigger", "mode": "event", "sources": ["fetch.url"]}, fetch("{{trigger.payload.url}}")],
                    "edges": [{"from": "start", "to": "get"}]}),
        );
        home.save(
            "from-agent",
            &json!({"nodes": [{"id": "start", "type": "trigger", "mode": "manual"},
                              {"id": "pick", "type": "agent", "prompt": "Summarise this page. URL: {{trigger.url}}"},
                              fetch("{{nodes.pick}}")],
                    "edges": [{"from": "start", "to": "pick"}, {"from": "pick", "to": "get"}]}),
        );
        Lab { home, _model: model }
    }

    /// Starts a run whose http step fetches `url` (as `source` hands it over); returns the run.
    fn attempt(&self, source: Source, url: &str) -> Value {
        let home = &self.home;
        let run = match source {
            Source::Event => {
                let (_, out) = self.blocking(|| home.json(&["emit", "fetch.url", "--payload", &json!({"url": url}).to_string()]));
                let runs = out["runs"].as_array().unwrap_or_else(|| panic!("{url}: no runs in {out}"));
                assert_eq!(runs.len(), 1, "{url}: {out}");
                runs[0].clone()
            }
            Source::Agent => self.blocking(|| home.json(&["run", "from-agent", "--input", &json!({"url": url}).to_string()])).1,
        };
        if let Source::Agent = source {
            assert_eq!(run["outputs"]["pick"]["text"], url, "the model handed over the URL: {run}");
        }
        run
    }

    /// Runs `f` (a CLI call) on a thread the model's runtime lends, so the model answers meanwhile.
    fn blocking<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send) -> T {
        std::thread::scope(|s| s.spawn(f).join().expect("CLI thread"))
    }
}

/// The run failed at the http step, refused by the policy, with `says` in the error.
#[track_caller]
fn assert_refused(run: &Value, url: &str, says: &str) {
    assert_eq!((run["status"].as_str(), run["failed_node"].as_str()), (Some("failed"), Some("get")), "{url}: {run}");
    let error = run["error"].as_str().unwrap_or_default();
    assert!(error.contains("refused") && error.contains(says), "{url}: the error {error:?} does not name the rule ({says:?})");
}

const SOURCES: [Source; 2] = [Source::Event, Source::Agent];

#[test]
fn no_spelling_of_this_machine_reaches_it() {
    let (trap, p) = Trap::loopback();
    let lab = Lab::new("");
    let loopback = [
        format!("http://127.0.0.1:{p}/"),
        format!("http://127.1:{p}/"),
        format!("http://0x7f000001:{p}/"),
        format!("http://0x7f.1:{p}/"),
        format!("http://2130706433:{p}/"),
        format!("http://0177.0.0.1:{p}/"),
        format!("http://0177.1:{p}/"),
        format!("http://127.000.000.001:{p}/"),
        format!("http://[::1]:{p}/"),
        format!("http://[0:0:0:0:0:0:0:1]:{p}/"),
        format!("http://[::ffff:127.0.0.1]:{p}/"),
        format!("http://[::ffff:7f00:1]:{p}/"),
        format!("http://[64:ff9b::127.0.0.1]:{p}/"),
        format!("http://localhost:{p}/"),
        format!("http://localhost.:{p}/"),
        format!("http://LocalHost:{p}/"),
        format!("http://user:pw@127.0.0.1:{p}/"),
        format!("https://127.0.0.1:{p}/"),
        format!("http://127.0.0.1:{p}/api/plugins/visual-workflow/designs/x/run"),
    ];
    let unspecified = [format!("http://0.0.0.0:{p}/"), format!("http://0:{p}/"), format!("http://[::]:{p}/")];
    for source in SOURCES {
        for url in &loopback {
            assert_refused(&lab.attempt(source, url), url, "a loopback address");
        }
        for url in &unspecified {
            assert_refused(&lab.attempt(source, url), url, "the unspecified address");
        }
    }
    assert_eq!(trap.connections(), 0, "a step reached this machine");
}

#[test]
fn redirects_from_an_allowed_peer_are_checked_hop_by_hop() {
    let (trap, p) = Trap::loopback();
    let peer = Peer::start();
    let peer_port = peer.server.address().port();
    let lab = Lab::new(&format!("[http]\nallow = [\"127.0.0.1:{peer_port}\"]\n"));
    let to = |status: u16, location: String| ResponseTemplate::new(status).insert_header("location", location.as_str());
    let hops = [
        ("/v4", 302, format!("http://127.0.0.1:{p}/")),
        ("/v6", 307, format!("http://[::1]:{p}/")),
        ("/name", 301, format!("http://localhost:{p}/")),
        ("/mapped", 308, format!("http://[::ffff:127.0.0.1]:{p}/")),
        ("/spelled", 303, format!("http://2130706433:{p}/")),
        ("/two", 302, peer.url("/v4")),
    ];
    for (from, status, location) in &hops {
        peer.mount(Mock::given(method("GET")).and(path(*from)).respond_with(to(*status, location.clone())));
    }
    peer.mount(Mock::given(method("GET")).and(path("/loop")).respond_with(to(302, "/loop".into())));
    peer.mount(Mock::given(method("GET")).and(path("/hop")).respond_with(to(302, "/landed".into())));
    peer.mount(Mock::given(method("GET")).and(path("/landed")).respond_with(ResponseTemplate::new(200).set_body_string("landed")));
    for source in SOURCES {
        for (from, _, _) in &hops {
            let url = peer.url(from);
            let run = lab.attempt(source, &url);
            assert_refused(&run, &url, "a loopback address");
            let hop = if *from == "/two" { "(redirect 2)" } else { "(redirect 1)" };
            assert!(run["error"].as_str().unwrap_or_default().contains(hop), "{url}: {run}");
        }
        let looped = lab.attempt(source, &peer.url("/loop"));
        assert_eq!(looped["error"], "more than 5 redirects", "{looped}");
        // The allowed peer itself, and a redirect that stays on it, are fine.
        let landed = lab.attempt(source, &peer.url("/hop"));
        assert_eq!((landed["status"].as_str(), landed["outputs"]["get"]["text"].as_str()), (Some("done"), Some("landed")), "{landed}");
    }
    let loops = peer.requests().iter().filter(|r| r.url.path() == "/loop").count();
    assert_eq!(loops, 2 * 6, "the first request and 5 redirects, per source");
    assert_eq!(trap.connections(), 0, "a redirect reached a denied address");
}

/// The chain outside testing found: a payload makes an http step POST a command design to vwf's
/// own API and run it. It fails at the first link (no API token configured either), and where
/// the config lets steps reach loopback, at the second: the API wants a token no step has.
#[test]
fn an_event_cannot_make_a_step_drive_the_api() {
    chain_fails_at("", "a loopback address");
    chain_fails_at("[http]\nallow = [\"127.0.0.0/8\"]\n", "HTTP 401");
}

fn chain_fails_at(config: &str, says: &str) {
    let home = Home::new();
    std::fs::write(home.path().join("visual-workflow.toml"), config).expect("config");
    let server = common::server::Server::start(&home);
    let base = format!("{}{}", server.base, common::server::PREFIX);
    home.save(
        "relay",
        &json!({"nodes": [{"id": "start", "type": "trigger", "mode": "event", "sources": ["relay"]},
                          {"id": "save", "type": "http", "method": "POST", "url": "{{trigger.payload.save}}",
                           "body": {"graph": {"nodes": [{"id": "start", "type": "trigger", "mode": "manual"},
                                                        {"id": "x", "type": "command", "run": "id > pwned"}],
                                              "edges": [{"from": "start", "to": "x"}]}}},
                          {"id": "run", "type": "http", "method": "POST", "url": "{{trigger.payload.run}}", "body": {}}],
                "edges": [{"from": "start", "to": "save"}, {"from": "save", "to": "run"}]}),
    );
    let payload = json!({"save": format!("{base}/designs/pwn"), "run": format!("{base}/designs/pwn/run")});
    let (status, answer) = server.post("/events/relay", json!({"payload": payload}));
    assert_eq!(status, 200, "{answer}");
    let run = &answer["runs"][0];
    assert_eq!((run["status"].as_str(), run["failed_node"].as_str()), (Some("failed"), Some("save")), "{answer}");
    assert!(run["error"].as_str().unwrap_or_default().contains(says), "{answer}");
    let (status, _) = server.get("/designs/pwn");
    assert_eq!(status, 404, "the design was saved through the API");
    assert!(!home.path().join("pwned").exists());
}

/// Runs [`inside_a_namespace`] inside a new network and mount namespace (see the module doc): the
/// test binary again, filtered to exactly that test by its path in the binary (`egress::…`).
#[test]
fn private_link_local_and_named_addresses_in_a_namespace() {
    let exe = std::env::current_exe().expect("test binary");
    let out = Command::new("unshare")
        .args(["--net", "--mount", "--"])
        .arg(exe)
        .args(["--exact", "egress::inside_a_namespace", "--ignored", "--nocapture", "--test-threads=1"])
        .env("VWF_EGRESS_NAMESPACE", "1")
        .output()
        .expect("run unshare (util-linux)");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains("test result: ok. 1 passed"), "the test inside the namespace failed:\n{text}");
}

/// What [`private_link_local_and_named_addresses_in_a_namespace`] runs in its namespace.
#[test]
#[ignore = "run by private_link_local_and_named_addresses_in_a_namespace inside a network namespace"]
fn inside_a_namespace() {
    assert_eq!(std::env::var("VWF_EGRESS_NAMESPACE").as_deref(), Ok("1"), "run this only through its outer test");
    let sh = |script: &str| {
        let out = Command::new("sh").args(["-c", script]).output().expect("sh");
        assert!(out.status.success(), "{script}: {}", String::from_utf8_lossy(&out.stderr));
    };
    sh("ip link set lo up");
    let v4 = ["10.9.8.7", "192.168.7.7", "172.16.5.5", "100.64.1.1", "169.254.169.254"];
    for a in v4 {
        sh(&format!("ip addr add {a}/32 dev lo"));
    }
    sh("ip -6 addr add fd00::7/128 dev lo");
    let hosts = tempfile::NamedTempFile::new().expect("hosts file");
    std::fs::write(
        hosts.path(),
        "127.0.0.1 localhost rebind.test\n10.9.8.7 internal.test\n169.254.169.254 metadata.test\n::1 six.test\nfd00::7 ula.test\n",
    )
    .expect("write hosts");
    sh(&format!("mount --bind {} /etc/hosts", hosts.path().display()));

    let port = 8080;
    let mut addrs: Vec<SocketAddr> = v4.iter().map(|a| format!("{a}:{port}").parse().unwrap()).collect();
    addrs.extend(["127.0.0.1:8080", "[::1]:8080", "[fd00::7]:8080"].map(|a| a.parse::<SocketAddr>().unwrap()));
    let trap = Trap::at(&addrs);
    let cases = [
        ("http://10.9.8.7:8080/", "a private address"),
        ("http://192.168.7.7:8080/", "a private address"),
        ("http://172.16.5.5:8080/", "a private address"),
        ("http://[::ffff:10.9.8.7]:8080/", "a private address"),
        ("http://100.64.1.1:8080/", "a shared (carrier-grade NAT) address"),
        ("http://169.254.169.254:8080/latest/meta-data/", "a link-local address"),
        ("http://[::ffff:169.254.169.254]:8080/", "a link-local address"),
        ("http://[fd00::7]:8080/", "a unique-local address"),
        ("http://internal.test:8080/", "internal.test (10.9.8.7:8080) is a private address"),
        ("http://metadata.test:8080/", "a link-local address"),
        ("http://rebind.test:8080/", "rebind.test (127.0.0.1:8080) is a loopback address"),
        ("http://six.test:8080/", "a loopback address"),
        ("http://ula.test:8080/", "a unique-local address"),
    ];
    let lab = Lab::new("");
    for source in SOURCES {
        for (url, says) in cases {
            assert_refused(&lab.attempt(source, url), url, says);
        }
    }
    assert_eq!(trap.connections(), 0, "a step reached a denied address");

    // A name rule opens the name (what it resolves to, on its port), not the address itself.
    drop(trap);
    let lab = Lab::new("[http]\nallow = [\"internal.test:8080\"]\n");
    let server = TcpListener::bind("10.9.8.7:8080").expect("listen");
    let answered = std::thread::spawn(move || {
        let (mut stream, _) = server.accept().expect("accept");
        let mut buf = [0u8; 4096];
        let _ = stream.read(&mut buf);
        stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\ninternal").expect("answer");
    });
    let run = lab.attempt(Source::Event, "http://internal.test:8080/");
    assert_eq!((run["status"].as_str(), run["outputs"]["get"]["text"].as_str()), (Some("done"), Some("internal")), "{run}");
    answered.join().expect("the allowed peer answered");
    assert_refused(&lab.attempt(Source::Event, "http://10.9.8.7:8080/"), "the address", "a private address");
    assert_refused(&lab.attempt(Source::Event, "http://internal.test:8081/"), "another port", "a private address");
}
