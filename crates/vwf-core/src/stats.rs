//! What runs did over a period: the record a run leaves when it ends ([`RunStats`]), and the
//! report `GET /stats` and `vwf stats` give over those records ([`Query`], [`report`]).
//!
//! A store keeps one record per ended run (the latest, when a run ends again after a retry) and
//! hands the records of a query to [`report`], which counts them by bucket: runs by status, the
//! failure rate, p50 and p95 of their durations, tokens and cost, and the slowest and most
//! expensive steps. Nothing here reads a clock or a store: the same records give the same report,
//! which is what the tests compare with a recount.
//!
//! Decisions where the contract is silent:
//! - A run counts in the bucket of its end (`ended_at`): cost per day is money spent that day.
//!   Runs not ended yet are not in the report; test runs are never in it.
//! - A run's usage and cost are its own steps' (a design step's child is a run of its own, counted
//!   once, under its design), so the totals of a period add up to what was spent.
//! - `cost` adds the costs that are known; runs that used a model with no price are counted in
//!   `unpriced_runs` (a cost is never guessed).
//! - Percentiles are nearest-rank over the runs' durations (`created_at` to `ended_at`).

use std::collections::{BTreeMap, HashMap};

use chrono::{DurationRound, TimeDelta};
use serde::{Deserialize, Serialize};

use crate::names::{DesignName, RunId};
use crate::run::Status;
use crate::time::{self, Ts};
use crate::usage::{Usage, round};

/// How many steps the report lists as slowest and as most expensive.
pub const TOP_STEPS: usize = 10;
/// The most buckets one report may have (a bigger request is refused, so no query can make the
/// server build a huge answer).
pub const MAX_BUCKETS: u64 = 2_000;

/// What an ended run leaves for the stats: kept by the store, one per run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStats {
    pub run_id: RunId,
    pub design: DesignName,
    /// `done` or `failed`.
    pub status: Status,
    /// Kept as epoch milliseconds: a store reads 100,000 of these for one report.
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub started_at: Ts,
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub ended_at: Ts,
    /// Tokens the run's own steps used.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub usage: Usage,
    /// What they cost: `null` when one used a model with no price.
    #[serde(default)]
    pub cost: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    /// One entry per node that ran (loop passes folded into their node), by node id.
    #[serde(default)]
    pub steps: Vec<StepStats>,
}

impl RunStats {
    /// From start to end, in milliseconds (0 for a clock that went back).
    pub fn duration_ms(&self) -> u64 {
        millis_between(self.started_at, self.ended_at)
    }
}

/// One node's share of a run: how often it ran (loop passes and attempts of a retried step count
/// once per instance), for how long, and what its model calls used and cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepStats {
    pub node: String,
    pub count: u64,
    pub total_ms: u64,
    pub max_ms: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub usage: Usage,
    /// `Some(0.0)` for a node that called no model; `None` when a call had no price.
    #[serde(default)]
    pub cost: Option<f64>,
}

fn is_zero(u: &Usage) -> bool {
    *u == Usage::default()
}

/// Milliseconds from `from` to `to`, 0 when `to` is earlier.
pub fn millis_between(from: Ts, to: Ts) -> u64 {
    u64::try_from((to - from).num_milliseconds()).unwrap_or(0)
}

/// The width of a report's buckets.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bucket {
    Hour,
    Day,
}

impl Bucket {
    pub fn parse(s: &str) -> Option<Bucket> {
        match s {
            "hour" => Some(Bucket::Hour),
            "day" => Some(Bucket::Day),
            _ => None,
        }
    }
    fn width(self) -> TimeDelta {
        match self {
            Bucket::Hour => TimeDelta::hours(1),
            Bucket::Day => TimeDelta::days(1),
        }
    }
    /// The start of the bucket `t` falls in (buckets start on UTC hours and midnights).
    fn floor(self, t: Ts) -> Ts {
        t.duration_trunc(self.width()).unwrap_or(t)
    }
}

/// What a report covers: runs that ended in `[from, to)`, of one design or all, in buckets.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub design: Option<DesignName>,
    /// The start of the first bucket.
    pub from: Ts,
    /// Exclusive.
    pub to: Ts,
    pub bucket: Bucket,
}

