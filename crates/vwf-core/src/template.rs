//! `{{...}}` templates (SPEC §4): parsed once, checked by the validator through
//! [`Template::refs`], rendered by the engine against a [`Context`].
//!
//! Invariants: every placeholder is one of the known reference forms with non-empty path
//! segments (anything else fails to parse); a stray `}}` is literal text, an unclosed `{{` is an
//! error; rendering inserts strings raw and other values as compact JSON, and a value missing at
//! render time is an error, never an empty string. There are no filters.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::refs;
use crate::secrets::{self, Secrets};
use crate::view::view_lookup;

/// What a placeholder refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ref {
    /// `{{nodes.<reference>}}`: the node id and path, resolved later by longest id prefix.
    Node {
        reference: String,
    },
    /// `{{trigger}}` (empty path) or `{{trigger.<path>}}`.
    Trigger {
        path: String,
    },
    /// `{{item}}` (empty path) or `{{item.<path>}}`.
    Item {
        path: String,
    },
    LoopIndex,
    RunId,
    RunDesign,
    /// `{{run.cost}}`, `{{run.currency}}`, `{{run.usage}}` or `{{run.usage.<field>}}`: what the
    /// run's model calls used and cost so far (see [`crate::usage`]); `path` is after `run.`.
    RunTotals {
        path: String,
    },
    /// `{{secrets.<NAME>}}`: a value the caller resolves when the step is sent (see
    /// [`crate::secrets`]); rendered only where a [`Context`] carries secrets.
    Secret {
        name: String,
    },
}

/// A piece of a template: literal text or a placeholder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Text(String),
    Ref(Ref),
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pub segments: Vec<Segment>,
}

/// A template that does not parse or cannot be rendered; the message is for the user.
#[derive(thiserror::Error, Debug, Clone, PartialEq)]
#[error("{0}")]
pub struct TemplateError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, TemplateError> {
    Err(TemplateError(msg.into()))
}

/// Everything a template may read while a step is rendered.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// Every node id of the plan, the trigger id included, for longest-prefix resolution.
    pub ids: &'a [String],
    /// Node id → output view of finished steps.
    pub views: &'a BTreeMap<String, Value>,
    /// Inside a loop pass: the views of the pass's own steps, read before `views`.
    pub local_views: Option<&'a BTreeMap<String, Value>>,
    /// The trigger's id, which reads the run input like `trigger` does.
    pub trigger_id: Option<&'a str>,
    /// `input_view` of the run input.
    pub trigger: &'a Value,
    /// The raw loop item (not a view), inside a loop body.
    pub item: Option<&'a Value>,
    pub loop_index: Option<u64>,
    pub run_id: &'a str,
    pub design: &'a str,
    /// What the run's model calls used and cost so far (`{cost, currency, usage}`), for
    /// `{{run.cost}}` and the like; `None` where no run is rendering.
    pub run_totals: Option<&'a Value>,
    /// The secrets a field that sends them may render (`None` elsewhere: a secret there is an
    /// error, which the validator reports first).
    pub secrets: Option<&'a Secrets>,
}

/// Where a secret may be used, as the validator and the engine say it.
pub const SECRET_FIELDS: &str = "secrets can only be used in an http step's url, headers and body and a command step's env";

/// Parses a template.
pub fn parse(src: &str) -> Result<Template, TemplateError> {
    let mut segments = Vec::new();
    let mut text = String::new();
    let mut rest = src;
    while let Some(open) = rest.find("{{") {
        text.push_str(&rest[..open]);
        let after_open = &rest[open + 2..];
        let Some(close) = after_open.find("}}") else {
            let shown: String = rest[open..].chars().take(40).collect();
            return err(format!("unclosed \"{{{{\" in \"{shown}\": close it with \"}}}}\""));
        };
        let reference = parse_ref(after_open[..close].trim())?;
        if !text.is_empty() {
            segments.push(Segment::Text(std::mem::take(&mut text)));
        }
        segments.push(Segment::Ref(reference));
        rest = &after_open[close + 2..];
    }
    text.push_str(rest);
    if !text.is_empty() {
        segments.push(Segment::Text(text));
    }
    Ok(Template { segments })
}

