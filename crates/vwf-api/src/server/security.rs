//! The request guard of SPEC §17, run before any route:
//! 0. exactly one `Host` header: two are refused (400) whatever their values, since a proxy or
//!    cache in front may act on the other one than the guard checked;
//! 1. `Host` must be a loopback name or a configured host (a DNS-rebinding page sends its own
//!    host name) → 403;
//! 2. every API call (and every `/mcp` request) carries the API token, as `Authorization: Bearer
//!    <token>` or as the session cookie that `GET /login?token=<token>` sets, both compared in
//!    constant time → 401;
//! 3. a state-changing request that carries an `Origin` must come from this server's own origin
//!    (a page on another site cannot make the browser save and run a design) → 403.
//!
//! There is always a token: the configured one (`[server] token_env`), or one made at start and
//! handed only to the person at the terminal (a 0600 file under the home, and the login link on
//! standard error). A request from an http step of a design carries neither the token nor the
//! cookie (its client keeps no cookies, and it can read no file), so a design cannot save or run
//! another design through this server even on loopback.
//!
//! Requests without `Origin` (curl, the CLI, other programs) pass step 3: browsers always send
//! it on cross-origin POSTs. Pages (`/`, `/designer.html`, their assets) pass through steps 1 and
//! 3 but not 2: they hold no data, and a browser cannot add a bearer token to a navigation.
//!
//! Every answer also says who may frame it (see [`Framing`]) and carries `nosniff`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::api::{API_PREFIX, error};

/// Host names always accepted (with any port).
const LOOPBACK_HOSTS: [&str; 3] = ["127.0.0.1", "localhost", "[::1]"];

/// Where the login link points: `GET /login?token=<token>` sets the session cookie.
pub(crate) const LOGIN_PATH: &str = "/login";

/// The API token a server checks: the configured one, or one it made at start.
pub(crate) struct Token {
    pub value: String,
    /// `Some(variable)` when the token came from `[server] token_env`; `None` when made at start.
    pub configured: Option<String>,
}

impl Token {
    /// 32 random bytes from the operating system, in hex.
    pub(crate) fn generate() -> std::io::Result<Token> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(Token { value: hex::encode(bytes), configured: None })
    }
}

/// The file a server that made its token writes it to: one per bound port, so servers sharing a
/// home (another port, another instance) never read or overwrite each other's token.
pub(crate) fn token_file(home: &Path, port: u16) -> PathBuf {
    home.join(format!("workflow-serve-{port}.token"))
}

/// Writes `token` to `path`, readable by the owner alone (0600 from its creation, then renamed
/// over any older file, so no reader ever sees a partial or wider-open file).
pub(crate) fn write_token_file(path: &Path, token: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let temp = path.with_extension(format!("token.tmp-{}", std::process::id()));
    let _ = std::fs::remove_file(&temp);
    let written = (|| {
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temp)?;
        file.write_all(format!("{token}\n").as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// Who may show a response in a frame (`Content-Security-Policy: frame-ancestors`, and
/// `X-Frame-Options` where it can say the same). Nobody frames the API or the dashboard; the
/// canvas is framed by the dashboard (same origin); `[server] frame_ancestors` adds origins that
/// may frame the dashboard and the canvas (the Hermes dashboard's Workflows tab).
pub(crate) struct Framing {
    /// Origins (`http://127.0.0.1:9119`), checked when the config was read.
    ancestors: Vec<String>,
}

impl Framing {
    pub(crate) fn new(ancestors: Vec<String>) -> Framing {
        Framing { ancestors }
    }

    /// The `frame-ancestors` sources and the `X-Frame-Options` value for a response to `path`.
    /// `X-Frame-Options` cannot list origins, so it is left out where configured origins may frame.
    fn policy(&self, path: &str) -> (String, Option<&'static str>) {
        let listed = self.ancestors.join(" ");
        match path {
            "/designer.html" if self.ancestors.is_empty() => ("'self'".into(), Some("SAMEORIGIN")),
            "/designer.html" => (format!("'self' {listed}"), None),
            "/" | "/index.html" if !self.ancestors.is_empty() => (listed, None),
            _ => ("'none'".into(), Some("DENY")),
        }
    }

    fn apply(&self, path: &str, headers: &mut HeaderMap) {
        let (sources, deny) = self.policy(path);
        if let Ok(csp) = HeaderValue::from_str(&format!("frame-ancestors {sources}")) {
            headers.insert(header::CONTENT_SECURITY_POLICY, csp);
        }
        match deny {
            Some(value) => headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static(value)),
            None => headers.remove(header::X_FRAME_OPTIONS),
        };
        headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    }
}

/// Checks one `[server] frame_ancestors` entry: an origin, `http(s)://host[:port]` with nothing
/// after it; answers it lowercased, without a trailing `/`.
pub(crate) fn parse_origin(raw: &str) -> Result<String, String> {
    let origin = raw.trim().trim_end_matches('/').to_ascii_lowercase();
    let bad = || format!("{raw:?} is not an origin: write scheme, host and port only, e.g. \"http://127.0.0.1:9119\"");
    let rest = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://")).ok_or_else(bad)?;
    let (host, port) = match rest.strip_prefix('[') {
        Some(v6) => {
            let (inside, after) = v6.split_once(']').ok_or_else(bad)?;
            if inside.is_empty() || !inside.bytes().all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.') {
                return Err(bad());
            }
            match after {
                "" => (inside, None),
                _ => (inside, Some(after.strip_prefix(':').ok_or_else(bad)?)),
            }
        }
        None => match rest.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (rest, None),
        },
    };
    let host_ok = !host.is_empty() && host.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b':');
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()));
    if !host_ok || !port_ok || (rest.starts_with('[') != host.contains(':')) {
        return Err(bad());
    }
    Ok(origin)
}

