//! Helpers shared by the integration tests: they drive the real `vwf` binary in a temporary home.

pub mod hermes;
pub mod peer;
pub mod pg;
pub mod server;

use std::path::{Path, PathBuf};
use std::process::Output;
use vwf_store::Wait;

use assert_cmd::Command;
use serde_json::Value;

/// Where a home keeps its designs and runs: files under the home, or a PostgreSQL database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Files,
    Postgres,
}

/// A fresh home directory for one test, on the file store or on an empty database of its own.
/// The config lines that let http steps reach loopback peers (tests' local servers).
pub const LOCAL_HTTP: &str = "[http]\nallow = [\"127.0.0.0/8\", \"::1\"]\n";

pub struct Home {
    pub dir: tempfile::TempDir,
    /// The database URL every `vwf` of this home gets as `VWF_DATABASE_URL` (PostgreSQL homes).
    pub database: Option<String>,
}

/// A lock on one run held by the test, the way another live `vwf` process would hold it.
#[allow(dead_code, reason = "never read: each variant holds its lock until the value is dropped")]
pub enum HeldLock {
    File(std::fs::File),
    Postgres(pg::HeldAdvisoryLock),
}

impl Home {
    pub fn new() -> Home {
        Home::with_backend(Backend::Files)
    }

    pub fn with_backend(backend: Backend) -> Home {
        let database = (backend == Backend::Postgres).then(pg::fresh_database);
        Home { dir: tempfile::tempdir().expect("tempdir"), database }
    }

    /// A home whose config lets http steps reach this machine's loopback peers (the egress
    /// policy refuses them by default): `[http] allow` of [`LOCAL_HTTP`].
    pub fn local_http() -> Home {
        let home = Home::new();
        std::fs::write(home.path().join("visual-workflow.toml"), LOCAL_HTTP).expect("write config");
        home
    }

    /// Sets or clears `VWF_DATABASE_URL` on a command for this home's backend.
    pub fn backend_env(&self, c: &mut std::process::Command) {
        match &self.database {
            Some(url) => c.env("VWF_DATABASE_URL", url),
            None => c.env_remove("VWF_DATABASE_URL"),
        };
    }

