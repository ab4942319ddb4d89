//! `vwf stats`: what the runs that ended in a period did (the report of `GET /stats`), as tables
//! or, with `--json`, as the API's body.

use std::io::Write;

use vwf_api::contract::answers::done;
use vwf_api::failure::Failure;
use vwf_api::render;
use vwf_api::service::Service;
use vwf_core::stats::{Bucket, Figures, Query, Report, StepFigures};

use super::commands::design_name;
use super::pretty;

/// The options of `vwf stats`.
pub(super) struct StatsArgs<'a> {
    pub design: Option<&'a str>,
    pub from: Option<&'a str>,
    pub to: Option<&'a str>,
    pub bucket: Option<&'a str>,
}

pub(super) fn stats(service: &Service<'_>, json: bool, args: StatsArgs<'_>) -> Result<u8, Failure> {
    let design = args.design.map(design_name).transpose()?;
    let bucket = match args.bucket {
        Some(b) => Some(Bucket::parse(b).ok_or_else(|| Failure::BadRequest(format!("--bucket must be hour or day, not {b:?}")))?),
        None => None,
    };
    let now = service.runner().clock.now();
    let query = Query::new(design, args.from, args.to, bucket, now).map_err(Failure::BadRequest)?;
    let report = service.stats(&query)?;
    if json {
        say!("{}", pretty(&done(&report)));
        return Ok(0);
    }
    print_report(&report);
    Ok(0)
}

fn print_report(r: &Report) {
    let of = r.design.as_deref().map(|d| format!(" of {d}")).unwrap_or_default();
    let (from, to) = (vwf_core::time::format(&r.from), vwf_core::time::format(&r.to));
    say!("Runs{of} that ended from {from} to {to}: {}", summary(&r.totals, r.currency.as_deref()));
    if r.totals.runs == 0 {
        return;
    }
    let rows: Vec<Vec<String>> = r
        .buckets
        .iter()
        .filter(|b| b.figures.runs > 0)
        .map(|b| {
            let f = &b.figures;
            vec![
                vwf_core::time::format(&b.start),
                f.runs.to_string(),
                count(f, "done"),
                count(f, "failed"),
                percent(f.failure_rate),
                millis(f.p50_ms),
                millis(f.p95_ms),
                (f.usage.input_tokens + f.usage.output_tokens).to_string(),
                money(f.cost, r.currency.as_deref()),
            ]
        })
        .collect();
    say!("\n{}", render::table(&["START", "RUNS", "DONE", "FAILED", "FAILED %", "P50", "P95", "TOKENS", "COST"], &rows));
    if !r.slowest_steps.is_empty() {
        say!("\nSlowest steps (mean):\n{}", steps(&r.slowest_steps, r.currency.as_deref()));
    }
    if !r.costliest_steps.is_empty() {
        say!("\nCostliest steps:\n{}", steps(&r.costliest_steps, r.currency.as_deref()));
    }
}

fn summary(f: &Figures, currency: Option<&str>) -> String {
    let mut s = format!("{} runs", f.runs);
    if f.runs > 0 {
        s += &format!(
            ", {} failed ({}), p50 {}, p95 {}, {} tokens, {}",
            count(f, "failed"),
            percent(f.failure_rate),
            millis(f.p50_ms),
            millis(f.p95_ms),
            f.usage.input_tokens + f.usage.output_tokens,
            money(f.cost, currency)
        );
    }
    if f.unpriced_runs > 0 {
        s += &format!(" ({} runs used a model with no price)", f.unpriced_runs);
    }
    s
}

fn steps(list: &[StepFigures], currency: Option<&str>) -> String {
    let rows: Vec<Vec<String>> = list
        .iter()
        .map(|s| {
            vec![
                s.design.clone(),
                s.node.clone(),
                s.count.to_string(),
                millis(Some(s.mean_ms)),
                millis(Some(s.max_ms)),
                (s.usage.input_tokens + s.usage.output_tokens).to_string(),
                money(s.cost, currency),
            ]
        })
        .collect();
    render::table(&["DESIGN", "STEP", "TIMES", "MEAN", "MAX", "TOKENS", "COST"], &rows)
}

fn count(f: &Figures, status: &str) -> String {
    f.by_status.get(status).copied().unwrap_or(0).to_string()
}

fn percent(rate: Option<f64>) -> String {
    rate.map_or("-".into(), |r| format!("{:.1}%", r * 100.0))
}

fn millis(ms: Option<u64>) -> String {
    match ms {
        None => "-".into(),
        Some(ms) if ms < 1000 => format!("{ms} ms"),
        Some(ms) => format!("{:.1} s", ms as f64 / 1000.0),
    }
}

fn money(amount: f64, currency: Option<&str>) -> String {
    format!("{amount:.4}{}", currency.map(|c| format!(" {c}")).unwrap_or_default())
}
