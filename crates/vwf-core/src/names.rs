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

/// A checked name kept as its text: given back as that text, and compared with text.
macro_rules! text_name {
    ($($t:ident),*) => {$(
        impl From<$t> for String {
            fn from(id: $t) -> String {
                id.0
            }
        }

        impl PartialEq<str> for $t {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }
    )*};
}
text_name!(RunId, NodeId);

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

/// A node id: 1–64 characters of `A-Za-z0-9_.-`. Read from JSON through [`NodeId::parse`], so a
/// plan or record naming a node that could not be one does not read back.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct NodeId(String);

impl NodeId {
    /// What `parse` accepts, as a regular expression (for API documents; `parse` is the rule).
    pub const PATTERN: &'static str = "^[A-Za-z0-9_.-]{1,64}$";
    pub fn parse(s: &str) -> Result<Self, String> {
        check_node_id(s)?;
        Ok(Self(s.to_string()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for NodeId {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        check_node_id(&s)?;
        Ok(Self(s))
    }
}

impl PartialEq<&str> for NodeId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<NodeId> for str {
    fn eq(&self, other: &NodeId) -> bool {
        self == other.0
    }
}

impl PartialEq<NodeId> for String {
    fn eq(&self, other: &NodeId) -> bool {
        *self == other.0
    }
}

/// A node id is read as the text it is (maps of outputs are keyed by it).
impl std::ops::Deref for NodeId {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for NodeId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One step instance of a run: a node, and for a node in a loop's body, the pass it ran in.
/// Runs and the API write it as text, `node` or `node#pass` (`body#3`); node ids never hold
/// `#`, so the text is read back unambiguously, once, by [`PassId::parse`]. It keeps that text
/// (what every record, message and store key shows) with where its node id ends and its pass.
#[derive(Clone)]
pub struct PassId {
    text: String,
    node_len: usize,
    pass: Option<usize>,
}

impl PassId {
    /// What `parse` accepts, as a regular expression (for API documents; `parse` is the rule).
    pub const PATTERN: &'static str = "^[A-Za-z0-9_.-]{1,64}(#(0|[1-9][0-9]{0,8}))?$";

    /// The most digits a pass number is written with.
    const PASS_DIGITS: usize = 9;

    /// The instance of a node outside any loop.
    pub fn top(node: NodeId) -> PassId {
        PassId { node_len: node.0.len(), text: node.0, pass: None }
    }
    /// The instance of a loop body's node in pass `pass`.
    pub fn in_pass(node: NodeId, pass: usize) -> PassId {
        PassId { node_len: node.0.len(), text: format!("{}#{pass}", node.0), pass: Some(pass) }
    }
    pub fn parse(s: &str) -> Result<PassId, String> {
        let (node, pass) = match s.split_once('#') {
            None => (s, None),
            // One text per instance: no sign, no leading zero; a loop has far fewer passes than
            // nine digits count.
            Some((node, pass))
                if (pass == "0" || !pass.starts_with('0')) && !pass.is_empty() && pass.bytes().all(|b| b.is_ascii_digit()) =>
            {
                if pass.len() > Self::PASS_DIGITS {
                    return Err(format!("bad step {s:?}: its pass number is too large"));
                }
                (node, pass.parse().ok())
            }
            Some(_) => return Err(format!("bad step {s:?}: write a node id, or node#pass for a pass of a loop")),
        };
        check_node_id(node)?;
        Ok(PassId { text: s.to_string(), node_len: node.len(), pass })
    }
    /// The id of the node this is an instance of.
    pub fn node(&self) -> &str {
        &self.text[..self.node_len]
    }
    /// The node this is an instance of, as a node id of its own.
    pub fn node_id(&self) -> NodeId {
        NodeId(self.node().to_string())
    }
    /// The loop pass it ran in; `None` outside a loop.
    pub fn pass(&self) -> Option<usize> {
        self.pass
    }
    /// The text it is written as.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl PartialEq for PassId {
    fn eq(&self, other: &PassId) -> bool {
        self.text == other.text
    }
}

impl Eq for PassId {}

impl std::hash::Hash for PassId {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.text.hash(h)
    }
}

/// Instances sort by node id, then pass (`b#2` before `b#10`).
impl Ord for PassId {
    fn cmp(&self, other: &PassId) -> std::cmp::Ordering {
        (self.node(), self.pass).cmp(&(other.node(), other.pass))
    }
}

impl PartialOrd for PassId {
    fn partial_cmp(&self, other: &PassId) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for PassId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl PartialEq<str> for PassId {
    fn eq(&self, other: &str) -> bool {
        self.text == other
    }
}

impl PartialEq<&str> for PassId {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

/// What a run waits on, as its questions name it: one of its own step instances (`review`,
/// `body#3`), or, through a design step, what the run that step started waits on
/// (`<design step>/<its node>`, one level per run). Node ids never hold `/`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct StepPath {
    /// The design steps it goes through, outermost first; empty for a run's own step.
    via: Vec<PassId>,
    step: PassId,
}

impl StepPath {
    /// What `parse` accepts, as a regular expression (for API documents; `parse` is the rule).
    pub const PATTERN: &'static str = "^[A-Za-z0-9_.-]{1,64}(#(0|[1-9][0-9]{0,8}))?(/[A-Za-z0-9_.-]{1,64}(#(0|[1-9][0-9]{0,8}))?)*$";

    pub fn parse(s: &str) -> Result<StepPath, String> {
        let mut parts = s.split('/').map(PassId::parse).collect::<Result<Vec<_>, _>>()?;
        let step = parts.pop().ok_or_else(|| "the step is empty".to_string())?;
        Ok(StepPath { via: parts, step })
    }
    /// The run's own step instance, when it is one (not a question of a run it started).
    pub fn own(&self) -> Option<&PassId> {
        self.via.is_empty().then_some(&self.step)
    }
    /// The same question seen one run up: through design step `step` of the run that started
    /// the one that asks.
    pub fn lifted(&self, step: &PassId) -> StepPath {
        let mut via = Vec::with_capacity(self.via.len() + 1);
        via.push(step.clone());
        via.extend(self.via.iter().cloned());
        StepPath { via, step: self.step.clone() }
    }
    /// For a question through design step `step`: the path the run that step started knows it by.
    pub fn through(&self, step: &PassId) -> Option<StepPath> {
        let (first, rest) = self.via.split_first()?;
        (first == step).then(|| StepPath { via: rest.to_vec(), step: self.step.clone() })
    }
}

impl From<&PassId> for StepPath {
    fn from(step: &PassId) -> StepPath {
        StepPath { via: Vec::new(), step: step.clone() }
    }
}

impl From<PassId> for StepPath {
    fn from(step: PassId) -> StepPath {
        StepPath { via: Vec::new(), step }
    }
}

impl fmt::Display for StepPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for v in &self.via {
            write!(f, "{v}/")?;
        }
        write!(f, "{}", self.step)
    }
}

impl PartialEq<PassId> for StepPath {
    fn eq(&self, other: &PassId) -> bool {
        self.own() == Some(other)
    }
}

impl PartialEq<str> for StepPath {
    fn eq(&self, other: &str) -> bool {
        let mut parts = other.split('/');
        self.via.iter().chain([&self.step]).all(|p| parts.next().is_some_and(|o| p == o)) && parts.next().is_none()
    }
}

impl PartialEq<&str> for StepPath {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

/// Node ids, step instances and paths show as their quoted text in messages (`"body#3"`), as
/// the text they are written as.
macro_rules! debug_as_text {
    ($($t:ty),*) => {$(
        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.to_string(), f)
            }
        }
    )*};
}
debug_as_text!(NodeId, PassId, StepPath);

