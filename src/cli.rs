//! The command line: clap definitions, and one function per subcommand.
//!
//! Exit codes (documented in the README): 0 ok, 1 an expectation failed,
//! 2 invalid input or arguments, 3 the run itself failed, 130 interrupted.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use crate::clock::Duration;
use crate::fault::{FaultFile, FaultPlan};
use crate::http::ShutdownSignal;
use crate::proxy::{BoundProxy, ProxyMode};
use crate::schema::units::Dur;
use crate::schema::{self, LoadError, SchemaError, Segment};

/// Exit code: everything held.
pub const EXIT_OK: u8 = 0;
/// Exit code: an expectation failed.
pub const EXIT_ASSERTION: u8 = 1;
/// Exit code: invalid input (file or arguments).
pub const EXIT_INVALID: u8 = 2;
/// Exit code: the run itself failed (port in use, upstream unresolvable).
pub const EXIT_RUNTIME: u8 = 3;
/// Exit code: interrupted by Ctrl-C or SIGTERM.
pub const EXIT_INTERRUPTED: u8 = 130;

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
        mode: Mode,
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
        format: SchemaFormat,
    },
    /// Check a fault file, a defense config or an experiment without running
    /// anything (the kind is told by the top-level keys).
    Validate {
        /// The YAML file.
        file: PathBuf,
        /// Also check that every fault of a fault file works in this proxy
        /// mode (an experiment's faults always run in HTTP mode).
        #[arg(long, value_enum)]
        mode: Option<Mode>,
    },
}

/// The formats `firedrill schema` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchemaFormat {
    /// Experiment files (`firedrill run`).
    Experiment,
    /// Fault files (`firedrill proxy --faults`).
    Faults,
    /// Defense configs (`firedrill defend --config`).
    Defense,
}

impl From<SchemaFormat> for schema::json::Format {
    fn from(format: SchemaFormat) -> Self {
        match format {
            SchemaFormat::Experiment => schema::json::Format::Experiment,
            SchemaFormat::Faults => schema::json::Format::Faults,
            SchemaFormat::Defense => schema::json::Format::Defense,
        }
    }
}

/// `--clock`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClockArg {
    /// In-memory transports, paused auto-advancing time.
    Virtual,
    /// Real sockets on loopback, wall time.
    Real,
}

/// Proxy mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Byte streams: every fault that acts on a connection.
    Tcp,
    /// HTTP/1.1: per-request faults, status injection.
    Http,
}

impl Mode {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Tcp => "tcp",
            Mode::Http => "http",
        }
    }
}

/// A failure of a subcommand, with the exit code it maps to.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad input: exit 2.
    #[error("{0}")]
    Invalid(String),
    /// The run failed: exit 3.
    #[error("{0}")]
    Runtime(String),
}

impl CliError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Invalid(_) => EXIT_INVALID,
            CliError::Runtime(_) => EXIT_RUNTIME,
        }
    }
}

impl From<LoadError> for CliError {
    fn from(e: LoadError) -> Self {
        CliError::Invalid(e.to_string())
    }
}

impl From<SchemaError> for CliError {
    fn from(e: SchemaError) -> Self {
        CliError::Invalid(e.to_string())
    }
}

/// Runs the parsed command line and returns the process exit code.
pub fn run(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Command::Validate { file, mode } => validate(&file, mode),
        Command::Schema { format } => {
            print!("{}", schema::json::Format::from(format).render());
            Ok(EXIT_OK)
        }
        Command::Run {
            file,
            clock,
            seed,
            report_dir,
            junit,
            json,
            quiet,
            metrics_listen,
        } => {
            let options = crate::experiment::command::RunOptions {
                clock: clock.map(|c| match c {
                    ClockArg::Virtual => crate::experiment::config::ClockKind::Virtual,
                    ClockArg::Real => crate::experiment::config::ClockKind::Real,
                }),
                seed,
                report_dir,
                junit,
                json,
                quiet,
                metrics_listen,
            };
            crate::experiment::command::run_command(&file, &options)
        }
        Command::Proxy {
            listen,
            upstream,
            mode,
            faults,
            seed,
            grace,
        } => proxy_command(
            &listen,
            &upstream,
            mode,
            faults.as_deref(),
            seed,
            grace.get(),
        ),
        Command::Target { listen } => target_command(&listen),
        Command::Defend {
            config,
            listen,
            upstream,
            journal,
            seed,
            grace,
            metrics_listen,
        } => crate::defense::serve::defend_command(&crate::defense::serve::DefendOptions {
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
        } => crate::api::command::run(crate::api::command::ServerArgs {
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
        } => crate::demo::run(duration.get(), rate, seed),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::from(err.exit_code())
        }
    }
}

