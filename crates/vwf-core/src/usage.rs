//! What model calls used and cost: an agent step's `usage` (the backend's own count of input,
//! output and cached input tokens, and the model that answered), its `cost` from the config's
//! price table (`[prices."<model>"]`), and a run's totals.
//!
//! A cost is never guessed: a model the table does not price costs `null`, and a run with such a
//! step has a `null` total. Amounts are rounded to 1e-10 of the currency, so sums read back as
//! written.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Tokens one or more model calls used, as the backend reported them.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Input tokens the backend served from its prompt cache (part of `input_tokens`).
    #[serde(default)]
    pub cached_tokens: u64,
}

impl Usage {
    /// Reads an OpenAI-compatible `usage` object (`prompt_tokens`, `completion_tokens`,
    /// `prompt_tokens_details.cached_tokens`).
    pub fn of_openai(usage: &Value) -> Usage {
        let n = |v: &Value| v.as_u64().unwrap_or(0);
        Usage {
            input_tokens: n(&usage["prompt_tokens"]),
            output_tokens: n(&usage["completion_tokens"]),
            cached_tokens: n(&usage["prompt_tokens_details"]["cached_tokens"]),
        }
    }

    pub fn add(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cached_tokens = self.cached_tokens.saturating_add(other.cached_tokens);
    }
}

/// A model's prices per million tokens (cached input at the input price when not given).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
    #[serde(default)]
    pub cached_per_mtok: Option<f64>,
}

impl Price {
    /// Whether every price is a finite amount of at least zero.
    pub fn is_valid(&self) -> bool {
        [Some(self.input_per_mtok), Some(self.output_per_mtok), self.cached_per_mtok]
            .into_iter()
            .flatten()
            .all(|p| p.is_finite() && p >= 0.0)
    }

    /// What `usage` costs.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let cached = usage.cached_tokens.min(usage.input_tokens);
        let fresh = usage.input_tokens - cached;
        let amount = fresh as f64 * self.input_per_mtok
            + cached as f64 * self.cached_per_mtok.unwrap_or(self.input_per_mtok)
            + usage.output_tokens as f64 * self.output_per_mtok;
        round(amount / 1_000_000.0)
    }
}

/// `amount` rounded to 1e-10.
pub fn round(amount: f64) -> f64 {
    (amount * 1e10).round() / 1e10
}

/// The fields of an agent step's view with what the runs its tool calls started used and cost.
pub const TOOL_USAGE: &str = "tool_usage";
pub const TOOL_COST: &str = "tool_cost";

/// A run's totals over its steps' output views (loop passes included): the usage they report,
/// and their cost: `null` when a step that used a model has no price.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    pub usage: Usage,
    pub cost: Option<f64>,
    pub currency: Option<String>,
}

impl Totals {
    /// Adds a step's output view: its own model calls (`usage`, `cost`), and what the runs its
    /// tool calls started used (`tool_usage`, `tool_cost`).
    pub fn add_view(&mut self, view: &Value) {
        self.add_own(view);
        self.add_part(view, TOOL_USAGE, TOOL_COST);
    }

    /// Adds what a step's own model calls used: one with `usage` counts, and its `cost` (a
    /// number, or `null` for a model with no price) adds up. The stats of a run count this
    /// alone: a run its step started keeps its own record.
    pub fn add_own(&mut self, view: &Value) {
        self.add_part(view, "usage", "cost");
    }

    fn add_part(&mut self, view: &Value, usage_key: &str, cost_key: &str) {
        let Some(usage) = view.get(usage_key).filter(|u| u.is_object()) else { return };
        if let Ok(u) = serde_json::from_value::<Usage>(usage.clone()) {
            self.usage.add(&u);
        }
        self.cost = match (self.cost, view.get(cost_key).and_then(Value::as_f64)) {
            (Some(sum), Some(c)) => Some(round(sum + c)),
            _ => None,
        };
        if self.currency.is_none() {
            self.currency = view.get("currency").and_then(Value::as_str).map(String::from);
        }
    }

    /// The totals of a run document (its `outputs`, and the outputs of its loops' passes).
    pub fn of_document(doc: &Value) -> Totals {
        let mut totals = Totals { cost: Some(0.0), ..Totals::default() };
        let views = doc["outputs"].as_object().into_iter().flat_map(|o| o.values());
        let passes = doc["loops"]
            .as_object()
            .into_iter()
            .flat_map(|l| l.values())
            .flat_map(|lp| lp["passes"].as_array().into_iter().flatten())
            .flat_map(|p| p["outputs"].as_object().into_iter().flat_map(|o| o.values()));
        for view in views.chain(passes) {
            totals.add_view(view);
        }
        totals
    }

    /// The fields a run result carries: `usage`, `cost`, `currency`.
    pub fn fields(&self) -> [(&'static str, Value); 3] {
        [
            ("usage", json!(self.usage)),
            ("cost", self.cost.map_or(Value::Null, Value::from)),
            ("currency", self.currency.clone().map_or(Value::Null, Value::String)),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_reads_the_openai_shape_and_prices_cached_input_apart() {
        let u =
            Usage::of_openai(&json!({"prompt_tokens": 1000, "completion_tokens": 200, "prompt_tokens_details": {"cached_tokens": 400}}));
        assert_eq!(u, Usage { input_tokens: 1000, output_tokens: 200, cached_tokens: 400 });
        let p = Price { input_per_mtok: 0.15, output_per_mtok: 0.6, cached_per_mtok: Some(0.075) };
        // 600 × 0.15 + 400 × 0.075 + 200 × 0.6 = 90 + 30 + 120 = 240 per million.
        assert_eq!(p.cost(&u), 0.00024);
        let no_cache_price = Price { cached_per_mtok: None, ..p };
        assert_eq!(no_cache_price.cost(&u), 0.00027);
        assert!(!Price { input_per_mtok: -1.0, ..p }.is_valid());
        assert!(!Price { output_per_mtok: f64::NAN, ..p }.is_valid());
    }

    #[test]
    fn totals_add_views_and_an_unpriced_step_makes_the_cost_unknown() {
        let doc = json!({
            "outputs": {
                "a": {"text": "x", "usage": {"input_tokens": 10, "output_tokens": 5, "cached_tokens": 0}, "cost": 0.1, "currency": "USD"},
                "b": {"text": "no model"}
            },
            "loops": {"each": {"passes": [
                {"outputs": {"c": {"usage": {"input_tokens": 1, "output_tokens": 1, "cached_tokens": 1}, "cost": 0.2, "currency": "USD"}}}
            ]}}
        });
        let t = Totals::of_document(&doc);
        assert_eq!(t.usage, Usage { input_tokens: 11, output_tokens: 6, cached_tokens: 1 });
        assert_eq!((t.cost, t.currency.as_deref()), (Some(0.3), Some("USD")));
        let mut unpriced = doc.clone();
        unpriced["outputs"]["d"] = json!({"usage": {"input_tokens": 1, "output_tokens": 1}, "cost": null});
        assert_eq!(Totals::of_document(&unpriced).cost, None);
        assert_eq!(Totals::of_document(&json!({"outputs": {}})).cost, Some(0.0));
    }
}