/// Step instances and paths are written as their text, and read through their `parse`.
macro_rules! serde_as_text {
    ($($t:ident),*) => {$(
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                $t::parse(&text).map_err(serde::de::Error::custom)
            }
        }
    )*};
}
serde_as_text!(PassId, StepPath);

/// Their JSON Schema: a string of their `PATTERN`, inline.
#[cfg(feature = "schema")]
macro_rules! schema_as_pattern {
    ($($t:ident),*) => {$(
        impl schemars::JsonSchema for $t {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($t).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({"type": "string", "pattern": $t::PATTERN})
            }
        }
    )*};
}
#[cfg(feature = "schema")]
schema_as_pattern!(NodeId, PassId, StepPath);

/// The step instance a test names.
#[cfg(test)]
pub(crate) fn pid(text: &str) -> PassId {
    PassId::parse(text).expect("a step instance")
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
            node in proptest::string::string_regex(NodeId::PATTERN.trim_matches(['^', '$'])).unwrap(),
            pass in proptest::string::string_regex(PassId::PATTERN.trim_matches(['^', '$'])).unwrap(),
            path in proptest::string::string_regex(StepPath::PATTERN.trim_matches(['^', '$'])).unwrap(),
            long_pass in "[a-z]{1,8}#[1-9][0-9]{9,12}",
        ) {
            prop_assert!(NodeId::parse(&node).is_ok(), "{}", node);
            prop_assert!(PassId::parse(&pass).is_ok(), "{}", pass);
            prop_assert!(StepPath::parse(&path).is_ok(), "{}", path);
            prop_assert!(PassId::parse(&long_pass).is_err() && StepPath::parse(&long_pass).is_err());
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

    proptest! {
        /// A step instance's text reads back as the same instance, and text that is not one
        /// (a bad node id, an empty or signed pass, a second `#`) is refused.
        #[test]
        fn pass_ids_read_back(
            node in "[A-Za-z0-9_.-]{1,64}",
            pass in proptest::option::of(0usize..100_000),
            bad in "[A-Za-z0-9_.-]{0,8}#([+-][0-9]{1,3}|0[0-9]{1,3}|[0-9]{0,3}#[0-9]{0,3}|)",
        ) {
            let id = match pass {
                None => PassId::top(NodeId::parse(&node).unwrap()),
                Some(i) => PassId::in_pass(NodeId::parse(&node).unwrap(), i),
            };
            let text = id.to_string();
            prop_assert_eq!(&PassId::parse(&text).unwrap(), &id);
            prop_assert!(id == *text.as_str());
            prop_assert_eq!(serde_json::to_value(&id).unwrap(), serde_json::json!(text));
            prop_assert_eq!(serde_json::from_value::<PassId>(serde_json::json!(text)).unwrap(), id);
            prop_assert!(PassId::parse(&bad).is_err(), "{} accepted", bad);
            prop_assert!(serde_json::from_value::<PassId>(serde_json::json!(bad)).is_err());
        }
    }

    #[test]
    fn pass_ids() {
        let id = PassId::parse("body#3").unwrap();
        assert_eq!((id.node(), id.pass(), id.as_str()), ("body", Some(3), "body#3"));
        assert_eq!(PassId::parse("a.b").unwrap().pass(), None);
        for bad in ["", "#3", "body#", "body#03", "body#-1", "body#3#4", "a b#1", "body#99999999999999999999999"] {
            assert!(PassId::parse(bad).is_err(), "{bad:?} accepted");
        }
        assert!(id == "body#3" && id != "body#03" && id != "body" && PassId::parse("body").unwrap() != "body#0");
    }

    #[test]
    fn step_paths() {
        let path = StepPath::parse("call#2/review").unwrap();
        assert_eq!(path.to_string(), "call#2/review");
        assert!(path.own().is_none() && path == "call#2/review" && path != "call#2" && path != "call#2/review/x");
        let own = path.through(&PassId::parse("call#2").unwrap()).unwrap();
        assert_eq!(own.own(), Some(&PassId::parse("review").unwrap()));
        assert!(PassId::parse("b#2").unwrap() < PassId::parse("b#10").unwrap());
        assert_eq!(own.lifted(&PassId::parse("call#2").unwrap()), path);
        assert!(path.through(&PassId::parse("call#1").unwrap()).is_none());
        for bad in ["", "/", "a/", "/a", "a//b", "a/b#x", "a b/c"] {
            assert!(StepPath::parse(bad).is_err(), "{bad:?} accepted");
        }
        let json = serde_json::to_value(&path).unwrap();
        assert_eq!(serde_json::from_value::<StepPath>(json).unwrap(), path);
    }

    #[test]
    fn node_ids() {
        assert!(check_node_id("a.b").is_ok());
        assert!(check_node_id("").is_err());
        assert!(check_node_id("a b").is_err());
        assert!(check_node_id(&"n".repeat(65)).is_err());
    }
}