pub(crate) struct Guard {
    /// SHA-256 of the API token: comparing fixed-length digests keeps the comparison constant
    /// time whatever the length of what the client sent.
    token: [u8; 32],
    /// What the login sets as the session cookie (derived from the token, so it outlives a
    /// restart exactly when the token does), and its digest.
    session: String,
    session_digest: [u8; 32],
    /// `vwf-session-<port>`: cookies are shared by every port of a host, so each server (and
    /// each server on one home) has a cookie of its own.
    cookie: String,
    /// Lowercased `[server] allowed_hosts` entries (a name, or `name:port`).
    allowed_hosts: Vec<String>,
    framing: Framing,
    /// Where a client finds the token, said in every 401.
    hint: String,
}

impl Guard {
    pub(crate) fn new(token: &Token, mut allowed_hosts: Vec<String>, bound: SocketAddr, framing: Framing) -> Guard {
        // The bound IP literal itself is no rebinding risk (a rebinding page's Host is its own
        // domain name), and clients on other machines reach a bound address by it.
        if !bound.ip().is_unspecified() && !bound.ip().is_loopback() {
            allowed_hosts.push(match bound {
                SocketAddr::V4(a) => a.ip().to_string(),
                SocketAddr::V6(a) => format!("[{}]", a.ip()),
            });
        }
        let session = hex::encode(digest(format!("vwf session\n{}", token.value).as_bytes()));
        let hint = match &token.configured {
            Some(var) => format!("the token is the value of {var}"),
            None => format!("vwf serve wrote the token to workflow-serve-{}.token in its home", bound.port()),
        };
        Guard {
            token: digest(token.value.as_bytes()),
            session_digest: digest(session.as_bytes()),
            session,
            cookie: format!("vwf-session-{}", bound.port()),
            allowed_hosts,
            framing,
            hint,
        }
    }

    fn host_allowed(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        let name = host_name(&host);
        LOOPBACK_HOSTS.contains(&name) || self.allowed_hosts.iter().any(|h| *h == host || h == name)
    }

    fn token_is(&self, given: &str) -> bool {
        bool::from(digest(given.as_bytes()).ct_eq(&self.token))
    }

    /// Whether the request carries the token (as a bearer) or the session cookie.
    fn authorized(&self, headers: &HeaderMap) -> bool {
        let bearer = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| {
            let (scheme, rest) = v.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
        });
        if bearer.is_some_and(|token| self.token_is(token)) {
            return true;
        }
        let mut cookies = headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(';'));
        cookies.any(|pair| {
            pair.trim()
                .split_once('=')
                .is_some_and(|(name, value)| name == self.cookie && bool::from(digest(value.as_bytes()).ct_eq(&self.session_digest)))
        })
    }
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// The host part of a `Host` value: `[::1]:8765` → `[::1]`, `localhost:80` → `localhost`.
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

