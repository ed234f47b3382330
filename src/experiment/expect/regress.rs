//! Judging a regression sentence: this run's figure against the same
//! figure of past runs in which the sentence was judged and held (or that
//! seeded it), which the history handed over before the run
//! (`Regress::past`; `baseline` makes the limit and names the runs). Too
//! few past runs is said (not judged, and the run is not failed for it:
//! the runs that fill the history must be able to pass, and they seed the
//! baseline only when they hold against the seeds before them); a run
//! that keeps no history cannot judge one at all, and fails it.

use crate::clock::Duration;
use crate::experiment::timeline::Timeline;

use super::ast::{
    Anchor, Bound, Direction, Event, Expectation, Measure, Metric, Name, Op, Regress, Value,
    ValueKind,
};
use super::baseline::{Basis, baseline_words, basis, short};
use super::metrics::{nothing, route_figure};
use super::tally::RouteTally;
use super::verdict::{Verdict, latency, secs, show};
use super::window::{anchor_time, describe, resolve};

/// Why a sentence of a run without a history is not judged.
pub const NO_HISTORY: &str = "this run keeps no history, so there are no past runs to compare with: give --history, FIREDRILL_HISTORY or history: in the experiment";

/// Judges `regress` (the rule of `expectation`) on `timeline`, with the
/// requests `tally` counted for a route figure.
pub(crate) fn judge(
    expectation: &Expectation,
    regress: &Regress,
    timeline: &Timeline,
    tally: &RouteTally,
) -> Verdict {
    let kind = regress.measure.kind();
    let basis = basis(regress, kind);
    let limit = match &basis {
        Basis::Judged(made) | Basis::Short(Some(made)) => Some(made.limit),
        Basis::NoHistory | Basis::Short(None) => None,
    };
    let measured = measure(&regress.measure, timeline, tally, limit, kind);
    judge_on(expectation, regress, timeline, measured, basis)
}

/// Judges `regress` (the rule of `expectation`) with its figure already
/// measured: the figure (none: it could not be), what was seen and where.
/// A query's figure is measured by Prometheus once the run is over.
pub(crate) fn judge_measured(
    expectation: &Expectation,
    regress: &Regress,
    timeline: &Timeline,
    measured: (Option<f64>, String, Option<Duration>),
) -> Verdict {
    let basis = basis(regress, regress.measure.kind());
    judge_on(expectation, regress, timeline, measured, basis)
}

/// [`judge_measured`] against the `basis` the history allows.
fn judge_on(
    expectation: &Expectation,
    regress: &Regress,
    timeline: &Timeline,
    (figure, seen, at): (Option<f64>, String, Option<Duration>),
    basis: Basis,
) -> Verdict {
    let kind = regress.measure.kind();
    let mut verdict = Verdict {
        expectation: expectation.text.clone(),
        passed: false,
        expected: String::new(),
        seen,
        at,
        judged: judged(&regress.measure, timeline),
        not_judged: None,
        figure,
        figure_key: Some(regress.key.clone()),
        awaits_history: false,
        baseline: None,
        baseline_runs: Vec::new(),
        seeds_baseline: false,
        inconclusive: None,
        limit: None,
        unit: None,
    };
    verdict.unit = kind.unit();
    let words = comparison(regress.direction, &regress.measure);
    let held = |limit: f64| holds(regress, figure, limit);
    match basis {
        Basis::Judged(made) => {
            verdict.expected = format!(
                "{} {words} {} ({})",
                regress.key,
                show(made.limit, kind),
                made.words
            );
            verdict.passed = held(made.limit);
            verdict.limit = Some(made.limit);
            verdict.baseline = Some(made.words);
            verdict.baseline_runs = made.runs;
        }
        short_or_none => {
            verdict.expected = format!("{} {words} {}", regress.key, baseline_words(regress));
            let (why, seeds) = match &short_or_none {
                Basis::Short(so_far) => {
                    let held = so_far
                        .as_ref()
                        .is_some_and(|m| held(m.limit) && figure.is_some());
                    short(regress, so_far.as_ref(), held)
                }
                _ => (NO_HISTORY.to_string(), false),
            };
            let seen = std::mem::take(&mut verdict.seen);
            verdict.set_not_judged(&why);
            verdict.seen = seen;
            verdict.figure = figure;
            verdict.awaits_history = matches!(short_or_none, Basis::Short(_));
            // A seed with no figure would seed nothing.
            verdict.seeds_baseline = seeds && figure.is_some();
        }
    }
    if figure.is_none() && matches!(regress.measure, Measure::Query(_)) {
        // Prometheus gave nothing or failed: never a pass, never a seed,
        // whatever the history.
        verdict.not_judged = None;
        verdict.awaits_history = false;
        verdict.seeds_baseline = false;
        verdict.passed = false;
    }
    verdict
}

/// Whether `figure` is on the right side of `limit`. Nothing to measure
/// over holds an upper bound vacuously for a route figure; a transition
/// that never came fails.
fn holds(regress: &Regress, figure: Option<f64>, limit: f64) -> bool {
    match figure {
        Some(value) => match regress.direction {
            Direction::AtMost => value <= limit,
            Direction::AtLeast => value >= limit,
        },
        None => {
            regress.direction == Direction::AtMost
                && matches!(regress.measure, Measure::Route { .. })
        }
    }
}

