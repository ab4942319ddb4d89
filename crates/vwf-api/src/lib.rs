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