/// Loads a fault file and checks every fault against `mode`.
pub fn load_faults(path: &Path, mode: Option<Mode>) -> Result<FaultFile, CliError> {
    let file = path.display().to_string();
    let text = schema::read_text(path)?;
    let faults: FaultFile = schema::from_yaml_str(&file, &text)?;
    let Some(mode) = mode else {
        return Ok(faults);
    };
    if let Some(misfit) = first_misfit(&faults.faults, mode) {
        let message = format!(
            "`{}` needs --mode {}, but --mode is {}",
            misfit.kind,
            misfit.needed,
            mode.name()
        );
        return Err(misfit.error(&file, &text, message).into());
    }
    Ok(faults)
}

/// A fault that does not work in the proxy mode it is meant for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Misfit {
    /// Its index in the top-level `faults:` list.
    pub index: usize,
    /// Its kind's key, e.g. `slicer`.
    pub kind: &'static str,
    /// The mode it needs instead.
    pub needed: &'static str,
}

impl Misfit {
    /// The error at the fault's kind key (`faults[i].slicer`) of `text`.
    pub fn error(&self, file: &str, text: &str, message: String) -> SchemaError {
        let at = [
            Segment::Key("faults".to_string()),
            Segment::Index(self.index),
            Segment::Key(self.kind.to_string()),
        ];
        SchemaError::at(file, text, &at, message)
    }
}

/// The first fault of a top-level `faults:` list (a fault file's or an
/// experiment's) that does not work in `mode`.
pub fn first_misfit(faults: &[crate::fault::Fault], mode: Mode) -> Option<Misfit> {
    faults.iter().enumerate().find_map(|(index, fault)| {
        let (fits, needed) = match mode {
            Mode::Tcp => (fault.kind.works_in_tcp(), "http"),
            Mode::Http => (fault.kind.works_in_http(), "tcp"),
        };
        (!fits).then_some(Misfit {
            index,
            kind: fault.kind.key(),
            needed,
        })
    })
}

/// What kind of file `validate` was given, told by its top-level keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FileKind {
    /// `faults:` only.
    Faults,
    /// The `defense:` section's keys (`routes`, `timeout`, ...).
    Defense,
    /// An experiment (`name`, `duration`, `load`, `expect`, ...).
    Experiment,
}

fn detect_kind(text: &str) -> FileKind {
    const EXPERIMENT_KEYS: [&str; 4] = ["load", "expect", "duration", "name"];
    const DEFENSE_KEYS: [&str; 5] = [
        "routes",
        "timeout",
        "request_timeout",
        "max_concurrent",
        "rate_limit",
    ];
    let has_any =
        |keys: &[String], wanted: &[&str]| keys.iter().any(|k| wanted.contains(&k.as_str()));
    match schema::top_level_keys(text) {
        Some(keys) if has_any(&keys, &EXPERIMENT_KEYS) => FileKind::Experiment,
        Some(keys) if has_any(&keys, &DEFENSE_KEYS) => FileKind::Defense,
        _ => FileKind::Faults,
    }
}

