//! An installed `vwf` is self-contained: `cargo install --path crates/vwf` puts one binary in a
//! directory of its own, and that binary, started from an empty directory with the repository out
//! of reach, serves the real canvas and dashboard (byte for byte, with content types, strong ETags,
//! 304s and compression over a real socket), lists every template and creates designs from them.
//!
//! The install is a debug one into a dedicated target directory under `target/`, so runs after
//! the first reuse its work. Where the test may make a private mount namespace (root, `unshare`),
//! the whole repository is covered by an empty tmpfs for the installed binary; otherwise it runs
//! from a temporary copy and a temporary working directory, which is said on standard error.

use crate::common;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use reqwest::blocking::Client;
use serde_json::Value;
use sha2::{Digest, Sha256};

const PREFIX: &str = "/api/plugins/visual-workflow";

/// Installs once per test run; answers the installed binary.
fn installed() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("install");
        let root = dir.join("root");
        let started = Instant::now();
        let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["install", "--quiet", "--debug", "--locked", "--force", "--path"])
            .arg(common::repo().join("crates/vwf"))
            .arg("--root")
            .arg(&root)
            .env("CARGO_TARGET_DIR", dir.join("target"))
            .output()
            .expect("run cargo install");
        assert!(out.status.success(), "cargo install failed:\n{}", String::from_utf8_lossy(&out.stderr));
        eprintln!("cargo install --debug took {:.1} s", started.elapsed().as_secs_f64());
        root.join("bin/vwf")
    })
}

/// A copy of the installed binary in a directory of its own, and an empty working directory.
struct Installed {
    _dir: tempfile::TempDir,
    bin: PathBuf,
    cwd: PathBuf,
    home: PathBuf,
}

impl Installed {
    fn new() -> Installed {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = dir.path().join("bin/vwf");
        std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
        std::fs::copy(installed(), &bin).expect("copy the installed binary");
        let cwd = dir.path().join("empty");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&cwd).unwrap();
        Installed { _dir: dir, bin, cwd, home }
    }

    /// `vwf --home <home> ARGS` from the empty directory, with no override variable and, where
    /// possible, the repository hidden under an empty tmpfs.
    fn command(&self, args: &[&str]) -> Command {
        let mut c = if hiding_works() {
            let mut c = Command::new("unshare");
            c.args(["--mount", "--propagation", "private", "sh", "-c"])
                .arg(r#"mount -t tmpfs repository-hidden "$0" && [ ! -e "$0/Cargo.toml" ] && cd "$1" && shift && exec "$@""#)
                .arg(common::repo().canonicalize().expect("repo path"))
                .arg(&self.cwd)
                .arg(&self.bin);
            c
        } else {
            let mut c = Command::new(&self.bin);
            c.current_dir(&self.cwd);
            c
        };
        c.arg("--home").arg(&self.home).args(args);
        for var in ["VWF_WEB_DIR", "VWF_EXAMPLES_DIR", "VWF_HOME", "HERMES_HOME", "VWF_NOW"] {
            c.env_remove(var);
        }
        c
    }

    fn json(&self, args: &[&str]) -> (i32, Value) {
        let out = self.command(&[&["--json"], args].concat()).output().expect("run the installed vwf");
        let body = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("not JSON ({e}): {}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
        });
        (out.status.code().unwrap_or(-1), body)
    }
}

/// Whether this test may hide the repository in a private mount namespace.
fn hiding_works() -> bool {
    static WORKS: OnceLock<bool> = OnceLock::new();
    *WORKS.get_or_init(|| {
        let works = Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c", "mount -t tmpfs probe /mnt"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !works {
            eprintln!("no private mount namespace here: the installed binary runs from a temporary copy, the repository not hidden");
        }
        works
    })
}

/// `vwf serve` of an installed copy on a free loopback port; killed on drop.
struct Serving {
    child: Child,
    _stdout: BufReader<ChildStdout>,
    base: String,
    client: Client,
    /// The token the server made at start (read from its file under the home).
    token: String,
}

impl Serving {
    fn start(vwf: &Installed) -> Serving {
        let mut child =
            vwf.command(&["serve", "--bind", "127.0.0.1:0"]).stdin(Stdio::null()).stdout(Stdio::piped()).spawn().expect("start vwf serve");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("read the server's first line");
        let Some(url) = line.split_whitespace().find(|w| w.starts_with("http://")) else {
            let _ = child.kill();
            panic!("no URL on the server's first line: {line:?}")
        };
        let base = url.trim_end_matches('/').to_string();
        // No automatic decompression: the test reads the encoded bytes the server sent.
        let client = Client::builder().no_proxy().timeout(Duration::from_secs(60)).build().expect("http client");
        let port = base.rsplit(':').next().and_then(|p| p.parse().ok()).expect("port in the URL");
        let token = common::server::made_token(&vwf.home, port).expect("the token the server wrote");
        Serving { child, _stdout: stdout, base, client, token }
    }

    fn get(&self, path: &str, headers: &[(&str, &str)]) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
        let mut req = self.client.get(format!("{}{path}", self.base)).bearer_auth(&self.token);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let res = req.send().expect("request");
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        (status, headers, res.bytes().expect("body").to_vec())
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every file of the repository's `web/`, as `(relative path, bytes)`.
fn repo_web_files() -> Vec<(String, Vec<u8>)> {
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<(String, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).expect("read web/").flatten() {
            let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
            if entry.path().is_dir() {
                walk(&entry.path(), &format!("{name}/"), out);
            } else {
                out.push((name, std::fs::read(entry.path()).expect("read a web file")));
            }
        }
    }
    let mut out = Vec::new();
    walk(&common::repo().join("web"), "", &mut out);
    out.sort();
    out
}

