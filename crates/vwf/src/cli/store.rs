//! `vwf store migrate|export|import`: the store as a whole. `migrate` applies the embedded schema
//! to the configured PostgreSQL database (the file store has none); `export` and `import` move
//! every record between the configured store and a file store directory (see `store::copy`).
//!
//! `migrate` runs before the home's store is opened (opening a database store migrates it), so
//! it can say what it applied.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Subcommand;
use serde_json::{Value, json};

use super::pretty;
use vwf_api::failure::Failure;
use vwf_exec::config::Config;
use vwf_runtime::app::App;
use vwf_store::copy::{self, Copied, CopyError, Side};
use vwf_store::{PgSettings, PgStore};

#[derive(Subcommand)]
pub enum StoreCmd {
    /// Apply the embedded schema migrations to the configured PostgreSQL database and say which
    /// ran (every start does it too); the file store has no schema.
    Migrate,
    /// Copy the configured store (files or PostgreSQL) into a new file store at DIR, which must
    /// be empty or absent: every design, run, schedule job and heartbeat state.
    Export {
        /// Where to write the file store (created; refused when it holds anything).
        #[arg(long, value_name = "DIR")]
        to: PathBuf,
    },
    /// Copy the file store at DIR (a home directory, e.g. one `vwf store export` wrote) into the
    /// configured store, which must be empty.
    Import {
        /// The home directory to copy from.
        #[arg(long, value_name = "DIR")]
        from: PathBuf,
    },
}

/// The database the home is configured for (`VWF_DATABASE_URL`, else `[store] url`), if any.
fn database(home: &Path) -> Result<Option<PgSettings>, Failure> {
    let config = Config::load(home).map_err(Failure::Internal)?;
    vwf_runtime::app::postgres_settings(&config.store, std::env::var("VWF_DATABASE_URL").ok()).map_err(Failure::BadRequest)
}

/// `vwf store migrate`.
pub(super) fn migrate(home: &Path, json: bool) -> Result<u8, Failure> {
    let Some(settings) = database(home)? else {
        let why = format!("the file store at {} has no schema", home.display());
        if json {
            say!("{}", pretty(&json!({"ok": true, "store": "files", "applied": [], "message": format!("nothing to migrate: {why}")})));
        } else {
            say!("Nothing to migrate: {why}.");
        }
        return Ok(0);
    };
    let migrated = PgStore::migrate_at(&settings).map_err(|e| Failure::Unavailable(e.to_string()))?;
    if json {
        let body = json!({"ok": true, "store": "postgres", "database": migrated.database, "applied": migrated.applied, "version": migrated.version});
        say!("{}", pretty(&body));
    } else if migrated.applied.is_empty() {
        say!("The schema of {} is up to date (version {}).", migrated.database, migrated.version);
    } else {
        let applied: Vec<String> = migrated.applied.iter().map(|m| format!("{} ({})", m.version, m.name)).collect();
        say!("Applied {} to {}; its schema is at version {}.", applied.join(", "), migrated.database, migrated.version);
    }
    Ok(0)
}

/// `vwf store export --to DIR`.
pub(super) fn export(app: &App, json: bool, to: &Path) -> Result<u8, Failure> {
    let source = shown_store(app)?;
    let copied = copy::export_to_dir(&Side { store: app.store.as_ref(), jobs: app.jobs.as_ref() }, to).map_err(failure)?;
    Ok(report(&copied, &source, &to.display().to_string(), json))
}

/// `vwf store import --from DIR`.
pub(super) fn import(app: &App, json: bool, from: &Path) -> Result<u8, Failure> {
    let target = shown_store(app)?;
    let source = copy::file_store_at(from).map_err(failure)?;
    let copied = copy::copy(&Side { store: &source, jobs: &source }, &Side { store: app.store.as_ref(), jobs: app.jobs.as_ref() })
        .map_err(failure)?;
    Ok(report(&copied, &from.display().to_string(), &target, json))
}

/// The configured store as messages name it: the database without its password, or the home.
fn shown_store(app: &App) -> Result<String, Failure> {
    Ok(match database(&app.home)? {
        Some(settings) => vwf_store::pg::redact(&settings.url),
        None => app.home.display().to_string(),
    })
}

fn failure(e: CopyError) -> Failure {
    match e {
        CopyError::NotEmpty(m) => Failure::Conflict(m),
        CopyError::Missing(m) => Failure::NotFound(m),
        CopyError::NotAStore(m) => Failure::BadRequest(m),
        CopyError::Interrupted(_) => Failure::Internal(e.to_string()),
        CopyError::Store(e) => e.into(),
    }
}

/// Prints what a copy did; exit 1 when some records could not be read (and were not copied).
fn report(copied: &Copied, from: &str, to: &str, json: bool) -> u8 {
    let ok = copied.unreadable.is_empty();
    if json {
        let mut body = json!({"ok": ok, "from": from, "to": to});
        if let (Value::Object(body), Ok(Value::Object(counts))) = (&mut body, serde_json::to_value(copied)) {
            body.extend(counts);
            if !ok {
                let error = format!("{} records could not be read and were not copied (see unreadable)", copied.unreadable.len());
                body.insert("error".into(), Value::String(error));
            }
        }
        say!("{}", pretty(&body));
    } else {
        say!(
            "Copied from {from} to {to}: designs {}, runs {}, schedule jobs {}, heartbeat states {}.",
            copied.designs,
            copied.runs,
            copied.schedules,
            copied.trigger_states
        );
        for u in &copied.unreadable {
            eprintln!("warning: not copied, cannot read {} {}: {}", u.kind, u.name, u.error);
        }
    }
    if ok { 0 } else { 1 }
}
