//! Why a run failed, as the engine decides on it.
//!
//! The engine's own reasons (a gate's deadline passed, the token budget ran out, the process died)
//! are variants the engine matches on; any other error (a driver's, a template's, a rule's) is its
//! text. A `Failure` is stored as the text people read, exactly as when the run's error was a plain
//! string, and read back into the same variant, so a run file written by any version loads and
//! behaves the same. Every failure is made through the same reading (`From`), so a run in memory is
//! always what a reload of its file gives.

use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub const APPROVAL_TIMED_OUT: &str = "approval timed out";
pub const ESCALATION_REQUESTED: &str = "escalation requested";
/// The error of a gate that timed out with `on_timeout: escalate`: the timeout and the escalation,
/// where people read why a run failed.
pub const APPROVAL_TIMED_OUT_ESCALATED: &str = "approval timed out; escalation requested";
pub const TOKEN_BUDGET_EXCEEDED: &str = "token budget exceeded";
const INTERRUPTED: &str = "interrupted";
const INTERRUPTED_DURING: &str = "interrupted during step ";

/// Why a run failed. Reads as its text (`Deref<Target = str>`, `Display`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// A gate's deadline passed (`on_timeout: reject`).
    ApprovalTimedOut,
    /// A gate's deadline passed and escalation was requested (`on_timeout: escalate`).
    ApprovalTimedOutEscalated,
    /// An agent step's tokens took the run past its budget.
    TokenBudgetExceeded,
    /// The process driving the run died while it was `running`; the text names the step it was in
    /// (`interrupted during step draft`), or is `interrupted` when none was.
    Interrupted(String),
    /// Any other error, as its text.
    Error(String),
}

impl Failure {
    /// The failure of a run whose process died during step `node` (or between steps).
    pub fn interrupted(node: Option<&str>) -> Failure {
        Failure::Interrupted(node.map_or_else(|| INTERRUPTED.to_string(), |n| format!("{INTERRUPTED_DURING}{n}")))
    }

    /// Whether a gate's deadline failed the run (either `on_timeout`).
    pub fn is_approval_timeout(&self) -> bool {
        matches!(self, Failure::ApprovalTimedOut | Failure::ApprovalTimedOutEscalated)
    }

    /// The text people read.
    pub fn text(&self) -> &str {
        match self {
            Failure::ApprovalTimedOut => APPROVAL_TIMED_OUT,
            Failure::ApprovalTimedOutEscalated => APPROVAL_TIMED_OUT_ESCALATED,
            Failure::TokenBudgetExceeded => TOKEN_BUDGET_EXCEEDED,
            Failure::Interrupted(text) | Failure::Error(text) => text,
        }
    }
}

impl Default for Failure {
    fn default() -> Failure {
        Failure::Error(String::new())
    }
}

/// Reads a failure from its text: the engine's own texts give their variants, any other text is
/// an `Error`. `Failure::from(text).text() == text` for every text.
impl From<String> for Failure {
    fn from(text: String) -> Failure {
        match text.as_str() {
            APPROVAL_TIMED_OUT => Failure::ApprovalTimedOut,
            APPROVAL_TIMED_OUT_ESCALATED => Failure::ApprovalTimedOutEscalated,
            TOKEN_BUDGET_EXCEEDED => Failure::TokenBudgetExceeded,
            INTERRUPTED => Failure::Interrupted(text),
            t if t.strip_prefix(INTERRUPTED_DURING).is_some_and(|node| !node.is_empty()) => Failure::Interrupted(text),
            _ => Failure::Error(text),
        }
    }
}

impl From<&str> for Failure {
    fn from(text: &str) -> Failure {
        Failure::from(text.to_string())
    }
}

impl From<&String> for Failure {
    fn from(text: &String) -> Failure {
        Failure::from(text.clone())
    }
}

impl Deref for Failure {
    type Target = str;
    fn deref(&self) -> &str {
        self.text()
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl Serialize for Failure {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.text())
    }
}

impl<'de> Deserialize<'de> for Failure {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Failure, D::Error> {
        String::deserialize(d).map(Failure::from)
    }
}
