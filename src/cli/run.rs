//! `firedrill run`: load and check an experiment, run it, judge it, write
//! its reports, and map the result to the exit code.

use std::path::{Path, PathBuf};

use super::exit::{
    CliError, EXIT_ASSERTION, EXIT_INCONCLUSIVE, EXIT_INTERRUPTED, EXIT_NOT_HEALTHY, EXIT_OK,
};
use super::stdout::out;
use crate::experiment::config::{ClockKind, TargetSpec};
use crate::experiment::drill::{ControlOptions, Ending, Live, RunError};
use crate::experiment::expect::Rule;
use crate::experiment::file::Loaded;
use crate::history::{History, Location, Provenance};
use crate::report::RunVerdict;
use crate::report::{self, RunReport};
use crate::schema::{SchemaError, Segment};

/// The flags of `firedrill run`.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// The experiment file.
    pub file: PathBuf,
    /// `virtual` (in memory, paused time) or `real` (loopback sockets,
    /// wall time); overrides the file's `clock`.
    #[arg(long, value_enum)]
    pub clock: Option<ClockArg>,
    /// Overrides the file's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Overrides any field of the file: `--set load.stock.rate=50/s`,
    /// `--set defense.routes.stock.breaker.wait_in_open=10s` (dotted path:
    /// keys, list indexes or list items' names; the value is YAML).
    /// Repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<crate::schema::overrides::Override>,
    /// Write report.json, junit.xml, journal.jsonl, requests.jsonl,
    /// dependencies.jsonl (with `system`) and report.html here.
    #[arg(long)]
    pub report_dir: Option<PathBuf>,
    /// Write the JUnit XML report here.
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Write the JSON report here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// No live view and no summary (exit code and files only).
    #[arg(long, short)]
    pub quiet: bool,
    /// Off a terminal (a CI log), print a heartbeat line this often during
    /// a real-clock run (`0s`: none). On a terminal a live panel shows
    /// instead.
    #[arg(long, default_value = "10s", value_name = "DURATION")]
    pub progress_interval: crate::schema::units::Dur,
    /// Serve the defense line's Prometheus /metrics (resilience4j
    /// names) on this address during a real-time run.
    #[arg(long, value_name = "ADDR", value_parser = super::address::socket)]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Serve the control endpoint here during a real-time run: start and
    /// stop faults declared `at: manual`, halt the drill, read the status
    /// (GET /status, POST /faults/NAME/start|stop, POST /halt). Anything
    /// but loopback needs --control-token.
    #[arg(long, value_name = "ADDR", value_parser = super::address::socket)]
    pub control: Option<std::net::SocketAddr>,
    /// Require `Authorization: Bearer <token>` on the control endpoint.
    #[arg(long, env = "FIREDRILL_CONTROL_TOKEN", hide_env_values = true)]
    pub control_token: Option<String>,
    /// Record the run in this history: a SQLite file (created on first
    /// use) or a `postgres://` URL; overrides the file's `history:`.
    /// Regression expectations are judged against its past passing runs.
    #[arg(
        long,
        env = "FIREDRILL_HISTORY",
        hide_env_values = true,
        value_name = "DB"
    )]
    pub history: Option<String>,
}

/// `--clock`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ClockArg {
    /// In-memory transports, paused auto-advancing time.
    Virtual,
    /// Real sockets on loopback, wall time.
    Real,
}

impl ClockArg {
    /// The experiment's clock this flag names.
    fn kind(self) -> ClockKind {
        match self {
            ClockArg::Virtual => ClockKind::Virtual,
            ClockArg::Real => ClockKind::Real,
        }
    }
}

