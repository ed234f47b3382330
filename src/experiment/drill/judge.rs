//! The fourth stage, judge: every expectation on the run, from the tallies
//! the stream counted as requests finished, then the steady state's
//! before and after checks (not judged as injected when the run never
//! injected a fault); a run with nothing to judge fails every one. Hands
//! [`Judged`] to the report stage.

use super::outcome::{Ending, RunResult};
use crate::experiment::Verdict;
use crate::experiment::file::Loaded;

/// A run and its verdicts: what the report stage is handed.
#[derive(Debug)]
pub struct Judged {
    /// The run.
    pub run: RunResult,
    /// One per expectation, then the steady state's.
    pub verdicts: Vec<Verdict>,
}

/// Judges `run` against the expectations and the steady state of `loaded`.
pub fn judge(loaded: &Loaded, run: RunResult) -> Judged {
    let (main, steady_tallies) = run
        .counted
        .tallies
        .split_at(loaded.expectations.len().min(run.counted.tallies.len()));
    let mut verdicts: Vec<Verdict> = loaded
        .expectations
        .iter()
        .zip(main)
        .map(|(e, t)| crate::experiment::expect::evaluate_tallied(e, &run.timeline, t))
        .collect();
    if let Some(steady) = &loaded.steady {
        let injected = !matches!(run.ending, Ending::NotHealthy { .. });
        verdicts.extend(steady.judge(&run.timeline, injected, steady_tallies));
    }
    if let Some(seen) = &run.nothing_to_judge {
        for verdict in &mut verdicts {
            verdict.passed = false;
            verdict.seen.clone_from(seen);
            verdict.at = None;
        }
    }
    Judged { run, verdicts }
}
