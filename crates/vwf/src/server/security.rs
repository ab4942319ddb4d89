//! The request guard of SPEC §17, run before any route:
//! 0. exactly one `Host` header: two are refused (400) whatever their values, since a proxy or
//!    cache in front may act on the other one than the guard checked;
//! 1. `Host` must be a loopback name or a configured host (a DNS-rebinding page sends its own
//!    host name) → 403;
//! 2. with a token, every API call (and every `/mcp` request) carries `Authorization: Bearer
//!    <token>`, compared in constant time → 401;
//! 3. a state-changing request that carries an `Origin` must come from this server's own origin
//!    (a page on another site cannot make the browser save and run a design) → 403.
//!
//! Requests without `Origin` (curl, the CLI, other programs) pass step 3: browsers always send
//! it on cross-origin POSTs. Pages (`/`, `/designer.html`) pass through steps 1 and 3 but not 2,
//! since a browser cannot add a bearer token to a navigation.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::api::{API_PREFIX, error};

/// Host names always accepted (with any port).
const LOOPBACK_HOSTS: [&str; 3] = ["127.0.0.1", "localhost", "[::1]"];

pub(crate) struct Guard {
    /// SHA-256 of the API token: comparing fixed-length digests keeps the comparison constant
    /// time whatever the length of what the client sent.
    token: Option<[u8; 32]>,
    /// Lowercased `[server] allowed_hosts` entries (a name, or `name:port`).
    allowed_hosts: Vec<String>,
}

impl Guard {
    pub(crate) fn new(token: Option<String>, mut allowed_hosts: Vec<String>, bound: SocketAddr) -> Guard {
        // The bound IP literal itself is no rebinding risk (a rebinding page's Host is its own
        // domain name), and clients on other machines reach a bound address by it.
        if !bound.ip().is_unspecified() && !bound.ip().is_loopback() {
            allowed_hosts.push(match bound {
                SocketAddr::V4(a) => a.ip().to_string(),
                SocketAddr::V6(a) => format!("[{}]", a.ip()),
            });
        }
        Guard { token: token.map(|t| digest(t.as_bytes())), allowed_hosts }
    }

    /// Whether API calls must carry the token.
    pub(crate) fn has_token(&self) -> bool {
        self.token.is_some()
    }

    fn host_allowed(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        let name = host_name(&host);
        LOOPBACK_HOSTS.contains(&name) || self.allowed_hosts.iter().any(|h| *h == host || h == name)
    }

    fn token_matches(&self, headers: &HeaderMap) -> bool {
        let Some(expected) = &self.token else { return true };
        let given = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| {
            let (scheme, rest) = v.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
        });
        match given {
            Some(token) => bool::from(digest(token.as_bytes()).ct_eq(expected)),
            None => false,
        }
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
    if api && !guard.token_matches(headers) {
        let mut response = error(StatusCode::UNAUTHORIZED, "missing or wrong API token: send Authorization: Bearer <token>".into());
        response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(token: Option<&str>, hosts: &[&str]) -> Guard {
        Guard::new(token.map(String::from), hosts.iter().map(|h| h.to_string()).collect(), "127.0.0.1:8765".parse().unwrap())
    }

    #[test]
    fn hosts() {
        let g = guard(None, &["vwf.example.org"]);
        for ok in
            ["127.0.0.1", "127.0.0.1:8765", "localhost", "LOCALHOST:1", "[::1]:8765", "[::1]", "vwf.example.org", "vwf.example.org:443"]
        {
            assert!(g.host_allowed(ok), "{ok}");
        }
        for bad in ["evil.example", "127.0.0.2", "localhost.evil.example", "vwf.example.org.evil", "[::2]:1", "", "127.0.0.1:80:80"] {
            assert!(!g.host_allowed(bad), "{bad}");
        }
        let g = Guard::new(None, Vec::new(), "192.168.1.5:8765".parse().unwrap());
        assert!(g.host_allowed("192.168.1.5:8765"));
        assert!(!g.host_allowed("192.168.1.6:8765"));
    }

    #[test]
    fn tokens() {
        let g = guard(Some("s3cret"), &[]);
        let mut h = HeaderMap::new();
        assert!(!g.token_matches(&h));
        h.insert(header::AUTHORIZATION, "Bearer s3cret".parse().unwrap());
        assert!(g.token_matches(&h));
        h.insert(header::AUTHORIZATION, "bearer  s3cret ".parse().unwrap());
        assert!(g.token_matches(&h));
        for bad in ["Bearer s3cre", "Bearer s3cret2", "Basic s3cret", "s3cret", "Bearer"] {
            h.insert(header::AUTHORIZATION, bad.parse().unwrap());
            assert!(!g.token_matches(&h), "{bad}");
        }
        assert!(guard(None, &[]).token_matches(&HeaderMap::new()));
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
}
