//! Runs as OpenTelemetry traces, sent over OTLP/HTTP (protobuf) to `[telemetry] otlp_endpoint`
//! or where the standard `OTEL_EXPORTER_OTLP_*` variables say.
//!
//! Why: a slow step is found on a time axis, and teams already keep one (Jaeger, Tempo,
//! Honeycomb). Which spans a save makes is the core's rule (`vwf_core::trace`); this module hands
//! them to the OpenTelemetry SDK's batch processor, whose thread sends them with the
//! `opentelemetry-otlp` exporter.
//!
//! Invariants:
//! - Spans are built from the run record after a save (see [`crate::telemetry::Watch`]), with
//!   their recorded times and derived ids, not opened and closed around the work: a run parked
//!   for a day, or resumed by another process after a restart, still sends one trace.
//! - Off by default, and then free: no [`Traces`], nothing read back for it, no thread.
//! - Sending never holds a run up: spans queue for the batch thread (2048 at most; past that the
//!   SDK drops them), and a receiver that is down costs a warning in the log, never a step.
//! - The process sends what is queued before it exits (the [`Traces`] is dropped with its app).
//!
//! The HTTP client is the workspace's `reqwest` (blocking, rustls) behind the SDK's `HttpClient`
//! trait, so the binary carries one HTTP stack; the batch thread is no async runtime, so a
//! blocking call is what it can make.

use std::borrow::Cow;
use std::io::Read;
use std::sync::OnceLock;
use std::time::SystemTime;

use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState};
use opentelemetry::{InstrumentationScope, KeyValue, Value};
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SpanData, SpanEvents, SpanExporter, SpanLinks, SpanProcessor};
use vwf_core::trace::{Attr, Span};

/// Where traces go when no endpoint is configured: the standard variables, most specific first.
const TRACES_ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
const ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// `true` turns every signal off, whatever the config says (the SDK's own switch).
const DISABLED_VAR: &str = "OTEL_SDK_DISABLED";

/// The URL spans are posted to: `configured` (a receiver's base URL) plus `/v1/traces`, else
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as it is, else `OTEL_EXPORTER_OTLP_ENDPOINT` plus
/// `/v1/traces`; `None` (no traces) with none of them, or with `OTEL_SDK_DISABLED=true`.
pub fn endpoint(configured: Option<&str>, env: impl Fn(&str) -> Option<String>) -> Option<String> {
    let set = |name: &str| env(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    if set(DISABLED_VAR).is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return None;
    }
    let traces_of = |base: &str| format!("{}/v1/traces", base.trim_end_matches('/'));
    match configured {
        Some(base) => Some(traces_of(base)),
        None => set(TRACES_ENDPOINT_VAR).or_else(|| set(ENDPOINT_VAR).map(|base| traces_of(&base))),
    }
}

/// A new trace of its own, for a run no caller put in one; `None` when the system has no random
/// bytes to give (the run then goes in the trace its run id gives).
pub fn new_trace() -> Option<vwf_core::trace::TraceContext> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    let trace_id = vwf_core::trace::TraceId::from_bytes(bytes)?;
    Some(vwf_core::trace::TraceContext { trace_id, parent_span_id: None })
}

/// The trace sender of one process.
#[derive(Debug)]
pub struct Traces {
    processor: BatchSpanProcessor,
    scope: InstrumentationScope,
}

impl Traces {
    /// Sends to `url` (see [`endpoint`]). The batch thread starts here.
    pub fn new(url: &str) -> Result<Traces, String> {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(url)
            .with_http_client(Blocking::default())
            .build()
            .map_err(|e| format!("cannot send traces to {url}: {e}"))?;
        let mut processor = BatchSpanProcessor::builder(Logged(exporter)).build();
        let resource = Resource::builder_empty()
            .with_service_name("vwf")
            .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
            .build();
        processor.set_resource(&resource);
        let scope = InstrumentationScope::builder("vwf").with_version(env!("CARGO_PKG_VERSION")).build();
        Ok(Traces { processor, scope })
    }

    /// Queues `spans` for the batch thread.
    pub fn send(&self, spans: Vec<Span>) {
        for span in spans {
            self.processor.on_end(self.data(span));
        }
    }

    /// Sends what is queued now, waiting for the receiver's answer.
    pub fn flush(&self) {
        if let Err(e) = self.processor.force_flush() {
            tracing::warn!(error = %e, "cannot send the queued traces");
        }
    }

