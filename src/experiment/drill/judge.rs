//! The fourth stage, judge: every expectation on the run, from the tallies
//! the stream counted as requests finished, then the steady state's
//! before and after checks (not judged as injected when the run never
//! injected a fault); a run with nothing to judge fails every one. A run
//! not healthy before injection puts the steady state's verdicts first and
//! leaves the experiment's own expectations not judged: no fault ran, so
//! none of them was exercised. Hands [`Judged`] to the report stage.

use super::outcome::{Ending, RunResult};
use crate::experiment::Verdict;
use crate::experiment::file::Loaded;

/// A run and its verdicts: what the report stage is handed.
#[derive(Debug)]
pub struct Judged {
    /// The run.
    pub run: RunResult,
    /// One per expectation, then the steady state's (the steady state's
    /// first for a run not healthy before injection).
    pub verdicts: Vec<Verdict>,
}

/// Why an expectation of a run not healthy before injection is not judged.
pub const NOT_INJECTED: &str = "not healthy before injection, no fault was injected";

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
        .enumerate()
        .map(|(i, (e, t))| match run.queried.get(&i) {
            Some(queried) => queried.clone(),
            None => crate::experiment::expect::evaluate_tallied(e, &run.timeline, t),
        })
        .collect();
    if let Some(steady) = &loaded.steady {
        let injected = !matches!(run.ending, Ending::NotHealthy { .. });
        let mut steady = steady.judge(&run.timeline, injected, steady_tallies);
        // Its query sentences, as Prometheus judged them after the run.
        for (i, verdict) in steady.iter_mut().enumerate() {
            if let Some(queried) = run.steady_queried.get(&i) {
                verdict.clone_from(queried);
            }
        }
        if injected {
            verdicts.extend(steady);
        } else {
            for verdict in &mut verdicts {
                verdict.set_not_judged(NOT_INJECTED);
            }
            verdicts.splice(0..0, steady);
        }
    }
    inconclusive(loaded, &run, &mut verdicts);
    if let Some(seen) = &run.nothing_to_judge {
        for verdict in &mut verdicts {
            verdict.passed = false;
            verdict.seen.clone_from(seen);
            verdict.at = None;
        }
    }
    Judged { run, verdicts }
}

/// The evidence gate's findings on `run`, on the experiment's own
/// sentences that were judged: one about a breaker named is inconclusive,
/// every one for a finding on the whole run.
fn inconclusive(loaded: &Loaded, run: &RunResult, verdicts: &mut [Verdict]) {
    for verdict in verdicts.iter_mut().filter(|v| v.not_judged.is_none()) {
        let Some(expectation) = loaded
            .expectations
            .iter()
            .find(|e| e.text == verdict.expectation)
        else {
            continue;
        };
        let about = expectation.rule.breakers();
        let reasons: Vec<String> = run
            .inconclusive
            .iter()
            .filter(|f| f.breaker.as_deref().is_none_or(|b| about.contains(&b)))
            .map(ToString::to_string)
            .collect();
        if !reasons.is_empty() {
            verdict.set_inconclusive(&reasons.join("; "));
        }
    }
}
