//! `firedrill run`: load and check an experiment, run it, judge it, write
//! its reports, and map the result to the exit code.

use std::path::{Path, PathBuf};

use super::exit::{CliError, EXIT_ASSERTION, EXIT_INTERRUPTED, EXIT_OK};
use crate::experiment::config::{ClockKind, TargetSpec};
use crate::experiment::run::{Ending, Live};
use crate::report::{self, RunReport};

/// Options of `firedrill run`.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Overrides the file's clock.
    pub clock: Option<ClockKind>,
    /// Overrides the file's seed.
    pub seed: Option<u64>,
    /// Writes report.json, junit.xml, journal.jsonl and requests.jsonl here.
    pub report_dir: Option<PathBuf>,
    /// Writes the JUnit XML here.
    pub junit: Option<PathBuf>,
    /// Writes the JSON report here.
    pub json: Option<PathBuf>,
    /// No progress bar, no summary.
    pub quiet: bool,
    /// Serve the defense line's Prometheus metrics here (real clock).
    pub metrics_listen: Option<std::net::SocketAddr>,
}

/// Runs the experiment at `path` and returns the exit code.
pub fn run(path: &Path, options: &RunOptions) -> Result<u8, CliError> {
    let mut loaded = crate::experiment::file::load(path)?;
    if let Some(seed) = options.seed {
        loaded.experiment.seed = seed;
    }
    let clock = options.clock.unwrap_or(loaded.experiment.clock);
    if clock == ClockKind::Virtual && matches!(loaded.experiment.target, TargetSpec::Url(_)) {
        return Err(CliError::invalid(
            "--clock virtual: a real target (target.url) needs the real clock",
        ));
    }
    let live = Live {
        progress: !options.quiet,
        metrics_listen: options.metrics_listen,
    };
    let (result, report) = report::execute(&loaded, clock, super::runtime::stop_signal(), live)?;
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

fn write_reports(report: &RunReport, options: &RunOptions) -> Result<(), CliError> {
    let write = |path: &Path, bytes: std::io::Result<Vec<u8>>| -> Result<(), CliError> {
        let bytes = bytes.map_err(|e| CliError::runtime(e).context(path.display().to_string()))?;
        std::fs::write(path, bytes)
            .map_err(|e| CliError::runtime(e).context(format!("{}: cannot write", path.display())))
    };
    if let Some(dir) = &options.report_dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::runtime(e).context(format!("--report-dir {}", dir.display())))?;
        for exporter in report::exporters() {
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
