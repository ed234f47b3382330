//! Turning a [`Window`] into `[start, end)` intervals of a timeline, and
//! the words that describe it in a verdict; the time an anchor stands for
//! and the judge of `within D of ANCHOR`.

use crate::clock::Duration;
use crate::defense::breaker::State;
use crate::defense::breaker::journal::Reason;
use crate::defense::report::HealthChange;
use crate::experiment::timeline::Timeline;

use super::ast::{Anchor, Server, Window};
use super::verdict::{Judgement, latency, secs};

/// Sorted, disjoint `[start, end)` intervals, clipped to the run.
pub(crate) type Intervals = Vec<(Duration, Duration)>;

/// The intervals of `window` in `timeline`; an error (the verdict's seen
/// text) when it names a fault or phase the run does not have.
pub(crate) fn resolve(window: &Window, timeline: &Timeline) -> Result<Intervals, String> {
    let raw = match window {
        Window::Run => vec![(Duration::ZERO, timeline.duration)],
        Window::During(fault) => {
            let f = timeline
                .faults
                .iter()
                .find(|f| f.name == fault.text)
                .ok_or_else(|| format!("the run has no fault named \"{fault}\""))?;
            f.span().into_iter().collect()
        }
        Window::While { breaker, state } => timeline.intervals_in_state(&breaker.text, *state),
        Window::Ejected(server) => ejected(timeline, server),
        Window::Between(from, to) => vec![(*from, *to)],
        Window::Phase(phase) => {
            let p = timeline
                .phases
                .iter()
                .find(|p| p.name == phase.text)
                .ok_or_else(|| format!("the run has no phase named \"{phase}\""))?;
            vec![(p.from, p.to)]
        }
    };
    Ok(raw
        .into_iter()
        .map(|(a, b)| (a.min(timeline.duration), b.min(timeline.duration)))
        .filter(|(a, b)| a < b)
        .collect())
}

/// The intervals a counting sentence (`calls to`, a route's figures)
/// counts in: those of [`resolve`], where each span of a breaker's state
/// starts once the evidence proves the state (an inferred open's
/// `proven`), not at its estimated start: what came in between may have
/// been let through before the service opened.
pub(crate) fn counted(window: &Window, timeline: &Timeline) -> Result<Intervals, String> {
    let intervals = resolve(window, timeline)?;
    let Window::While { breaker, .. } = window else {
        return Ok(intervals);
    };
    let proven = |start: Duration| {
        timeline
            .transitions
            .iter()
            .filter(|t| t.breaker == breaker.text && t.at == start)
            .find_map(|t| match t.reason {
                Reason::Inferred { proven, .. } => proven,
                _ => None,
            })
    };
    Ok(intervals
        .into_iter()
        .map(|(a, b)| (proven(a).map_or(a, |p| p.min(b)), b))
        .filter(|(a, b)| a < b)
        .collect())
}

/// Whether `t` lies in one of the intervals.
pub(crate) fn contains(intervals: &Intervals, t: Duration) -> bool {
    intervals.iter().any(|(a, b)| *a <= t && t < *b)
}

/// Their total length.
pub(crate) fn total(intervals: &Intervals) -> Duration {
    intervals.iter().map(|(a, b)| *b - *a).sum()
}

/// The words after a figure: `during inventory-down`, `while inventory is
/// open`, `between 10s and 40s`, `in phase recovery`, `over the run`.
pub(crate) fn describe(window: &Window) -> String {
    match window {
        Window::Run => "over the run".to_string(),
        Window::During(fault) => format!("during {fault}"),
        Window::While { breaker, state } => format!("while {breaker} is {state}"),
        Window::Between(a, b) => format!("between {} and {}", secs(*a), secs(*b)),
        Window::Phase(phase) => format!("in phase {phase}"),
        Window::Ejected(server) => format!("while {server} is ejected"),
    }
}

/// The health changes of `server`, in order, before the run's end.
pub(crate) fn health_of<'a>(
    timeline: &'a Timeline,
    server: &'a Server,
) -> impl Iterator<Item = &'a HealthChange> {
    timeline
        .health
        .iter()
        .filter(move |h| server.is(&h.pool, &h.server) && h.at < timeline.duration)
}

/// Every interval `server` spent out of rotation: from each change that
/// ejected it to the next that brought it back (or the run's end).
fn ejected(timeline: &Timeline, server: &Server) -> Intervals {
    let mut out = Vec::new();
    let mut since = None;
    for h in health_of(timeline, server) {
        match (h.healthy, since) {
            (false, None) => since = Some(h.at),
            (true, Some(from)) => {
                out.push((from, h.at));
                since = None;
            }
            _ => {}
        }
    }
    if let Some(from) = since {
        out.push((from, timeline.duration));
    }
    out
}