/// `no later than`, `no worse than`, ... as the verdict restates it.
fn comparison(direction: Direction, measure: &Measure) -> &'static str {
    match (direction, measure) {
        (Direction::AtMost, Measure::Transition { .. }) => "no later than",
        (Direction::AtLeast, Measure::Transition { .. }) => "no earlier than",
        (Direction::AtMost, Measure::Query(_)) => "no more than",
        (Direction::AtLeast, Measure::Query(_)) => "no less than",
        (Direction::AtMost, _) => "<=",
        (Direction::AtLeast, _) => ">=",
    }
}

/// This run's figure (milliseconds for a time), what was seen, and where.
fn measure(
    measure: &Measure,
    timeline: &Timeline,
    tally: &RouteTally,
    limit: Option<f64>,
    kind: ValueKind,
) -> (Option<f64>, String, Option<Duration>) {
    match measure {
        Measure::Transition {
            breaker,
            event,
            anchor,
        } => {
            let (from, label) = match from(timeline, anchor.as_ref()) {
                Ok(found) => found,
                Err(seen) => return (None, seen, None),
            };
            match first_after(timeline, breaker, *event, from) {
                Some(at) => (
                    Some(millis(at - from)),
                    format!(
                        "breaker {breaker} {} {} after {label} (at {})",
                        event.past(),
                        latency(at - from),
                        secs(at)
                    ),
                    Some(at),
                ),
                None => (
                    None,
                    format!("breaker {breaker} never {} after {label}", event.past()),
                    Some(from),
                ),
            }
        }
        Measure::Route {
            route,
            metric,
            window,
        } => {
            let where_ = describe(window);
            let intervals = match resolve(window, timeline) {
                Ok(i) => i,
                Err(seen) => return (None, seen, None),
            };
            let at = intervals.first().map(|i| i.0);
            let bound = Bound::Cmp(Op::Le, value_of(limit.unwrap_or(0.0), kind));
            match route_figure(*metric, tally, bound) {
                Some((value, shown)) => (
                    Some(in_unit(*metric, value)),
                    format!("route {route} {metric} {shown} {where_}"),
                    at,
                ),
                None => (
                    None,
                    format!(
                        "{} from route {route} {where_}: {metric} cannot be computed",
                        nothing(tally.requests)
                    ),
                    at,
                ),
            }
        }
        Measure::Query(_) => (
            None,
            "not queried: only a real-time run asks Prometheus".to_string(),
            None,
        ),
    }
}

/// A duration in milliseconds, the unit a history keeps times in.
fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A route figure in the unit a history keeps it in: a latency (computed
/// in seconds) in milliseconds, the others as they are.
fn in_unit(metric: Metric, value: f64) -> f64 {
    if matches!(metric, Metric::Latency(_)) {
        value * 1000.0
    } else {
        value
    }
}

/// When `breaker` first made `event` at or after `from`, within the run.
fn first_after(
    timeline: &Timeline,
    breaker: &Name,
    event: Event,
    from: Duration,
) -> Option<Duration> {
    timeline
        .transitions
        .iter()
        .filter(|t| t.breaker == breaker.text && t.at < timeline.duration)
        .find(|t| t.at >= from && t.to == event.state())
        .map(|t| t.at)
}

/// The figure a sentence that is not a regression sentence measured, in
/// the unit a history keeps it in: a route figure, a count of calls, the
/// delay from an anchor to a transition. `None` for the others, and for a
/// figure that could not be computed (no requests; no such transition).
pub(crate) fn figure_of(
    rule: &super::ast::Rule,
    timeline: &Timeline,
    route: &RouteTally,
    calls: &super::tally::CallTally,
) -> Option<f64> {
    use super::ast::Rule;
    match rule {
        Rule::Route { metric, bound, .. } => {
            route_figure(*metric, route, *bound).map(|(v, _)| in_unit(*metric, v))
        }
        Rule::Calls { .. } => Some(calls.count as f64),
        Rule::Reaches {
            breaker,
            event,
            anchor,
            ..
        } => {
            let (from, _) = anchor_time(timeline, anchor).ok()?;
            first_after(timeline, breaker, *event, from).map(|at| millis(at - from))
        }
        _ => None,
    }
}

/// A limit as a sentence value, for the digits the figure is shown with.
fn value_of(limit: f64, kind: ValueKind) -> Value {
    match kind {
        ValueKind::Duration => Value::Duration(Duration::from_secs_f64(limit.max(0.0) / 1000.0)),
        ValueKind::Share => Value::Percent(limit),
        ValueKind::Count | ValueKind::Ratio | ValueKind::Quantity => Value::Number(limit),
    }
}

/// What a transition is measured from: the anchor, or the first fault's
/// start (the run's start when it has no fault that was active).
fn from(timeline: &Timeline, anchor: Option<&Anchor>) -> Result<(Duration, String), String> {
    if let Some(anchor) = anchor {
        return anchor_time(timeline, anchor);
    }
    let first = timeline
        .faults
        .iter()
        .filter_map(|f| f.span().map(|(start, _)| (start, &f.name)))
        .min_by_key(|(start, _)| *start);
    Ok(match first {
        Some((start, name)) => (start, format!("{name}.start")),
        None => (Duration::ZERO, "the run's start".into()),
    })
}

/// The part of the run the sentence looked at.
fn judged(measure: &Measure, timeline: &Timeline) -> Vec<(Duration, Duration)> {
    match measure {
        Measure::Query(q) => q.window.resolve(timeline).unwrap_or_default(),
        Measure::Route { window, .. } => resolve(window, timeline).unwrap_or_default(),
        Measure::Transition { anchor, .. } => from(timeline, anchor.as_ref())
            .map(|(a, _)| (a, timeline.duration))
            .into_iter()
            .filter(|(a, b)| a < b)
            .collect(),
    }
}