impl Query {
    /// The query of `GET /stats` / `vwf stats` parameters: `from` and `to` as RFC 3339 instants or
    /// `YYYY-MM-DD` dates (UTC midnight); `to` defaults to `now`, `from` to 7 days before `to`
    /// (a day before, in hours); `from` moves back to the start of its bucket. A refusal says
    /// which parameter is wrong.
    pub fn new(design: Option<DesignName>, from: Option<&str>, to: Option<&str>, bucket: Option<Bucket>, now: Ts) -> Result<Query, String> {
        let bucket = bucket.unwrap_or(Bucket::Day);
        let to = match to {
            Some(t) => time::parse_day_or_time(t).ok_or_else(|| format!("to must be an RFC 3339 time or a YYYY-MM-DD date, not {t:?}"))?,
            None => now,
        };
        let from = match from {
            Some(f) => {
                time::parse_day_or_time(f).ok_or_else(|| format!("from must be an RFC 3339 time or a YYYY-MM-DD date, not {f:?}"))?
            }
            None => to.checked_sub_signed(if bucket == Bucket::Day { TimeDelta::days(7) } else { TimeDelta::days(1) }).unwrap_or(to),
        };
        let from = bucket.floor(from);
        if from >= to {
            return Err("from must be before to".into());
        }
        let span = u64::try_from((to - from).num_milliseconds()).unwrap_or(u64::MAX);
        let buckets = span.div_ceil(bucket.width().num_milliseconds().unsigned_abs());
        if buckets > MAX_BUCKETS {
            return Err(format!("the period holds {buckets} buckets, more than {MAX_BUCKETS}: narrow it or use bucket=day"));
        }
        Ok(Query { design, from, to, bucket })
    }

    /// Whether a record counts in this query.
    pub fn covers(&self, r: &RunStats) -> bool {
        r.ended_at >= self.from && r.ended_at < self.to && self.design.as_ref().is_none_or(|d| *d == r.design)
    }

    fn starts(&self) -> Vec<Ts> {
        let mut out = Vec::new();
        let mut t = self.from;
        while t < self.to {
            out.push(t);
            t += self.bucket.width();
        }
        out
    }
}

/// The answer of `GET /stats`.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The design asked for, `null` for all.
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    pub design: Option<String>,
    #[serde(with = "time")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "time::schema"))]
    pub from: Ts,
    #[serde(with = "time")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "time::schema"))]
    pub to: Ts,
    pub bucket: Bucket,
    /// The currency of the costs (from the config's price table), `null` when none is known.
    pub currency: Option<String>,
    /// The whole period.
    pub totals: Figures,
    /// One per bucket from `from` to `to`, empty ones included.
    pub buckets: Vec<BucketFigures>,
    /// Nodes by mean duration, longest first (at most 10).
    pub slowest_steps: Vec<StepFigures>,
    /// Nodes by the cost of their model calls, highest first (at most 10; only nodes that cost
    /// something).
    pub costliest_steps: Vec<StepFigures>,
}

/// The figures of a set of runs.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Figures {
    pub runs: u64,
    /// Runs by their status at the end: `done`, `failed`.
    pub by_status: BTreeMap<String, u64>,
    /// Failed runs over runs; `null` without runs.
    pub failure_rate: Option<f64>,
    /// Nearest-rank percentiles of the runs' durations; `null` without runs.
    pub p50_ms: Option<u64>,
    pub p95_ms: Option<u64>,
    pub usage: Usage,
    /// The known costs added up.
    pub cost: f64,
    /// Runs that used a model with no price (their cost is not in `cost`).
    pub unpriced_runs: u64,
}

/// [`Figures`] of one bucket.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BucketFigures {
    #[serde(with = "time")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "time::schema"))]
    pub start: Ts,
    #[serde(flatten)]
    pub figures: Figures,
}

/// One node of one design over the period.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepFigures {
    pub design: String,
    pub node: String,
    /// Runs it ran in.
    pub runs: u64,
    /// Times it ran (loop passes included).
    pub count: u64,
    pub mean_ms: u64,
    pub max_ms: u64,
    pub total_ms: u64,
    pub usage: Usage,
    pub cost: f64,
}

