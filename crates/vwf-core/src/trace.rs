//! A run as an OpenTelemetry trace: the ids, parents, times and attributes of its spans, computed
//! from what a save changed ([`crate::transition`]). `vwf-runtime` sends them over OTLP.
//!
//! Why here: which spans a save makes, and how they hang together, is a rule about runs. Built
//! from the durable record (an attempt's own start and end, the run's own trace context), they
//! let every process that saves a run (the one that started it, one that answers its gate after
//! a restart) send its part of one trace, with no state of its own.
//!
//! Invariants:
//! - One span per ended step attempt (a gate's or a wait's attempt lasts until it is answered or
//!   over; each retry is an attempt of its own) and one per run end, the run's root; a step's span
//!   is a child of its run's root span.
//! - Ids are derived, never drawn: the root span's from the run id, an attempt's from the run
//!   id, the step instance and the attempt number (SHA-256, never zero). So a child run knows its
//!   design step's span without asking anyone, and a span sent twice (by a process stopped
//!   after it sent and before it saved) keeps its id.
//! - A run's trace id is the one its trigger carries ([`TraceContext`]: a caller's
//!   `traceparent`, its parent run's trace for a child, or one drawn at its start when traces are
//!   on), else one derived from its run id, so a run started while traces were off still sends
//!   one trace.
//! - A run that ends more than once (retried after a failure) sends its root span again with
//!   the same id, covering the whole run: a receiver that keeps the last copy of a span keeps it.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::names::{PassId, RunId};
use crate::run::{Run, Status, StepStatus};
use crate::time::Ts;
use crate::transition::Transition;

/// A W3C trace id: 16 bytes, not all zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceId([u8; 16]);

/// A W3C span id: 8 bytes, not all zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpanId([u8; 8]);

impl TraceId {
    /// `None` for all zeros, which W3C reserves for "no trace".
    pub fn from_bytes(bytes: [u8; 16]) -> Option<TraceId> {
        (bytes != [0; 16]).then_some(TraceId(bytes))
    }
    /// 32 lowercase hex digits, not all zero.
    pub fn parse(hex: &str) -> Option<TraceId> {
        TraceId::from_bytes(parse_hex(hex)?)
    }
    pub fn to_bytes(self) -> [u8; 16] {
        self.0
    }
}

impl SpanId {
    /// `None` for all zeros, which W3C reserves for "no span".
    pub fn from_bytes(bytes: [u8; 8]) -> Option<SpanId> {
        (bytes != [0; 8]).then_some(SpanId(bytes))
    }
    /// 16 lowercase hex digits, not all zero.
    pub fn parse(hex: &str) -> Option<SpanId> {
        SpanId::from_bytes(parse_hex(hex)?)
    }
    pub fn to_bytes(self) -> [u8; 8] {
        self.0
    }
}

fn parse_hex<const N: usize>(hex: &str) -> Option<[u8; N]> {
    let digits = hex.as_bytes();
    if digits.len() != 2 * N || !digits.iter().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b)) {
        return None;
    }
    let mut out = [0u8; N];
    for (i, pair) in digits.chunks(2).enumerate() {
        out[i] = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(out)
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl std::fmt::Display for TraceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&to_hex(&self.0))
    }
}

impl std::fmt::Display for SpanId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&to_hex(&self.0))
    }
}

/// Where a run's spans go: its trace, and the span its root span is a child of (a caller's span
/// from `traceparent`, the design step that started a child run). In the run file as
/// `trigger.trace: {"trace_id": "<32 hex>", "parent_span_id": "<16 hex>"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceContext {
    pub trace_id: TraceId,
    pub parent_span_id: Option<SpanId>,
}

#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Serialize, Deserialize)]
#[cfg_attr(feature = "schema", schemars(rename = "TraceContext"))]
struct TraceText {
    /// The W3C trace id, 32 lowercase hex digits.
    #[cfg_attr(feature = "schema", schemars(regex(pattern = r"^[0-9a-f]{32}$")))]
    trace_id: String,
    /// The span the run's root span is a child of, 16 lowercase hex digits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(regex(pattern = r"^[0-9a-f]{16}$")))]
    parent_span_id: Option<String>,
}

impl Serialize for TraceContext {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        TraceText { trace_id: self.trace_id.to_string(), parent_span_id: self.parent_span_id.map(|p| p.to_string()) }.serialize(s)
    }
}

