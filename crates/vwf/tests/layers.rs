//! The crates' layering (ARCHITECTURE.md, "Crates"), checked where the compiler cannot say it
//! alone: which crates each manifest may name, that HTTP's types and the API's error stay in the
//! API layer, and the shape rules of the sources (no result inside a result, no file too long to
//! read).

use std::path::{Path, PathBuf};

/// The workspace's crates, lowest layer first, with the crates each may depend on.
const LAYERS: &[(&str, &[&str])] = &[
    ("vwf-core", &[]),
    ("vwf-store", &["vwf-core"]),
    ("vwf-exec", &["vwf-core"]),
    ("vwf-runtime", &["vwf-core", "vwf-store", "vwf-exec"]),
    ("vwf-api", &["vwf-core", "vwf-store", "vwf-exec", "vwf-runtime"]),
    ("vwf", &["vwf-core", "vwf-store", "vwf-exec", "vwf-runtime", "vwf-api"]),
];

/// Crates that serve HTTP or speak MCP: only the API layer and the binary may name them.
const SERVING: &[&str] = &["axum", "tower-http", "rmcp", "rust-embed"];

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn dependencies(krate: &str) -> Vec<String> {
    let text = std::fs::read_to_string(crates_dir().join(krate).join("Cargo.toml")).expect("manifest");
    let manifest: toml::Table = toml::from_str(&text).expect("manifest is TOML");
    manifest.get("dependencies").and_then(|d| d.as_table()).map(|d| d.keys().cloned().collect()).unwrap_or_default()
}

/// Every `.rs` file under `dir`, recursively.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return found };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
    found.sort();
    found
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

#[test]
fn each_crate_names_only_the_layers_below_it() {
    for (krate, allowed) in LAYERS {
        let deps = dependencies(krate);
        for dep in deps.iter().filter(|d| d.starts_with("vwf")) {
            assert!(allowed.contains(&dep.as_str()), "{krate} depends on {dep}, which is not below it");
        }
        if !matches!(*krate, "vwf-api" | "vwf") {
            for serving in SERVING {
                assert!(!deps.iter().any(|d| d == serving), "{krate} depends on {serving}: only vwf-api serves HTTP");
            }
        }
    }
    // The layers are really there: the runtime names both of the layers it combines.
    let runtime = dependencies("vwf-runtime");
    assert!(runtime.iter().any(|d| d == "vwf-store") && runtime.iter().any(|d| d == "vwf-exec"), "{runtime:?}");
}

/// Statuses are chosen once, at the edge: below the API layer no source names `Failure`,
/// axum or an HTTP status type.
#[test]
fn http_and_its_error_stay_in_the_api_layer() {
    for krate in ["vwf-core", "vwf-store", "vwf-exec", "vwf-runtime"] {
        for file in sources(&crates_dir().join(krate).join("src")) {
            let text = read(&file);
            for word in ["Failure", "axum", "StatusCode", "IntoResponse"] {
                let named = text.lines().filter(|l| !l.trim_start().starts_with("//")).any(|l| {
                    l.match_indices(word).any(|(i, _)| {
                        let before = l[..i].chars().next_back();
                        let after = l[i + word.len()..].chars().next();
                        !before.is_some_and(|c| c.is_alphanumeric() || c == '_') && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
                    })
                });
                assert!(!named, "{} names {word}: it belongs to vwf-api", file.display());
            }
        }
    }
    let failure = read(&crates_dir().join("vwf-api/src/failure.rs"));
    assert!(failure.contains("pub enum Failure"), "Failure is defined in vwf-api");
}

/// One error per layer, with the cases callers branch on: no result inside a result.
#[test]
fn no_result_inside_a_result() {
    for (krate, _) in LAYERS {
        for dir in ["src", "tests", "benches"] {
            for file in sources(&crates_dir().join(krate).join(dir)) {
                let text = read(&file);
                assert!(!text.contains(&["Result<", "Result<"].concat()), "{} has a result inside a result", file.display());
            }
        }
    }
}

/// A file a newcomer can read: no source file over 800 lines, its tests at the end aside (files
/// of tests, and the test module that closes a file, are not counted).
#[test]
fn no_source_file_over_800_lines() {
    const MOST: usize = 800;
    let mut checked = 0;
    for (krate, _) in LAYERS {
        for dir in ["src", "benches"] {
            for file in sources(&crates_dir().join(krate).join(dir)) {
                if file.file_name().is_some_and(|n| n == "tests.rs") {
                    continue;
                }
                let text = read(&file);
                let lines = text.lines().take_while(|l| !l.starts_with("#[cfg(test)]")).count();
                assert!(lines <= MOST, "{} has {lines} lines before its tests; split it (at most {MOST})", file.display());
                checked += 1;
            }
        }
    }
    assert!(checked > 100, "the sources were found ({checked} files)");
}