/// The report of `query` over `records`, each run once (as [`Query::covers`] and a store's
/// `run_stats` give them; records outside the query are left out).
pub fn report(query: &Query, records: impl IntoIterator<Item = RunStats>, currency: Option<String>) -> Report {
    let runs: Vec<RunStats> = records.into_iter().filter(|r| query.covers(r)).collect();
    let currency = currency.or_else(|| runs.iter().find_map(|r| r.currency.clone()));
    let starts = query.starts();
    let width = query.bucket.width().num_milliseconds();
    let mut per_bucket: Vec<Vec<&RunStats>> = vec![Vec::new(); starts.len()];
    for r in &runs {
        let i = (r.ended_at - query.from).num_milliseconds() / width;
        if let Some(b) = usize::try_from(i).ok().and_then(|i| per_bucket.get_mut(i)) {
            b.push(r);
        }
    }
    let buckets = starts.iter().zip(&per_bucket).map(|(start, rs)| BucketFigures { start: *start, figures: figures(rs) }).collect();
    let all: Vec<&RunStats> = runs.iter().collect();
    let (slowest_steps, costliest_steps) = top_steps(&all);
    Report {
        design: query.design.as_ref().map(ToString::to_string),
        from: query.from,
        to: query.to,
        bucket: query.bucket,
        currency,
        totals: figures(&all),
        buckets,
        slowest_steps,
        costliest_steps,
    }
}

/// The figures of `runs`.
pub fn figures(runs: &[&RunStats]) -> Figures {
    let mut f = Figures { runs: runs.len() as u64, ..Figures::default() };
    let mut durations: Vec<u64> = Vec::with_capacity(runs.len());
    for r in runs {
        *f.by_status.entry(r.status.as_str().to_string()).or_default() += 1;
        durations.push(r.duration_ms());
        f.usage.add(&r.usage);
        match r.cost {
            Some(c) => f.cost = round(f.cost + c),
            None => f.unpriced_runs += 1,
        }
    }
    durations.sort_unstable();
    let failed = f.by_status.get(Status::Failed.as_str()).copied().unwrap_or(0);
    f.failure_rate = (f.runs > 0).then(|| failed as f64 / f.runs as f64);
    f.p50_ms = percentile(&durations, 50);
    f.p95_ms = percentile(&durations, 95);
    f
}

/// The nearest-rank `p`th percentile of `sorted` (ascending): the smallest value with at least
/// `p`% of the values at or below it.
pub fn percentile(sorted: &[u64], p: u64) -> Option<u64> {
    let n = sorted.len() as u64;
    if n == 0 {
        return None;
    }
    let rank = (p * n).div_ceil(100).max(1);
    sorted.get(rank as usize - 1).copied()
}