impl<'de> Deserialize<'de> for TraceContext {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = TraceText::deserialize(d)?;
        let bad = || serde::de::Error::custom("a trace context is a trace_id of 32 lowercase hex digits and a parent_span_id of 16");
        let trace_id = TraceId::parse(&text.trace_id).ok_or_else(bad)?;
        let parent_span_id = match text.parent_span_id {
            Some(p) => Some(SpanId::parse(&p).ok_or_else(bad)?),
            None => None,
        };
        Ok(TraceContext { trace_id, parent_span_id })
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for TraceContext {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "TraceContext".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        TraceText::json_schema(generator)
    }
}

/// Reads a run file's `trigger.trace`: a value that is not a trace context (a damaged file) is
/// read as none, so the run falls back to the trace its run id gives and stays readable.
pub fn lenient<'de, D: Deserializer<'de>>(d: D) -> Result<Option<TraceContext>, D::Error> {
    let value = Option::<Value>::deserialize(d)?;
    Ok(value.and_then(|v| serde_json::from_value(v).ok()))
}

impl TraceContext {
    /// A W3C `traceparent` header (`00-<trace id>-<parent id>-<flags>`; a later version may add
    /// fields after these): `None` when it is not one, and the caller's trace is then ignored, as
    /// the W3C recommendation asks.
    pub fn from_traceparent(header: &str) -> Option<TraceContext> {
        let header = header.trim();
        let mut parts = header.split('-');
        let version = parts.next()?;
        let (trace_id, parent, flags) = (parts.next()?, parts.next()?, parts.next()?);
        let version: [u8; 1] = parse_hex(version)?;
        let _: [u8; 1] = parse_hex(flags)?;
        match version[0] {
            0xff => return None,
            0 if parts.next().is_some() => return None,
            _ => {}
        }
        Some(TraceContext { trace_id: TraceId::parse(trace_id)?, parent_span_id: Some(SpanId::parse(parent)?) })
    }
}

/// A value of a span attribute.
#[derive(Debug, Clone, PartialEq)]
pub enum Attr {
    Str(String),
    Int(i64),
    Float(f64),
}

/// One finished span.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    pub parent: Option<SpanId>,
    /// The parent is not a span of this run (a caller's, a parent run's).
    pub parent_is_remote: bool,
    pub name: String,
    pub start: Ts,
    pub end: Ts,
    pub attributes: Vec<(&'static str, Attr)>,
    /// Why it failed; `None` for a span that ended well.
    pub error: Option<String>,
}

/// An id derived from `parts`: the first bytes of their SHA-256 that are not all zero.
fn derive<const N: usize>(parts: &[&str]) -> [u8; N] {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    let digest = hasher.finalize();
    digest.chunks(N).map(|c| <[u8; N]>::try_from(c).unwrap_or([0; N])).find(|c| *c != [0; N]).unwrap_or([1; N])
}

/// The root span of run `run`.
pub fn run_span_id(run: &RunId) -> SpanId {
    SpanId(derive(&["vwf run span", run.as_str()]))
}

/// The span of attempt `attempt` of step instance `instance` of run `run`.
pub fn attempt_span_id(run: &RunId, instance: &PassId, attempt: u32) -> SpanId {
    SpanId(derive(&["vwf step span", run.as_str(), &instance.to_string(), &attempt.to_string()]))
}

impl Run {
    /// Where this run's spans go: the context its trigger carries, else a trace of its own
    /// derived from its run id (no parent).
    pub fn trace_context(&self) -> TraceContext {
        self.trigger()
            .trace
            .unwrap_or_else(|| TraceContext { trace_id: TraceId(derive(&["vwf trace", self.run_id().as_str()])), parent_span_id: None })
    }

    /// The context a run started by this run's step `instance` (its current attempt) goes in.
    pub fn child_trace(&self, instance: &PassId) -> TraceContext {
        let attempt = self.record(instance).map_or(1, |r| r.attempts.max(1));
        TraceContext { trace_id: self.trace_context().trace_id, parent_span_id: Some(attempt_span_id(self.run_id(), instance, attempt)) }
    }
}

