//! Names that become file names or keys: design names, run ids and node ids.
//! Every name is checked here before any path is built from it, so `../x` never reaches a store.

use std::fmt;

use crate::limits::MAX_ID_LEN;

/// A design name: `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`. Read from JSON through
/// [`DesignName::parse`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String")]
pub struct DesignName(String);

impl TryFrom<String> for DesignName {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        DesignName::parse(&s)
    }
}

impl PartialEq<str> for DesignName {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl DesignName {
    /// What `parse` accepts, as a regular expression (for API documents; `parse` is the rule).
    pub const PATTERN: &'static str = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$";

    pub fn parse(s: &str) -> Result<Self, String> {
        let mut chars = s.chars();
        let ok = match chars.next() {
            None => return Err("design name is empty".into()),
            Some(first) => first.is_ascii_alphanumeric() && chars.all(is_name_char),
        };
        if s.len() > MAX_ID_LEN {
            return Err(format!("design name is {} characters long; at most {MAX_ID_LEN} are allowed", s.chars().count()));
        }
        if !ok {
            return Err(format!("bad design name {s:?}: use letters, digits, '.', '_' and '-', starting with a letter or digit"));
        }
        Ok(Self(s.to_string()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DesignName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A run id: exactly 12 lowercase hex characters. Read from JSON through [`RunId::parse`], so a
/// stored run whose id is not one does not read back as a run.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RunId(String);

impl TryFrom<String> for RunId {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        RunId::parse(&s)
    }
}

impl From<RunId> for String {
    fn from(id: RunId) -> String {
        id.0
    }
}

impl PartialEq<str> for RunId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

/// The JSON Schema of a design name.
#[cfg(feature = "schema")]
pub fn design_name_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string", "pattern": DesignName::PATTERN})
}

/// The JSON Schema of a run id (`schemars(schema_with = "names::run_id_schema")`); it may
/// also be absent or `null` where the field is optional.
#[cfg(feature = "schema")]
pub fn run_id_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string", "pattern": RunId::PATTERN})
}

impl RunId {
    pub const LEN: usize = 12;
    /// What `parse` accepts, as a regular expression (for API documents; `parse` is the rule).
    pub const PATTERN: &'static str = "^[0-9a-f]{12}$";
    pub fn parse(s: &str) -> Result<Self, String> {
        if s.len() == Self::LEN && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            Ok(Self(s.to_string()))
        } else {
            Err(format!("bad run id {s:?}: a run id is 12 lowercase hex characters"))
        }
    }
    /// Builds an id from 6 random bytes supplied by the caller (the core has no randomness).
    /// The id of the run this one's `purpose` starts (its failure run): the same for every
    /// process that asks, so a run started for it can be found, and started only once.
    pub fn derived(&self, purpose: &str) -> RunId {
        let h = crate::recovery::seed(self.as_str(), purpose, 0).to_be_bytes();
        RunId::from_bytes([h[2], h[3], h[4], h[5], h[6], h[7]])
    }

    pub fn from_bytes(bytes: [u8; 6]) -> Self {
        Self(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

/// A node id: 1–64 characters of `A-Za-z0-9_.-`.
pub fn check_node_id(id: &str) -> Result<(), String> {
    if id.is_empty() {
        return Err("node id is empty".into());
    }
    if id.len() > MAX_ID_LEN {
        return Err(format!("node id {id:?} is longer than {MAX_ID_LEN} characters"));
    }
    if !id.chars().all(is_name_char) {
        return Err(format!("bad node id {id:?}: use letters, digits, '.', '_' and '-'"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The documented patterns and the parsers agree: what a pattern generates parses, and
        /// its near misses (a bad first character, one character too many, upper-case hex) do not.
        #[test]
        fn patterns_match_the_parsers(
            name in proptest::string::string_regex(DesignName::PATTERN.trim_matches(['^', '$'])).unwrap(),
            bad_start in "[._-][A-Za-z0-9._-]{0,20}",
            too_long in "[A-Za-z0-9][A-Za-z0-9._-]{64}",
            id in proptest::string::string_regex(RunId::PATTERN.trim_matches(['^', '$'])).unwrap(),
            bad_id in "[0-9a-f]{0,11}[A-F][0-9a-f]{0,11}",
        ) {
            prop_assert!(DesignName::parse(&name).is_ok(), "{}", name);
            prop_assert!(DesignName::parse(&bad_start).is_err());
            prop_assert!(DesignName::parse(&too_long).is_err());
            prop_assert!(RunId::parse(&id).is_ok(), "{}", id);
            prop_assert!(RunId::parse(&bad_id).is_err());
        }
    }

    #[test]
    fn design_names() {
        assert!(DesignName::parse("morning-brief").is_ok());
        assert!(DesignName::parse("a.b_c-1").is_ok());
        assert!(DesignName::parse(&"a".repeat(64)).is_ok());
        for bad in ["", "../x", ".hidden", "a/b", "-x", "a b", &"a".repeat(65), "é"] {
            assert!(DesignName::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn run_ids() {
        assert!(RunId::parse("d7b493cae249").is_ok());
        for bad in ["", "D7B493CAE249", "d7b493cae24", "d7b493cae2490", "../../etc/x", "g7b493cae249"] {
            assert!(RunId::parse(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(RunId::from_bytes([0xd7, 0xb4, 0x93, 0xca, 0xe2, 0x49]).as_str(), "d7b493cae249");
    }

    #[test]
    fn node_ids() {
        assert!(check_node_id("a.b").is_ok());
        assert!(check_node_id("").is_err());
        assert!(check_node_id("a b").is_err());
        assert!(check_node_id(&"n".repeat(65)).is_err());
    }
}
