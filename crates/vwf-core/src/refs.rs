//! Reference resolution shared by the validator and the runner (SPEC §4).
//!
//! Node ids may contain dots, so `a.b.words` is ambiguous until the known ids are consulted:
//! the node is the **longest** known id that equals the reference or prefixes it at a dot
//! boundary, and what follows is a dot-separated path into a JSON value. Nothing here
//! allocates beyond the path vector, and nothing panics on any input.

use serde_json::Value;

/// Picks the longest id in `ids` such that `dotted == id` or `dotted` starts with `id + "."`.
/// Returns the id and the rest of the reference without the leading dot (`""` when none).
pub fn resolve_longest<'a, I: IntoIterator<Item = &'a str>>(ids: I, dotted: &str) -> Option<(&'a str, &str)> {
    let mut best: Option<(&'a str, &str)> = None;
    for id in ids {
        let rest = if dotted == id { Some("") } else { dotted.strip_prefix(id).and_then(|after| after.strip_prefix('.')) };
        if let Some(rest) = rest {
            if id.is_empty() {
                // An empty id would prefix nothing meaningful; never resolve to it.
                continue;
            }
            if best.is_none_or(|(b, _)| id.len() > b.len()) {
                best = Some((id, rest));
            }
        }
    }
    best
}

/// Splits a dot-separated path into its segments; the empty path has no segments.
pub fn split_path(path: &str) -> Vec<&str> {
    if path.is_empty() { Vec::new() } else { path.split('.').collect() }
}

/// Follows `segs` into `value`: an object key, or an array index when the segment is a
/// non-negative integer and the value is an array.
pub fn lookup<'v>(value: &'v Value, segs: &[&str]) -> Option<&'v Value> {
    let mut current = value;
    for seg in segs {
        current = match current {
            Value::Object(map) => map.get(*seg)?,
            Value::Array(items) => {
                if seg.is_empty() || !seg.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                let index: usize = seg.parse().ok()?;
                items.get(index)?
            }
            _ => return None,
        };
    }
    Some(current)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn longest_known_id_prefix_wins() {
        let ids = ["a", "a.b"];
        assert_eq!(resolve_longest(ids, "a.b.words"), Some(("a.b", "words")));
        assert_eq!(resolve_longest(ids, "a.c"), Some(("a", "c")));
        assert_eq!(resolve_longest(ids, "a.b"), Some(("a.b", "")));
        assert_eq!(resolve_longest(ids, "a"), Some(("a", "")));
        // Order of ids does not matter.
        assert_eq!(resolve_longest(["a.b", "a"], "a.b.x"), Some(("a.b", "x")));
    }

    #[test]
    fn prefix_must_end_at_a_dot() {
        let ids = ["ab", "a"];
        assert_eq!(resolve_longest(ids, "abc"), None);
        assert_eq!(resolve_longest(ids, "a.x"), Some(("a", "x")));
        assert_eq!(resolve_longest(ids, "x"), None);
        assert_eq!(resolve_longest(["", "a"], ".a"), None);
    }

    #[test]
    fn empty_path_has_no_segments() {
        assert!(split_path("").is_empty());
        assert_eq!(split_path("items.0.title"), vec!["items", "0", "title"]);
    }

    #[test]
    fn paths_walk_objects_and_array_indexes() {
        let v = json!({"items": [{"title": "one"}, {"title": "two"}], "0": "zero"});
        assert_eq!(lookup(&v, &["items", "1", "title"]), Some(&json!("two")));
        assert_eq!(lookup(&v, &["0"]), Some(&json!("zero")));
        assert_eq!(lookup(&v, &["items", "-1"]), None);
        assert_eq!(lookup(&v, &["items", "+1"]), None);
        assert_eq!(lookup(&v, &["items", "9"]), None);
        assert_eq!(lookup(&v, &["items", "99999999999999999999999"]), None);
        assert_eq!(lookup(&v, &["missing"]), None);
        assert_eq!(lookup(&v, &[]), Some(&v));
        assert_eq!(lookup(&json!("s"), &["x"]), None);
    }
}
