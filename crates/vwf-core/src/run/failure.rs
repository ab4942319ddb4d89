//! Why a run failed, as the engine decides on it.
//!
//! The engine's own reasons (a gate's deadline passed, the token budget ran out, the process died)
//! are variants the engine matches on; any other error (a driver's, a template's, a rule's) is its
//! text. A `RunFailure` is stored as the text people read, exactly as when the run's error was a plain
//! string, and read back into the same variant, so a run file written by any version loads and
//! behaves the same. Every failure is made through the same reading (`From`), so a run in memory is
//! always what a reload of its file gives.

use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::expr::ExprError;
use crate::shell::PlacementError;
use crate::template::TemplateError;

pub const APPROVAL_TIMED_OUT: &str = "approval timed out";
pub const ESCALATION_REQUESTED: &str = "escalation requested";
/// The error of a gate that timed out with `on_timeout: escalate`: the timeout and the escalation,
/// where people read why a run failed.
pub const APPROVAL_TIMED_OUT_ESCALATED: &str = "approval timed out; escalation requested";
pub const TOKEN_BUDGET_EXCEEDED: &str = "token budget exceeded";
/// The error of a run whose model calls cost more than its design's `budget.cost`.
pub const COST_BUDGET_EXCEEDED: &str = "cost budget exceeded";
/// The error of a run that had not ended by its design's `timeout`.
pub const RUN_TIMED_OUT: &str = "run timed out";
const INTERRUPTED: &str = "interrupted";
const INTERRUPTED_DURING: &str = "interrupted during step ";

/// Why a run failed. Reads as its text (`Deref<Target = str>`, `Display`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunFailure {
    /// A gate's deadline passed (`on_timeout: reject`).
    ApprovalTimedOut,
    /// A gate's deadline passed and escalation was requested (`on_timeout: escalate`).
    ApprovalTimedOutEscalated,
    /// An agent step's tokens took the run past its budget.
    TokenBudgetExceeded,
    /// The run had not ended by its design's `timeout`.
    RunTimedOut,
    /// The process driving the run died while it was `running`; the text names the step it was in
    /// (`interrupted during step draft`), or is `interrupted` when none was.
    Interrupted(String),
    /// Any other error, as its text.
    Error(String),
}

impl RunFailure {
    /// The failure of a run whose process died during step `node` (or between steps).
    pub fn interrupted(node: Option<&str>) -> RunFailure {
        RunFailure::Interrupted(node.map_or_else(|| INTERRUPTED.to_string(), |n| format!("{INTERRUPTED_DURING}{n}")))
    }

    /// Whether a gate's deadline failed the run (either `on_timeout`).
    pub fn is_approval_timeout(&self) -> bool {
        matches!(self, RunFailure::ApprovalTimedOut | RunFailure::ApprovalTimedOutEscalated)
    }

    /// The text people read.
    pub fn text(&self) -> &str {
        match self {
            RunFailure::ApprovalTimedOut => APPROVAL_TIMED_OUT,
            RunFailure::ApprovalTimedOutEscalated => APPROVAL_TIMED_OUT_ESCALATED,
            RunFailure::TokenBudgetExceeded => TOKEN_BUDGET_EXCEEDED,
            RunFailure::RunTimedOut => RUN_TIMED_OUT,
            RunFailure::Interrupted(text) | RunFailure::Error(text) => text,
        }
    }
}

impl Default for RunFailure {
    fn default() -> RunFailure {
        RunFailure::Error(String::new())
    }
}

/// Reads a failure from its text: the engine's own texts give their variants, any other text is
/// an `Error`. `RunFailure::from(text).text() == text` for every text.
impl From<String> for RunFailure {
    fn from(text: String) -> RunFailure {
        match text.as_str() {
            APPROVAL_TIMED_OUT => RunFailure::ApprovalTimedOut,
            APPROVAL_TIMED_OUT_ESCALATED => RunFailure::ApprovalTimedOutEscalated,
            TOKEN_BUDGET_EXCEEDED => RunFailure::TokenBudgetExceeded,
            RUN_TIMED_OUT => RunFailure::RunTimedOut,
            INTERRUPTED => RunFailure::Interrupted(text),
            t if t.strip_prefix(INTERRUPTED_DURING).is_some_and(|node| !node.is_empty()) => RunFailure::Interrupted(text),
            _ => RunFailure::Error(text),
        }
    }
}

impl From<&str> for RunFailure {
    fn from(text: &str) -> RunFailure {
        RunFailure::from(text.to_string())
    }
}

impl From<&String> for RunFailure {
    fn from(text: &String) -> RunFailure {
        RunFailure::from(text.clone())
    }
}

impl Deref for RunFailure {
    type Target = str;
    fn deref(&self) -> &str {
        self.text()
    }
}

impl fmt::Display for RunFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl Serialize for RunFailure {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.text())
    }
}

impl<'de> Deserialize<'de> for RunFailure {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RunFailure, D::Error> {
        String::deserialize(d).map(RunFailure::from)
    }
}

/// Why the engine could not begin or settle a step: the core's errors a step meets (templates,
/// conditions, shell placement, the step's own fields), one type the engine fails a step with.
/// Its text is the step's error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StepError {
    #[error(transparent)]
    Template(#[from] TemplateError),
    #[error(transparent)]
    Expr(#[from] ExprError),
    #[error(transparent)]
    Placement(#[from] PlacementError),
    /// A condition that cannot be evaluated against what it reads.
    #[error("condition {src:?}: {error}")]
    Condition { src: String, error: ExprError },
    /// A condition naming a node the run does not have.
    #[error("condition names an unknown node: out.{0}")]
    UnknownNode(String),
    /// A condition reading a step that was skipped.
    #[error("condition reads {0:?}, which has no output (it was skipped)")]
    NoOutput(String),
    /// The step's fields are not valid (only in a hand-edited run file: plans come from valid designs).
    #[error("step {id:?} is not valid: {}", .messages.join("; "))]
    Invalid { id: String, messages: Vec<String> },
    /// Any other rule a step broke, as its message.
    #[error("{0}")]
    Rule(String),
}

impl From<String> for StepError {
    fn from(message: String) -> StepError {
        StepError::Rule(message)
    }
}

impl From<StepError> for RunFailure {
    fn from(e: StepError) -> RunFailure {
        RunFailure::from(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each step error reads as the message the engine gave when errors were strings, and fails a
    /// run with that text.
    #[test]
    fn step_errors_read_as_their_messages() {
        let cases = [
            (StepError::Template(TemplateError("unclosed {{".into())), "unclosed {{"),
            (
                StepError::Condition { src: "out.a > 1".into(), error: ExprError("cannot compare".into()) },
                "condition \"out.a > 1\": cannot compare",
            ),
            (StepError::UnknownNode("b.x".into()), "condition names an unknown node: out.b.x"),
            (StepError::NoOutput("b".into()), "condition reads \"b\", which has no output (it was skipped)"),
            (StepError::Invalid { id: "c".into(), messages: vec!["one".into(), "two".into()] }, "step \"c\" is not valid: one; two"),
            (StepError::from("a loop inside a loop body is not supported".to_string()), "a loop inside a loop body is not supported"),
        ];
        for (error, text) in cases {
            assert_eq!(error.to_string(), text);
            assert_eq!(RunFailure::from(error), RunFailure::Error(text.into()));
        }
    }
}
