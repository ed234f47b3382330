//! Steady state, as Chaos Toolkit users know it: expectations that must
//! hold before the first fault (over the warm-up, `[0, first fault start)`)
//! and again after the last one ends (`[last fault end, duration)`). They
//! are checked just before the first fault would start: if the system is
//! not healthy then, no fault is injected and the run ends as "not healthy
//! before injection" with its own exit code.
//!
//! Each sentence is an expectation without a window (`route shop success
//! >= 99%`); the windows come from the fault timeline.

use crate::clock::Duration;
use crate::experiment::config::Experiment;
use crate::experiment::expect::tally::Tally;
use crate::experiment::expect::{self, Expectation, Names, Verdict};
use crate::experiment::timeline::Timeline;
use crate::schema::units::Dur;

/// The steady-state checks of an experiment, windowed.
#[derive(Debug, Clone)]
pub struct SteadyState {
    /// When the warm-up ends: the first fault's start.
    pub check_at: Duration,
    /// Over the warm-up.
    pub before: Vec<Expectation>,
    /// After the last fault ends; empty when a fault lasts to the end.
    pub after: Vec<Expectation>,
}

/// `sentence` with `window` where the grammar takes it: before the bound
/// (`route A success >= 99%`, `calls to /a == 0`), else at the end
/// (`breaker B never opens`).
fn with_window(sentence: &str, window: &str) -> String {
    let bound = [" >= ", " <= ", " == ", " > ", " < ", " within "]
        .iter()
        .filter_map(|op| sentence.find(op))
        .min();
    match bound {
        Some(at) => format!("{} {window}{}", &sentence[..at], &sentence[at..]),
        None => format!("{sentence} {window}"),
    }
}

/// Words that give a sentence its own window, which steady state sets.
const WINDOWS: &[&str] = &[" between ", " during ", " while ", " in phase "];

impl SteadyState {
    /// Parses and checks `experiment.steady_state`: `None` when it has none;
    /// else the checks, or the index of each bad sentence with what is wrong.
    pub fn check(
        experiment: &Experiment,
        names: &Names,
    ) -> Result<Option<SteadyState>, Vec<(usize, String)>> {
        if experiment.steady_state.is_empty() {
            return Ok(None);
        }
        let starts = experiment.faults.iter().map(|f| f.window.start);
        let check_at = starts.min().unwrap_or(experiment.duration);
        if check_at.is_zero() {
            return Err(vec![(
                0,
                "steady state needs a warm-up: the first fault starts at 0s; start it later so the system can be seen healthy first".to_string(),
            )]);
        }
        // The last fault's end; none when one lasts to the end of the run.
        let last_end = experiment
            .faults
            .iter()
            .map(|f| f.window.end())
            .try_fold(Duration::ZERO, |acc, end| end.map(|e| acc.max(e)))
            .filter(|end| *end < experiment.duration);
        let mut before = Vec::new();
        let mut after = Vec::new();
        let mut problems = Vec::new();
        for (i, sentence) in experiment.steady_state.iter().enumerate() {
            if let Some(word) = WINDOWS.iter().find(|w| sentence.contains(**w)) {
                problems.push((
                    i,
                    format!(
                        "`{}`: a steady-state sentence takes its window from the faults (before the first, after the last); leave out `{}`",
                        sentence.trim(),
                        word.trim()
                    ),
                ));
                continue;
            }
            if let Ok(Expectation {
                rule: expect::Rule::Regress(_),
                ..
            }) = expect::parse(sentence)
            {
                problems.push((
                    i,
                    format!(
                        "`{}`: a regression sentence compares whole runs with the history, not the steady state; write it under `expect:`",
                        sentence.trim()
                    ),
                ));
                continue;
            }
            let windowed = |from: Duration, to: Duration| {
                with_window(
                    sentence.trim(),
                    &format!("between {} and {}", Dur(from), Dur(to)),
                )
            };
            let mut parse = |text: String, into: &mut Vec<Expectation>| {
                let parsed = expect::parse(&text).map_err(|e| e.to_string());
                match parsed.and_then(|p| expect::check(&p, names).map(|()| p)) {
                    Ok(p) => into.push(p),
                    Err(e) => problems.push((i, e)),
                }
            };
            parse(windowed(Duration::ZERO, check_at), &mut before);
            if let Some(end) = last_end {
                parse(windowed(end, experiment.duration), &mut after);
            }
        }
        if !problems.is_empty() {
            // One report per sentence (its "before" and "after" fail alike).
            problems.dedup_by_key(|(i, _)| *i);
            return Err(problems);
        }
        Ok(Some(SteadyState {
            check_at,
            before,
            after,
        }))
    }

