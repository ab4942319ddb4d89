//! The http driver: performs one `http` step with a blocking client and reports its outcome.
//!
//! Why blocking: drivers run on plain worker threads, never inside an async runtime, and one
//! request per step needs no more. Invariants:
//! - only `http://` and `https://` URLs are fetched, checked again after templates rendered
//!   (the validator checks the literal); redirects stay within those schemes and stop after
//!   [`MAX_REDIRECTS`]; they are followed here, not by the client, so that every hop goes through
//!   the egress policy (`egress`): resolved once, checked, and connected to exactly the checked
//!   addresses; credential headers are not carried to another origin;
//! - `timeout_seconds` bounds the whole exchange (connect, headers and body together);
//! - at most [`limits::STEP_OUTPUT_BYTES`] of response body are read, a longer body fails the step;
//! - no cookies are stored, no telemetry is added: the request is what the design asks for, plus
//!   a `User-Agent: visual-workflow/<version>` unless the design sets its own;
//! - the output never loses bytes: a body that is not UTF-8 is kept as `base64:<data>` with
//!   `encoding: "base64"`;
//! - outputs are deterministic against the same server: header names are sorted and the
//!   volatile `date` header is left out (see [`VOLATILE_HEADERS`]).
//!
//! A `body` that is a JSON string is sent as text (`text/plain; charset=utf-8`), any other JSON
//! value as JSON (`application/json`); a `Content-Type` header in the design wins. A body is sent
//! with whatever method the design names, GET and HEAD included: the design asked for it.
//! The system proxy settings are not used: through a proxy, the address finally reached would be
//! the proxy's to choose, and the egress policy could not hold.

use std::collections::BTreeMap;
use std::io::Read;
use std::time::{Duration, Instant};

use base64::Engine as _;
use reqwest::Url;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};
use vwf_core::limits;
use vwf_core::recovery::Cause;
use vwf_core::run::Outcome;
use vwf_core::run::inputs::is_secret_name;
use vwf_core::spec::HttpStep;

use super::egress::{Policy, Refusal};

/// Redirects followed before the step fails.
const MAX_REDIRECTS: usize = 5;
/// Response headers left out of the output view because they change on every request.
const VOLATILE_HEADERS: [&str; 1] = ["date"];
/// Characters of the response body quoted in a status error.
const ERROR_BODY_CHARS: usize = 500;

/// Performs an http task under `policy`. Never panics; every failure is an `Outcome::Failed` with
/// a clear error.
pub fn perform(step: &HttpStep, policy: Policy<'_>) -> Outcome {
    let HttpStep { url, method, headers, body, timeout_seconds, accept } = step;
    let request = Request { url, method, headers, body: body.as_ref(), timeout: Duration::from_secs((*timeout_seconds).max(1)), accept };
    match request.perform(policy) {
        Ok(outcome) => outcome,
        Err(error) => Outcome::Failed { error: error.to_string(), cause: error.cause() },
    }
}

/// Why an http step failed; its text is the step's error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HttpError {
    #[error("bad URL {url:?}: {reason}")]
    BadUrl { url: String, reason: String },
    #[error("only http:// and https:// URLs can be fetched, not {scheme}: ({shown})")]
    Scheme { scheme: String, shown: String },
    #[error("unknown HTTP method {0:?}")]
    Method(String),
    #[error("bad HTTP header name {0:?}")]
    HeaderName(String),
    #[error("bad value for HTTP header {0:?}: header values cannot hold line breaks or control characters")]
    HeaderValue(String),
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    /// The exchange took longer than the step's `timeout_seconds`.
    #[error("HTTP request timed out after {0} s")]
    TimedOut(u64),
    /// The request did not get an answer; `url` is shown without credentials.
    #[error("HTTP request to {url} failed: {cause}")]
    Transport { url: String, cause: String, connected: bool },
    /// The egress policy refused the connection of hop `hop` (0: the step's own URL).
    #[error("HTTP request to {url} refused{}: {refusal}", if *.hop == 0 { String::new() } else { format!(" (redirect {})", .hop) })]
    Egress { hop: usize, url: String, refusal: Refusal },
    #[error("more than {MAX_REDIRECTS} redirects")]
    Redirects,
    #[error("bad redirect: {0}")]
    BadRedirect(String),
    #[error("reading the HTTP response failed: {0}")]
    Read(String),
    /// An answer whose status the step does not accept; `body` is the start of its body.
    #[error("HTTP {status} is not an accepted status (accept: {accept}){body}")]
    Status { status: u16, accept: String, body: String, retry_after: Option<u64> },
    #[error("response body{} is over the {}-byte limit for output kept inline", .declared.map(|n| format!(" ({n} bytes)")).unwrap_or_default(), limits::STEP_OUTPUT_BYTES)]
    OverLimit { declared: Option<u64> },
    #[error(
        "response body is {raw} bytes of binary data, {encoded} bytes as base64, over the {}-byte limit for output kept inline",
        limits::STEP_OUTPUT_BYTES
    )]
    BinaryOverLimit { raw: usize, encoded: usize },
}

