//! The engine's vocabulary: node kinds and the other closed sets of words the contract uses.
//!
//! Each word is parsed once, where it enters (a design's `type`, a stored run file), into an enum;
//! the rest of the code matches on the enum and never compares the text again. Every enum prints
//! back exactly the word it was read from (`as_str`, `Display`, serde), so designs, run files and
//! JSON answers are the same bytes as when these were strings, and a word outside the set is
//! refused where it is read.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A word outside one of the closed sets: `what` names the set, `word` is what was given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {word:?}")]
pub struct UnknownWord {
    pub what: &'static str,
    pub word: String,
}

/// Declares a closed set of words: the enum, its words in order (`ALL`), `as_str`, `Display`,
/// `FromStr` (exact, case-sensitive) and serde as the word itself.
macro_rules! words {
    ($(#[$meta:meta])* $name:ident, $what:literal { $($(#[$vmeta:meta])* $variant:ident = $word:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $word)] $variant,)+
        }

        impl $name {
            /// Every member, in the contract's order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The word as written in designs and run files.
            pub const fn as_str(&self) -> &'static str {
                match self {
                    $($name::$variant => $word,)+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = UnknownWord;
            fn from_str(s: &str) -> Result<$name, UnknownWord> {
                match s {
                    $($word => Ok($name::$variant),)+
                    _ => Err(UnknownWord { what: $what, word: s.to_string() }),
                }
            }
        }
    };
}

words! {
    /// The node types of SPEC §3.
    NodeKind, "node type" {
        Trigger = "trigger",
        Agent = "agent",
        Condition = "condition",
        Approval = "approval",
        Output = "output",
        Note = "note",
        Command = "command",
        Http = "http",
        Loop = "loop",
        Wait = "wait",
        Emit = "emit",
        WaitEvent = "wait_event",
        Design = "design",
    }
}

impl NodeKind {
    /// Kinds whose outgoing edge labels are words of their own ([`Label`]), matched without
    /// regard to case and stored lowercase.
    pub fn has_word_labels(self) -> bool {
        matches!(self, NodeKind::Condition | NodeKind::Loop)
    }

    /// Kinds whose steps act on the world (a driver performs them), so they can fail for reasons
    /// outside the design: these take a retry policy, `on_error` and `error` edges. An output
    /// acts only when it delivers; the spec decides that.
    pub fn acts(self) -> bool {
        matches!(self, NodeKind::Agent | NodeKind::Command | NodeKind::Http | NodeKind::Output | NodeKind::Emit | NodeKind::Design)
    }
}

/// The label of an acting step's edge taken when the step fails for good.
pub const ERROR_LABEL: &str = "error";

words! {
    /// What an approval gate does when its deadline passes (`on_timeout`).
    OnTimeout, "on_timeout" {
        Reject = "reject",
        Escalate = "escalate",
    }
}

impl OnTimeout {
    /// What an approval without `on_timeout` does.
    pub const DEFAULT: OnTimeout = OnTimeout::Reject;
}

words! {
    /// What a `wait_event` step does when its `timeout` passes with no matching event
    /// (`on_timeout`): fail the run (the default), or go on with no payload.
    EventTimeout, "on_timeout" {
        Fail = "fail",
        Continue = "continue",
    }
}

words! {
    /// How a retry policy spaces its attempts (`retry.backoff`).
    Backoff, "backoff" {
        Fixed = "fixed",
        Exponential = "exponential",
    }
}

words! {
    /// What a step's failure does once its attempts are used up (`on_error`): fail the run (the
    /// default), or record the failure and go on along the step's normal edges.
    OnError, "on_error" {
        Fail = "fail",
        Continue = "continue",
    }
}

words! {
    /// How an output node delivers (`deliver`): to a platform's home channel, or to a named chat.
    Deliver, "deliver" {
        Notification = "notification",
        Channel = "channel",
    }
}

words! {
    /// The platforms a delivery target names (`telegram`, `slack:#ops`, `discord:alerts`…).
    Platform, "delivery platform" {
        Telegram = "telegram",
        Slack = "slack",
        Discord = "discord",
        Webhook = "webhook",
    }
}

impl Platform {
    /// Whether the platform has a home channel (`deliver: notification`).
    pub fn has_home(self) -> bool {
        matches!(self, Platform::Telegram | Platform::Slack)
    }

    /// Whether Hermes's gateway reaches the platform's targets the way vwf does (a home channel by
    /// platform name, a chat by its platform id). Discord and webhook targets name webhooks of
    /// vwf's own configuration, which Hermes knows nothing of.
    pub fn reached_by_hermes(self) -> bool {
        matches!(self, Platform::Telegram | Platform::Slack)
    }

    /// The words of the platforms for which `keep` holds, comma-joined (for messages).
    pub fn list(keep: impl Fn(Platform) -> bool) -> String {
        Platform::ALL.iter().filter(|p| keep(**p)).map(|p| p.as_str()).collect::<Vec<_>>().join(", ")
    }
}

/// What an edge's label means, by the kind of node the edge leaves (SPEC §3). The one reading
/// of label text: the validator checks labels with it and the engine routes by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route<'a> {
    /// Taken whenever its source ran: no label, or a label on a node whose edges carry no
    /// meaning in their labels (kept as written, for people).
    Always,
    /// A condition's `true` or `false` edge: taken when the condition has that value.
    When(bool),
    /// A loop's `each` edge: into its body, once per pass.
    Each,
    /// A loop's `done` edge: on after every pass ended.
    Done,
    /// An approval gate's edge: taken when the answer is this option.
    Answer(&'a str),
    /// An acting step's `error` edge: taken only when the step failed for good.
    Error,
    /// A label a condition or a loop cannot have (the validator refuses it; never taken).
    Invalid(&'a str),
}

impl<'a> Route<'a> {
    /// Reads `label` on an edge leaving a node of kind `from`. Condition and loop words are
    /// matched without regard to case (they are stored lowercase).
    pub fn of(from: Option<NodeKind>, label: Option<&'a str>) -> Route<'a> {
        let Some(label) = label else { return Route::Always };
        let word = |w: &str| label.eq_ignore_ascii_case(w);
        match from {
            Some(NodeKind::Condition) if word("true") => Route::When(true),
            Some(NodeKind::Condition) if word("false") => Route::When(false),
            Some(NodeKind::Loop) if word("each") => Route::Each,
            Some(NodeKind::Loop) if word("done") => Route::Done,
            Some(NodeKind::Condition | NodeKind::Loop) => Route::Invalid(label),
            Some(NodeKind::Approval) => Route::Answer(label),
            Some(kind) if kind.acts() && word(ERROR_LABEL) => Route::Error,
            _ => Route::Always,
        }
    }

    /// The words a node of kind `from` labels its edges with, when it has its own.
    pub fn words(from: NodeKind) -> &'static [&'static str] {
        match from {
            NodeKind::Condition => &["true", "false"],
            NodeKind::Loop => &["each", "done"],
            _ => &[],
        }
    }
}

/// The node types as words, in the contract's order (for messages listing them).
pub const NODE_TYPES: [&str; NodeKind::ALL.len()] = {
    let mut out = [""; NodeKind::ALL.len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = NodeKind::ALL[i].as_str();
        i += 1;
    }
    out
};

#[cfg(test)]
mod tests {
    use super::*;

    /// Every member prints its word and parses back from it, through `FromStr` and serde alike;
    /// the words are distinct.
    fn round_trips<T>(all: &[T])
    where
        T: Copy + PartialEq + fmt::Debug + fmt::Display + FromStr<Err = UnknownWord> + Serialize + for<'de> Deserialize<'de>,
    {
        let mut words = std::collections::HashSet::new();
        for &k in all {
            let word = k.to_string();
            assert!(words.insert(word.clone()), "{word} twice");
            assert_eq!(word.parse::<T>(), Ok(k));
            assert_eq!(serde_json::to_value(k).unwrap(), serde_json::Value::String(word.clone()));
            assert_eq!(serde_json::from_value::<T>(serde_json::Value::String(word)).unwrap(), k);
        }
    }

    /// A word is refused unless it is exactly a member's: other case, padding, near misses.
    fn refuses<T: FromStr<Err = UnknownWord> + fmt::Debug + for<'de> Deserialize<'de>>(words: &[&str]) {
        let near = words.iter().flat_map(|w| [w.to_uppercase(), format!(" {w}"), format!("{w} "), format!("{w}s"), w[1..].to_string()]);
        for bad in near.chain(["".to_string(), "unknown".to_string()]) {
            if words.contains(&bad.as_str()) {
                continue;
            }
            assert!(bad.parse::<T>().is_err(), "{bad:?} accepted");
            assert!(serde_json::from_value::<T>(serde_json::Value::String(bad.clone())).is_err(), "{bad:?} accepted by serde");
        }
    }

    #[test]
    fn field_words_round_trip_and_others_are_refused() {
        round_trips(OnTimeout::ALL);
        refuses::<OnTimeout>(&["reject", "escalate"]);
        round_trips(Deliver::ALL);
        refuses::<Deliver>(&["notification", "channel"]);
        round_trips(Backoff::ALL);
        refuses::<Backoff>(&["fixed", "exponential"]);
        round_trips(OnError::ALL);
        refuses::<OnError>(&["fail", "continue"]);
        round_trips(Platform::ALL);
        refuses::<Platform>(&["telegram", "slack", "discord", "webhook"]);
        assert_eq!(Platform::list(|_| true), "telegram, slack, discord, webhook");
        assert_eq!(Platform::list(Platform::has_home), "telegram, slack");
    }

    #[test]
    fn edge_labels_mean_what_their_source_kind_says() {
        use NodeKind::*;
        let cases: &[(NodeKind, Option<&str>, Route)] = &[
            (Condition, Some("true"), Route::When(true)),
            (Condition, Some("FALSE"), Route::When(false)),
            (Condition, Some("yes"), Route::Invalid("yes")),
            (Condition, None, Route::Always),
            (Loop, Some("each"), Route::Each),
            (Loop, Some("Done"), Route::Done),
            (Loop, Some("true"), Route::Invalid("true")),
            (Approval, Some("done"), Route::Answer("done")),
            (Approval, Some("Ship it"), Route::Answer("Ship it")),
            (Approval, None, Route::Always),
            (Agent, Some("true"), Route::Always),
            (Agent, Some("error"), Route::Error),
            (Http, Some("Error"), Route::Error),
            (Condition, Some("error"), Route::Invalid("error")),
            (Approval, Some("error"), Route::Answer("error")),
            (Wait, Some("error"), Route::Always),
            (Output, Some("each"), Route::Always),
        ];
        for &(kind, label, want) in cases {
            assert_eq!(Route::of(Some(kind), label), want, "{kind} {label:?}");
        }
        assert_eq!(Route::of(None, Some("true")), Route::Always);
        // Every word a kind names is read as a route of its own, in any case; nothing else is.
        for &kind in NodeKind::ALL {
            for w in Route::words(kind) {
                for spelled in [w.to_string(), w.to_uppercase()] {
                    assert!(!matches!(Route::of(Some(kind), Some(&spelled)), Route::Always | Route::Invalid(_)), "{kind} {spelled}");
                }
            }
        }
    }

    #[test]
    fn node_kinds_round_trip_and_unknown_ones_are_refused() {
        round_trips(NodeKind::ALL);
        assert_eq!(
            NODE_TYPES,
            [
                "trigger",
                "agent",
                "condition",
                "approval",
                "output",
                "note",
                "command",
                "http",
                "loop",
                "wait",
                "emit",
                "wait_event",
                "design"
            ]
        );
        refuses::<NodeKind>(&NODE_TYPES);
        assert_eq!("Agent".parse::<NodeKind>().unwrap_err().to_string(), "unknown node type \"Agent\"");
    }
}
