//! A person's answer to an approval gate: the option chosen, the form's values, the texts of
//! earlier steps they changed, and who they are (see [`crate::form`]).

use super::*;
use crate::approvers::{Refused, Vote};
use crate::form;

/// A person's answer to an approval gate.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reply {
    /// One of the gate's options (compared without regard to case).
    pub answer: String,
    /// The form's values, by field name.
    pub fields: Map<String, Value>,
    /// The new text of each step the gate lets the person change, by step id.
    pub edits: BTreeMap<String, String>,
    /// Who answered, as the caller says (or as a platform's signed callback says:
    /// `telegram:<user id>`, `slack:<user id>`).
    pub by: Option<String>,
    /// The surface the answer came through (`api`, `cli`, `mcp`, `chat`, `telegram`, `slack`).
    pub via: Option<String>,
    /// The platform's id of the tap that gave it: a tap delivered twice counts once.
    pub tap: Option<String>,
}

impl From<String> for Reply {
    fn from(answer: String) -> Reply {
        Reply { answer, ..Reply::default() }
    }
}

impl From<&str> for Reply {
    fn from(answer: &str) -> Reply {
        Reply::from(answer.to_string())
    }
}

/// What the history calls a step whose text a person changed at a gate.
pub const EDITED: &str = "edited";
/// What the history calls an answer counted towards a gate's `approvers.required`.
pub const VOTED: &str = "voted";

impl Run {
    /// Answers the gate `node` parked at `pos` of `parked`: the whole answer is checked first
    /// (option, form, edits, who), so a refused one changes nothing.
    pub(super) fn answer_gate(&mut self, pos: usize, node: &PassId, reply: Reply, now: Ts) -> Result<(), EngineError> {
        let bad = |why: String| EngineError::BadRequest(format!("{node:?}: {why}"));
        let Some(Pending::Approval { options, approvers, votes, .. }) = self.parked.get(pos) else {
            return Err(EngineError::Conflict(format!("run {} is not waiting on gate {node:?}", self.run_id)));
        };
        let (options, approvers, mut votes) = (options.clone(), approvers.clone().unwrap_or_default(), votes.clone());
        let Some(chosen) = options.iter().find(|o| o.eq_ignore_ascii_case(reply.answer.trim())).cloned() else {
            return Err(EngineError::BadRequest(format!(
                "answer {:?} is not one of the options of {node:?}: {}",
                reply.answer,
                options.join(", ")
            )));
        };
        let (fields, editable) = match self.plan_step(node).map(PlanStep::spec) {
            Some(Ok(Spec::Approval { fields, edit, .. })) => (fields, edit),
            _ => (Vec::new(), Vec::new()),
        };
        form::check_by(reply.by.as_deref()).map_err(bad)?;
        if let Some(tap) = &reply.tap
            && votes.iter().any(|v| v.tap.as_ref() == Some(tap))
        {
            return Err(EngineError::Conflict(format!("{node:?}: this tap was counted already")));
        }
        approvers.admit(reply.by.as_deref(), reply.via.as_deref(), &votes).map_err(|r| match r {
            Refused::Bad(why) => bad(why),
            Refused::NotAllowed(why) => EngineError::Forbidden(format!("{node:?}: {why}")),
            Refused::Again(why) => EngineError::Conflict(format!("{node:?}: {why}")),
        })?;
        let values = form::check_values(&fields, &reply.fields).map_err(bad)?;
        for (target, text) in &reply.edits {
            if !editable.contains(target) {
                let may = if editable.is_empty() { "no step".to_string() } else { editable.join(", ") };
                return Err(bad(format!("edits.{target}: this gate lets {may} be edited")));
            }
            if text.len() > limits::STEP_OUTPUT_BYTES {
                return Err(bad(format!("edits.{target}: at most {} bytes", limits::STEP_OUTPUT_BYTES)));
            }
            if !self.outputs.contains_key(target) {
                return Err(bad(format!("edits.{target}: the step has no text to change")));
            }
        }
        // An edit takes effect with the answer that gives it, counted or deciding: the next person
        // sees the text as changed (the gate's `pending.edit` follows), and the step keeps its
        // first text.
        let at = time::format(&now);
        for (target, text) in reply.edits {
            let Some(step) = self.plan.step(&target) else { continue };
            let (command, instance) = (step.is(NodeKind::Command), PassId::top(step.id.clone()));
            let rebuild =
                |t: &str, extra: Map<String, Value>| if command { view::command_view(t, extra) } else { view::output_view(t, extra) };
            let view = form::edited_view(&self.outputs[&target], &text, reply.by.as_deref(), &at, rebuild);
            if let Some(Pending::Approval { edit, .. }) = self.parked.get_mut(pos)
                && let Some(shown) = edit.get_mut(&target)
            {
                *shown = view.get("text").cloned().unwrap_or(Value::Null);
            }
            self.keep_output(&instance, view);
            self.log(HistoryEvent { at: now, event: EDITED.into(), node: Some(target), detail: json!({"gate": node, "by": reply.by}) });
        }
        let counted = approvers.required > 1 || !approvers.veto.is_empty() || !approvers.allowed.is_empty();
        let decides = approvers.decides(&votes, &chosen);
        if let (true, Some(by)) = (counted, reply.by.clone()) {
            let fields = if fields.is_empty() { Map::new() } else { values.clone() };
            votes.push(Vote { answer: chosen.clone(), by, via: reply.via.clone(), at: now, tap: reply.tap.clone(), fields });
        }
        if !decides {
            // Counted, and the gate waits for more: the answer is kept and nothing else changes.
            if let Some(Pending::Approval { votes: kept, .. }) = self.parked.get_mut(pos) {
                *kept = votes;
            }
            self.log(HistoryEvent {
                at: now,
                event: VOTED.into(),
                node: Some(node.to_string()),
                detail: json!({"answer": chosen, "by": reply.by}),
            });
            return Ok(());
        }
        self.parked.remove(pos);
        let mut extra = Map::new();
        extra.insert("answer".into(), Value::String(chosen.clone()));
        if !fields.is_empty() {
            extra.insert("fields".into(), Value::Object(values));
        }
        if let Some(by) = reply.by {
            extra.insert("by".into(), Value::String(by));
        }
        if counted {
            extra.insert("approvers".into(), serde_json::to_value(&votes).unwrap_or(Value::Null));
        }
        self.finish_step(node, &chosen, extra, now);
        Ok(())
    }
}

