//! [`JobStore`] on PostgreSQL: schedule jobs (a row per design), trigger state (when each design
//! last fired) and the two store-wide locks.
//!
//! A fire is claimed by a compare-and-set on `last_fired_at`, so of the instances that saw the same
//! last fire only one claims the next. The jobs lock and the trigger claim are session advisory
//! locks with negative keys, which no run's lock can have.

use sqlx::Row;
use vwf_core::names::DesignName;
use vwf_core::schedule::job::{Job, design_of, job_id};
use vwf_core::time::Ts;

use super::{JOBS_LOCK_KEY, Locking, PgStore, TRIGGERS_CLAIM_KEY, db};
use crate::{JobEntry, JobStore, StoreError, StoreLock};

#[async_trait::async_trait]
impl JobStore for PgStore {
    async fn list_jobs(&self) -> Result<Vec<JobEntry>, StoreError> {
        let pool = self.pool();
        let rows = self
            .call(async move { sqlx::query("SELECT design, job FROM vwf_jobs ORDER BY design").fetch_all(&pool).await.map_err(db) })
            .await?;
        let mut entries: Vec<JobEntry> = rows
            .into_iter()
            .filter_map(|row| {
                let design: String = row.try_get("design").ok()?;
                let text: String = row.try_get("job").ok()?;
                let id = format!("{}{design}", vwf_core::schedule::job::JOB_PREFIX);
                Some(match serde_json::from_str::<Job>(&text) {
                    Ok(job) if job.job_id == id => Ok(job),
                    Ok(job) => Err((id, format!("the stored job says job_id {:?}, not its own", job.job_id))),
                    Err(e) => Err((id, format!("schedule job of {design:?} is not a schedule job: {e}"))),
                })
            })
            .collect();
        entries.sort_by(|a, b| entry_id(a).cmp(entry_id(b)));
        Ok(entries)
    }

    async fn read_job(&self, design: &DesignName) -> Result<Option<Job>, StoreError> {
        let text = self.fetch_text("SELECT job FROM vwf_jobs WHERE design = $1", vec![design.to_string()]).await?;
        text.map(|t| {
            serde_json::from_str(&t)
                .map_err(|e| StoreError::Corrupt { path: format!("schedule job of {:?}", design.as_str()), message: e.to_string() })
        })
        .transpose()
    }

    async fn write_job(&self, job: &Job) -> Result<(), StoreError> {
        let design = design_of(&job.job_id)
            .ok_or_else(|| StoreError::other(format!("cannot save a job with the id {:?}", job.job_id), "the id names no design"))?;
        let text = serde_json::to_string(job).map_err(|e| StoreError::encode("a schedule job", e))?;
        self.execute(
            "INSERT INTO vwf_jobs (design, job) VALUES ($1, $2) ON CONFLICT (design) DO UPDATE SET job = EXCLUDED.job",
            vec![design.to_string(), text],
        )
        .await
        .map(drop)
    }

    async fn remove_job(&self, design: &DesignName) -> Result<(), StoreError> {
        match self.execute("DELETE FROM vwf_jobs WHERE design = $1", vec![design.to_string()]).await? {
            0 => Err(StoreError::NotFound(format!("schedule job {:?}", job_id(design)))),
            _ => Ok(()),
        }
    }

    async fn has_jobs(&self) -> bool {
        let pool = self.pool();
        self.call(async move { sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM vwf_jobs)").fetch_one(&pool).await.map_err(db) })
            .await
            .unwrap_or(true)
    }

    async fn lock_jobs(&self) -> Result<StoreLock, StoreError> {
        let lock = self
            .advisory(JOBS_LOCK_KEY, Locking::Wait)
            .await?
            .ok_or_else(|| StoreError::other("cannot lock the schedule jobs", "the lock was not granted"))?;
        Ok(StoreLock::new(lock))
    }

    async fn last_fire(&self, design: &DesignName) -> Option<Ts> {
        let (pool, key) = (self.pool(), design.to_string());
        self.call(async move {
            sqlx::query_scalar("SELECT last_fired_at FROM vwf_trigger_state WHERE design = $1")
                .bind(key)
                .fetch_optional(&pool)
                .await
                .map_err(db)
        })
        .await
        .ok()
        .flatten()
    }

    async fn record_fire(&self, design: &DesignName, at: Ts) -> Result<(), StoreError> {
        let (pool, key) = (self.pool(), design.to_string());
        self.call(async move {
            sqlx::query(
                "INSERT INTO vwf_trigger_state (design, last_fired_at) VALUES ($1, $2) \
                 ON CONFLICT (design) DO UPDATE SET last_fired_at = EXCLUDED.last_fired_at",
            )
            .bind(key)
            .bind(at)
            .execute(&pool)
            .await
            .map_err(db)?;
            Ok(())
        })
        .await
    }

    async fn claim_fire(&self, design: &DesignName, last: Option<Ts>, at: Ts) -> Result<bool, StoreError> {
        let (pool, key) = (self.pool(), design.to_string());
        self.call(async move {
            let done = match last {
                None => {
                    sqlx::query("INSERT INTO vwf_trigger_state (design, last_fired_at) VALUES ($1, $2) ON CONFLICT (design) DO NOTHING")
                        .bind(key)
                        .bind(at)
                        .execute(&pool)
                        .await
                }
                Some(last) => {
                    sqlx::query("UPDATE vwf_trigger_state SET last_fired_at = $2 WHERE design = $1 AND last_fired_at = $3")
                        .bind(key)
                        .bind(at)
                        .bind(last)
                        .execute(&pool)
                        .await
                }
            };
            Ok(done.map_err(db)?.rows_affected() == 1)
        })
        .await
    }

    async fn list_fires(&self) -> Result<Vec<(DesignName, Ts)>, StoreError> {
        let pool = self.pool();
        let rows = self
            .call(async move {
                sqlx::query("SELECT design, last_fired_at FROM vwf_trigger_state ORDER BY design").fetch_all(&pool).await.map_err(db)
            })
            .await?;
        Ok(rows
            .into_iter()
            .filter_map(|row| {
                let design: String = row.try_get("design").ok()?;
                Some((DesignName::parse(&design).ok()?, row.try_get("last_fired_at").ok()?))
            })
            .collect())
    }

    async fn claim_triggers(&self) -> Result<StoreLock, StoreError> {
        match self.advisory(TRIGGERS_CLAIM_KEY, Locking::Try).await? {
            Some(lock) => Ok(StoreLock::new(lock)),
            None => Err(StoreError::Busy(format!("another vwf daemon is already running on {}", self.inner.shown))),
        }
    }
}

fn entry_id(entry: &JobEntry) -> &str {
    match entry {
        Ok(job) => &job.job_id,
        Err((id, _)) => id,
    }
}
