//! A fresh PostgreSQL database per test, on the throwaway cluster the test command starts
//! (`scripts/postgres`, whose admin URL `scripts/test` exports as `VWF_TEST_DATABASE_URL`).

use sqlx::Connection;
use vwf_store::Wait;

/// The cluster's admin URL; a clear failure (never a skip) when there is none.
pub fn admin_url() -> String {
    std::env::var("VWF_TEST_DATABASE_URL").ok().filter(|u| !u.trim().is_empty()).unwrap_or_else(|| {
        panic!(
            "VWF_TEST_DATABASE_URL is not set: the PostgreSQL tests need a server. Run them through scripts/test, which \
             starts one, or start one with `scripts/postgres start DIR` and export the URL it prints"
        )
    })
}

/// Creates an empty database and returns its URL.
pub fn fresh_database() -> String {
    let admin = admin_url();
    let mut random = [0u8; 6];
    getrandom::fill(&mut random).expect("random");
    let name = format!("vwf_t_{}", random.iter().map(|b| format!("{b:02x}")).collect::<String>());
    runtime().block_on(async {
        let mut conn = connect(&admin).await;
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&mut conn).await.expect("create database");
    });
    let (base, _) = admin.rsplit_once('/').expect("the admin URL names a database");
    format!("{base}/{name}")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime")
}

async fn connect(url: &str) -> sqlx::PgConnection {
    sqlx::PgConnection::connect(url).await.unwrap_or_else(|e| panic!("cannot reach the test database {url}: {e}"))
}

/// The stored document of run `id` (schema: crates/vwf/migrations), `None` when there is none.
pub fn stored_run(url: &str, id: &str) -> Option<String> {
    let (doc, parts) = runtime().block_on(async {
        let mut conn = connect(url).await;
        sqlx::query_as::<_, (Option<String>, bool)>("SELECT doc, parts FROM vwf_runs WHERE id = $1")
            .bind(id)
            .fetch_optional(&mut conn)
            .await
            .expect("read a run")
    })?;
    if !parts {
        return doc;
    }
    // A run in flight is its last whole document and the parts saved since: the store reads it.
    let store = vwf::store::PgStore::connect(&vwf::store::PgSettings::new(url.to_string())).expect("connect to the test database");
    let id = vwf_core::names::RunId::parse(id).ok()?;
    let run = vwf::store::Store::read_run(&store, &id).wait().unwrap_or_else(|e| panic!("run {id} cannot be read: {e}"));
    Some(run.to_string())
}

/// Replaces the stored document of an existing run.
pub fn write_stored_run(url: &str, id: &str, doc: &str) {
    runtime().block_on(async {
        let mut conn = connect(url).await;
        sqlx::query("DELETE FROM vwf_run_parts WHERE run_id = $1").bind(id).execute(&mut conn).await.expect("drop a run's parts");
        let done = sqlx::query("UPDATE vwf_runs SET doc = $2, parts = false WHERE id = $1")
            .bind(id)
            .bind(doc)
            .execute(&mut conn)
            .await
            .expect("write a run");
        assert_eq!(done.rows_affected(), 1, "run {id} is not stored");
    })
}

/// The ids of every run with a stored document (an id only reserved has none yet).
pub fn stored_run_ids(url: &str) -> std::collections::BTreeSet<String> {
    runtime()
        .block_on(async {
            let mut conn = connect(url).await;
            sqlx::query_scalar::<_, String>("SELECT id FROM vwf_runs WHERE doc IS NOT NULL").fetch_all(&mut conn).await.expect("list runs")
        })
        .into_iter()
        .collect()
}

/// Whether some session waits for an advisory lock of this database (a `vwf` queued behind a
/// run lock the test holds).
pub fn someone_waits_for_a_lock(url: &str) -> bool {
    runtime().block_on(async {
        let mut conn = connect(url).await;
        sqlx::query_scalar::<_, bool>(
            "SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_database d ON d.oid = l.database \
             WHERE l.locktype = 'advisory' AND NOT l.granted AND d.datname = current_database())",
        )
        .fetch_one(&mut conn)
        .await
        .expect("look at pg_locks")
    })
}