fn top_steps(runs: &[&RunStats]) -> (Vec<StepFigures>, Vec<StepFigures>) {
    let mut nodes: HashMap<(&str, &str), StepFigures> = HashMap::new();
    for r in runs {
        for s in &r.steps {
            let e = nodes.entry((r.design.as_str(), s.node.as_str())).or_insert_with(|| StepFigures {
                design: r.design.to_string(),
                node: s.node.clone(),
                runs: 0,
                count: 0,
                mean_ms: 0,
                max_ms: 0,
                total_ms: 0,
                usage: Usage::default(),
                cost: 0.0,
            });
            e.runs += 1;
            e.count = e.count.saturating_add(s.count);
            e.total_ms = e.total_ms.saturating_add(s.total_ms);
            e.max_ms = e.max_ms.max(s.max_ms);
            e.usage.add(&s.usage);
            e.cost = round(e.cost + s.cost.unwrap_or(0.0));
        }
    }
    let mut all: Vec<StepFigures> = nodes
        .into_values()
        .map(|mut s| {
            s.mean_ms = s.total_ms.checked_div(s.count).unwrap_or(0);
            s
        })
        .collect();
    all.sort_by(|a, b| b.mean_ms.cmp(&a.mean_ms).then(b.max_ms.cmp(&a.max_ms)).then((&a.design, &a.node).cmp(&(&b.design, &b.node))));
    let slowest = all.iter().take(TOP_STEPS).cloned().collect();
    all.retain(|s| s.cost > 0.0);
    all.sort_by(|a, b| b.cost.total_cmp(&a.cost).then((&a.design, &a.node).cmp(&(&b.design, &b.node))));
    all.truncate(TOP_STEPS);
    (slowest, all)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Ts {
        time::parse(s).unwrap_or_default()
    }

    fn record(id: u8, design: &str, status: Status, start: &str, ms: i64, cost: Option<f64>) -> RunStats {
        let started_at = at(start);
        RunStats {
            run_id: RunId::from_bytes([id; 6]),
            design: DesignName::parse(design).unwrap_or_else(|_| unreachable!()),
            status,
            started_at,
            ended_at: started_at + TimeDelta::milliseconds(ms),
            usage: Usage { input_tokens: 10, output_tokens: 1, cached_tokens: 0 },
            cost,
            currency: Some("USD".into()),
            steps: vec![StepStats { node: "ask".into(), count: 1, total_ms: ms as u64, max_ms: ms as u64, usage: Usage::default(), cost }],
        }
    }

    #[test]
    fn a_query_has_defaults_floors_its_start_and_refuses_what_it_cannot_answer() {
        let now = at("2026-12-03T10:30:00Z");
        let q = Query::new(None, None, None, None, now).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((q.from, q.to, q.bucket), (at("2026-11-26T00:00:00Z"), now, Bucket::Day));
        let q =
            Query::new(None, Some("2026-12-01"), Some("2026-12-02T05:00:00Z"), Some(Bucket::Hour), now).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(q.starts().len(), 29);
        for (from, to, bucket, why) in [
            (Some("yesterday"), None, None, "from must be"),
            (None, Some("2026-13-01"), None, "to must be"),
            (Some("2026-12-04"), Some("2026-12-03"), None, "before to"),
            (Some("2000-01-01"), None, Some(Bucket::Hour), "more than 2000"),
        ] {
            let e = Query::new(None, from, to, bucket, now).err().unwrap_or_default();
            assert!(e.contains(why), "{e}");
        }
        assert_eq!(Bucket::parse("week"), None);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        assert_eq!(percentile(&[], 50), None);
        assert_eq!(percentile(&[7], 95), Some(7));
        let v: Vec<u64> = (1..=20).collect();
        assert_eq!((percentile(&v, 50), percentile(&v, 95)), (Some(10), Some(19)));
        assert_eq!(percentile(&[1, 2, 3], 50), Some(2));
    }

    #[test]
    fn a_report_counts_runs_in_the_bucket_of_their_end() {
        let now = at("2026-12-03T00:00:00Z");
        let q = Query::new(None, Some("2026-12-01"), Some("2026-12-03"), None, now).unwrap_or_else(|e| panic!("{e}"));
        let mut retried = record(3, "b", Status::Failed, "2026-12-01T23:00:00Z", 1000, None);
        let records = vec![
            record(1, "a", Status::Done, "2026-12-01T01:00:00Z", 100, Some(0.5)),
            record(2, "a", Status::Failed, "2026-12-01T02:00:00Z", 300, Some(0.25)),
            retried.clone(),
            record(4, "a", Status::Done, "2026-11-30T02:00:00Z", 300, Some(1.0)),
        ];
        retried.status = Status::Done;
        retried.ended_at = at("2026-12-02T01:00:00Z");
        retried.cost = Some(2.0);
        retried.steps[0].cost = Some(2.0);
        // A store gives each run's latest record: the retried run's second end.
        let mut with_retry = records.clone();
        with_retry[2] = retried;
        let r = report(&q, with_retry, None);
        assert_eq!(r.totals.runs, 3);
        assert_eq!(r.totals.by_status.get("done"), Some(&2));
        assert_eq!(r.totals.cost, 2.75);
        assert_eq!(r.totals.unpriced_runs, 0);
        assert_eq!(r.buckets.len(), 2);
        assert_eq!((r.buckets[0].figures.runs, r.buckets[1].figures.runs), (2, 1));
        assert_eq!(r.buckets[0].figures.failure_rate, Some(0.5));
        assert_eq!(r.currency.as_deref(), Some("USD"));
        assert_eq!(r.slowest_steps[0].design, "b");
        assert_eq!(r.costliest_steps.iter().map(|s| s.cost).collect::<Vec<_>>(), vec![2.0, 0.75]);
        let without = report(&q, records, None);
        assert_eq!((without.totals.unpriced_runs, without.totals.cost), (1, 0.75));
    }
}