/// The state of breaker `name` at `t` (after any transition at `t`).
pub(crate) fn state_at(timeline: &Timeline, name: &str, t: Duration) -> State {
    timeline
        .transitions
        .iter()
        .rfind(|tr| tr.breaker == name && tr.at <= t)
        .map_or(State::Closed, |tr| tr.to)
}

/// What a window needs to know of a run still going on, at an instant
/// already past: the run's end if known, fault spans and phases, and the
/// breaker transitions so far.
pub trait Scene {
    /// The run's end; an instant at or after it lies in no window.
    fn end(&self) -> Duration;
    /// A fault's whole span, `[first start, last end)`, as far as known.
    fn fault_span(&self, name: &str) -> Option<(Duration, Duration)>;
    /// A phase's span.
    fn phase(&self, name: &str) -> Option<(Duration, Duration)>;
    /// The last transition of breaker `name` at or before `t`: when, and
    /// the state it entered.
    fn last_transition(&self, name: &str, t: Duration) -> Option<(Duration, State)>;
    /// The last health change of `server` at or before `t`: when, and
    /// whether it brought the server back.
    fn last_health(&self, server: &Server, t: Duration) -> Option<(Duration, bool)>;
}

/// The start of the interval of `window` that holds `t`, if one does: the
/// same answer as [`resolve`] then [`contains`] give on the whole timeline,
/// for an instant every transition up to which is known.
pub(crate) fn interval_start(window: &Window, scene: &impl Scene, t: Duration) -> Option<Duration> {
    if t >= scene.end() {
        return None;
    }
    let (from, to) = match window {
        Window::Run => (Duration::ZERO, Duration::MAX),
        Window::During(fault) => scene.fault_span(&fault.text)?,
        Window::Between(from, to) => (*from, *to),
        Window::Phase(phase) => scene.phase(&phase.text)?,
        Window::While { breaker, state } => {
            let (since, now) = scene
                .last_transition(&breaker.text, t)
                .unwrap_or((Duration::ZERO, State::Closed));
            return (now == *state).then_some(since);
        }
        Window::Ejected(server) => {
            let (since, healthy) = scene.last_health(server, t)?;
            return (!healthy).then_some(since);
        }
    };
    (from <= t && t < to).then_some(from)
}

/// The time an anchor stands for and how to name it; an error (the seen
/// text) when the fault is unknown or never active.
pub(crate) fn anchor_time(
    timeline: &Timeline,
    anchor: &Anchor,
) -> Result<(Duration, String), String> {
    let (fault, end) = match anchor {
        Anchor::At(t) => return Ok((*t, secs(*t))),
        Anchor::FaultStart(f) => (f, false),
        Anchor::FaultEnd(f) => (f, true),
    };
    let windows = timeline
        .faults
        .iter()
        .find(|f| f.name == fault.text)
        .ok_or_else(|| format!("the run has no fault named \"{fault}\""))?;
    let (start, stop) = windows
        .span()
        .ok_or_else(|| format!("fault {fault} was never active"))?;
    Ok(if end {
        (stop, format!("{fault}.end"))
    } else {
        (start, format!("{fault}.start"))
    })
}

/// `SUBJECT within D of ANCHOR`: the first event at or after the anchor
/// comes no later than `within` after it. `words` are the subject in the
/// expectation and the event in what was seen (`instance b ejected`,
/// `ejected`); `first(from)` is the first event's time and a note on it,
/// `missing(from, label)` what was seen when none came.
pub(crate) fn within_of(
    timeline: &Timeline,
    anchor: &Anchor,
    within: Duration,
    (subject, event): (&str, &str),
    first: impl FnOnce(Duration) -> Option<(Duration, String)>,
    missing: impl FnOnce(Duration, &str) -> String,
) -> Judgement {
    let (from, label) = match anchor_time(timeline, anchor) {
        Ok(found) => found,
        Err(seen) => {
            let expected = format!("{subject} within {}", latency(within));
            return (false, expected, seen, None);
        }
    };
    let expected = format!("{subject} within {} of {label}", latency(within));
    match first(from) {
        Some((at, note)) => {
            let delay = at - from;
            let seen = format!(
                "{event} at {}, {} after {label}{note}",
                secs(at),
                latency(delay)
            );
            (delay <= within, expected, seen, Some(at))
        }
        None => (false, expected, missing(from, &label), Some(from)),
    }
}