/// Whether `origin` is this server's own origin, reached through `host`.
fn same_origin(origin: &str, host: &str) -> bool {
    let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
    let host = host.to_ascii_lowercase();
    // https too: behind a TLS-terminating proxy the page's origin is https://<the same host>.
    origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://")).is_some_and(|rest| rest == host)
}

/// Whether a method may change state (everything but reads).
fn changes_state(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

pub(crate) async fn guard(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    let path = request.uri().path().to_string();
    let mut response = check(&guard, request, next).await;
    guard.framing.apply(&path, response.headers_mut());
    response
}

async fn check(guard: &Guard, request: Request, next: Next) -> Response {
    let headers = request.headers();
    if headers.get_all(header::HOST).iter().nth(1).is_some() {
        return error(StatusCode::BAD_REQUEST, "more than one Host header: send exactly one".into());
    }
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("").trim().to_string();
    if host.is_empty() {
        return error(StatusCode::FORBIDDEN, "missing Host header".into());
    }
    if !guard.host_allowed(&host) {
        return error(
            StatusCode::FORBIDDEN,
            format!("host {host:?} is not allowed: use 127.0.0.1 or localhost, or add it to [server] allowed_hosts"),
        );
    }
    let path = request.uri().path();
    let api = path == API_PREFIX || path.starts_with(&format!("{API_PREFIX}/")) || path == crate::mcp::HTTP_PATH;
    if api && !guard.authorized(headers) {
        let mut response = error(
            StatusCode::UNAUTHORIZED,
            format!(
                "missing or wrong API token: send Authorization: Bearer <token>, or log in from a browser at \
                 {LOGIN_PATH}?token=<token> ({})",
                guard.hint
            ),
        );
        response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return response;
    }
    if changes_state(request.method())
        && let Some(origin) = headers.get(header::ORIGIN)
    {
        let origin = origin.to_str().unwrap_or("");
        if !same_origin(origin, &host) {
            return error(
                StatusCode::FORBIDDEN,
                format!("cross-origin request refused: origin {origin:?} is not this server (http://{host})"),
            );
        }
    }
    next.run(request).await.into_response()
}

/// `GET /login?token=<token>`: with the right token, sets the session cookie (HttpOnly, so no
/// script reads it; SameSite=Strict, so no other site's request carries it) and sends the
/// browser on to the dashboard; anything else is a 401 and sets nothing.
pub(crate) async fn login(State(guard): State<Arc<Guard>>, Query(query): Query<HashMap<String, String>>) -> Response {
    let given = query.get("token").map(|t| t.trim()).unwrap_or("");
    if !guard.token_is(given) {
        let mut response =
            error(StatusCode::UNAUTHORIZED, format!("wrong or missing token: open the login link vwf serve printed ({})", guard.hint));
        response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        return response;
    }
    let cookie = format!("{}={}; Path=/; HttpOnly; SameSite=Strict", guard.cookie, guard.session);
    let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response();
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        headers.insert(header::SET_COOKIE, value);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(value: &str) -> Token {
        Token { value: value.into(), configured: Some("T".into()) }
    }

    fn guard(value: &str, hosts: &[&str]) -> Guard {
        let hosts = hosts.iter().map(|h| h.to_string()).collect();
        Guard::new(&token(value), hosts, "127.0.0.1:8765".parse().unwrap(), Framing::new(Vec::new()))
    }

    #[test]
    fn hosts() {
        let g = guard("t", &["vwf.example.org"]);
        for ok in
            ["127.0.0.1", "127.0.0.1:8765", "localhost", "LOCALHOST:1", "[::1]:8765", "[::1]", "vwf.example.org", "vwf.example.org:443"]
        {
            assert!(g.host_allowed(ok), "{ok}");
        }
        for bad in ["evil.example", "127.0.0.2", "localhost.evil.example", "vwf.example.org.evil", "[::2]:1", "", "127.0.0.1:80:80"] {
            assert!(!g.host_allowed(bad), "{bad}");
        }
        let g = Guard::new(&token("t"), Vec::new(), "192.168.1.5:8765".parse().unwrap(), Framing::new(Vec::new()));
        assert!(g.host_allowed("192.168.1.5:8765"));
        assert!(!g.host_allowed("192.168.1.6:8765"));
    }

    #[test]
    fn tokens() {
        let g = guard("s3cret", &[]);
        let mut h = HeaderMap::new();
        assert!(!g.authorized(&h));
        h.insert(header::AUTHORIZATION, "Bearer s3cret".parse().unwrap());
        assert!(g.authorized(&h));
        h.insert(header::AUTHORIZATION, "bearer  s3cret ".parse().unwrap());
        assert!(g.authorized(&h));
        for bad in ["Bearer s3cre", "Bearer s3cret2", "Basic s3cret", "s3cret", "Bearer"] {
            h.insert(header::AUTHORIZATION, bad.parse().unwrap());
            assert!(!g.authorized(&h), "{bad}");
        }
    }

    #[test]
    fn session_cookies() {
        let g = guard("s3cret", &[]);
        let good = format!("vwf-session-8765={}", g.session);
        let with = |cookie: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::COOKIE, cookie.parse().unwrap());
            g.authorized(&h)
        };
        assert!(with(&good));
        assert!(with(&format!("a=b; {good}; c=d")));
        assert_ne!(g.session, "s3cret", "the cookie is not the token itself");
        for bad in [
            "vwf-session-8765=s3cret".to_string(),
            format!("vwf-session-8766={}", g.session),
            format!("vwf-session-8765={}x", g.session),
            "vwf-session-8765=".into(),
        ] {
            assert!(!with(&bad), "{bad}");
        }
        // Another token, another session.
        assert_ne!(guard("other", &[]).session, g.session);
    }

    #[test]
    fn generated_tokens_are_32_random_bytes() {
        let (a, b) = (Token::generate().unwrap(), Token::generate().unwrap());
        assert_eq!(a.value.len(), 64);
        assert!(a.value.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a.value, b.value);
        assert!(a.configured.is_none());
    }

    #[test]
    fn framing_policies() {
        let none = Framing::new(Vec::new());
        assert_eq!(none.policy("/api/plugins/visual-workflow/designs"), ("'none'".into(), Some("DENY")));
        assert_eq!(none.policy("/"), ("'none'".into(), Some("DENY")));
        assert_eq!(none.policy("/designer.html"), ("'self'".into(), Some("SAMEORIGIN")));
        let hermes = Framing::new(vec!["http://127.0.0.1:9119".into(), "https://h.example".into()]);
        assert_eq!(hermes.policy("/"), ("http://127.0.0.1:9119 https://h.example".into(), None));
        assert_eq!(hermes.policy("/designer.html"), ("'self' http://127.0.0.1:9119 https://h.example".into(), None));
        assert_eq!(hermes.policy("/app.js"), ("'none'".into(), Some("DENY")));
        assert_eq!(hermes.policy("/api/plugins/visual-workflow/runs"), ("'none'".into(), Some("DENY")));
    }

    #[test]
    fn origins_for_frame_ancestors() {
        for (raw, want) in [
            ("http://127.0.0.1:9119", "http://127.0.0.1:9119"),
            ("HTTPS://Hermes.Example.org/", "https://hermes.example.org"),
            ("http://[::1]:9119", "http://[::1]:9119"),
            ("http://localhost", "http://localhost"),
        ] {
            assert_eq!(parse_origin(raw).as_deref(), Ok(want), "{raw}");
        }
        for bad in [
            "127.0.0.1:9119",
            "*",
            "'none'",
            "http://",
            "http://a b",
            "http://h/path",
            "http://h:port",
            "http://h:1;script-src *",
            "ftp://h",
            "http://[::1",
            "http://[]:1",
            "http://h:123456",
            "http://[::1]x",
        ] {
            assert!(parse_origin(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn origins() {
        assert!(same_origin("http://127.0.0.1:8765", "127.0.0.1:8765"));
        assert!(same_origin("https://vwf.example.org", "vwf.example.org"));
        assert!(!same_origin("http://127.0.0.1:8766", "127.0.0.1:8765"));
        assert!(!same_origin("http://evil.example", "127.0.0.1:8765"));
        assert!(!same_origin("null", "127.0.0.1:8765"));
        assert!(!same_origin("http://127.0.0.1:8765.evil.example", "127.0.0.1:8765"));
    }

    #[test]
    fn token_files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = token_file(dir.path(), 8765);
        assert!(path.ends_with("workflow-serve-8765.token"));
        std::fs::write(&path, "old").unwrap();
        write_token_file(&path, "abc").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "abc\n");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temp file left");
    }
}