    fn data(&self, span: Span) -> SpanData {
        let trace_id = TraceId::from_bytes(span.trace_id.to_bytes());
        let parent_span_id = span.parent.map_or(SpanId::INVALID, |p| SpanId::from_bytes(p.to_bytes()));
        SpanData {
            span_context: SpanContext::new(
                trace_id,
                SpanId::from_bytes(span.span_id.to_bytes()),
                TraceFlags::SAMPLED,
                false,
                TraceState::default(),
            ),
            parent_span_id,
            parent_span_is_remote: span.parent_is_remote,
            span_kind: SpanKind::Internal,
            name: Cow::Owned(span.name),
            start_time: SystemTime::from(span.start),
            end_time: SystemTime::from(span.end),
            attributes: span.attributes.into_iter().map(|(key, value)| KeyValue::new(key, attr(value))).collect(),
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status: span.error.map_or(Status::Ok, Status::error),
            instrumentation_scope: self.scope.clone(),
        }
    }
}

impl Drop for Traces {
    fn drop(&mut self) {
        if let Err(e) = self.processor.shutdown() {
            tracing::warn!(error = %e, "cannot send the last traces");
        }
    }
}

fn attr(value: Attr) -> Value {
    match value {
        Attr::Str(s) => Value::from(s),
        Attr::Int(n) => Value::I64(n),
        Attr::Float(f) => Value::F64(f),
    }
}

/// The OTLP exporter, saying in the log when a batch could not be sent.
#[derive(Debug)]
struct Logged(opentelemetry_otlp::SpanExporter);

impl SpanExporter for Logged {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let n = batch.len();
        let sent = self.0.export(batch).await;
        if let Err(e) = &sent {
            tracing::warn!(error = %e, spans = n, "cannot send traces");
        }
        sent
    }
    fn shutdown_with_timeout(&self, timeout: std::time::Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }
    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }
    fn set_resource(&mut self, resource: &Resource) {
        self.0.set_resource(resource);
    }
}

/// A blocking `reqwest` client, made on the batch thread at its first request (a blocking client
/// must not be made or used on an async runtime's thread).
#[derive(Debug, Default)]
struct Blocking(OnceLock<reqwest::blocking::Client>);

/// How long one batch may take to reach the receiver.
const SEND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

#[async_trait::async_trait]
impl HttpClient for Blocking {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = match self.0.get() {
            Some(c) => c,
            None => {
                let made = reqwest::blocking::Client::builder().timeout(SEND_TIMEOUT).build()?;
                self.0.get_or_init(|| made)
            }
        };
        let (parts, body) = request.into_parts();
        let mut sent = client.request(parts.method, parts.uri.to_string()).headers(parts.headers).body(body.to_vec()).send()?;
        let mut answer = Response::builder().status(sent.status().as_u16());
        for (name, value) in sent.headers() {
            answer = answer.header(name, value);
        }
        let mut body = Vec::new();
        (&mut sent).take(4 << 20).read_to_end(&mut body)?;
        Ok(answer.body(Bytes::from(body))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_comes_from_the_config_then_the_standard_variables() {
        let none = |_: &str| None;
        assert_eq!(endpoint(None, none), None, "off by default");
        assert_eq!(endpoint(Some("http://c:4318/"), none).as_deref(), Some("http://c:4318/v1/traces"));
        let vars = |name: &str| match name {
            ENDPOINT_VAR => Some("http://base:4318".to_string()),
            TRACES_ENDPOINT_VAR => Some("http://traces:4318/custom".to_string()),
            _ => None,
        };
        assert_eq!(endpoint(None, vars).as_deref(), Some("http://traces:4318/custom"), "the specific variable as it is");
        assert_eq!(endpoint(Some("http://c:4318"), vars).as_deref(), Some("http://c:4318/v1/traces"), "the config wins");
        let base = |name: &str| (name == ENDPOINT_VAR).then(|| "http://base:4318".to_string());
        assert_eq!(endpoint(None, base).as_deref(), Some("http://base:4318/v1/traces"));
        let disabled = |name: &str| (name == DISABLED_VAR).then(|| "TRUE".to_string()).or_else(|| base(name));
        assert_eq!(endpoint(Some("http://c:4318"), disabled), None, "OTEL_SDK_DISABLED wins over all");
    }
}