    /// `vwf --home <home> <args>` as a plain process (standard input closed), for tests that
    /// spawn, race or kill it.
    pub fn process(&self, args: &[&str]) -> std::process::Command {
        let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("vwf"));
        c.arg("--home").arg(self.path()).args(args);
        c.env_remove("VWF_HOME").env_remove("HERMES_HOME").env_remove("VWF_NOW").stdin(std::process::Stdio::null());
        self.backend_env(&mut c);
        c
    }

    /// The stored document of run `id` as its backend holds it (the run file's bytes, or the
    /// database row's text), or `None` when there is none.
    pub fn stored_run_bytes(&self, id: &str) -> Option<Vec<u8>> {
        match &self.database {
            Some(url) => pg::stored_run(url, id).map(String::into_bytes),
            None => {
                let bytes = std::fs::read(self.runs_dir().join(format!("{id}.json"))).ok()?;
                if !self.runs_dir().join(format!("{id}.journal")).exists() {
                    return Some(bytes);
                }
                // A run in flight is its file and the parts saved since: the store reads it.
                let id = vwf_core::names::RunId::parse(id).ok()?;
                let store = vwf::store::FileStore::new(self.path().to_path_buf());
                Some(
                    vwf::store::Store::read_run(&store, &id)
                        .wait()
                        .unwrap_or_else(|e| panic!("run {id} cannot be read: {e}"))
                        .to_string()
                        .into_bytes(),
                )
            }
        }
    }

    /// Replaces the stored document of run `id` (to set up what a dead process leaves behind).
    pub fn write_stored_run(&self, id: &str, bytes: &[u8]) {
        match &self.database {
            Some(url) => pg::write_stored_run(url, id, std::str::from_utf8(bytes).expect("a run document is text")),
            None => std::fs::write(self.runs_dir().join(format!("{id}.json")), bytes).expect("write run file"),
        }
    }

    /// The ids of every stored run (`<12 hex>.json` files; rows with a document). Temp files,
    /// dot files and reserved ids without a document are not runs.
    pub fn stored_run_ids(&self) -> std::collections::BTreeSet<String> {
        if let Some(url) = &self.database {
            return pg::stored_run_ids(url);
        }
        let Ok(entries) = std::fs::read_dir(self.runs_dir()) else { return Default::default() };
        entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let id = name.strip_suffix(".json")?;
                (id.len() == 12 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))).then(|| id.to_string())
            })
            .collect()
    }

    /// The stored graph of design `name` (its file's bytes, or the database row's text).
    pub fn stored_design(&self, name: &str) -> Option<Vec<u8>> {
        match &self.database {
            Some(url) => pg::stored_design(url, name).map(String::into_bytes),
            None => std::fs::read(self.path().join("workflow-designs").join(format!("{name}.json"))).ok(),
        }
    }

    /// Whether nothing at all is stored for runs: no file under `workflow-runs/` (not even a lock
    /// or an index), no run row (not even a reserved id).
    pub fn no_run_stored(&self) -> bool {
        match &self.database {
            Some(url) => pg::run_rows(url) == 0,
            None => std::fs::read_dir(self.runs_dir()).map_or(true, |mut d| d.next().is_none()),
        }
    }

    /// The home's store opened in the test process (to write many records at once).
    pub fn store(&self) -> Box<dyn vwf::store::Store> {
        match &self.database {
            Some(url) => {
                Box::new(vwf::store::PgStore::connect(&vwf::store::PgSettings::new(url.as_str())).expect("open the database store"))
            }
            None => Box::new(vwf::store::FileStore::new(self.path().to_path_buf())),
        }
    }

    /// Removes run `id` from the store (a run the test made only to copy it).
    pub fn forget_run(&self, id: &str) {
        match &self.database {
            Some(url) => pg::forget_run(url, id),
            None => std::fs::remove_file(self.runs_dir().join(format!("{id}.json"))).expect("forget the run"),
        }
    }

    /// Takes run `id`'s cross-process lock (flock on its lock file; the session advisory lock
    /// on the database) and holds it until the value is dropped.
    pub fn hold_run_lock(&self, id: &str) -> HeldLock {
        match &self.database {
            Some(url) => HeldLock::Postgres(pg::HeldAdvisoryLock::take(url, pg::run_lock_key(id))),
            None => {
                let path = self.runs_dir().join(".locks").join(format!("{id}.lock"));
                let file = std::fs::OpenOptions::new().read(true).write(true).open(&path).expect("open lock file");
                file.try_lock().expect("the lock is free before the test takes it");
                HeldLock::File(file)
            }
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `vwf --home <home>` with a clean environment for the variables vwf reads.
    pub fn vwf(&self) -> Command {
        let mut c = Command::cargo_bin("vwf").expect("vwf binary");
        c.arg("--home").arg(self.path());
        c.env_remove("VWF_HOME").env_remove("HERMES_HOME").env_remove("VWF_NOW").env_remove("VWF_DATABASE_URL");
        for var in server::OTEL_VARS {
            c.env_remove(var);
        }
        if let Some(url) = &self.database {
            c.env("VWF_DATABASE_URL", url);
        }
        c
    }

    /// Runs `vwf --json <args>` and parses standard output; returns (exit code, JSON).
    pub fn json(&self, args: &[&str]) -> (i32, Value) {
        let out = self.vwf().arg("--json").args(args).output().expect("run vwf");
        (code(&out), parse(&out))
    }

    /// Same, with `VWF_NOW` pinned to `now` (RFC 3339).
    pub fn json_at(&self, now: &str, args: &[&str]) -> (i32, Value) {
        let out = self.vwf().env("VWF_NOW", now).arg("--json").args(args).output().expect("run vwf");
        (code(&out), parse(&out))
    }

    /// Saves `graph` as design `name`; panics if the save is refused.
    pub fn save(&self, name: &str, graph: &Value) {
        let (code, body) = self.json(&["save", name, &graph.to_string()]);
        assert_eq!(code, 0, "save {name} refused: {body}");
    }

    /// Every file under the home, relative, sorted (to check that a refused request wrote nothing).
    pub fn files(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        walk(self.path(), self.path(), &mut out);
        out.sort();
        out
    }

    pub fn runs_dir(&self) -> PathBuf {
        self.path().join("workflow-runs")
    }
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(root, &p, out);
        } else {
            out.push(p.strip_prefix(root).unwrap_or(&p).to_path_buf());
        }
    }
}

