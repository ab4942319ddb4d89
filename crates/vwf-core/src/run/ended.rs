//! What an ended run leaves for the stats ([`crate::stats::RunStats`]): its status, times, and
//! each node's count, durations, tokens and cost, from the step records and output views.

use std::collections::BTreeMap;

use serde_json::Value;

use super::Run;
use crate::stats::{RunStats, StepStats, millis_between};
use crate::usage::{Totals, Usage};

impl Run {
    /// The stats record of this run, once it has ended; `None` while it goes on, and for a test
    /// run. Usage and cost are the run's own steps' (a design step's child counts in its own
    /// record).
    pub fn stats(&self) -> Option<RunStats> {
        if !self.status.is_finished() || self.test {
            return None;
        }
        let mut steps: BTreeMap<&str, StepStats> = BTreeMap::new();
        for record in &self.steps {
            let node = record.node.node();
            let began = record.tries.first().map_or(record.started_at, |t| t.started_at);
            let ms = millis_between(began, record.finished_at.unwrap_or(self.updated_at));
            let s = steps.entry(node).or_insert_with(|| StepStats {
                node: node.to_string(),
                count: 0,
                total_ms: 0,
                max_ms: 0,
                usage: Usage::default(),
                cost: Some(0.0),
            });
            s.count += 1;
            s.total_ms = s.total_ms.saturating_add(ms);
            s.max_ms = s.max_ms.max(ms);
        }
        let passes = self.loops.values().flat_map(|l| l.passes.iter()).flat_map(|p| p.outputs.iter());
        let mut totals = Totals { cost: Some(0.0), ..Totals::default() };
        for (node, view) in self.outputs.iter().chain(passes).filter(|(_, v)| !is_child_view(v)) {
            totals.add_own(view);
            if let Some(s) = steps.get_mut(node.as_str()) {
                let mut own = Totals { usage: s.usage, cost: s.cost, currency: None };
                own.add_own(view);
                (s.usage, s.cost) = (own.usage, own.cost);
            }
        }
        Some(RunStats {
            run_id: self.run_id.clone(),
            design: self.design.clone(),
            status: self.status,
            started_at: self.created_at,
            ended_at: self.updated_at,
            usage: totals.usage,
            cost: totals.cost,
            currency: totals.currency,
            steps: steps.into_values().collect(),
        })
    }
}

/// A design step's view: it carries its child run's totals, which the child's own record counts.
fn is_child_view(view: &Value) -> bool {
    view.get("run_id").is_some() && view.get("design").is_some() && view.get("outputs").is_some()
}