/// The advisory lock key of a run: its 12 hex digits read as a number, as the store takes it.
pub fn run_lock_key(id: &str) -> i64 {
    i64::from_str_radix(id, 16).unwrap_or_else(|e| panic!("{id:?} is not a run id: {e}"))
}

/// A session advisory lock held on its own connection until dropped.
pub struct HeldAdvisoryLock {
    runtime: tokio::runtime::Runtime,
    conn: Option<sqlx::PgConnection>,
}

impl HeldAdvisoryLock {
    pub fn take(url: &str, key: i64) -> HeldAdvisoryLock {
        let runtime = runtime();
        let conn = runtime.block_on(async {
            let mut conn = connect(url).await;
            let taken =
                sqlx::query_scalar::<_, bool>("SELECT pg_try_advisory_lock($1)").bind(key).fetch_one(&mut conn).await.expect("lock");
            assert!(taken, "the lock is free before the test takes it");
            conn
        });
        HeldAdvisoryLock { runtime, conn: Some(conn) }
    }
}

impl Drop for HeldAdvisoryLock {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            // Closing the session releases its advisory locks.
            let _ = self.runtime.block_on(conn.close());
        }
    }
}

/// The stored graph of design `name`, `None` when there is none.
pub fn stored_design(url: &str, name: &str) -> Option<String> {
    runtime().block_on(async {
        let mut conn = connect(url).await;
        sqlx::query_scalar::<_, String>("SELECT graph FROM vwf_designs WHERE name = $1")
            .bind(name)
            .fetch_optional(&mut conn)
            .await
            .expect("read a design")
    })
}

/// Every row of every table of the database as PostgreSQL prints it, with its table's name: what
/// a scan for a value that must never be stored reads.
pub fn every_row(url: &str) -> Vec<(String, String)> {
    runtime().block_on(async {
        let mut conn = connect(url).await;
        let tables: Vec<String> =
            sqlx::query_scalar("SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1")
                .fetch_all(&mut conn)
                .await
                .expect("list tables");
        let mut rows = Vec::new();
        for table in tables {
            let texts: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT t::text FROM \"{table}\" t")))
                .fetch_all(&mut conn)
                .await
                .expect("read a table");
            rows.extend(texts.into_iter().map(|t| (table.clone(), t)));
        }
        rows
    })
}

/// How many run rows there are, documents or only reserved ids.
pub fn run_rows(url: &str) -> i64 {
    runtime().block_on(async {
        let mut conn = connect(url).await;
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM vwf_runs").fetch_one(&mut conn).await.expect("count runs")
    })
}

/// Deletes run `id`'s row.
pub fn forget_run(url: &str, id: &str) {
    runtime().block_on(async {
        let mut conn = connect(url).await;
        sqlx::query("DELETE FROM vwf_runs WHERE id = $1").bind(id).execute(&mut conn).await.expect("delete a run");
    })
}

/// Records a migration this vwf does not know (version 99), as a newer vwf would leave the database.
pub fn record_a_newer_migration(url: &str) {
    runtime().block_on(async {
        let mut conn = connect(url).await;
        sqlx::query(
            "INSERT INTO vwf_schema_migrations (version, description, success, checksum, execution_time) \
             VALUES (99, 'from the future', true, '\\x00', 0)",
        )
        .execute(&mut conn)
        .await
        .expect("record a migration");
    })
}

/// The schema versions the database records as applied, oldest first.
pub fn schema_versions(url: &str) -> Vec<i64> {
    runtime().block_on(async {
        let mut conn = connect(url).await;
        sqlx::query_scalar("SELECT version FROM vwf_schema_migrations ORDER BY version").fetch_all(&mut conn).await.expect("versions")
    })
}

