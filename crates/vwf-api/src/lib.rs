//! The surfaces over the runtime: the typed service operations every surface calls, the HTTP
//! server (API, pages, live reads), MCP, the five agent tools, the chat command and the human
//! renderings they share.
//!
//! This is the only crate that knows HTTP: [`failure::Failure`] is built here from the runtime's,
//! the store's and the drivers' errors, and answers with a status.

pub mod assets;
pub mod buttons;
pub mod contract;
pub mod failure;
pub mod hooks;
pub mod keys;
pub mod mcp;
pub mod render;
pub mod server;
pub mod service;
pub mod signals;
pub mod slash;
pub mod tools;

/// The process's async runtime: the server's, MCP's and the PostgreSQL store's, one for the
/// process and never shut down before it exits (a run a stopping server handed to a blocking
/// thread still reaches its store). Open the app inside it (`runtime()?.enter()`), so the
/// PostgreSQL store runs on it too rather than starting one of its own.
pub fn runtime() -> Result<&'static tokio::runtime::Runtime, failure::Failure> {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    if let Some(runtime) = RUNTIME.get() {
        return Ok(runtime);
    }
    let built = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| failure::Failure::Internal(format!("cannot start the async runtime: {e}")))?;
    let runtime = RUNTIME.get_or_init(|| built);
    // Threads of no runtime (the daemon's) wait for store calls on it: a store opened here runs
    // its statements here, with no hop to another thread.
    vwf_store::wait::set_home(runtime.handle().clone());
    Ok(runtime)
}
