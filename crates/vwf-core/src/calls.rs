//! Which designs a design calls through its design steps (SPEC §3 `design`), and the cycles
//! among them that are refused when a design is saved: a design that calls itself, directly or
//! through others, would start runs without end (a depth limit stops the dynamic ones at run
//! time, see [`crate::limits::DESIGN_DEPTH`]).

use std::collections::BTreeSet;

use crate::design::{Design, NodeKind};
use crate::names::DesignName;
use crate::spec::Spec;

/// The designs `design`'s design steps call (and its agent steps offer as tools), each once, in
/// node order, with the id of the first step calling each.
pub fn called(design: &Design) -> Vec<(String, DesignName)> {
    let mut out: Vec<(String, DesignName)> = Vec::new();
    for node in design.nodes.iter().filter(|n| n.is(NodeKind::Design) || n.is(NodeKind::Agent)) {
        let names = match Spec::parse(node) {
            Ok(Spec::Design { design: name, .. }) => vec![name],
            Ok(Spec::Agent { tools, .. }) => tools,
            _ => Vec::new(),
        };
        for name in names {
            if !out.iter().any(|(_, n)| *n == name) {
                out.push((node.id.clone(), name));
            }
        }
    }
    out
}

/// A path of calls from `start` back to itself, if there is one: `[start, b, ..., start]`.
/// `calls_of` gives the designs a saved design calls (none for a design that is not saved, or
/// does not read). Each design is looked at once, so this ends on any graph of calls.
pub fn cycle(start: &DesignName, calls_of: &dyn Fn(&DesignName) -> Vec<DesignName>) -> Option<Vec<DesignName>> {
    fn walk(
        at: &DesignName,
        start: &DesignName,
        calls_of: &dyn Fn(&DesignName) -> Vec<DesignName>,
        seen: &mut BTreeSet<DesignName>,
        path: &mut Vec<DesignName>,
    ) -> bool {
        for next in calls_of(at) {
            if next == *start {
                path.push(next);
                return true;
            }
            if !seen.insert(next.clone()) {
                continue;
            }
            path.push(next.clone());
            if walk(&next, start, calls_of, seen, path) {
                return true;
            }
            path.pop();
        }
        false
    }
    let mut path = vec![start.clone()];
    let mut seen = BTreeSet::from([start.clone()]);
    walk(start, start, calls_of, &mut seen, &mut path).then_some(path)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn name(s: &str) -> DesignName {
        DesignName::parse(s).expect("name")
    }

    #[test]
    fn a_cycle_is_found_with_its_path_and_a_diamond_is_none() {
        let graph: BTreeMap<&str, Vec<&str>> = BTreeMap::from([
            ("a", vec!["b", "c"]),
            ("b", vec!["d"]),
            ("c", vec!["d"]),
            ("d", vec![]),
            ("x", vec!["y"]),
            ("y", vec!["z"]),
            ("z", vec!["x"]),
            ("self", vec!["self"]),
        ]);
        let calls = |d: &DesignName| graph.get(d.as_str()).map(|c| c.iter().map(|s| name(s)).collect()).unwrap_or_default();
        assert_eq!(cycle(&name("a"), &calls), None);
        assert_eq!(cycle(&name("x"), &calls), Some(vec![name("x"), name("y"), name("z"), name("x")]));
        assert_eq!(cycle(&name("self"), &calls), Some(vec![name("self"), name("self")]));
        assert_eq!(cycle(&name("unknown"), &calls), None);
    }
}