fn parse_ref(body: &str) -> Result<Ref, TemplateError> {
    if body.is_empty() {
        return err("empty placeholder \"{{ }}\": write a reference such as {{nodes.<id>}} or {{trigger}}");
    }
    if body.chars().any(|c| c.is_whitespace() || c == '{' || c == '}') {
        return err(format!("bad reference \"{{{{{body}}}}}\": a reference has no spaces or braces inside"));
    }
    let path_of = |rest: &str| -> Result<String, TemplateError> {
        if rest.split('.').any(str::is_empty) {
            return err(format!("bad reference \"{{{{{body}}}}}\": empty path segment"));
        }
        Ok(rest.to_string())
    };
    let reference = match body {
        "loop.index" => Ref::LoopIndex,
        "run.id" => Ref::RunId,
        "run.design" => Ref::RunDesign,
        "run.cost" | "run.currency" | "run.usage" => Ref::RunTotals { path: body["run.".len()..].to_string() },
        "trigger" => Ref::Trigger { path: String::new() },
        "item" => Ref::Item { path: String::new() },
        "nodes" => return err("bad reference \"{{nodes}}\": name a node, e.g. {{nodes.<id>}}"),
        _ => {
            if let Some(rest) = body.strip_prefix("nodes.") {
                Ref::Node { reference: path_of(rest)? }
            } else if let Some(rest) = body.strip_prefix("trigger.") {
                Ref::Trigger { path: path_of(rest)? }
            } else if let Some(rest) = body.strip_prefix("item.") {
                Ref::Item { path: path_of(rest)? }
            } else if let Some(rest) = body.strip_prefix("run.usage.") {
                Ref::RunTotals { path: format!("usage.{}", path_of(rest)?) }
            } else if let Some(name) = body.strip_prefix("secrets.") {
                if !secrets::is_name(name) {
                    return err(format!(
                        "bad reference \"{{{{{body}}}}}\": a secret's name is letters, digits and '_', not starting with a digit"
                    ));
                }
                Ref::Secret { name: name.to_string() }
            } else {
                return err(format!(
                    "unknown reference \"{{{{{body}}}}}\": use nodes.<id>, trigger, item, loop.index, run.id, run.design, run.cost, run.usage or secrets.<NAME>"
                ));
            }
        }
    };
    Ok(reference)
}

/// The value a reference stands for in `ctx`; a missing node, output or path is an error.
pub fn resolve(r: &Ref, ctx: &Context) -> Result<Value, TemplateError> {
    match r {
        Ref::Node { reference } => {
            let Some((id, path)) = refs::resolve_longest(ctx.ids.iter().map(String::as_str), reference) else {
                return err(format!("unknown node in \"nodes.{reference}\""));
            };
            let view = if Some(id) == ctx.trigger_id {
                Some(ctx.trigger)
            } else {
                ctx.local_views.and_then(|l| l.get(id)).or_else(|| ctx.views.get(id))
            };
            let Some(view) = view else {
                return err(format!("node \"{id}\" has no output (it was skipped or has not run)"));
            };
            view_lookup(view, &refs::split_path(path)).ok_or_else(|| TemplateError(format!("nodes.{reference}: no value at \"{path}\"")))
        }
        Ref::Trigger { path } => view_lookup(ctx.trigger, &refs::split_path(path))
            .ok_or_else(|| TemplateError(format!("trigger.{path}: no value at \"{path}\""))),
        Ref::Item { path } => {
            let Some(item) = ctx.item else {
                return err("item is only available inside a loop body");
            };
            refs::lookup(item, &refs::split_path(path))
                .cloned()
                .ok_or_else(|| TemplateError(format!("item.{path}: no value at \"{path}\"")))
        }
        Ref::LoopIndex => match ctx.loop_index {
            Some(i) => Ok(Value::from(i)),
            None => err("loop.index is only available inside a loop body"),
        },
        Ref::RunId => Ok(Value::String(ctx.run_id.to_string())),
        Ref::RunDesign => Ok(Value::String(ctx.design.to_string())),
        Ref::RunTotals { path } => {
            let Some(totals) = ctx.run_totals else { return err(format!("run.{path} is only available while a run renders its steps")) };
            refs::lookup(totals, &refs::split_path(path))
                .cloned()
                .ok_or_else(|| TemplateError(format!("run.{path}: no value at \"{path}\"")))
        }
        Ref::Secret { name } => match ctx.secrets {
            Some(secrets) => secrets.get(name).map(|v| Value::String(v.to_string())).map_err(TemplateError),
            None => err(format!("{{{{secrets.{name}}}}}: {SECRET_FIELDS}")),
        },
    }
}

