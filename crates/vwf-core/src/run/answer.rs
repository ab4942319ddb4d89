//! A person's answer to an approval gate: the option chosen, the form's values, the texts of
//! earlier steps they changed, and who they are (see [`crate::form`]).

use super::*;
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
    /// Who answered, as the caller says.
    pub by: Option<String>,
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

impl Run {
    /// Answers the gate `node` parked at `pos` of `parked`: the whole answer is checked first
    /// (option, form, edits, who), so a refused one changes nothing.
    pub(super) fn answer_gate(&mut self, pos: usize, node: &str, options: &[String], reply: Reply, now: Ts) -> Result<(), EngineError> {
        let bad = |why: String| EngineError::BadRequest(format!("{node:?}: {why}"));
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
        self.parked.remove(pos);
        let at = time::format(&now);
        for (target, text) in reply.edits {
            let command = self.plan.step(&target).is_some_and(|s| s.is(NodeKind::Command));
            let rebuild =
                |t: &str, extra: Map<String, Value>| if command { view::command_view(t, extra) } else { view::output_view(t, extra) };
            let view = form::edited_view(&self.outputs[&target], &text, reply.by.as_deref(), &at, rebuild);
            self.keep_output(&target, view);
            self.log(HistoryEvent { at: now, event: EDITED.into(), node: Some(target), detail: json!({"gate": node, "by": reply.by}) });
        }
        let mut extra = Map::new();
        extra.insert("answer".into(), Value::String(chosen.clone()));
        if !fields.is_empty() {
            extra.insert("fields".into(), Value::Object(values));
        }
        if let Some(by) = reply.by {
            extra.insert("by".into(), Value::String(by));
        }
        self.finish_step(node, &chosen, extra, now);
        Ok(())
    }
}
