//! The schema of the PostgreSQL store: the embedded migrations, applying them (at connect, or on
//! their own for `vwf store migrate`), and what a database newer than this binary is told.
//!
//! Migrations run only under sqlx's migration lock and are recorded in their own table
//! ([`MIGRATIONS_TABLE`]); a database with a version this binary does not know is refused, never
//! used as if it were older.

use std::sync::Arc;

use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::{Connection, PgConnection, SqlSafeStr};

use super::{PgSettings, PgStore, classified, connect_options};
use crate::StoreError;

/// The schema, oldest first; embedded so the binary needs no files beside it.
const MIGRATIONS: [(i64, &str, &str); 10] = [
    (1, "store", include_str!("../../migrations/0001_store.sql")),
    (2, "notify", include_str!("../../migrations/0002_notify.sql")),
    (3, "run_parts", include_str!("../../migrations/0003_run_parts.sql")),
    (4, "design_versions", include_str!("../../migrations/0004_design_versions.sql")),
    (5, "event_waiters", include_str!("../../migrations/0005_event_waiters.sql")),
    (6, "idempotency_keys", include_str!("../../migrations/0006_idempotency_keys.sql")),
    (7, "flow_docs", include_str!("../../migrations/0007_flow_docs.sql")),
    (8, "run_stats", include_str!("../../migrations/0008_run_stats.sql")),
    (9, "run_notices", include_str!("../../migrations/0009_run_notices.sql")),
    (10, "run_seq_index", include_str!("../../migrations/0010_run_seq_index.sql")),
];
/// Where sqlx records which migrations ran.
const MIGRATIONS_TABLE: &str = "vwf_schema_migrations";

impl PgStore {
    /// Connects on one connection, brings the schema up to date under the migration lock and says
    /// what it applied (`vwf store migrate`), without opening a pool. A schema newer than this
    /// binary is the same error as at connect.
    pub fn migrate_at(settings: &PgSettings) -> Result<Migrated, StoreError> {
        let (options, shown) = connect_options(settings)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| StoreError::io("cannot start the database runtime", e))?;
        let versions = runtime.block_on(async move {
            let mut conn = PgConnection::connect_with(&options).await?;
            let before = applied_versions(&mut conn).await?;
            migrator().run(&mut conn).await.map_err(sqlx::Error::from)?;
            let after = applied_versions(&mut conn).await?;
            conn.close().await?;
            Ok::<_, sqlx::Error>((before, after))
        });
        let (before, after) = versions.map_err(|e| connect_error(&shown, e))?;
        let applied = MIGRATIONS
            .iter()
            .filter(|(version, _, _)| after.contains(version) && !before.contains(version))
            .map(|(version, name, _)| AppliedMigration { version: *version, name: (*name).to_string() })
            .collect();
        Ok(Migrated { database: shown, applied, version: after.iter().copied().max().unwrap_or_default() })
    }

    /// Applies the schema explicitly; `connect` does it too.
    pub fn migrate(&self) -> Result<(), StoreError> {
        let pool = self.pool();
        let shown = self.inner.shown.clone();
        super::block(&self.inner.handle, async move { migrator().run(&pool).await.map_err(|e| connect_error(&shown, e.into())) })
    }
}

pub(super) fn migrator() -> Migrator {
    let migrations = MIGRATIONS
        .iter()
        .map(|(version, name, sql)| Migration::new(*version, (*name).into(), MigrationType::Simple, sql.into_sql_str(), false))
        .collect();
    let mut migrator = Migrator::with_migrations(migrations);
    migrator.dangerous_set_table_name(MIGRATIONS_TABLE);
    migrator
}

/// What [`PgStore::migrate_at`] did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Migrated {
    /// The database, without its password.
    pub database: String,
    /// The migrations this call applied, oldest first (none when the schema was up to date).
    pub applied: Vec<AppliedMigration>,
    /// The schema version the database is at now.
    pub version: i64,
}

/// One embedded migration, by version and name.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AppliedMigration {
    pub version: i64,
    pub name: String,
}

/// The versions the migrations table records as applied (none before the first migration).
async fn applied_versions(conn: &mut PgConnection) -> Result<Vec<i64>, sqlx::Error> {
    let exists: bool = sqlx::query_scalar("SELECT to_regclass($1) IS NOT NULL").bind(MIGRATIONS_TABLE).fetch_one(&mut *conn).await?;
    if !exists {
        return Ok(Vec::new());
    }
    let sql = format!("SELECT version FROM {MIGRATIONS_TABLE} WHERE success ORDER BY version");
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).fetch_all(&mut *conn).await
}

/// Why connecting failed, in the user's words.
pub(super) fn connect_error(shown: &str, e: sqlx::Error) -> StoreError {
    match e {
        sqlx::Error::Migrate(m) => match *m {
            sqlx::migrate::MigrateError::VersionMissing(v) => StoreError::other(
                format!("cannot use the database {shown}"),
                format!("it has schema version {v}, newer than this vwf knows (up to {}); use a newer vwf", MIGRATIONS.len()),
            ),
            other => StoreError::Io { action: format!("cannot bring the schema of {shown} up to date"), source: Arc::new(other) },
        },
        other => classified(format!("cannot connect to the database {shown}"), other),
    }
}