/// A gate that asks to be announced and was not yet: what every notification of it says.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    /// The gate's step (`<design step>/<node>` never: a child run announces its own gates).
    pub node: PassId,
    pub question: String,
    pub options: Vec<String>,
    /// What the notifications show beside the question.
    pub context: String,
    pub targets: Vec<String>,
    pub deadline: Option<Ts>,
    /// Whether an answer needs the run page (a required field without a default, or `edit`).
    pub needs_form: bool,
}

impl Run {
    /// The gates parked now whose notifications are still to send, in the order they opened.
    pub fn notices(&self) -> Vec<Notice> {
        if self.status.is_finished() {
            return Vec::new();
        }
        self.parked
            .iter()
            .filter_map(|p| match p {
                Pending::Approval {
                    node,
                    question,
                    options,
                    deadline,
                    fields,
                    edit,
                    notify,
                    context,
                    notified: false,
                    run_id: None,
                    ..
                } if !notify.is_empty() => {
                    let needs_form = !edit.is_empty()
                        || fields
                            .iter()
                            .any(|f| f.get("required") == Some(&Value::Bool(true)) && f.get("default").is_none_or(Value::is_null));
                    Some(Notice {
                        node: node.own()?.clone(),
                        question: question.clone(),
                        options: options.clone(),
                        context: context.clone().unwrap_or_default(),
                        targets: notify.clone(),
                        deadline: *deadline,
                        needs_form,
                    })
                }
                _ => None,
            })
            .collect()
    }

    /// Records the notifications of gate `node` as sent: each under `deliveries` with the
    /// platform's answer. A gate no longer parked (answered meanwhile) keeps them too.
    pub fn record_notices(&mut self, node: &PassId, sent: Vec<Delivery>, now: Ts) {
        for d in sent {
            self.deliveries.push(d);
            self.mark(journal::Part::Delivery(self.deliveries.len() - 1));
        }
        if let Some(Pending::Approval { notified, .. }) = self.parked.iter_mut().find(|p| p.node() == node) {
            *notified = true;
        }
        self.touch(now);
        self.refresh_status();
        self.mark(journal::Part::Head);
    }
}