/// Runs the experiment file and returns the exit code.
pub fn run(options: &RunArgs) -> Result<u8, CliError> {
    let mut loaded = crate::experiment::file::load_with(&options.file, &options.set)?;
    if let Some(seed) = options.seed {
        loaded.experiment.seed = seed;
    }
    let clock = options
        .clock
        .map_or(loaded.experiment.clock, ClockArg::kind);
    // The file's own `clock: virtual` is refused with these when it is
    // read; this is the flag's.
    if clock == ClockKind::Virtual {
        if loaded.experiment.system.is_some() {
            return Err(CliError::invalid(
                "--clock virtual: your own service (system:) is a real process and needs the real clock",
            ));
        }
        if matches!(loaded.experiment.target, TargetSpec::Url(_)) {
            return Err(CliError::invalid(
                "--clock virtual: a real target (target.url) needs the real clock",
            ));
        }
    }
    let token = options.control_token.clone().filter(|t| !t.is_empty());
    if let Some(addr) = options.control
        && !addr.ip().is_loopback()
        && token.is_none()
    {
        return Err(CliError::invalid(format!(
            "--control {addr}: not a loopback address; the endpoint starts faults and halts the drill, so give --control-token (or FIREDRILL_CONTROL_TOKEN) to listen there"
        )));
    }
    if options.control.is_some() && clock == ClockKind::Virtual {
        return Err(CliError::invalid(
            "--control: people start faults in real time; give --clock real (a virtual run is over in moments)",
        ));
    }
    for warning in loaded.experiment.tls_warnings() {
        eprintln!("warning: {warning}");
    }
    let live = Live {
        progress: !options.quiet,
        progress_interval: options.progress_interval.get(),
        metrics_listen: options.metrics_listen,
        control: options.control.map(|addr| ControlOptions { addr, token }),
        reached: None,
    };
    // Every output path before the clock starts (requests.jsonl is
    // written as the run goes: the directory is created here).
    if let Some(dir) = &options.report_dir {
        super::output::report_dir("--report-dir", dir)?;
    }
    for (flag, path) in [("--junit", &options.junit), ("--json", &options.json)] {
        if let Some(path) = path {
            super::output::report_file(flag, path)?;
        }
    }
    let location = history_location(options, &loaded.experiment.history);
    let mut history = match &location {
        Some((location, from_file)) => {
            Some(History::open(location).map_err(|e| history_error(options, *from_file, &e))?)
        }
        None => None,
    };
    if let Some(history) = &mut history {
        past_figures(&mut loaded, history)?;
    }
    // Hashed before the run: the file as it was run.
    let provenance = history.as_ref().map(|_| provenance(options));
    let (result, report) = report::execute_to(
        &loaded,
        clock,
        super::runtime::stop_signal(),
        live,
        options.report_dir.as_deref(),
    )
    .map_err(|e| located(&options.file, e))?;
    write_reports(&report, options)?;
    if !options.quiet {
        let console = report::console::render(&report);
        out!("{}", crate::schema::vars::mask(&console));
    }
    if let (Some(history), Some(provenance)) = (&mut history, &provenance) {
        let id = history
            .record(&report, provenance)
            .map_err(|e| CliError::runtime(format!("{e} (the run's reports were written)")))?;
        if !options.quiet {
            out!("recorded as run #{id} in history {}\n", history.shown());
        }
    }
    Ok(match result.ending {
        Ending::Interrupted => EXIT_INTERRUPTED,
        Ending::NotHealthy { .. } => EXIT_NOT_HEALTHY,
        Ending::Halted { .. } => EXIT_ASSERTION,
        Ending::Completed => match report.verdict {
            RunVerdict::Passed => EXIT_OK,
            RunVerdict::Inconclusive => EXIT_INCONCLUSIVE,
            _ => EXIT_ASSERTION,
        },
    })
}

/// Where the run is recorded: `--history` (or `FIREDRILL_HISTORY`), else
/// the file's `history:`, a SQLite path relative to the file's folder;
/// and whether it came from the file.
fn history_location(options: &RunArgs, from_file: &Option<String>) -> Option<(Location, bool)> {
    if let Some(flag) = options.history.as_deref().filter(|h| !h.is_empty()) {
        return Some((Location::parse(flag), false));
    }
    let location = Location::parse(from_file.as_deref()?);
    Some((
        match location {
            Location::Sqlite(path) if path.is_relative() => Location::Sqlite(
                options
                    .file
                    .parent()
                    .map_or_else(|| path.clone(), |dir| dir.join(&path)),
            ),
            other => other,
        },
        true,
    ))
}

