//! Stats records on PostgreSQL (`migrations/0008_run_stats.sql`): a row per ended run, upserted
//! at its end, read by one indexed range. The runs that ended before the table existed are filled
//! in by the first query that finds `vwf_run_stats_built` false (any instance; the rows are the
//! same whoever writes them).

use vwf_core::names::{DesignName, RunId};
use vwf_core::run::Run;
use vwf_core::stats::RunStats;
use vwf_core::time::Ts;

use super::{PgStore, db};
use crate::{Store, StoreError};

/// Run ids read per page while filling the table in.
const PAGE: usize = 1000;

/// Writes records (`$1`–`$4`: run ids, designs, ends, record texts); an existing row of the same
/// run is replaced. A macro, so the statements that save a run ended or unlock it can carry it
/// (see `locks`); given a literal, it is joined to the records (`", saved"`: only if `saved`
/// has a row).
macro_rules! upsert_stats {
    () => {
        upsert_stats!("")
    };
    ($join:literal) => {
        concat!(
            "INSERT INTO vwf_run_stats (run_id, design, ended_at, record) \
             SELECT r.* FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[]) AS r",
            $join,
            " ON CONFLICT (run_id) DO UPDATE SET design = EXCLUDED.design, ended_at = EXCLUDED.ended_at, record = EXCLUDED.record"
        )
    };
}
pub(super) use upsert_stats;

/// Writes records; an existing row of the same run is replaced (`replace`) or kept.
const WRITE: [&str; 2] = [
    "INSERT INTO vwf_run_stats (run_id, design, ended_at, record) \
     SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[]) ON CONFLICT (run_id) DO NOTHING",
    upsert_stats!(),
];

/// Records as the four arrays [`upsert_stats!`] binds.
pub(super) type Columns = (Vec<String>, Vec<String>, Vec<Ts>, Vec<String>);

pub(super) fn columns(records: &[RunStats]) -> Result<Columns, StoreError> {
    let (mut ids, mut designs, mut ends, mut texts) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for r in records {
        ids.push(r.run_id.to_string());
        designs.push(r.design.to_string());
        ends.push(r.ended_at);
        texts.push(serde_json::to_string(r).map_err(|e| StoreError::encode(format!("the stats of run {}", r.run_id), e))?);
    }
    Ok((ids, designs, ends, texts))
}

impl PgStore {
    pub(super) async fn write_stats(&self, records: &[RunStats], replace: bool) -> Result<(), StoreError> {
        let (ids, designs, ends, texts) = columns(records)?;
        let (pool, sql) = (self.pool(), WRITE[usize::from(replace)]);
        self.call(async move { sqlx::query(sql).bind(ids).bind(designs).bind(ends).bind(texts).execute(&pool).await.map_err(db).map(drop) })
            .await
    }

    pub(super) async fn select_stats(&self, from: Ts, to: Ts, design: Option<&DesignName>) -> Result<Vec<RunStats>, StoreError> {
        self.fill_in_stats().await?;
        let (pool, design) = (self.pool(), design.map(ToString::to_string));
        let texts: Vec<String> = self
            .call(async move {
                sqlx::query_scalar(
                    "SELECT record FROM vwf_run_stats WHERE ended_at >= $1 AND ended_at < $2 AND ($3::text IS NULL OR design = $3)",
                )
                .bind(from)
                .bind(to)
                .bind(design)
                .fetch_all(&pool)
                .await
                .map_err(db)
            })
            .await?;
        Ok(texts.iter().filter_map(|t| serde_json::from_str(t).ok()).collect())
    }

    /// Adds the records of runs that ended before the table existed, once.
    async fn fill_in_stats(&self) -> Result<(), StoreError> {
        if self.fetch_text("SELECT built::text FROM vwf_run_stats_built", vec![]).await?.as_deref() != Some("false") {
            return Ok(());
        }
        let mut before: Option<RunId> = None;
        loop {
            let ids = self.list_run_ids(before.as_ref(), PAGE).await?;
            let records: Vec<RunStats> =
                self.read_runs(&ids).await.into_iter().filter_map(|r| serde_json::from_value::<Run>(r.ok()?).ok()?.stats()).collect();
            // A run that ended again meanwhile keeps its newer row.
            self.write_stats(&records, false).await?;
            match ids.last() {
                Some(id) if ids.len() == PAGE => before = Some(id.clone()),
                _ => break,
            }
        }
        self.execute("UPDATE vwf_run_stats_built SET built = true", vec![]).await.map(drop)
    }
}
