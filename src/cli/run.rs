//! `firedrill run`: load and check an experiment, run it, judge it, write
//! its reports, and map the result to the exit code.

use std::path::{Path, PathBuf};

use super::exit::{CliError, EXIT_ASSERTION, EXIT_INTERRUPTED, EXIT_OK};
use crate::experiment::config::{ClockKind, TargetSpec};
use crate::experiment::run::{Ending, Live, RunError};
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
    /// Write report.json, junit.xml, journal.jsonl and requests.jsonl here.
    #[arg(long)]
    pub report_dir: Option<PathBuf>,
    /// Write the JUnit XML report here.
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Write the JSON report here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// No progress bar and no summary (exit code and files only).
    #[arg(long, short)]
    pub quiet: bool,
    /// Serve the defense line's Prometheus /metrics (resilience4j
    /// names) on this address during a real-time run.
    #[arg(long)]
    pub metrics_listen: Option<std::net::SocketAddr>,
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
    if clock == ClockKind::Virtual && matches!(loaded.experiment.target, TargetSpec::Url(_)) {
        return Err(CliError::invalid(
            "--clock virtual: a real target (target.url) needs the real clock",
        ));
    }
    for warning in loaded.experiment.tls_warnings() {
        eprintln!("warning: {warning}");
    }
    let live = Live {
        progress: !options.quiet,
        metrics_listen: options.metrics_listen,
    };
    let (result, report) = report::execute(&loaded, clock, super::runtime::stop_signal(), live)
        .map_err(|e| located(&options.file, e))?;
    write_reports(&report, options)?;
    if !options.quiet {
        print!("{}", report::console::render(&report));
    }
    Ok(match result.ending {
        Ending::Interrupted => EXIT_INTERRUPTED,
        Ending::Halted { .. } => EXIT_ASSERTION,
        Ending::Completed if report.passed => EXIT_OK,
        Ending::Completed => EXIT_ASSERTION,
    })
}

fn write_reports(report: &RunReport, options: &RunArgs) -> Result<(), CliError> {
    let write = |path: &Path, bytes: std::io::Result<Vec<u8>>| -> Result<(), CliError> {
        let bytes = bytes.map_err(|e| CliError::runtime(e).context(path.display().to_string()))?;
        std::fs::write(path, bytes)
            .map_err(|e| CliError::runtime(e).context(format!("{}: cannot write", path.display())))
    };
    if let Some(dir) = &options.report_dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::runtime(e).context(format!("--report-dir {}", dir.display())))?;
        for exporter in report::exporters().iter().filter(|e| e.applies(report)) {
            write(&dir.join(exporter.file_name()), exporter.render(report))?;
        }
    }
    if let Some(path) = &options.junit {
        write(
            path,
            report::Exporter::render(&report::junit::Junit, report),
        )?;
    }
    if let Some(path) = &options.json {
        write(path, report::Exporter::render(&report::json::Json, report))?;
    }
    Ok(())
}

/// A run error; one about a part of the topology (a dependency's address,
/// the service) names the file, line and column of its key.
fn located(path: &Path, error: RunError) -> CliError {
    if let RunError::Topology {
        key,
        message,
        source,
    } = &error
        && let Ok(text) = crate::schema::read_text(path)
    {
        let at: Vec<Segment> = key
            .split('.')
            .map(|k| Segment::Key(k.to_string()))
            .collect();
        let file = path.display().to_string();
        return CliError::runtime(SchemaError::at(
            &file,
            &text,
            &at,
            format!("{message}: {source}"),
        ));
    }
    CliError::runtime(error)
}
