//! `firedrill run`: load and check an experiment, run it, judge it, report
//! it, and map the result to the exit code.

use std::path::{Path, PathBuf};

use super::Verdict;
use super::config::{ClockKind, Experiment};
use super::halt::HaltCondition;
use super::run::{Ending, Live, RunResult};
use crate::cli::{CliError, EXIT_ASSERTION, EXIT_INTERRUPTED, EXIT_OK};
use crate::report::{self, RunReport};
use crate::schema::{self, SchemaError, Segment};

/// An experiment with its halt conditions and expectations checked.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The experiment.
    pub experiment: Experiment,
    /// Its halt conditions, parsed.
    pub halts: Vec<HaltCondition>,
    /// Its expectations, parsed and checked against its names.
    pub expectations: Vec<super::judge::Checked>,
}

/// Reads, parses and checks an experiment file; every error names file,
/// line, column and key.
pub fn load(path: &Path) -> Result<Loaded, CliError> {
    let file = path.display().to_string();
    let text = schema::read_text(path)?;
    let experiment: Experiment = schema::from_yaml_str(&file, &text)?;
    if let Some(misfit) = crate::cli::first_misfit(&experiment.faults, crate::cli::Mode::Http) {
        let message = format!(
            "`{}` works in {} mode only; an experiment's faults act on HTTP requests",
            misfit.kind, misfit.needed
        );
        return Err(misfit.error(&file, &text, message).into());
    }
    let at = |key: &str, i: usize, message: String| -> CliError {
        SchemaError::at(
            &file,
            &text,
            &[Segment::Key(key.to_string()), Segment::Index(i)],
            message,
        )
        .into()
    };
    let halts = experiment
        .halt
        .iter()
        .enumerate()
        .map(|(i, h)| h.parse::<HaltCondition>().map_err(|e| at("halt", i, e)))
        .collect::<Result<Vec<_>, _>>()?;
    let routes = super::judge::names(&experiment).routes;
    for (i, h) in halts.iter().enumerate() {
        if !routes.contains(&h.route) {
            let name = super::expect::ast::Name {
                text: h.route.clone(),
                column: h.route_column,
            };
            let message = super::expect::check::unknown("route", &name, &routes);
            return Err(at("halt", i, message));
        }
    }
    let expectations = super::judge::check_all(&experiment).map_err(|(i, e)| at("expect", i, e))?;
    Ok(Loaded {
        experiment,
        halts,
        expectations,
    })
}

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
pub fn run_command(path: &Path, options: &RunOptions) -> Result<u8, CliError> {
    let mut loaded = load(path)?;
    if let Some(seed) = options.seed {
        loaded.experiment.seed = seed;
    }
    let clock = options.clock.unwrap_or(loaded.experiment.clock);
    if clock == ClockKind::Virtual
        && matches!(loaded.experiment.target, super::config::TargetSpec::Url(_))
    {
        return Err(CliError::Invalid(
            "--clock virtual: a real target (target.url) needs the real clock".to_string(),
        ));
    }
    let live = Live {
        progress: !options.quiet,
        metrics_listen: options.metrics_listen,
    };
    let (result, report) = execute(&loaded, clock, live)?;
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

/// Runs a loaded experiment and judges it: the library entry point that
/// tests and the command share.
pub fn execute(
    loaded: &Loaded,
    clock: ClockKind,
    live: Live,
) -> Result<(RunResult, RunReport), CliError> {
    let result = super::run::run(
        &loaded.experiment,
        clock,
        &loaded.halts,
        crate::cli::stop_signal(),
        live,
    )
    .map_err(|e| CliError::Runtime(e.to_string()))?;
    let verdicts: Vec<Verdict> = super::judge::judge(&loaded.expectations, &result.timeline);
    let report = RunReport::new(&loaded.experiment, clock, &result, verdicts);
    Ok((result, report))
}

fn write_reports(report: &RunReport, options: &RunOptions) -> Result<(), CliError> {
    let write = |path: &Path, bytes: std::io::Result<Vec<u8>>| -> Result<(), CliError> {
        let bytes = bytes.map_err(|e| CliError::Runtime(format!("{}: {e}", path.display())))?;
        std::fs::write(path, bytes)
            .map_err(|e| CliError::Runtime(format!("{}: cannot write: {e}", path.display())))
    };
    if let Some(dir) = &options.report_dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::Runtime(format!("--report-dir {}: {e}", dir.display())))?;
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