/// A history that cannot be used, said where it was given: the file's
/// `history` key (file, line, column), or the flag.
fn history_error(
    options: &RunArgs,
    from_file: bool,
    error: &crate::history::HistoryError,
) -> CliError {
    if from_file {
        return at_key(&options.file, "history", &error.to_string())
            .unwrap_or_else(|| CliError::runtime(error.to_string()));
    }
    CliError::runtime(error.to_string()).context("--history (or FIREDRILL_HISTORY)")
}

/// Hands each regression sentence the figure of the past runs fit for its
/// baseline, before the run.
fn past_figures(loaded: &mut Loaded, history: &mut History) -> Result<(), CliError> {
    let experiment = loaded.experiment.name.clone();
    for expectation in &mut loaded.expectations {
        if let Rule::Regress(regress) = &mut expectation.rule {
            let past = history
                .baseline(
                    &experiment,
                    &expectation.text,
                    &regress.key,
                    regress.baseline.runs(),
                )
                .map_err(CliError::runtime)?;
            regress.past = Some(past);
        }
    }
    Ok(())
}

/// What the history keeps beside the report.
fn provenance(options: &RunArgs) -> Provenance {
    let text = crate::schema::read_text(&options.file).unwrap_or_default();
    let overrides: Vec<String> = options.set.iter().map(ToString::to_string).collect();
    let mut parts = vec![text.as_str()];
    parts.extend(overrides.iter().map(String::as_str));
    Provenance {
        file_hash: crate::history::record::hash(&parts),
        report_dir: options.report_dir.as_ref().map(|d| {
            std::path::absolute(d)
                .unwrap_or_else(|_| d.clone())
                .display()
                .to_string()
        }),
        recorded_at: crate::clock::rfc3339(crate::clock::unix_ms()),
    }
}

fn write_reports(report: &RunReport, options: &RunArgs) -> Result<(), CliError> {
    let write = |path: &Path, bytes: std::io::Result<Vec<u8>>| -> Result<(), CliError> {
        let bytes = bytes.map_err(|e| CliError::runtime(e).context(path.display().to_string()))?;
        std::fs::write(path, bytes)
            .map_err(|e| CliError::runtime(e).context(format!("{}: cannot write", path.display())))
    };
    if let Some(dir) = &options.report_dir {
        for exporter in report::exporters().iter().filter(|e| e.applies(report)) {
            let path = dir.join(exporter.file_name());
            let written = std::fs::File::create(&path).and_then(|file| {
                let mut out = std::io::BufWriter::new(file);
                exporter.write_masked(report, &mut out)?;
                std::io::Write::flush(&mut out)
            });
            written.map_err(|e| {
                CliError::runtime(e).context(format!("{}: cannot write", path.display()))
            })?;
        }
    }
    if let Some(path) = &options.junit {
        write(
            path,
            report::Exporter::render_masked(&report::junit::Junit, report),
        )?;
    }
    if let Some(path) = &options.json {
        write(
            path,
            report::Exporter::render_masked(&report::json::Json, report),
        )?;
    }
    Ok(())
}

/// A run error; one about a part of the topology (a dependency's address,
/// the service, a service that did not answer) names the file, line and
/// column of its key.
fn located(path: &Path, error: RunError) -> CliError {
    if let Some((key, message)) = error.at_key()
        && let Some(located) = at_key(path, key, &message)
    {
        return located;
    }
    CliError::runtime(error)
}

/// A run error at `key` (dotted) of the file at `path`, with its line and
/// column; `None` when the file cannot be read again.
fn at_key(path: &Path, key: &str, message: &str) -> Option<CliError> {
    let text = crate::schema::read_text(path).ok()?;
    let at: Vec<Segment> = key
        .split('.')
        .map(|k| Segment::Key(k.to_string()))
        .collect();
    let file = path.display().to_string();
    Some(CliError::runtime(SchemaError::at(
        &file, &text, &at, message,
    )))
}
