//! `vwf schedule …`: the subcommands and what they print. `main.rs` prints [`Output`] and turns
//! it into an exit code.

use clap::Subcommand;
use serde_json::{Value, json};
use vwf_core::names::DesignName;
use vwf_core::run::Status;
use vwf_core::time::Ts;

use vwf_api::failure::Failure;
use vwf_api::render;
use vwf_api::service::ContractBody;
use vwf_runtime::app::App;
use vwf_runtime::schedules::{self, Acted, Entry, Fired, JobAction};

#[derive(Subcommand, Debug)]
pub enum ScheduleCmd {
    /// Create or update a design's schedule job.
    Set {
        /// The design to run.
        design: String,
        /// hourly, daily, weekdays, weekly or custom.
        #[arg(long)]
        preset: String,
        /// 24-hour HH:MM (daily, weekdays, weekly).
        #[arg(long)]
        time: Option<String>,
        /// Minute of the hour (hourly).
        #[arg(long)]
        minute: Option<u32>,
        /// Day of the week, 0 = Sunday (weekly).
        #[arg(long)]
        dow: Option<u32>,
        /// Five-field cron expression (custom).
        #[arg(long)]
        cron: Option<String>,
        /// Time zone, e.g. Europe/Berlin (default UTC).
        #[arg(long)]
        tz: Option<String>,
        /// Create or leave the job paused.
        #[arg(long)]
        paused: bool,
        /// The input of every run it starts, as JSON (text, @file or -); kept by later updates.
        #[arg(long, value_name = "JSON")]
        input: Option<String>,
    },
    /// List schedule jobs.
    List,
    /// Stop a job from firing until it is resumed.
    Pause {
        /// The job's id: wf-<design> (`vwf schedule list` shows it).
        job_id: String,
    },
    /// Let a paused job fire again, from now on.
    Resume {
        /// The job's id: wf-<design> (`vwf schedule list` shows it).
        job_id: String,
    },
    /// Start the job's design now.
    Run {
        /// The job's id: wf-<design> (`vwf schedule list` shows it).
        job_id: String,
    },
    /// Delete a job.
    Remove {
        /// The job's id: wf-<design> (`vwf schedule list` shows it).
        job_id: String,
    },
    /// Fire the jobs that are due, once, now (for cron-driven setups).
    Tick,
}

/// What a subcommand answers: the `--json` body, the human text, and the run's status when it
/// started one (for the exit code).
pub struct Output {
    pub body: Value,
    pub text: String,
    pub status: Option<Status>,
}