impl Template {
    /// Every reference of the template, in order.
    pub fn refs(&self) -> impl Iterator<Item = &Ref> {
        self.segments.iter().filter_map(|s| match s {
            Segment::Ref(r) => Some(r),
            Segment::Text(_) => None,
        })
    }

    /// Renders the template: strings insert raw, other values as compact JSON.
    pub fn render(&self, ctx: &Context) -> Result<String, TemplateError> {
        let mut out = String::new();
        for segment in &self.segments {
            match segment {
                Segment::Text(t) => out.push_str(t),
                Segment::Ref(r) => out.push_str(&ref_text(r, ctx)?),
            }
        }
        Ok(out)
    }
}

/// The text a reference inserts: a string as itself, any other value as compact JSON.
pub fn ref_text(r: &Ref, ctx: &Context) -> Result<String, TemplateError> {
    Ok(match resolve(r, ctx)? {
        Value::String(s) => s,
        // Serializing a `Value` cannot fail (its keys are strings).
        other => serde_json::to_string(&other).unwrap_or_default(),
    })
}

/// Renders every string of a JSON value as a template; object keys are left untouched.
pub fn render_json(value: &Value, ctx: &Context) -> Result<Value, TemplateError> {
    Ok(match value {
        Value::String(s) => Value::String(render_str(s, ctx)?),
        Value::Array(items) => Value::Array(items.iter().map(|v| render_json(v, ctx)).collect::<Result<_, _>>()?),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| Ok((k.clone(), render_json(v, ctx)?))).collect::<Result<_, TemplateError>>()?)
        }
        other => other.clone(),
    })
}

