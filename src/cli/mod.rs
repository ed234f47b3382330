//! The command line, the top floor: the clap tree, and one file per
//! subcommand that turns flags into the library's options, runs it, and
//! maps the outcome to an exit code. Nothing below `cli` imports it.
//!
//! Exit codes (documented in the README): 0 ok, 1 an expectation failed,
//! 2 invalid input or arguments, 3 the run itself failed, 130 interrupted.
//!
//! * [`address`] — the address flags' values, checked as clap reads them.
//! * [`exit`] — exit codes and [`CliError`], the library error with the
//!   flag or file it came from.
//! * [`output`] — report paths, checked before anything runs.
//! * [`progress`] — a sweep's runs done, as a bar or as lines.
//! * [`runtime`] — the tokio runtime, logging, the stop signal.
//! * [`stdout`] — printing that a closed standard output ends quietly.
//! * [`tls`] — the TLS flags of the subcommands that call an `https://`
//!   upstream.
//! * one file per subcommand: [`proxy`], [`target`], [`defend`], [`run`],
//!   [`server`], [`demo`], [`validate`], [`schema`], [`import`].

pub mod address;
pub mod defend;
pub mod demo;
pub mod exit;
pub mod history;
pub mod import;
pub mod output;
pub mod progress;
pub mod proxy;
pub mod report;
pub mod run;
pub mod runtime;
pub mod schema;
pub mod server;
pub mod stdout;
pub mod sweep;
pub mod target;
pub mod tls;
pub mod validate;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use exit::{CliError, EXIT_ASSERTION, EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK, EXIT_RUNTIME};

/// What `firedrill --version` prints after the name: the package version
/// and the commit it was built from, `0.1.0 (0123456789ab 2026-12-01)`
/// (`-dirty` after the hash for uncommitted changes, `(unknown)` outside a
/// git checkout); set by `build.rs`.
pub const VERSION: &str = env!("FIREDRILL_BUILD_VERSION");

/// firedrill: inject faults, drive load through a defense line, and assert
/// that it held.
#[derive(Debug, Parser)]
#[command(name = "firedrill", version = VERSION, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a fault-injecting proxy until Ctrl-C or SIGTERM.
    Proxy(proxy::ProxyArgs),
    /// Run the defense line as a reverse proxy in front of a dependency.
    Defend(defend::DefendArgs),
    /// Run the embedded fixture server (a built-in dependency).
    Target(target::TargetArgs),
    /// A self-contained demo: the fixture target behind an HTTP fault proxy
    /// with a sample fault timeline, load driven through it, results shown
    /// each second.
    Demo(demo::DemoArgs),
    /// Run an experiment: stand up target, fault proxy and defense line,
    /// drive the load, play the fault timeline, judge the expectations.
    Run(run::RunArgs),
    /// Draw report.html again from the files of a finished run's report
    /// directory.
    Report(report::ReportArgs),
    /// Run an experiment at every point of a grid of values (and several
    /// seeds) in virtual time, on every core: one row per point with the
    /// verdicts and key figures.
    Sweep(sweep::SweepArgs),
    /// Serve a Toxiproxy-compatible REST API that manages named proxies
    /// and their toxics at runtime, plus Prometheus /metrics.
    Server(server::ServerArgs),
    /// Print the trend of every figure across the runs a history keeps
    /// (`run --history`).
    History(history::HistoryArgs),
    /// Print the JSON Schema of a file format, for editors (the committed
    /// copies are in `schema/`).
    Schema(schema::SchemaArgs),
    /// Check a fault file, a defense config or an experiment without running
    /// anything (the kind is told by the top-level keys once the YAML
    /// parses); names every problem found after the file is read.
    Validate(validate::ValidateArgs),
    /// Prints the firedrill defense line a resilience4j, Sentinel, NGINX,
    /// Envoy or opossum configuration amounts to, every value commented
    /// with its source key.
    Import(import::ImportArgs),
}

/// Runs the parsed command line and returns the process exit code.
pub fn run(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Command::Validate(args) => validate::validate(&args),
        Command::Schema(args) => schema::print(&args),
        Command::Run(args) => run::run(&args),
        Command::Report(args) => report::report(&args),
        Command::Sweep(args) => sweep::run(&args),
        Command::Proxy(args) => proxy::proxy(&args),
        Command::Target(args) => target::target(&args),
        Command::Defend(args) => defend::defend(&args),
        Command::Server(args) => server::server(&args),
        Command::Demo(args) => demo::demo(&args),
        Command::Import(args) => import::run(&args),
        Command::History(args) => history::history(&args),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            // One line per problem (`validate` reports every one it finds),
            // secret variables masked.
            let text = crate::schema::vars::mask(&err.to_string()).into_owned();
            for line in text.lines() {
                eprintln!("error: {line}");
            }
            ExitCode::from(err.exit_code())
        }
    }
}

#[cfg(test)]
#[path = "help_tests.rs"]
mod help_tests;
