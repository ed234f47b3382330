//! Running a loaded experiment into its report: the HTML picture folded
//! and `requests.jsonl` written as requests finish, then the report every
//! format is written from.

use super::{RunReport, RunResult, html, ms, requests};
use crate::experiment::config::{ClockKind, Experiment};
use crate::experiment::drill::collect::stream::RecordSink;
use crate::experiment::drill::{Judged, Live, Report, RunError};
use crate::experiment::file::Loaded;

/// Runs a loaded experiment and judges it: the entry point `firedrill run`
/// and the tests share. The run stops early when `interrupt` resolves.
pub fn execute(
    loaded: &Loaded,
    clock: ClockKind,
    interrupt: impl std::future::Future<Output = ()> + Send + 'static,
    live: Live,
) -> Result<(RunResult, RunReport), RunError> {
    execute_to(loaded, clock, interrupt, live, None)
}

/// [`execute`], writing `requests.jsonl` into `dir` while the run goes
/// (the other files are written from the report afterwards).
pub fn execute_to(
    loaded: &Loaded,
    clock: ClockKind,
    interrupt: impl std::future::Future<Output = ()> + Send + 'static,
    live: Live,
    dir: Option<&std::path::Path>,
) -> Result<(RunResult, RunReport), RunError> {
    let requests = match dir {
        Some(dir) => Some(
            requests::Requests::file(&dir.join(requests::Requests::FILE_NAME))
                .map_err(RunError::Records)?,
        ),
        None => None,
    };
    let files = Files {
        experiment: &loaded.experiment,
        clock,
        fold: std::sync::Arc::new(std::sync::Mutex::new(html::picture::Fold::new(ms(loaded
            .experiment
            .duration)))),
        requests,
    };
    crate::experiment::drill::run(loaded, clock, interrupt, live, files)
}

/// The report stage of a drill: the HTML picture folded and
/// `requests.jsonl` written as requests finish, then the report every
/// format is written from.
struct Files<'a> {
    /// The experiment that ran.
    experiment: &'a Experiment,
    /// The clock it ran on.
    clock: ClockKind,
    /// The HTML picture's fold, fed as requests finish.
    fold: std::sync::Arc<std::sync::Mutex<html::picture::Fold>>,
    /// `requests.jsonl`, with `--report-dir`.
    requests: Option<requests::RequestsFile>,
}

impl Report for Files<'_> {
    type Output = (RunResult, RunReport);

    fn sinks(&mut self) -> Vec<Box<dyn RecordSink>> {
        let mut sinks: Vec<Box<dyn RecordSink>> = vec![Box::new(Folding(self.fold.clone()))];
        if let Some(file) = self.requests.take() {
            sinks.push(Box::new(file));
        }
        sinks
    }

    fn report(self, judged: Judged) -> (RunResult, RunReport) {
        let fold = std::mem::replace(
            &mut *self.fold.lock().unwrap_or_else(|e| e.into_inner()),
            html::picture::Fold::new(1.0),
        );
        let Judged { mut run, verdicts } = judged;
        let report = RunReport::new(self.experiment, self.clock, &mut run, verdicts, fold);
        (run, report)
    }
}

/// The HTML picture's fold, fed as requests finish.
struct Folding(std::sync::Arc<std::sync::Mutex<html::picture::Fold>>);

impl RecordSink for Folding {
    fn record(&mut self, r: &crate::experiment::timeline::RequestRecord) -> std::io::Result<()> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .request(ms(r.sent), r.latency.map(ms), r);
        Ok(())
    }
}