    /// Judges the warm-up on the run so far, with what the run counted for
    /// the before sentences (a request still in flight is not counted).
    pub fn judge_warm_up(&self, timeline: &Timeline, before: &[Tally]) -> Vec<Verdict> {
        judge_each(&self.before, timeline, before)
    }

    /// The verdicts after the run: the warm-up's, and the time after the
    /// last fault's when faults were injected. `tallies` are what the run
    /// counted for the before sentences, then the after ones.
    pub fn judge(&self, timeline: &Timeline, injected: bool, tallies: &[Tally]) -> Vec<Verdict> {
        let (before, after) = tallies.split_at(self.before.len().min(tallies.len()));
        let mut verdicts = judge_each(&self.before, timeline, before);
        if injected {
            verdicts.extend(judge_each(&self.after, timeline, after));
        }
        verdicts
    }
}

/// Each expectation judged with its tally.
fn judge_each(
    expectations: &[Expectation],
    timeline: &Timeline,
    tallies: &[Tally],
) -> Vec<Verdict> {
    expectations
        .iter()
        .zip(tallies)
        .map(|(e, t)| expect::evaluate_tallied(e, timeline, t))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steady(faults: &str) -> SteadyState {
        let text = format!(
            "name: t\nduration: 10s\nload: [ {{ name: A, request: GET /a, rate: 5/s }} ]\n\
             faults: {faults}\nsteady_state: [ route A success >= 99% ]\n"
        );
        let experiment: Experiment = crate::schema::from_yaml_str("t.yaml", &text).unwrap();
        let names = crate::experiment::expect::names::names(&experiment);
        SteadyState::check(&experiment, &names).unwrap().unwrap()
    }

    #[test]
    fn the_checks_span_the_warm_up_and_the_time_after_the_last_fault() {
        let s = steady("[ { status: { code: 503 }, at: 2s, for: 3s } ]");
        assert_eq!(s.check_at, Duration::from_secs(2));
        assert_eq!(s.before.len(), 1);
        assert_eq!(s.after.len(), 1);
    }

    #[test]
    fn a_fault_lasting_to_the_end_leaves_no_check_after_it() {
        assert!(
            steady("[ { status: { code: 503 }, at: 2s } ]")
                .after
                .is_empty()
        );
        assert!(
            steady("[ { status: { code: 503 }, at: 2s, for: 8s } ]")
                .after
                .is_empty()
        );
        assert_eq!(
            steady("[ { status: { code: 503 }, at: 2s, for: 7s } ]")
                .after
                .len(),
            1
        );
    }

    #[test]
    fn the_window_goes_before_the_bound_or_at_the_end() {
        let w = "between 0s and 3s";
        assert_eq!(
            with_window("route A success >= 99%", w),
            "route A success between 0s and 3s >= 99%"
        );
        assert_eq!(
            with_window("route A p99 within 5% of 20ms", w),
            "route A p99 between 0s and 3s within 5% of 20ms"
        );
        assert_eq!(
            with_window("calls to /a/* == 0", w),
            "calls to /a/* between 0s and 3s == 0"
        );
        assert_eq!(
            with_window("breaker B never opens", w),
            "breaker B never opens between 0s and 3s"
        );
    }
}
