//! The files vwf ships inside its binary: the web pages (`web/`: dashboard, canvas, scripts,
//! style) and the built-in templates (`examples/*.designer.json`).
//!
//! Why embedded: an installed `vwf` (`cargo install`, a copy in `/usr/local/bin`) has no
//! repository beside it, and must still serve the real canvas and list every template. Both
//! directories are compiled in by `rust-embed` in every profile (`debug-embed`), and the build
//! script asks cargo to rebuild when a file in them is added, edited or removed.
//!
//! Invariants:
//! - At run time nothing is read from the repository. Only `VWF_WEB_DIR` / `VWF_EXAMPLES_DIR`
//!   (for working on the pages or templates without rebuilding) make vwf read a directory, and
//!   then on each request, so an edit shows without a restart.
//! - This module is the one list of templates: `GET /templates`, `vwf new NAME --from TEMPLATE`
//!   and the old `/designs/templates` alias all read `templates()`.
//! - A requested page path is checked segment by segment (plain names, no dot files) and must have
//!   a known content type before it is looked up, so it never leaves the directory.
//! - Every page answer carries a strong `ETag`: the hex SHA-256 of its bytes.

use std::borrow::Cow;
use std::path::PathBuf;

use crate::contract::answers::{Template, Templates, done};
use rust_embed::RustEmbed;
use serde_json::Value;
use sha2::{Digest, Sha256};

#[derive(RustEmbed)]
#[folder = "../../web/"]
struct Web;

#[derive(RustEmbed)]
#[folder = "../../examples/"]
struct Examples;

pub const WEB_DIR_VAR: &str = "VWF_WEB_DIR";
pub const EXAMPLES_DIR_VAR: &str = "VWF_EXAMPLES_DIR";

const TEMPLATE_SUFFIX: &str = ".designer.json";

/// A development override directory, when its variable is set and not empty.
fn override_dir(var: &str) -> Option<PathBuf> {
    std::env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// One page or asset, ready to serve.
#[derive(Debug, Clone, PartialEq)]
pub struct WebFile {
    pub content_type: &'static str,
    pub bytes: Cow<'static, [u8]>,
    /// Quoted, as it goes in the `ETag` header.
    pub etag: String,
}

impl WebFile {
    /// Whether an `If-None-Match` header value names this file's version (weak comparison, as
    /// RFC 9110 asks for that header; `*` matches any).
    pub fn matches(&self, if_none_match: &str) -> bool {
        if_none_match.split(',').map(str::trim).any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == self.etag)
    }
}

fn etag(hash: &[u8]) -> String {
    format!("\"{}\"", hex::encode(hash))
}

/// A page or asset of the web directory (`""` and `/` are `index.html`), or `None` when there is
/// no such file or the path is not a plain relative one with a known type.
pub fn web_file(path: &str) -> Option<WebFile> {
    let relative = path.trim_start_matches('/');
    let relative = if relative.is_empty() { "index.html" } else { relative };
    let safe = relative.split('/').all(|seg| {
        !seg.is_empty() && !seg.starts_with('.') && seg.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    });
    if !safe {
        return None;
    }
    let content_type = content_type(relative)?;
    match override_dir(WEB_DIR_VAR) {
        Some(dir) => {
            let bytes = std::fs::read(dir.join(relative)).ok()?;
            Some(WebFile { content_type, etag: etag(&Sha256::digest(&bytes)), bytes: Cow::Owned(bytes) })
        }
        None => {
            let file = Web::get(relative)?;
            Some(WebFile { content_type, etag: etag(&file.metadata.sha256_hash()), bytes: file.data })
        }
    }
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

/// Shown at `/` and `/designer.html` when `VWF_WEB_DIR` names a directory without the page.
pub fn placeholder(page: &str, api_prefix: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>visual-workflow</title></head>\n<body>\n\
         <h1>visual-workflow</h1>\n<p>The {page} is not built yet: {WEB_DIR_VAR} names a directory without it \
         (unset {WEB_DIR_VAR} to serve the pages built into this binary).</p>\n\
         <p>The API is served at <a href=\"{api_prefix}/openapi.json\"><code>{api_prefix}</code></a>.</p>\n</body></html>\n"
    )
}

/// A template file: its name, where it came from (for messages), its bytes or why not.
type TemplateFile = (String, String, Result<Cow<'static, [u8]>, String>);

/// Every template file, sorted by name.
fn template_files() -> Vec<TemplateFile> {
    let mut found: Vec<_> = match override_dir(EXAMPLES_DIR_VAR) {
        Some(dir) => std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = template_name(e.file_name().to_str()?)?;
                let path = e.path();
                Some((name, path.display().to_string(), std::fs::read(&path).map(Cow::Owned).map_err(|e| e.to_string())))
            })
            .collect(),
        None => Examples::iter()
            .filter_map(|file| {
                let name = template_name(&file)?;
                let bytes = Examples::get(&file).map(|f| f.data).ok_or_else(|| "not embedded".to_string());
                Some((name, format!("{file} (built in)"), bytes))
            })
            .collect(),
    };
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// `x.designer.json` → `x`; other files (and subdirectories) are not templates.
fn template_name(file: &str) -> Option<String> {
    file.strip_suffix(TEMPLATE_SUFFIX).filter(|n| !n.is_empty() && !n.contains('/')).map(String::from)
}

/// `{ok:true, templates:[{name, description, graph}]}` sorted by name. A missing override
/// directory is an empty list; a file that is not a JSON object is skipped with a line on
/// standard error.
pub fn templates() -> Value {
    done(Templates { templates: template_list() })
}

/// The templates, sorted by name (see [`templates`]).
fn template_list() -> Vec<Template> {
    let mut templates = Vec::new();
    for (name, source, bytes) in template_files() {
        match bytes.and_then(|b| serde_json::from_slice::<Value>(&b).map_err(|e| e.to_string())) {
            Ok(graph) if graph.is_object() => {
                let description = graph.get("description").and_then(Value::as_str).unwrap_or("").to_string();
                templates.push(Template { name, description, graph });
            }
            Ok(_) => tracing::warn!("vwf: template {source} is not a JSON object; skipped"),
            Err(e) => tracing::warn!("vwf: template {source} cannot be read: {e}; skipped"),
        }
    }
    templates
}

/// The graph of the template `name`, or the names there are.
pub fn template(name: &str) -> Result<Value, Vec<String>> {
    let all = template_list();
    match all.iter().find(|t| t.name == name) {
        Some(t) => Ok(t.graph.clone()),
        None => Err(all.into_iter().map(|t| t.name).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn web_paths_never_leave_the_directory() {
        for bad in [
            "../secret.html",
            "a/../../b.html",
            ".hidden.html",
            "x/.git/config.html",
            "a//b.html",
            "a\\b.html",
            "evil%2e.html",
            "index.exe",
        ] {
            assert!(web_file(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn if_none_match_compares_weakly_and_lists() {
        let f = WebFile { content_type: "text/plain", bytes: Cow::Borrowed(b"x"), etag: "\"ab\"".into() };
        for yes in ["\"ab\"", "W/\"ab\"", "\"zz\", \"ab\"", "*"] {
            assert!(f.matches(yes), "{yes}");
        }
        for no in ["\"abc\"", "ab", "", "\"a\""] {
            assert!(!f.matches(no), "{no}");
        }
    }
}