/// Parses and renders `src` in one go.
pub fn render_str(src: &str, ctx: &Context) -> Result<String, TemplateError> {
    parse(src)?.render(ctx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{input_view, output_view};
    use proptest::prelude::*;
    use serde_json::{Map, json};

    struct Fixture {
        ids: Vec<String>,
        views: BTreeMap<String, Value>,
        trigger: Value,
        item: Value,
    }

    impl Fixture {
        fn new() -> Fixture {
            let input = json!({"city": "Oslo", "tags": ["a", "b"]});
            let mut views = BTreeMap::new();
            views.insert("start".to_string(), input_view(&input));
            views.insert("a".to_string(), output_view("alpha says hi", Map::new()));
            views.insert("a.b".to_string(), output_view(r#"{"title": "T", "n": 3}"#, Map::new()));
            Fixture {
                ids: ["start", "a", "a.b", "skipped"].map(String::from).to_vec(),
                views,
                trigger: input_view(&input),
                item: json!({"name": "it's", "list": [10, 20]}),
            }
        }

        fn ctx(&self) -> Context<'_> {
            Context {
                ids: &self.ids,
                views: &self.views,
                trigger_id: Some("start"),
                local_views: None,
                trigger: &self.trigger,
                item: Some(&self.item),
                loop_index: Some(2),
                run_id: "r-1",
                design: "demo",
                run_totals: None,
                secrets: None,
            }
        }

        fn render(&self, src: &str) -> Result<String, TemplateError> {
            render_str(src, &self.ctx())
        }
    }

    fn parse_err(src: &str) -> String {
        match parse(src) {
            Ok(t) => panic!("expected an error for {src:?}, parsed {t:?}"),
            Err(TemplateError(m)) => m,
        }
    }

    #[test]
    fn parses_text_and_placeholders() {
        let t = parse("Hi {{ nodes.a.b.title }} from {{trigger}}}} {{item.0}}{{loop.index}}{{run.id}}{{run.design}}").unwrap();
        assert_eq!(
            t.segments,
            vec![
                Segment::Text("Hi ".into()),
                Segment::Ref(Ref::Node { reference: "a.b.title".into() }),
                Segment::Text(" from ".into()),
                Segment::Ref(Ref::Trigger { path: String::new() }),
                Segment::Text("}} ".into()),
                Segment::Ref(Ref::Item { path: "0".into() }),
                Segment::Ref(Ref::LoopIndex),
                Segment::Ref(Ref::RunId),
                Segment::Ref(Ref::RunDesign),
            ]
        );
        assert_eq!(t.refs().count(), 6);
        assert_eq!(parse("").unwrap().segments, vec![]);
        assert_eq!(parse("}} only").unwrap().segments, vec![Segment::Text("}} only".into())]);
    }

    #[test]
    fn secrets_render_only_where_a_context_carries_them() {
        let f = Fixture::new();
        let mut secrets = Secrets::default();
        secrets.insert("TOKEN", "t0k".into());
        let sending = Context { secrets: Some(&secrets), ..f.ctx() };
        assert_eq!(render_str("Bearer {{secrets.TOKEN}}", &sending).unwrap(), "Bearer t0k");
        assert!(render_str("{{secrets.OTHER}}", &sending).unwrap_err().0.contains("[secrets] OTHER"));
        assert_eq!(render_str("{{secrets.TOKEN}}", &f.ctx()).unwrap_err().0, format!("{{{{secrets.TOKEN}}}}: {SECRET_FIELDS}"));
        // A value read from the input that spells a reference stays text: it is not rendered again.
        let input = json!({"url": "{{secrets.TOKEN}}"});
        let view = input_view(&input);
        let ctx = Context { trigger: &view, ..sending };
        assert_eq!(render_str("{{trigger.url}}", &ctx).unwrap(), "{{secrets.TOKEN}}");
    }

    #[test]
    fn template_errors() {
        assert!(parse_err("Hi {{nodes.a").starts_with("unclosed \"{{\""));
        assert!(parse_err("{{ }}").starts_with("empty placeholder"));
        assert!(parse_err("{{}}").starts_with("empty placeholder"));
        assert_eq!(
            parse_err("{{foo}}"),
            "unknown reference \"{{foo}}\": use nodes.<id>, trigger, item, loop.index, run.id, run.design, run.cost, run.usage or secrets.<NAME>"
        );
        assert!(parse_err("{{secrets.1x}}").contains("a secret's name is letters"));
        assert!(parse_err("{{secrets.a-b}}").contains("a secret's name is letters"));
        assert_eq!(parse("{{secrets.API_KEY}}").unwrap().segments, vec![Segment::Ref(Ref::Secret { name: "API_KEY".into() })]);
        assert!(parse_err("{{nodes.a..b}}").contains("empty path segment"));
        assert!(parse_err("{{nodes.}}").contains("empty path segment"));
        assert!(parse_err("{{trigger.}}").contains("empty path segment"));
        assert!(parse_err("{{item..x}}").contains("empty path segment"));
        assert!(parse_err("{{nodes}}").contains("name a node"));
        assert!(parse_err("{{nodes.a b}}").contains("no spaces or braces"));
        assert!(parse_err("{{{nodes.a}}").contains("no spaces or braces"));
        assert!(parse_err("{{loop.index.x}}").starts_with("unknown reference"));
        assert!(parse_err("{{run}}").starts_with("unknown reference"));
    }

    #[test]
    fn longest_prefix_resolution_of_dotted_ids_in_templates() {
        let f = Fixture::new();
        assert_eq!(f.render("{{nodes.a.b.title}}").unwrap(), "T");
        assert_eq!(f.render("{{nodes.a.b.words}}").unwrap(), "4");
        assert_eq!(f.render("{{nodes.a.words}}").unwrap(), "3");
        assert_eq!(f.render("{{nodes.a}} / {{nodes.a.b}}").unwrap(), "alpha says hi / {\"title\": \"T\", \"n\": 3}");
    }

    #[test]
    fn strings_insert_raw_and_other_values_as_compact_json() {
        let f = Fixture::new();
        assert_eq!(f.render("{{trigger.city}}").unwrap(), "Oslo");
        assert_eq!(f.render("{{trigger}}").unwrap(), r#"{"city":"Oslo","tags":["a","b"]}"#);
        assert_eq!(f.render("{{trigger.tags}}").unwrap(), r#"["a","b"]"#);
        assert_eq!(f.render("{{nodes.start.tags.1}}").unwrap(), "b");
        assert_eq!(f.render("{{nodes.a.b.data}}").unwrap(), r#"{"title":"T","n":3}"#);
        assert_eq!(f.render("{{item}}").unwrap(), r#"{"name":"it's","list":[10,20]}"#);
        assert_eq!(f.render("#{{loop.index}} {{item.list.1}}").unwrap(), "#2 20");
        assert_eq!(f.render("{{run.id}}@{{run.design}}").unwrap(), "r-1@demo");
    }

    #[test]
    fn missing_path_at_render_is_an_error_not_an_empty_string() {
        let f = Fixture::new();
        assert_eq!(f.render("x{{nodes.a.b.missing}}x"), Err(TemplateError("nodes.a.b.missing: no value at \"missing\"".into())));
        assert!(f.render("{{trigger.country}}").is_err());
        assert!(f.render("{{item.list.5}}").is_err());
        assert_eq!(f.render("{{nodes.zz}}"), Err(TemplateError("unknown node in \"nodes.zz\"".into())));
        assert_eq!(
            f.render("{{nodes.skipped}}"),
            Err(TemplateError("node \"skipped\" has no output (it was skipped or has not run)".into()))
        );
    }

    #[test]
    fn item_and_loop_index_only_inside_a_loop() {
        let f = Fixture::new();
        let ctx = Context { item: None, loop_index: None, ..f.ctx() };
        assert_eq!(render_str("{{item}}", &ctx), Err(TemplateError("item is only available inside a loop body".into())));
        assert!(render_str("{{loop.index}}", &ctx).is_err());
    }

    #[test]
    fn render_json_renders_strings_not_keys() {
        let f = Fixture::new();
        let body = json!({"{{trigger.city}}": "{{trigger.city}}", "n": [1, "{{loop.index}}", null, true]});
        assert_eq!(render_json(&body, &f.ctx()).unwrap(), json!({"{{trigger.city}}": "Oslo", "n": [1, "2", null, true]}));
        assert!(render_json(&json!(["{{nodes.nope}}"]), &f.ctx()).is_err());
    }

    fn fragments() -> impl Strategy<Value = String> {
        let pieces = prop::sample::select(vec![
            "{{",
            "}}",
            "{",
            "}",
            " ",
            "nodes",
            "nodes.",
            "a",
            "a.b",
            ".",
            "..",
            "trigger",
            "trigger.",
            "item",
            "item.",
            "loop.index",
            "run.id",
            "run.design",
            "city",
            "tags",
            "0",
            "1",
            "list",
            "words",
            "data",
            "skipped",
            "zz",
            "out.",
            "==",
            "'",
            "\"",
            "\\",
            "é",
            "✓",
        ]);
        prop::collection::vec(pieces, 0..16).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn arbitrary_text_never_panics(src in "\\PC*", in_loop in any::<bool>()) {
            let f = Fixture::new();
            let ctx = if in_loop { f.ctx() } else { Context { item: None, loop_index: None, ..f.ctx() } };
            let _ = render_str(&src, &ctx);
            let _ = render_json(&json!({"k": [src.clone()]}), &ctx);
        }

        #[test]
        fn fragment_soup_never_panics(src in fragments(), in_loop in any::<bool>()) {
            let f = Fixture::new();
            let ctx = if in_loop { f.ctx() } else { Context { item: None, loop_index: None, ..f.ctx() } };
            if let Ok(t) = parse(&src) {
                let plain = t.render(&ctx);
                // Placing it in a shell script never panics, and every hole gets its variable.
                if let Ok(script) = crate::shell::compile(&t) {
                    prop_assert_eq!(script.values.len(), t.refs().count());
                }
                // Without placeholders a template renders to itself.
                if t.refs().next().is_none() {
                    prop_assert_eq!(plain, Ok(src.clone()));
                }
            }
        }
    }
}