/// Ends every database session that holds advisory lock `key` (a lost connection, as a network
/// cut leaves it); answers how many ended.
pub fn cut_the_holder_of(url: &str, key: i64) -> i64 {
    runtime().block_on(async {
        let mut conn = connect(url).await;
        sqlx::query_scalar::<_, i64>(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory' AND granted \
             AND classid::bigint = $1 AND objid::bigint = $2 AND objsubid = 1",
        )
        .bind(key >> 32)
        .bind(key & 0xffff_ffff)
        .fetch_one(&mut conn)
        .await
        .expect("end the lock's session")
    })
}

/// From now on, every update of a run's row first ends the session of every advisory lock held
/// on this database, waiting until it is gone: what a process killed in the middle of its own save
/// looks like to that save's statement. `stop_cutting` undoes it.
pub fn cut_lock_holders_inside_run_saves(url: &str) {
    runtime().block_on(async {
        let mut conn = connect(url).await;
        for sql in [
            "CREATE FUNCTION vwf_test_cut() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
             PERFORM pg_terminate_backend(pid, 10000) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 \
             AND pid <> pg_backend_pid() AND database = (SELECT oid FROM pg_database WHERE datname = current_database()); \
             RETURN NEW; END $$",
            "CREATE TRIGGER vwf_test_cut BEFORE UPDATE ON vwf_runs FOR EACH ROW EXECUTE FUNCTION vwf_test_cut()",
        ] {
            sqlx::query(sql).execute(&mut conn).await.expect("install the cutting trigger");
        }
    })
}

/// Undoes [`cut_lock_holders_inside_run_saves`].
pub fn stop_cutting(url: &str) {
    runtime().block_on(async {
        let mut conn = connect(url).await;
        for sql in ["DROP TRIGGER vwf_test_cut ON vwf_runs", "DROP FUNCTION vwf_test_cut()"] {
            sqlx::query(sql).execute(&mut conn).await.expect("remove the cutting trigger");
        }
    })
}

/// Empties the stats table and marks it unbuilt, as a database upgraded from before stats were
/// kept is (its runs ended before the table existed).
pub fn forget_stats(url: &str) {
    runtime().block_on(async {
        let mut conn = connect(url).await;
        sqlx::query("DELETE FROM vwf_run_stats").execute(&mut conn).await.expect("empty the stats");
        sqlx::query("UPDATE vwf_run_stats_built SET built = false").execute(&mut conn).await.expect("mark the stats unbuilt");
    })
}

/// Starts counting the statements run on the database of `url` from zero (`pg_stat_statements`,
/// which `scripts/postgres` loads).
pub fn count_statements(url: &str) {
    let (admin, oid) = (admin_url(), database_oid(url));
    runtime().block_on(async {
        let mut conn = connect(&admin).await;
        sqlx::query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            .execute(&mut conn)
            .await
            .expect("pg_stat_statements: the test cluster loads it (scripts/postgres)");
        sqlx::query("SELECT pg_stat_statements_reset(0, $1, 0)").bind(oid).execute(&mut conn).await.expect("reset the counts");
    })
}

/// The statements run on the database of `url` since [`count_statements`]: calls and text, most
/// called first.
pub fn statements(url: &str) -> Vec<(i64, String)> {
    let (admin, oid) = (admin_url(), database_oid(url));
    runtime().block_on(async {
        let mut conn = connect(&admin).await;
        sqlx::query_as("SELECT calls, query FROM pg_stat_statements WHERE dbid = $1 ORDER BY calls DESC")
            .bind(oid)
            .fetch_all(&mut conn)
            .await
            .expect("read pg_stat_statements")
    })
}

fn database_oid(url: &str) -> sqlx::postgres::types::Oid {
    let name = url.rsplit('/').next().expect("the URL names a database").to_string();
    runtime().block_on(async {
        let mut conn = connect(&admin_url()).await;
        sqlx::query_scalar("SELECT oid FROM pg_database WHERE datname = $1").bind(name).fetch_one(&mut conn).await.expect("the database")
    })
}