fn validate(path: &Path, mode: Option<Mode>) -> Result<u8, CliError> {
    let text = schema::read_text(path)?;
    match detect_kind(&text) {
        FileKind::Faults => {
            let file = load_faults(path, mode)?;
            println!("ok: {}: {} fault(s)", path.display(), file.faults.len());
        }
        FileKind::Defense => {
            let config: crate::defense::DefenseConfig =
                schema::from_yaml_str(&path.display().to_string(), &text)?;
            println!(
                "ok: {}: defense line with {} route(s)",
                path.display(),
                config.routes.len()
            );
        }
        FileKind::Experiment => {
            if mode.is_some() {
                return Err(CliError::Invalid(
                    "--mode: applies to fault files; an experiment's faults always run in http mode"
                        .to_string(),
                ));
            }
            let loaded = crate::experiment::command::load(path)?;
            println!(
                "ok: {}: experiment \"{}\" with {} expectation(s)",
                path.display(),
                loaded.experiment.name,
                loaded.expectations.len()
            );
        }
    }
    Ok(EXIT_OK)
}

/// A multi-threaded tokio runtime (one worker per available core, so
/// `taskset -c 0` gives one).
pub fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    // On one core (e.g. under `taskset -c 0`) a current-thread runtime does
    // the same work without the work-stealing machinery.
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let mut builder = if cores == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    builder
        .enable_all()
        .build()
        .map_err(|e| CliError::Runtime(format!("cannot start the runtime: {e}")))
}

/// Sets up `tracing` on stderr; `RUST_LOG` overrides `default`.
pub fn init_logging(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Colours only on a terminal: logs piped to a file stay plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .try_init();
}

/// Resolves when Ctrl-C or SIGTERM arrives.
pub async fn stop_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(t) => t,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            biased;
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

fn proxy_command(
    listen: &str,
    upstream: &str,
    mode: Mode,
    faults: Option<&Path>,
    seed: u64,
    grace: Duration,
) -> Result<u8, CliError> {
    let faults = match faults {
        Some(path) => load_faults(path, Some(mode))?.faults,
        None => Vec::new(),
    };
    init_logging("info");
    let proxy_mode = match mode {
        Mode::Tcp => ProxyMode::Tcp,
        Mode::Http => ProxyMode::Http,
    };
    runtime()?.block_on(async {
        let bound = BoundProxy::bind(listen, upstream, proxy_mode)
            .await
            .map_err(|e| CliError::Runtime(e.to_string()))?;
        tracing::info!(listen = %bound.local_addr(), %upstream, mode = ?mode, faults = faults.len(), seed, "proxy ready");
        let plan = std::sync::Arc::new(FaultPlan::new(faults, seed, crate::clock::now()));
        let (stop, shutdown) = ShutdownSignal::new();
        tokio::spawn(async move {
            stop_signal().await;
            tracing::info!("stop signal: no new connections; draining");
            let _ = stop.send(true);
        });
        bound
            .serve(plan, shutdown, grace)
            .await
            .map_err(|e| CliError::Runtime(format!("--listen {listen}: {e}")))?;
        tracing::info!("proxy stopped");
        Ok(EXIT_OK)
    })
}

fn target_command(listen: &str) -> Result<u8, CliError> {
    init_logging("info");
    runtime()?.block_on(async {
        let addr = crate::net::resolve(listen)
            .await
            .map_err(|e| CliError::Runtime(format!("--listen {listen}: {e}")))?;
        let acceptor = crate::net::TcpAcceptor::bind(addr)
            .await
            .map_err(|e| CliError::Runtime(format!("--listen {listen}: cannot bind: {e}")))?;
        tracing::info!(listen = %acceptor.local_addr(), "fixture target ready");
        let (stop, shutdown) = ShutdownSignal::new();
        tokio::spawn(async move {
            stop_signal().await;
            let _ = stop.send(true);
        });
        let stats = std::sync::Arc::new(crate::target::TargetStats::default());
        crate::target::serve(acceptor, stats.clone(), shutdown)
            .await
            .map_err(|e| CliError::Runtime(e.to_string()))?;
        tracing::info!(requests = stats.requests(), "fixture target stopped");
        Ok(EXIT_OK)
    })
}
