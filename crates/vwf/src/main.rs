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
    vwf::logs::init_if_asked();
    let home = app::resolve_home(cli.home.as_deref());
    if let Cmd::Store { cmd: StoreCmd::Migrate } = &cli.cmd {
        return cli::migrate(&home, cli.json);
    }
    match App::open(home) {
        Ok(app) => cli::execute(&app, &cli),
        Err(f) => cli::fail(&f, cli.json),
    }
}
