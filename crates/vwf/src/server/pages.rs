//! Files the server reads from the repository rather than the home: the built-in templates
//! (`examples/*.designer.json`) and the web pages (`web/`).
//!
//! Both directories are found the same way: an environment variable (`VWF_EXAMPLES_DIR`,
//! `VWF_WEB_DIR`), else beside the binary's repository (`<exe dir>/../../examples` for
//! `target/<profile>/vwf`), else the current directory. Files are read on each request, so an
//! edited page or template shows without a restart. A requested page path is checked segment by
//! segment before it is joined to the directory, so it never leaves it.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// The directory `name` (`examples`, `web`) as described in the module documentation.
fn repo_dir(env: &str, name: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os(env).filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::current_exe().ok().and_then(|exe| exe.parent().map(|d| d.join("../..").join(name)))
        && dir.is_dir()
    {
        return dir;
    }
    PathBuf::from(name)
}

pub(crate) fn examples_dir() -> PathBuf {
    repo_dir("VWF_EXAMPLES_DIR", "examples")
}

pub(crate) fn web_dir() -> PathBuf {
    repo_dir("VWF_WEB_DIR", "web")
}

const TEMPLATE_SUFFIX: &str = ".designer.json";

/// `{ok:true, templates:[{name, description, graph}]}` sorted by name. A missing directory is an
/// empty list; a file that is not a JSON object is skipped with a line on standard error.
pub(crate) fn templates(dir: &Path) -> Value {
    let mut found: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let file = e.file_name().to_str()?.to_string();
            let name = file.strip_suffix(TEMPLATE_SUFFIX)?.to_string();
            (!name.is_empty()).then(|| (name, e.path()))
        })
        .collect();
    found.sort();
    let mut templates = Vec::new();
    for (name, path) in found {
        let graph = std::fs::read(&path).map_err(|e| e.to_string()).and_then(|b| serde_json::from_slice::<Value>(&b).map_err(|e| e.to_string()));
        match graph {
            Ok(graph) if graph.is_object() => {
                let description = graph.get("description").and_then(Value::as_str).unwrap_or("").to_string();
                templates.push(json!({"name": name, "description": description, "graph": graph}));
            }
            Ok(_) => eprintln!("vwf serve: template {} is not a JSON object; skipped", path.display()),
            Err(e) => eprintln!("vwf serve: template {} cannot be read: {e}; skipped", path.display()),
        }
    }
    json!({"ok": true, "templates": templates})
}

/// A page or asset of the web directory: `(content type, bytes)`, or `None` when there is no such
/// file or the path is not a plain relative one.
pub(crate) fn web_file(path: &str) -> Option<(&'static str, Vec<u8>)> {
    let relative = path.trim_start_matches('/');
    let relative = if relative.is_empty() { "index.html" } else { relative };
    let safe = relative.split('/').all(|seg| {
        !seg.is_empty() && !seg.starts_with('.') && seg.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    });
    if !safe {
        return None;
    }
    let kind = content_type(relative)?;
    let file = web_dir().join(relative);
    std::fs::read(file).ok().map(|bytes| (kind, bytes))
}

fn content_type(path: &str) -> Option<&'static str> {
    let ext = path.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match ext.as_str() {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "txt" => "text/plain; charset=utf-8",
        _ => return None,
    })
}

/// Shown at `/` and `/designer.html` while the web pages are not there.
pub(crate) fn placeholder(page: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>visual-workflow</title></head>\n<body>\n\
         <h1>visual-workflow</h1>\n<p>The {page} is not built yet: <code>web/</code> was not found beside this binary \
         (set <code>VWF_WEB_DIR</code> to point at it).</p>\n\
         <p>The API is served at <a href=\"{api}/openapi.json\"><code>{api}</code></a>.</p>\n</body></html>\n",
        api = super::API_PREFIX
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn web_paths_never_leave_the_directory() {
        for bad in ["../secret.html", "a/../../b.html", ".hidden.html", "x/.git/config.html", "a//b.html", "a\\b.html", "evil%2e.html", "index.exe"] {
            assert!(web_file(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn templates_of_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.designer.json"), r#"{"description":"B","nodes":[],"edges":[]}"#).unwrap();
        std::fs::write(dir.path().join("a.designer.json"), r#"{"nodes":[],"edges":[]}"#).unwrap();
        std::fs::write(dir.path().join("broken.designer.json"), "{").unwrap();
        std::fs::write(dir.path().join("other.json"), "{}").unwrap();
        let t = templates(dir.path());
        let names: Vec<&str> = t["templates"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(t["templates"][0]["description"], "");
        assert_eq!(templates(&dir.path().join("missing")), json!({"ok": true, "templates": []}));
    }
}