pub fn execute(app: &App, cmd: &ScheduleCmd) -> Result<Output, Failure> {
    let now = app.clock.now();
    match cmd {
        ScheduleCmd::Set { design, preset, time, minute, dow, cron, tz, paused, input } => {
            let name = DesignName::parse(design).map_err(Failure::BadRequest)?;
            let mut body = json!({"preset": preset, "time": time, "minute": minute, "dow": dow, "cron": cron, "tz": tz});
            if *paused {
                body["paused"] = json!(true);
            }
            if let Some(text) = input {
                body["input"] = crate::cli::args::json_arg(text, "--input")?;
            }
            let job = schedules::upsert(app, &name, &body, now)?;
            let when = if job.paused { "paused".to_string() } else { format!("next run {}", at(job.next_run_at, &job.tz)) };
            let text = format!("Scheduled {}: {} ({}), job {}, {when}.", job.design, job.human, job.tz, job.job_id);
            Ok(Output { body: json!({"ok": true, "job": job}), text, status: None })
        }
        ScheduleCmd::List => {
            let entries = schedules::list(app)?;
            let text = if entries.is_empty() {
                "No schedule jobs. Create one with `vwf schedule set <design> --preset daily --time 09:00`.".to_string()
            } else {
                table(&entries)
            };
            Ok(Output { body: vwf_api::service::schedules_body(entries), text, status: None })
        }
        ScheduleCmd::Pause { job_id } | ScheduleCmd::Resume { job_id } | ScheduleCmd::Remove { job_id } => {
            let action = match cmd {
                ScheduleCmd::Pause { .. } => JobAction::Pause,
                ScheduleCmd::Resume { .. } => JobAction::Resume,
                _ => JobAction::Remove,
            };
            let acted = schedules::action(app, job_id, action, now)?;
            let text = match &acted {
                Acted::Job(job) if job.paused => format!("Paused {}.", job.job_id),
                Acted::Job(job) => format!("Resumed {}: {}, next run {}.", job.job_id, job.human, at(job.next_run_at, &job.tz)),
                _ => format!("Removed {job_id}."),
            };
            Ok(Output { body: acted.body(), text, status: None })
        }
        ScheduleCmd::Run { job_id } => {
            let body = schedules::action(app, job_id, JobAction::Run, now)?.body();
            let status = body.get("status").and_then(|s| serde_json::from_value::<Status>(s.clone()).ok());
            let text = match status {
                Some(_) => render::summary(&body, true, render::Reader::Cli),
                None => format!("error: {}", body["error"].as_str().unwrap_or("the run did not start")),
            };
            Ok(Output { body, text, status })
        }
        ScheduleCmd::Tick => {
            let fired = schedules::tick(app, now)?;
            let text = if fired.is_empty() {
                "No schedule job was due.".to_string()
            } else {
                fired.iter().map(fired_line).collect::<Vec<_>>().join("\n")
            };
            Ok(Output { body: json!({"ok": true, "fired": fired}), text, status: None })
        }
    }
}

/// The human table of `vwf schedule list`.
pub fn table(entries: &[Entry]) -> String {
    let rows: Vec<Vec<String>> = entries
        .iter()
        .map(|e| match e {
            Ok(job) => {
                let mut state = if job.paused { "paused" } else { "active" }.to_string();
                if !job.missed.is_empty() {
                    state.push_str(&format!(" ({} missed)", job.missed.len()));
                }
                if let Some(reason) = &job.paused_reason {
                    state.push_str(&format!(": {reason}"));
                }
                vec![
                    job.job_id.clone(),
                    job.design.clone(),
                    job.human.clone(),
                    job.tz.clone(),
                    at(job.next_run_at, &job.tz),
                    at(job.last_run_at, &job.tz),
                    state,
                ]
            }
            Err((id, why)) => {
                let blank = String::new;
                vec![id.clone(), blank(), blank(), blank(), blank(), blank(), format!("unreadable: {why}")]
            }
        })
        .collect();
    render::table(&["JOB", "DESIGN", "WHEN", "TZ", "NEXT", "LAST", "STATE"], &rows)
}

fn fired_line(f: &Fired) -> String {
    let mut parts = Vec::new();
    if let Some(last) = f.missed.last() {
        parts.push(format!("missed {} fire(s), the last at {} (not run late)", f.missed.len(), vwf_core::time::format(&last.at)));
    }
    match (&f.run_id, f.status, &f.error) {
        (Some(id), Some(status), _) => parts.push(format!("run {id} {}", status.as_str())),
        (_, _, Some(error)) => parts.push(format!("not started: {error}")),
        _ => {}
    }
    format!("{} ({}): {}", f.job_id, f.design, parts.join("; "))
}

/// A time in the job's zone, e.g. `2026-03-30 09:00 CEST`; `-` for none.
fn at(t: Option<Ts>, tz: &str) -> String {
    match (t, vwf_core::schedule::parse_tz(tz)) {
        (None, _) => "-".to_string(),
        (Some(t), Ok(zone)) => t.with_timezone(&zone).format("%Y-%m-%d %H:%M %Z").to_string(),
        (Some(t), Err(_)) => t.format("%Y-%m-%d %H:%M UTC").to_string(),
    }
}