impl HttpError {
    /// How the step failed, for its retry policy (`retry.on`: `"5xx"`, `"429"`, a status,
    /// `"timeout"`, `"connect"`).
    pub fn cause(&self) -> Cause {
        match self {
            HttpError::TimedOut(_) => Cause::Timeout,
            // After the request went out (a reset mid-answer) it is no `connect` failure: the
            // peer may have acted on it.
            HttpError::Transport { connected: false, .. } => Cause::Connect,
            HttpError::Status { status, retry_after, .. } => Cause::Status { code: *status, retry_after: *retry_after },
            _ => Cause::Error,
        }
    }
}

/// One http step's rendered fields.
struct Request<'a> {
    url: &'a str,
    method: &'a str,
    headers: &'a BTreeMap<String, String>,
    body: Option<&'a Value>,
    timeout: Duration,
    accept: &'a [(u16, u16)],
}

impl Request<'_> {
    fn perform(&self, policy: Policy<'_>) -> Result<Outcome, HttpError> {
        let mut url = parse_url(self.url)?;
        let mut method = reqwest::Method::from_bytes(self.method.trim().to_ascii_uppercase().as_bytes())
            .map_err(|_| HttpError::Method(self.method.to_string()))?;
        let mut headers = self.header_map()?;
        let mut body = self.body.map(encode_body);
        let started = Instant::now();
        for hop in 0.. {
            // Every hop is resolved and checked, and its connection pinned to what was checked.
            let remaining = self.timeout.checked_sub(started.elapsed()).filter(|d| !d.is_zero()).ok_or_else(|| self.timed_out())?;
            let addrs = policy.check(&url, remaining).map_err(|refusal| HttpError::Egress { hop, url: shown(&url), refusal })?;
            let remaining = self.timeout.checked_sub(started.elapsed()).filter(|d| !d.is_zero()).ok_or_else(|| self.timed_out())?;
            let mut client = reqwest::blocking::Client::builder()
                .user_agent(concat!("visual-workflow/", env!("CARGO_PKG_VERSION")))
                .connect_timeout(remaining)
                .timeout(remaining)
                .redirect(reqwest::redirect::Policy::none())
                .no_proxy();
            if let Some(url::Host::Domain(name)) = url.host() {
                client = client.resolve_to_addrs(name, &addrs);
            }
            let client = client.build().map_err(|e| HttpError::Client(super::error_chain(&e)))?;
            let mut builder = client.request(method.clone(), url.clone()).timeout(remaining).headers(headers.clone());
            if let Some((bytes, content_type)) = &body {
                if !headers.contains_key(CONTENT_TYPE) {
                    builder = builder.header(CONTENT_TYPE, *content_type);
                }
                builder = builder.body(bytes.clone());
            }
            let response = builder.send().map_err(|e| self.transport_error(&url, e, started))?;
            let Some(next) = redirect_target(&url, &response)? else {
                return self.finish(response, started);
            };
            if hop >= MAX_REDIRECTS {
                return Err(HttpError::Redirects);
            }
            let status = response.status().as_u16();
            // As browsers and curl do: 303 (and 301/302 after a POST) continue as a GET without
            // a body; 307/308 repeat the request.
            if status == 303 && method != reqwest::Method::HEAD || matches!(status, 301 | 302) && method == reqwest::Method::POST {
                method = reqwest::Method::GET;
                body = None;
                headers.remove(CONTENT_TYPE);
            }
            // Credentials the design sent to one origin are not handed to another.
            if next.origin() != url.origin() {
                let secret: Vec<HeaderName> = headers.keys().filter(|n| is_secret_name(n.as_str())).cloned().collect();
                for name in secret {
                    headers.remove(name);
                }
            }
            url = next;
        }
        unreachable!("the loop returns")
    }

    /// Reads the answer of the last hop into the step's outcome.
    fn finish(&self, response: reqwest::blocking::Response, started: Instant) -> Result<Outcome, HttpError> {
        let status = response.status().as_u16();
        let wait = retry_after(response.headers(), chrono::Utc::now());
        let headers = header_object(response.headers());
        let declared = response.content_length();
        // A declared length over the limit fails at once, without reading (a status error,
        // which quotes the body, takes precedence).
        if let Some(len) = declared.filter(|&n| n > limits::STEP_OUTPUT_BYTES as u64 && accepted(status, self.accept)) {
            return Err(HttpError::OverLimit { declared: Some(len) });
        }
        let mut bytes = Vec::new();
        response.take(limits::STEP_OUTPUT_BYTES as u64 + 1).read_to_end(&mut bytes).map_err(|e| self.read_error(&e, started))?;
        let over = bytes.len() > limits::STEP_OUTPUT_BYTES;

        if !accepted(status, self.accept) {
            return Err(status_error(status, self.accept, &bytes, wait));
        }
        if over {
            return Err(HttpError::OverLimit { declared: None });
        }
        done(status, headers, bytes)
    }

    /// The design's headers, validated. Names are case-insensitive; an invalid one fails the step.
    fn header_map(&self) -> Result<HeaderMap, HttpError> {
        let mut map = HeaderMap::new();
        for (name, value) in self.headers {
            let n = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| HttpError::HeaderName(name.clone()))?;
            let v = HeaderValue::from_bytes(value.as_bytes()).map_err(|_| HttpError::HeaderValue(name.clone()))?;
            map.insert(n, v);
        }
        Ok(map)
    }

    /// reqwest's error text embeds the full URL, which may carry credentials in its userinfo or
    /// query: the URL is named once, redacted, in front of the error.
    fn transport_error(&self, url: &Url, e: reqwest::Error, started: Instant) -> HttpError {
        if e.is_timeout() || started.elapsed() >= self.timeout {
            return self.timed_out();
        }
        let connected = !e.is_connect();
        HttpError::Transport { url: shown(url), cause: super::error_chain(&e.without_url()), connected }
    }

    fn read_error(&self, e: &std::io::Error, started: Instant) -> HttpError {
        let inner_timeout = e.get_ref().and_then(|i| i.downcast_ref::<reqwest::Error>()).is_some_and(reqwest::Error::is_timeout);
        if inner_timeout || e.kind() == std::io::ErrorKind::TimedOut || started.elapsed() >= self.timeout {
            return self.timed_out();
        }
        HttpError::Read(super::error_chain(e))
    }

    fn timed_out(&self) -> HttpError {
        HttpError::TimedOut(self.timeout.as_secs())
    }
}