/// `(name, graph)` of every `examples/*.designer.json`.
fn repo_templates() -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = std::fs::read_dir(common::examples_dir())
        .expect("examples dir")
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.strip_suffix(".designer.json")?.to_string();
            Some((name, serde_json::from_slice(&std::fs::read(e.path()).ok()?).expect("template JSON")))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn header<'a>(headers: &'a reqwest::header::HeaderMap, name: &str) -> &'a str {
    headers.get(name).map(|v| v.to_str().expect("header text")).unwrap_or("")
}

#[test]
fn the_installed_binary_serves_the_real_pages_with_types_etags_and_compression() {
    let vwf = Installed::new();
    let server = Serving::start(&vwf);
    let files = repo_web_files();
    for required in ["index.html", "designer.html", "app.js", "style.css"] {
        assert!(files.iter().any(|(name, _)| name == required), "web/{required} missing from the repository");
    }
    assert!(files.iter().any(|(name, _)| name.starts_with("pages/")), "web/pages/ missing");
    let mut paths: Vec<(String, &Vec<u8>, &str)> = Vec::new();
    for (name, bytes) in &files {
        paths.push((format!("/{name}"), bytes, name));
        if name == "index.html" {
            paths.push(("/".into(), bytes, name));
        }
    }
    for (path, bytes, name) in paths {
        let kind = match name.rsplit_once('.').map(|(_, ext)| ext) {
            Some("html") => "text/html; charset=utf-8",
            Some("js") => "text/javascript; charset=utf-8",
            Some("css") => "text/css; charset=utf-8",
            Some("svg") => "image/svg+xml",
            other => panic!("web/{name}: a file type this test does not know ({other:?})"),
        };
        let etag = format!("\"{}\"", hex::encode(Sha256::digest(bytes)));

        let (s, h, body) = server.get(&path, &[]);
        assert_eq!((s, header(&h, "content-type"), header(&h, "etag")), (200, kind, etag.as_str()), "{path}");
        assert_eq!(header(&h, "content-encoding"), "", "{path}: encoded without being asked");
        assert!(body == *bytes, "{path}: the served bytes differ from web/{name}");

        let (s, h, body) = server.get(&path, &[("if-none-match", &etag)]);
        assert_eq!((s, header(&h, "etag"), body.len()), (304, etag.as_str(), 0), "{path}");
        let (s, _, _) = server.get(&path, &[("if-none-match", "\"0000\"")]);
        assert_eq!(s, 200, "{path}: a stale ETag is answered in full");

        let (s, h, body) = server.get(&path, &[("accept-encoding", "gzip")]);
        assert_eq!((s, header(&h, "content-encoding"), header(&h, "etag")), (200, "gzip", etag.as_str()), "{path}");
        let mut plain = Vec::new();
        flate2::read::GzDecoder::new(&body[..]).read_to_end(&mut plain).expect("gunzip");
        assert!(plain == *bytes, "{path}: gzip body differs from web/{name}");

        let (s, h, body) = server.get(&path, &[("accept-encoding", "br")]);
        assert_eq!((s, header(&h, "content-encoding")), (200, "br"), "{path}");
        let mut plain = Vec::new();
        brotli_decompressor::Decompressor::new(&body[..], 4096).read_to_end(&mut plain).expect("unbrotli");
        assert!(plain == *bytes, "{path}: brotli body differs from web/{name}");
    }
    let (s, _, _) = server.get("/no-such-page.html", &[]);
    assert_eq!(s, 404);
}

#[test]
fn the_installed_binary_lists_every_template_and_creates_designs_from_them() {
    let vwf = Installed::new();
    let templates = repo_templates();
    assert!(templates.len() >= 4, "at least four templates ship");
    {
        let server = Serving::start(&vwf);
        let (s, _, body) = server.get(&format!("{PREFIX}/templates"), &[]);
        assert_eq!(s, 200);
        let listed: Value = serde_json::from_slice(&body).expect("templates JSON");
        let listed: Vec<(String, Value)> = listed["templates"]
            .as_array()
            .expect("templates")
            .iter()
            .map(|t| (t["name"].as_str().unwrap().to_string(), t["graph"].clone()))
            .collect();
        assert_eq!(listed, templates, "GET /templates is every examples/*.designer.json, graphs as in the repository");
    }
    for (i, (template, graph)) in templates.iter().enumerate() {
        let name = format!("from-{i}");
        let (code, body) = vwf.json(&["new", &name, "--from", template]);
        assert_eq!((code, &body["ok"]), (0, &Value::Bool(true)), "{template}: {body}");
        assert_eq!(&body["graph"], graph, "{template}");
        let (code, body) = vwf.json(&["open", &name]);
        assert_eq!((code, &body["graph"]), (0, graph), "{template}: {body}");
        let (code, body) = vwf.json(&["validate", &name]);
        assert_eq!((code, &body["ok"]), (0, &Value::Bool(true)), "{template}: {body}");
    }
    // An unknown template names the ones there are and writes nothing.
    let (code, body) = vwf.json(&["new", "nothing", "--from", "no-such-template"]);
    assert_ne!(code, 0, "{body}");
    let error = body["error"].as_str().expect("error text");
    assert!(templates.iter().all(|(t, _)| error.contains(t.as_str())), "{error}");
    assert!(!vwf.home.join("designs/nothing.json").exists() && vwf.json(&["open", "nothing"]).0 != 0);
}
