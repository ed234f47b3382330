//! The command line, the top floor: the clap tree, and one file per
//! subcommand that turns flags into the library's options, runs it, and
//! maps the outcome to an exit code. Nothing below `cli` imports it.
//!
//! Exit codes (documented in the README): 0 ok, 1 an expectation failed,
//! 2 invalid input or arguments, 3 the run itself failed, 130 interrupted.
//!
//! * [`exit`] — exit codes and [`CliError`], the library error with the
//!   flag or file it came from.
//! * [`runtime`] — the tokio runtime, logging, the stop signal.
//! * one file per subcommand: [`proxy`], [`target`], [`defend`], [`run`],
//!   [`server`], [`demo`], [`validate`], [`schema`].

pub mod defend;
pub mod demo;
pub mod exit;
pub mod proxy;
pub mod run;
pub mod runtime;
pub mod schema;
pub mod server;
pub mod target;
pub mod validate;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

pub use exit::{CliError, EXIT_ASSERTION, EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK, EXIT_RUNTIME};

use crate::proxy::ProxyMode;
use crate::schema::units::Dur;

/// firedrill: inject faults, drive load through a defense line, and assert
/// that it held.
#[derive(Debug, Parser)]
#[command(name = "firedrill", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a fault-injecting proxy until Ctrl-C or SIGTERM.
    Proxy {
        /// Address to listen on, e.g. `127.0.0.1:8080` (`:0` picks a port).
        #[arg(long)]
        listen: String,
        /// Address of the dependency, `host:port`.
        #[arg(long)]
        upstream: String,
        /// `tcp` (byte streams) or `http` (per-request faults).
        #[arg(long, value_enum, default_value = "tcp")]
        mode: ProxyMode,
        /// YAML fault file (see `fixtures/faults/good/`); none: pass-through.
        #[arg(long)]
        faults: Option<PathBuf>,
        /// Seed of every random decision (probabilities, jitter).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// How long in-flight connections may finish after a stop signal.
        #[arg(long, default_value = "5s")]
        grace: Dur,
    },
    /// Run the defense line as a reverse proxy in front of a dependency.
    Defend {
        /// YAML file holding the defense section (routes, breakers, ...).
        #[arg(long)]
        config: PathBuf,
        /// Address to listen on.
        #[arg(long)]
        listen: String,
        /// The dependency: `host:port` or `http://host:port`.
        #[arg(long)]
        upstream: String,
        /// Write breaker transitions here as JSON lines.
        #[arg(long)]
        journal: Option<PathBuf>,
        /// Seed of every random decision (retry jitter).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// How long in-flight requests may finish after a stop signal.
        #[arg(long, default_value = "5s")]
        grace: Dur,
        /// Serve Prometheus /metrics (resilience4j names) on this address.
        #[arg(long)]
        metrics_listen: Option<std::net::SocketAddr>,
    },
    /// Run the embedded fixture server (a built-in dependency).
    Target {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:9000")]
        listen: String,
    },
    /// A self-contained demo: the fixture target behind an HTTP fault proxy
    /// with a sample fault timeline, load driven through it, results shown
    /// each second.
    Demo {
        /// How long to run.
        #[arg(long, default_value = "12s")]
        duration: Dur,
        /// Requests per second.
        #[arg(long, default_value_t = 20)]
        rate: u32,
        /// Seed of every random decision.
        #[arg(long, default_value_t = 7)]
        seed: u64,
    },
    /// Run an experiment: stand up target, fault proxy and defense line,
    /// drive the load, play the fault timeline, judge the expectations.
    Run {
        /// The experiment file.
        file: PathBuf,
        /// `virtual` (in memory, paused time) or `real` (loopback sockets,
        /// wall time); overrides the file's `clock`.
        #[arg(long, value_enum)]
        clock: Option<ClockArg>,
        /// Overrides the file's seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Write report.json, junit.xml, journal.jsonl and requests.jsonl here.
        #[arg(long)]
        report_dir: Option<PathBuf>,
        /// Write the JUnit XML report here.
        #[arg(long)]
        junit: Option<PathBuf>,
        /// Write the JSON report here.
        #[arg(long)]
        json: Option<PathBuf>,
        /// No progress bar and no summary (exit code and files only).
        #[arg(long, short)]
        quiet: bool,
        /// Serve the defense line's Prometheus /metrics (resilience4j
        /// names) on this address during a real-time run.
        #[arg(long)]
        metrics_listen: Option<std::net::SocketAddr>,
    },
    /// Serve a Toxiproxy-compatible REST API that manages named proxies
    /// and their toxics at runtime, plus Prometheus /metrics.
    Server {
        /// Address of the API. Anything but loopback needs --api-token.
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        /// Port of the API (0 picks a free one, printed at start).
        #[arg(long, default_value_t = 8474)]
        port: u16,
        /// JSON array of proxies to create at start, as Toxiproxy's -config.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Require `Authorization: Bearer <token>` on every request.
        #[arg(long, env = "FIREDRILL_API_TOKEN", hide_env_values = true)]
        api_token: Option<String>,
        /// Seed of every random decision (toxicity, jitter).
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Print the JSON Schema of a file format, for editors (the committed
    /// copies are in `schema/`).
    Schema {
        /// Which format.
        #[arg(value_enum, default_value = "experiment")]
        format: schema::SchemaFormat,
    },
    /// Check a fault file, a defense config or an experiment without running
    /// anything (the kind is told by the top-level keys).
    Validate {
        /// The YAML file.
        file: PathBuf,
        /// Also check that every fault of a fault file works in this proxy
        /// mode (an experiment's faults always run in HTTP mode).
        #[arg(long, value_enum)]
        mode: Option<ProxyMode>,
    },
}

/// `--clock`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClockArg {
    /// In-memory transports, paused auto-advancing time.
    Virtual,
    /// Real sockets on loopback, wall time.
    Real,
}

impl ClockArg {
    /// The experiment's clock this flag names.
    fn kind(self) -> crate::experiment::config::ClockKind {
        match self {
            ClockArg::Virtual => crate::experiment::config::ClockKind::Virtual,
            ClockArg::Real => crate::experiment::config::ClockKind::Real,
        }
    }
}

/// Runs the parsed command line and returns the process exit code.
pub fn run(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Command::Validate { file, mode } => validate::validate(&file, mode),
        Command::Schema { format } => schema::print(format),
        Command::Run {
            file,
            clock,
            seed,
            report_dir,
            junit,
            json,
            quiet,
            metrics_listen,
        } => run::run(
            &file,
            &run::RunOptions {
                clock: clock.map(ClockArg::kind),
                seed,
                report_dir,
                junit,
                json,
                quiet,
                metrics_listen,
            },
        ),
        Command::Proxy {
            listen,
            upstream,
            mode,
            faults,
            seed,
            grace,
        } => proxy::proxy(&proxy::ProxyOptions {
            listen,
            upstream,
            mode,
            faults,
            seed,
            grace: grace.get(),
        }),
        Command::Target { listen } => target::target(&listen),
        Command::Defend {
            config,
            listen,
            upstream,
            journal,
            seed,
            grace,
            metrics_listen,
        } => defend::defend(&defend::DefendOptions {
            config,
            listen,
            upstream,
            journal,
            seed,
            grace: grace.get(),
            metrics_listen,
        }),
        Command::Server {
            host,
            port,
            config,
            api_token,
            seed,
        } => server::server(server::ServerArgs {
            host,
            port,
            config,
            api_token,
            seed,
        }),
        Command::Demo {
            duration,
            rate,
            seed,
        } => demo::demo(duration.get(), rate, seed),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::from(err.exit_code())
        }
    }
}