/// Parses the rendered URL and refuses every scheme but http and https.
fn parse_url(raw: &str) -> Result<Url, HttpError> {
    let trimmed = raw.trim();
    let bad = |reason: String| HttpError::BadUrl { url: trimmed.to_string(), reason };
    let url = Url::parse(trimmed).map_err(|e| bad(e.to_string()))?;
    match url.scheme() {
        "http" | "https" => {}
        other => return Err(HttpError::Scheme { scheme: other.to_string(), shown: shown(&url) }),
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("it names no host".into()));
    }
    Ok(url)
}

/// The URL as shown in errors: scheme, host, port and path; no userinfo, query or fragment.
fn shown(url: &Url) -> String {
    let mut u = url.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.set_query(None);
    u.set_fragment(None);
    u.to_string()
}

/// Where a redirect answer sends the request next, if it is one (a 3xx without a usable
/// `Location` is an answer like any other); only http(s) targets are followed.
fn redirect_target(from: &Url, response: &reqwest::blocking::Response) -> Result<Option<Url>, HttpError> {
    if !matches!(response.status().as_u16(), 301 | 302 | 303 | 307 | 308) {
        return Ok(None);
    }
    let Some(location) = response.headers().get(reqwest::header::LOCATION).and_then(|l| l.to_str().ok()) else { return Ok(None) };
    let next = from.join(location.trim()).map_err(|e| HttpError::BadRedirect(e.to_string()))?;
    if !matches!(next.scheme(), "http" | "https") {
        return Err(HttpError::BadRedirect(format!("a redirect to a {}: URL", next.scheme())));
    }
    Ok(Some(next))
}

