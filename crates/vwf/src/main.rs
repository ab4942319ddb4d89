//! `vwf`: design, validate and durably run agent workflows.
//!
//! Startup only: parse the command line, answer what needs no home (completions, man pages, the schema),
//! open the home, and hand the command to [`vwf::cli`], which defines and runs every command.

use std::process::ExitCode;

use clap::Parser;
use vwf::app::{self, App};
use vwf::cli::{self, Cli, Cmd, StoreCmd};

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Generated from the clap definitions; they need no home.
    match &cli.cmd {
        Cmd::Completions { shell } => return cli::completions(*shell),
        Cmd::Schema => return cli::schema(),
        Cmd::Man { dir } => return cli::man(dir.as_deref(), cli.json),
        _ => {}
    }
    private_by_default();
    // The long-running commands log as a service does; the others print only warnings unless
    // the environment asks for logs (see `vwf::logs`).
    match &cli.cmd {
        Cmd::Serve { .. } | Cmd::Daemon | Cmd::Mcp => vwf::logs::init(),
        _ => vwf::logs::init_if_asked(),
    }
    let home = app::resolve_home(cli.home.as_deref());
    if let Cmd::Store { cmd: StoreCmd::Migrate } = &cli.cmd {
        return cli::migrate(&home, cli.json);
    }
    match App::open(home) {
        Ok(app) => cli::execute(&app, &cli),
        Err(e) => cli::fail(&e.into(), cli.json),
    }
}

/// Everything this process creates from here on (the home, its directories and files, temp
/// files) is its owner's alone: 0700 directories, 0600 files (SPEC §17). Set after the commands
/// that write outside the home (`vwf man DIR` writes pages others may read) and before the home
/// is opened. An existing home keeps its modes; `vwf doctor` reports loose ones.
///
/// Children (command steps, watch commands, the command agent backend) inherit it: what a step
/// writes is made from run data and secrets, so it is private unless the step says otherwise
/// (`umask 022` at the top of its `run`). Restoring the caller's umask in each child would need a
/// `pre_exec` hook, which also makes the standard library fork instead of `posix_spawn`.
fn private_by_default() {
    // SAFETY: umask only sets the process's file mode creation mask; it cannot fail.
    unsafe { libc::umask(0o077) };
}