/// The spans a save of `run` completed: one per step attempt that ended, then the root span
/// when the run ended.
pub fn spans(run: &Run, transitions: &[Transition<'_>]) -> Vec<Span> {
    let context = run.trace_context();
    let root = run_span_id(run.run_id());
    let mut spans = Vec::new();
    for t in transitions {
        match t {
            Transition::Step { record, ended } => {
                let kind = run.plan_step(&record.node).and_then(|s| s.kind()).map(|k| k.as_str());
                for attempt in ended {
                    let Some(end) = attempt.finished_at else { continue };
                    let mut attributes = vec![
                        ("vwf.run_id", Attr::Str(run.run_id().to_string())),
                        ("vwf.node", Attr::Str(record.node.to_string())),
                        ("vwf.node_type", Attr::Str(kind.unwrap_or("unknown").to_string())),
                        ("vwf.attempt", Attr::Int(i64::from(attempt.attempt))),
                        ("vwf.status", Attr::Str(if attempt.status == StepStatus::Done { "done" } else { "failed" }.into())),
                    ];
                    if let Some(delay) = attempt.delay_ms {
                        attributes.push(("vwf.retry_delay_ms", Attr::Int(i64::try_from(delay).unwrap_or(i64::MAX))));
                    }
                    let latest = attempt.attempt == record.attempts && attempt.status == StepStatus::Done;
                    if kind == Some("agent") {
                        attributes.extend(agent_attributes(run, record, latest));
                    }
                    spans.push(Span {
                        trace_id: context.trace_id,
                        span_id: attempt_span_id(run.run_id(), &record.node, attempt.attempt),
                        parent: Some(root),
                        parent_is_remote: false,
                        name: record.node.to_string(),
                        start: attempt.started_at,
                        end: end.max(attempt.started_at),
                        attributes,
                        error: (attempt.status == StepStatus::Failed)
                            .then(|| attempt.error.clone().unwrap_or_else(|| "the step failed".into())),
                    });
                }
            }
            Transition::Status { .. } if run.status().is_finished() => spans.push(root_span(run, context, root)),
            Transition::Status { .. } | Transition::Started => {}
        }
    }
    spans
}

/// The GenAI semantic conventions' attributes of an agent step's attempt: the model asked for
/// (its inputs), and for the attempt that answered, the model that answered and the tokens it
/// used, as the backend reported them.
fn agent_attributes(run: &Run, record: &crate::run::StepRecord, answered: bool) -> Vec<(&'static str, Attr)> {
    let mut out = vec![("gen_ai.operation.name", Attr::Str("chat".into()))];
    let asked = record.inputs.as_ref().and_then(|i| i.get("model")).and_then(Value::as_str);
    let view = if answered { run.view_of(&record.node) } else { None };
    let usage = view.and_then(|v| v.get("usage")).filter(|u| u.is_object());
    let answered_by = usage.and_then(|u| u.get("model")).and_then(Value::as_str);
    if let Some(model) = asked.or(answered_by) {
        out.push(("gen_ai.request.model", Attr::Str(model.to_string())));
    }
    if let Some(model) = answered_by {
        out.push(("gen_ai.response.model", Attr::Str(model.to_string())));
    }
    if let Some(usage) = usage {
        for (key, field) in [
            ("gen_ai.usage.input_tokens", "input_tokens"),
            ("gen_ai.usage.output_tokens", "output_tokens"),
            ("gen_ai.usage.cache_read.input_tokens", "cached_tokens"),
        ] {
            if let Some(n) = usage.get(field).and_then(Value::as_u64) {
                out.push((key, Attr::Int(i64::try_from(n).unwrap_or(i64::MAX))));
            }
        }
    }
    if let Some(cost) = view.and_then(|v| v.get("cost")).and_then(Value::as_f64) {
        out.push(("vwf.cost", Attr::Float(cost)));
    }
    out
}

fn root_span(run: &Run, context: TraceContext, root: SpanId) -> Span {
    let mut attributes = vec![
        ("vwf.run_id", Attr::Str(run.run_id().to_string())),
        ("vwf.design", Attr::Str(run.design().to_string())),
        ("vwf.status", Attr::Str(run.status().as_str().to_string())),
        ("vwf.trigger", Attr::Str(run.trigger().mode.as_str().to_string())),
    ];
    if let Some(version) = run.version() {
        attributes.push(("vwf.version", Attr::Int(i64::try_from(version).unwrap_or(i64::MAX))));
    }
    let totals = run.totals();
    if totals.usage != crate::usage::Usage::default() {
        attributes.push(("gen_ai.usage.input_tokens", Attr::Int(i64::try_from(totals.usage.input_tokens).unwrap_or(i64::MAX))));
        attributes.push(("gen_ai.usage.output_tokens", Attr::Int(i64::try_from(totals.usage.output_tokens).unwrap_or(i64::MAX))));
        if let Some(cost) = totals.cost {
            attributes.push(("vwf.cost", Attr::Float(cost)));
        }
    }
    Span {
        trace_id: context.trace_id,
        span_id: root,
        parent: context.parent_span_id,
        parent_is_remote: context.parent_span_id.is_some(),
        name: format!("run {}", run.design()),
        start: run.created_at(),
        end: run.updated_at().max(run.created_at()),
        attributes,
        error: (run.status() == Status::Failed).then(|| run.error().map_or_else(|| "the run failed".into(), |e| e.text().to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::design::Design;
    use crate::plan::Plan;
    use crate::run::{Outcome, Response, TriggerInfo};
    use crate::transition::{Saved, between};
    use serde_json::json;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn t(s: &str) -> Ts {
        crate::time::parse(s).unwrap()
    }

    fn run(nodes: Value, edges: Value, trace: Option<TraceContext>) -> Run {
        let design = Design::from_value(&json!({"nodes": nodes, "edges": edges})).unwrap();
        let plan = Plan::compile("d", &design).unwrap();
        let mut trigger = TriggerInfo::new(crate::trigger::TriggerMode::Manual, Value::Null);
        trigger.trace = trace;
        Run::start(plan, RunId::parse("000000000001").expect("an id"), trigger, t("2026-01-01T00:00:00Z"))
    }

    /// Drives `run` as the runner does, saving after every change; answers the spans of every
    /// save. Tasks start at `now` and end two seconds later.
    fn drive(run: &mut Run, saved: &mut Option<Saved>, now: &str, outcome: impl Fn(&str) -> Outcome) -> Vec<Span> {
        let mut out = Vec::new();
        crate::transition::drive_saving(run, saved, t(now), outcome, |run, transitions| out.extend(spans(run, transitions)));
        out
    }

    fn done(_: &str) -> Outcome {
        Outcome::Done { text: "ok".into(), extra: Default::default(), tokens: 0 }
    }

    #[test]
    fn a_traceparent_is_read_as_the_w3c_recommendation_says() {
        let context = TraceContext::from_traceparent(PARENT).expect("a valid header");
        assert_eq!(context.trace_id.to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(context.parent_span_id.map(|p| p.to_string()).as_deref(), Some("00f067aa0ba902b7"));
        // A later version may carry more fields after the four it shares with version 00.
        assert!(TraceContext::from_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later").is_some());
        for bad in [
            "",
            "00",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
            "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-é1",
        ] {
            assert_eq!(TraceContext::from_traceparent(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_trace_context_reads_back_as_written_and_a_damaged_one_as_none() {
        let context = TraceContext::from_traceparent(PARENT).unwrap();
        let text = serde_json::to_value(context).unwrap();
        assert_eq!(text, json!({"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "parent_span_id": "00f067aa0ba902b7"}));
        assert_eq!(serde_json::from_value::<TraceContext>(text).unwrap(), context);
        let mut trigger = serde_json::to_value(TriggerInfo::new(crate::trigger::TriggerMode::Manual, Value::Null)).unwrap();
        assert!(trigger.get("trace").is_none(), "no trace context, no field");
        for damaged in [json!({"trace_id": "zz"}), json!(7), json!({"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "parent_span_id": 1})] {
            trigger["trace"] = damaged;
            let read: TriggerInfo = serde_json::from_value(trigger.clone()).expect("still readable");
            assert_eq!(read.trace, None);
        }
    }

    #[test]
    fn a_run_parked_at_a_gate_sends_one_trace_from_whichever_process_resumes_it() {
        let nodes = json!([
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "work", "type": "command", "run": "true"},
            {"id": "gate", "type": "approval", "question": "ok?", "options": ["yes", "no"]},
            {"id": "after", "type": "command", "run": "true"},
        ]);
        let edges =
            json!([{"from": "start", "to": "work"}, {"from": "work", "to": "gate"}, {"from": "gate", "to": "after", "label": "yes"}]);
        let caller = TraceContext::from_traceparent(PARENT).unwrap();
        let mut r = run(nodes, edges, Some(caller));
        let mut saved = None;
        let first = drive(&mut r, &mut saved, "2026-01-01T00:00:00Z", done);
        assert_eq!(first.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["work"], "only the ended attempt, no root yet");

        // Another process reads the saved run back and answers the gate.
        let mut r: Run = serde_json::from_value(serde_json::to_value(&r).unwrap()).unwrap();
        r.respond(&crate::names::pid("gate"), Response::Answer("yes".into()), t("2026-01-01T00:01:00Z")).unwrap();
        let mut rest = spans(&r, &between(saved.as_ref(), &r));
        saved = Some(Saved::of(&r));
        rest.extend(drive(&mut r, &mut saved, "2026-01-01T00:01:00Z", done));
        assert_eq!(rest.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["gate", "after", "run d"]);

        let all: Vec<&Span> = first.iter().chain(&rest).collect();
        let root = run_span_id(r.run_id());
        assert!(all.iter().all(|s| s.trace_id == caller.trace_id), "one trace, the caller's");
        let root_span = all.iter().find(|s| s.span_id == root).expect("the root span");
        assert_eq!((root_span.parent, root_span.parent_is_remote), (caller.parent_span_id, true));
        assert_eq!((root_span.start, root_span.end), (t("2026-01-01T00:00:00Z"), t("2026-01-01T00:01:02Z")));
        for step in all.iter().filter(|s| s.span_id != root) {
            assert_eq!(step.parent, Some(root), "{}", step.name);
            assert_eq!(step.error, None);
        }
        let gate = all.iter().find(|s| s.name == "gate").unwrap();
        assert_eq!((gate.end - gate.start).num_seconds(), 60, "a gate's span lasts until it is answered");
        let mut ids: Vec<SpanId> = all.iter().map(|s| s.span_id).collect();
        ids.sort_by_key(|i| i.to_bytes());
        ids.dedup();
        assert_eq!(ids.len(), all.len(), "every span has an id of its own");
        // A child a step starts hangs under that step's span, in the same trace.
        let child = r.child_trace(&crate::names::pid("after"));
        assert_eq!(child.trace_id, caller.trace_id);
        assert_eq!(child.parent_span_id, Some(attempt_span_id(r.run_id(), &crate::names::pid("after"), 1)));
    }

    #[test]
    fn failed_attempts_say_why_and_a_retried_run_resends_its_root_with_the_same_id() {
        let nodes = json!([{"id": "start", "type": "trigger", "mode": "manual"}, {"id": "boom", "type": "command", "run": "false"}]);
        let mut r = run(nodes, json!([{"from": "start", "to": "boom"}]), None);
        let mut saved = None;
        let failed = drive(&mut r, &mut saved, "2026-01-01T00:00:00Z", |_| Outcome::failed("exit 1"));
        assert_eq!(failed.len(), 2);
        assert_eq!(failed[0].error.as_deref(), Some("exit 1"));
        assert!(failed[1].error.is_some(), "the run's root span failed too");
        assert_eq!(failed[1].parent, None, "no caller: a trace of its own");
        assert_eq!(failed[1].trace_id, r.trace_context().trace_id);

        r.retry(t("2026-01-01T00:05:00Z")).unwrap();
        let retried = drive(&mut r, &mut saved, "2026-01-01T00:05:00Z", done);
        let root = retried.iter().find(|s| s.parent.is_none()).expect("the root again");
        assert_eq!(root.span_id, failed[1].span_id);
        assert_eq!(root.error, None);
        assert_eq!(root.start, failed[1].start, "it covers the whole run");
        let second = retried.iter().find(|s| s.name == "boom").unwrap();
        assert_ne!(second.span_id, failed[0].span_id, "each attempt is a span of its own");
        assert!(second.attributes.contains(&("vwf.attempt", Attr::Int(2))));
    }

    #[test]
    fn derived_ids_are_stable_and_never_zero() {
        let id = RunId::parse("000000000001").unwrap();
        assert_eq!(run_span_id(&id), run_span_id(&id));
        assert_ne!(attempt_span_id(&id, &crate::names::pid("a"), 1), attempt_span_id(&id, &crate::names::pid("a"), 2));
        assert_ne!(attempt_span_id(&id, &crate::names::pid("a#1"), 1), attempt_span_id(&id, &crate::names::pid("a"), 1));
        assert_ne!(derive::<8>(&["x"]), [0; 8]);
    }
}
