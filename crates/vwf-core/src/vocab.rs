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
            pub const fn as_str(self) -> &'static str {
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
    }
}

impl NodeKind {
    /// Kinds whose outgoing edge labels are words of their own ([`Label`]), matched without
    /// regard to case and stored lowercase.
    pub fn has_word_labels(self) -> bool {
        matches!(self, NodeKind::Condition | NodeKind::Loop)
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
    fn node_kinds_round_trip_and_unknown_ones_are_refused() {
        round_trips(NodeKind::ALL);
        assert_eq!(NODE_TYPES, ["trigger", "agent", "condition", "approval", "output", "note", "command", "http", "loop", "wait", "emit"]);
        refuses::<NodeKind>(&NODE_TYPES);
        assert_eq!("Agent".parse::<NodeKind>().unwrap_err().to_string(), "unknown node type \"Agent\"");
    }
}