pub fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

pub fn parse(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("stdout is not JSON ({e}):\n{}\nstderr:\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    })
}

/// trigger → a command that fails (`boom`, exit code 3, `broken` on standard error).
pub fn failing() -> Value {
    serde_json::json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "boom", "type": "command", "argv": ["sh", "-c", "echo broken >&2; exit 3"]}
        ],
        "edges": [{"from": "start", "to": "boom"}]
    })
}

/// trigger → `read` (cat `file`, which fails while the file is missing) → `say`, an output whose
/// text is `tag` and what was read: saving the design again with another tag makes a run tell
/// which version of the design it ran.
pub fn reads_file(file: &Path, tag: &str) -> Value {
    serde_json::json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "read", "type": "command", "argv": ["cat", file]},
            {"id": "say", "type": "output", "template": format!("{tag} {{{{nodes.read}}}}")}
        ],
        "edges": [{"from": "start", "to": "read"}, {"from": "read", "to": "say"}]
    })
}

/// A small deterministic generator (xorshift64*) for the crash tests' kill moments, so a
/// sequence of kills can be replayed from its seed.
pub struct XorShift(pub u64);

impl XorShift {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform-ish in `[0, max]`.
    pub fn below(&mut self, max: std::time::Duration) -> std::time::Duration {
        let micros = max.as_micros() as u64;
        std::time::Duration::from_micros(self.next() % (micros + 1))
    }
}

/// The repository's `examples/` directory.
pub fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// Every file under a home with its bytes, to prove that a refused request changed nothing.
pub fn snapshot(home: &Home) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    home.files()
        .into_iter()
        .map(|rel| {
            let bytes = std::fs::read(home.path().join(&rel)).unwrap_or_default();
            (rel, bytes)
        })
        .collect()
}

/// The stored document of `run_id` as saved (the run result plus `plan` and `history`), from
/// the home's backend.
pub fn run_file(home: &Home, run_id: &str) -> Value {
    let bytes = home.stored_run_bytes(run_id).unwrap_or_else(|| panic!("run {run_id} is not stored"));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("run {run_id} is not JSON ({e}):\n{}", String::from_utf8_lossy(&bytes)))
}

/// `now` moved on by `minutes` (both RFC 3339), for driving `VWF_NOW` through a scenario.
pub fn later(now: &str, minutes: i64) -> String {
    let t = chrono::DateTime::parse_from_rfc3339(now).unwrap_or_else(|e| panic!("bad time {now:?}: {e}"));
    (t + chrono::Duration::minutes(minutes)).to_utc().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The repository's root directory.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The python of `scripts/python-env <set>` (`interop`, `fuzz`, `build`, `wheel`), or `None`, with the reason
/// printed, when pip cannot reach PyPI (the only case a test may skip for).
pub fn python_env(set: &str) -> Option<PathBuf> {
    python_env_with(set, &[])
}

/// [`python_env`] with variables for `scripts/python-env` (`VWF_PY_VENV`, `VWF_WHEEL`).
pub fn python_env_with(set: &str, vars: &[(&str, &Path)]) -> Option<PathBuf> {
    let mut command = std::process::Command::new(repo().join("scripts/python-env"));
    command.arg(set);
    for (name, value) in vars {
        command.env(name, value);
    }
    let out = command.output().expect("run scripts/python-env");
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => {
            let stdout = String::from_utf8_lossy(&out.stdout);
            let path = stdout.lines().last().expect("python-env prints the python path").trim().to_string();
            Some(PathBuf::from(path))
        }
        Some(3) => {
            eprintln!("SKIPPED: pip cannot reach PyPI, so the {set} Python packages are not installed:\n{stderr}");
            None
        }
        _ => panic!("scripts/python-env {set} failed ({}):\n{stderr}", out.status),
    }
}

/// One `#[test]` per backend for each named test function taking a [`Backend`]: `files::NAME`
/// and `postgres::NAME`, the same assertions on both stores.
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod files {
            $(#[test]
            fn $name() {
                super::$name($crate::common::Backend::Files)
            })*
        }
        mod postgres {
            $(#[test]
            fn $name() {
                super::$name($crate::common::Backend::Postgres)
            })*
        }
    };
}