/// A JSON string goes as text, anything else as compact JSON.
fn encode_body(body: &Value) -> (Vec<u8>, &'static str) {
    match body {
        Value::String(s) => (s.clone().into_bytes(), "text/plain; charset=utf-8"),
        other => (serde_json::to_vec(other).unwrap_or_default(), "application/json"),
    }
}

/// Response headers as an object of lowercase name → value, sorted by name, repeated headers
/// joined with ", ", volatile headers left out.
fn header_object(headers: &HeaderMap) -> Value {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in headers {
        let name = name.as_str();
        if VOLATILE_HEADERS.contains(&name) {
            continue;
        }
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        out.entry(name.to_string())
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(&value);
            })
            .or_insert(value);
    }
    Value::Object(out.into_iter().map(|(k, v)| (k, Value::String(v))).collect())
}

fn accepted(status: u16, accept: &[(u16, u16)]) -> bool {
    accept.iter().any(|&(lo, hi)| status >= lo && status <= hi)
}

/// `accept` as the designer wrote it: `2xx`, `404`, `200-204`.
fn describe_accept(accept: &[(u16, u16)]) -> String {
    if accept.is_empty() {
        return "none".into();
    }
    accept
        .iter()
        .map(|&(lo, hi)| match (lo, hi) {
            (lo, hi) if lo == hi => lo.to_string(),
            (lo, hi) if lo % 100 == 0 && hi == lo + 99 => format!("{}xx", lo / 100),
            (lo, hi) => format!("{lo}-{hi}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn status_error(status: u16, accept: &[(u16, u16)], body: &[u8], retry_after: Option<u64>) -> HttpError {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    let body = if text.is_empty() {
        String::new()
    } else {
        let snippet: String = text.chars().take(ERROR_BODY_CHARS).collect();
        let more = if text.chars().count() > ERROR_BODY_CHARS { "…" } else { "" };
        format!("; response body: {snippet}{more}")
    };
    HttpError::Status { status, accept: describe_accept(accept), body, retry_after }
}

/// The seconds an answer's `Retry-After` asks for (RFC 9110 §10.2.3: whole seconds, or an HTTP
/// date, read against `now`); `None` when it has none that reads.
pub(crate) fn retry_after(headers: &HeaderMap, now: chrono::DateTime<chrono::Utc>) -> Option<u64> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(seconds);
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    Some((at.with_timezone(&chrono::Utc) - now).num_seconds().max(0) as u64)
}

/// The finished step: `text` is the body, `extra` holds `status`, `headers` and `body`.
fn done(status: u16, headers: Value, bytes: Vec<u8>) -> Result<Outcome, HttpError> {
    let mut extra = Map::new();
    extra.insert("status".into(), Value::from(status));
    extra.insert("headers".into(), headers);
    let text = match String::from_utf8(bytes) {
        Ok(text) => {
            let body = vwf_core::json::parse(text.trim()).ok().filter(|_| !text.trim().is_empty());
            extra.insert("body".into(), body.unwrap_or_else(|| Value::String(text.clone())));
            text
        }
        Err(e) => {
            let raw = e.into_bytes();
            let text = format!("base64:{}", base64::engine::general_purpose::STANDARD.encode(&raw));
            if text.len() > limits::STEP_OUTPUT_BYTES {
                return Err(HttpError::BinaryOverLimit { raw: raw.len(), encoded: text.len() });
            }
            extra.insert("body".into(), Value::String(text.clone()));
            extra.insert("encoding".into(), Value::String("base64".into()));
            text
        }
    };
    Ok(Outcome::Done { text, extra, tokens: 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work(url: &str) -> HttpStep {
        HttpStep {
            url: url.into(),
            method: "GET".into(),
            headers: BTreeMap::new(),
            body: None,
            timeout_seconds: 1,
            accept: vec![(200, 299)],
        }
    }

    /// Performs `step` with loopback allowed (the tests' peers are local).
    fn fetch(step: &HttpStep) -> Outcome {
        let allow = [super::super::egress::Rule::try_from("127.0.0.0/8".to_string()).unwrap()];
        perform(step, Policy { allow: &allow, deny: &[] })
    }

    fn error(o: Outcome) -> String {
        match o {
            Outcome::Failed { error, .. } => error,
            other => panic!("expected a failure, got {other:?}"),
        }
    }

    #[test]
    fn failures_are_typed() {
        let bad = parse_url("ftp://user:pw@example.com/x?k=1").unwrap_err();
        assert_eq!(bad, HttpError::Scheme { scheme: "ftp".into(), shown: "ftp://example.com/x".into() });
        assert_eq!(bad.to_string(), "only http:// and https:// URLs can be fetched, not ftp: (ftp://example.com/x)");
        assert!(matches!(parse_url("http://"), Err(HttpError::BadUrl { .. })));
        let status = status_error(404, &[(200, 299), (304, 304)], b" missing ", None);
        assert_eq!(
            status,
            HttpError::Status { status: 404, accept: "2xx, 304".into(), body: "; response body: missing".into(), retry_after: None }
        );
        assert_eq!(status.to_string(), "HTTP 404 is not an accepted status (accept: 2xx, 304); response body: missing");
        assert_eq!(status_error(500, &[(200, 299)], b"", None).to_string(), "HTTP 500 is not an accepted status (accept: 2xx)");
        assert_eq!(
            HttpError::OverLimit { declared: Some(7) }.to_string(),
            format!("response body (7 bytes) is over the {}-byte limit for output kept inline", limits::STEP_OUTPUT_BYTES)
        );
        assert_eq!(HttpError::TimedOut(3).to_string(), "HTTP request timed out after 3 s");
    }

    #[test]
    fn other_schemes_are_refused() {
        for url in ["file:///etc/passwd", "ftp://example.com/x", "gopher://x", "data:text/plain,hi"] {
            assert!(error(fetch(&work(url))).contains("only http:// and https://"), "{url}");
        }
        assert!(error(fetch(&work("not a url"))).contains("bad URL"));
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let now = chrono::DateTime::parse_from_rfc3339("2015-10-21T07:28:00Z").unwrap().with_timezone(&chrono::Utc);
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(reqwest::header::RETRY_AFTER, HeaderValue::from_str(v).unwrap());
            retry_after(&h, now)
        };
        assert_eq!(with("2"), Some(2));
        assert_eq!(with(" 120 "), Some(120));
        assert_eq!(with("Wed, 21 Oct 2015 07:28:30 GMT"), Some(30));
        assert_eq!(with("Wed, 21 Oct 2015 07:27:00 GMT"), Some(0), "a date gone by asks for no wait");
        assert_eq!(with("soon"), None);
        assert_eq!(with("-3"), None);
        assert_eq!(retry_after(&HeaderMap::new(), now), None);
        assert_eq!(
            HttpError::Status { status: 503, accept: "2xx".into(), body: String::new(), retry_after: Some(2) }.cause(),
            Cause::Status { code: 503, retry_after: Some(2) }
        );
        assert_eq!(HttpError::TimedOut(3).cause(), Cause::Timeout);
        assert_eq!(HttpError::Transport { url: "u".into(), cause: "refused".into(), connected: false }.cause(), Cause::Connect);
        assert_eq!(HttpError::Transport { url: "u".into(), cause: "reset".into(), connected: true }.cause(), Cause::Error);
        assert_eq!(HttpError::Redirects.cause(), Cause::Error);
    }

    #[test]
    fn accept_is_described_as_written() {
        assert_eq!(describe_accept(&[(200, 299), (404, 404), (300, 302)]), "2xx, 404, 300-302");
    }

    #[test]
    fn errors_do_not_show_credentials_or_queries() {
        let url = Url::parse("https://user:secret@example.com/a?token=abc#f").unwrap();
        assert_eq!(shown(&url), "https://example.com/a");
    }

    #[test]
    fn a_refused_connection_is_a_failure_not_a_panic() {
        // Port 9 (discard) on loopback is closed in test environments.
        let e = error(fetch(&work("http://127.0.0.1:9/")));
        assert!(e.starts_with("HTTP request to http://127.0.0.1:9/ failed"), "{e}");
    }

    #[test]
    fn a_body_that_stalls_after_the_headers_times_out() {
        use std::io::Write;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut buf = [0u8; 1024];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
            // Hold the connection open, seven bytes short, until the client has given up.
            let _ = done_rx.recv();
        });
        assert_eq!(error(fetch(&work(&url))), "HTTP request timed out after 1 s");
        let _ = done_tx.send(());
        let _ = server.join();
    }

    #[test]
    fn binary_bodies_are_kept_as_base64() {
        let Ok(Outcome::Done { text, extra, .. }) = done(200, Value::Object(Map::new()), vec![0xff, 0x00, 0x41]) else { panic!() };
        assert_eq!(text, "base64:/wBB");
        assert_eq!(extra["encoding"], "base64");
    }
}
