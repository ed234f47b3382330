//! Judging the breaker expectations on a timeline: sequences, timing, the
//! wait in open, counts and absence, staying in a state.

use crate::clock::Duration;
use crate::defense::breaker::{State, Transition};
use crate::experiment::timeline::Timeline;

use super::ast::{Anchor, CountBound, Event, Expectation, Name, PoolRule, Rule, Wait, Window};
use super::tally::{CallTally, RouteTally, ShareTally, Tally};
use super::verdict::{Judgement, Verdict, latency, list_times, secs, times};
use super::window::{anchor_time, contains, counted, describe, resolve, state_at, within_of};

/// Judges `expectation` on `timeline`, counting its requests and target
/// hits there.
pub fn evaluate(expectation: &Expectation, timeline: &Timeline) -> Verdict {
    evaluate_tallied(expectation, timeline, &tally(expectation, timeline))
}

/// What `expectation` counts of the requests and target hits `timeline`
/// keeps (the reference a run's streamed tallies must equal).
pub fn tally(expectation: &Expectation, timeline: &Timeline) -> Tally {
    let Some(window) = expectation.rule.counted_window() else {
        return Tally::None;
    };
    let intervals = counted(window, timeline).unwrap_or_default();
    match &expectation.rule {
        Rule::Calls { glob, instance, .. } => Tally::Calls(super::metrics::tally_calls(
            timeline,
            glob,
            instance.as_ref(),
            &intervals,
        )),
        rule if let Some((route, _)) = rule.counted_route() => {
            Tally::Route(super::metrics::tally_route(timeline, route, &intervals))
        }
        Rule::Pool(_) => Tally::Share(super::pool::tally_shares(timeline, &intervals)),
        _ => Tally::None,
    }
}

/// Judges `expectation` on `timeline`, with what it counts of the requests
/// already in `tally` (a run that kept no request counted as they came).
pub fn evaluate_tallied(expectation: &Expectation, timeline: &Timeline, tally: &Tally) -> Verdict {
    let empty_route = RouteTally::default();
    let empty_calls = CallTally::default();
    let route_tally = match tally {
        Tally::Route(t) => t,
        _ => &empty_route,
    };
    let calls_tally = match tally {
        Tally::Calls(t) => t,
        _ => &empty_calls,
    };
    let empty_shares = ShareTally::default();
    let share_tally = match tally {
        Tally::Share(t) => t,
        _ => &empty_shares,
    };
    let (passed, expected, seen, at) = match &expectation.rule {
        Rule::Regress(regress) => {
            return super::regress::judge(expectation, regress, timeline, route_tally);
        }
        Rule::Sequence {
            breaker,
            states,
            exact,
        } => sequence(timeline, breaker, states, *exact),
        Rule::Reaches {
            breaker,
            event,
            within,
            anchor,
        } => reaches(timeline, breaker, *event, *within, anchor),
        Rule::WaitInOpen {
            breaker,
            wait,
            tolerance,
        } => wait_in_open(timeline, breaker, *wait, *tolerance),
        Rule::Count {
            breaker,
            event,
            bound,
            window,
        } => count(timeline, breaker, *event, *bound, window),
        Rule::Stays {
            breaker,
            state,
            window,
        } => stays(timeline, breaker, *state, window),
        Rule::Calls {
            glob,
            instance,
            window,
            bound,
        } => super::metrics::calls(
            timeline,
            glob,
            instance.as_ref(),
            window,
            *bound,
            calls_tally,
        ),
        Rule::Route {
            route,
            metric,
            window,
            bound,
        } => super::metrics::route(timeline, route, *metric, window, *bound, route_tally),
        Rule::Pool(rule) => super::pool::judge(timeline, rule, share_tally),
        // Judged by Prometheus once the run is over; a run that never got
        // that far (or a virtual one) has nothing to judge it on.
        Rule::Query(q) => (
            false,
            format!(
                "query {} {} {}",
                q.measure.query,
                q.measure.aggregate.words(),
                q.bound_text()
            ),
            "not queried: only a real-time run asks Prometheus".to_string(),
            None,
        ),
    };
    Verdict {
        expectation: expectation.text.clone(),
        passed,
        expected,
        seen,
        at,
        judged: judged(&expectation.rule, timeline),
        not_judged: None,
        figure: super::regress::figure_of(&expectation.rule, timeline, route_tally, calls_tally),
        figure_key: None,
        awaits_history: false,
        baseline: None,
        baseline_runs: Vec::new(),
        seeds_baseline: false,
        inconclusive: None,
        limit: None,
        unit: None,
    }
}

/// The part of the run `rule` looked at: its window, the span from an
/// anchor to its deadline, or the whole run.
fn judged(rule: &Rule, timeline: &Timeline) -> Vec<(Duration, Duration)> {
    let window = match rule {
        Rule::Count { window, .. }
        | Rule::Stays { window, .. }
        | Rule::Calls { window, .. }
        | Rule::Route { window, .. }
        | Rule::Pool(PoolRule::NeverEjected { window, .. })
        | Rule::Pool(PoolRule::Share { window, .. })
        | Rule::Pool(PoolRule::Backup { window, .. }) => window,
        Rule::Pool(PoolRule::Health { within, anchor, .. }) => {
            return span_after(timeline, anchor, *within);
        }
        Rule::Reaches { within, anchor, .. } => return span_after(timeline, anchor, *within),
        Rule::Query(q) => return q.measure.window.resolve(timeline).unwrap_or_default(),
        Rule::Sequence { .. } | Rule::WaitInOpen { .. } | Rule::Regress(_) => &Window::Run,
    };
    resolve(window, timeline).unwrap_or_default()
}

/// From an anchor to `within` after it, clipped to the run.
fn span_after(timeline: &Timeline, anchor: &Anchor, within: Duration) -> Vec<(Duration, Duration)> {
    anchor_time(timeline, anchor)
        .map(|(from, _)| (from, (from + within).min(timeline.duration)))
        .into_iter()
        .filter(|(a, b)| a < b)
        .collect()
}

/// The transitions of one breaker, in order, up to the end of the run: a
/// call still in flight at the end may move a breaker afterwards; such a
/// transition is in the journal (marked after the end) but never judged.
fn of<'a>(timeline: &'a Timeline, breaker: &Name) -> impl Iterator<Item = &'a Transition> {
    timeline
        .transitions
        .iter()
        .filter(move |t| t.breaker == breaker.text && t.at < timeline.duration)
}

/// `closed -> open -> ...`, at most `limit` states, then `... (N in all)`.
fn arrows(states: &[State], limit: usize) -> String {
    let mut text = states
        .iter()
        .take(limit)
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(" -> ");
    if states.len() > limit {
        text.push_str(&format!(" -> ... ({} states in all)", states.len()));
    }
    text
}

fn sequence(timeline: &Timeline, breaker: &Name, want: &[State], exact: bool) -> Judgement {
    let steps: Vec<&Transition> = of(timeline, breaker).collect();
    let visited: Vec<State> = std::iter::once(State::Closed)
        .chain(steps.iter().map(|t| t.to))
        .collect();
    // The time at which visited[i] was entered (None for the initial closed).
    let entered = |i: usize| i.checked_sub(1).map(|j| steps[j].at);
    let expected = format!(
        "{}{}",
        if exact { "" } else { "through " },
        arrows(want, usize::MAX)
    );
    let shown = arrows(&visited, 16);
    if exact {
        let diverges = visited
            .iter()
            .zip(want)
            .position(|(a, b)| a != b)
            .unwrap_or(visited.len().min(want.len()));
        if diverges == visited.len() && diverges == want.len() {
            let at = entered(visited.len() - 1);
            return (true, expected, shown, at);
        }
        let seen = match (visited.get(diverges), want.get(diverges)) {
            (Some(got), _) => format!(
                "{shown}; went {got} at {} where {} was expected",
                secs(entered(diverges).unwrap_or_default()),
                want.get(diverges)
                    .map_or("no further transition".to_string(), |s| s.to_string())
            ),
            (None, _) => format!(
                "{shown}; stayed {} to the end ({}) without reaching {}",
                visited[visited.len() - 1],
                secs(timeline.duration),
                want[diverges]
            ),
        };
        let at = entered(diverges.min(visited.len() - 1));
        return (false, expected, seen, at);
    }
    let mut matched = 0;
    let mut last = None;
    for (i, state) in visited.iter().enumerate() {
        if matched < want.len() && *state == want[matched] {
            matched += 1;
            last = entered(i);
        }
    }
    if matched == want.len() {
        (true, expected, shown, last)
    } else {
        let seen = format!(
            "{shown}; never reached {} after {}",
            want[matched],
            arrows(&want[..matched], usize::MAX).if_empty("the start")
        );
        (false, expected, seen, last)
    }
}

/// A string, or `other` when it is empty.
trait IfEmpty {
    fn if_empty(self, other: &str) -> String;
}

impl IfEmpty for String {
    fn if_empty(self, other: &str) -> String {
        if self.is_empty() {
            other.to_string()
        } else {
            self
        }
    }
}

fn reaches(
    timeline: &Timeline,
    breaker: &Name,
    event: Event,
    within: Duration,
    anchor: &Anchor,
) -> Judgement {
    let target = event.state();
    let word = target.to_string();
    let first = |from| {
        of(timeline, breaker)
            .find(|t| t.to == target && t.at >= from)
            .map(|t| (t.at, String::new()))
    };
    let missing = |from, label: &str| {
        format!(
            "no transition to {target} at or after {label} ({}); the breaker was {} then and \
             the run ended at {}",
            secs(from),
            state_at(timeline, &breaker.text, from),
            secs(timeline.duration)
        )
    };
    within_of(timeline, anchor, within, (&word, &word), first, missing)
}

fn wait_in_open(timeline: &Timeline, breaker: &Name, wait: Wait, tolerance: Duration) -> Judgement {
    let configured = timeline.breakers.iter().find(|b| b.name == breaker.text);
    let (wait, label) = match (wait, configured) {
        (Wait::Fixed(d), _) => (d, latency(d)),
        (Wait::Configured, Some(b)) => (
            b.wait_in_open,
            format!("wait_in_open {}", latency(b.wait_in_open)),
        ),
        (Wait::Configured, None) => {
            let seen = format!("the run has no breaker named \"{breaker}\"");
            return (false, "wait_in_open".to_string(), seen, None);
        }
    };
    let expected = format!(
        "every open -> half_open after {label} ± {}",
        latency(tolerance)
    );
    let mut opened_at = None;
    let mut gaps = Vec::new();
    for t in of(timeline, breaker) {
        if t.to == State::Open {
            opened_at = Some(t.at);
        } else if t.from == State::Open && t.to == State::HalfOpen {
            let Some(open) = opened_at else { continue };
            let gap = t.at - open;
            let off = gap.abs_diff(wait);
            if off > tolerance {
                let seen = format!(
                    "half_open at {}, {} after opening at {}",
                    secs(t.at),
                    latency(gap),
                    secs(open)
                );
                return (false, expected, seen, Some(t.at));
            }
            gaps.push(gap);
        }
    }
    match (gaps.iter().min(), gaps.iter().max()) {
        (Some(lo), Some(hi)) => {
            let seen = format!(
                "{} from open to half_open, gaps {} to {}",
                times(gaps.len()),
                latency(*lo),
                latency(*hi)
            );
            (true, expected, seen, None)
        }
        _ => {
            let seen = match opened_at {
                Some(open) => format!(
                    "opened at {} and never half-opened before the run ended at {}",
                    secs(open),
                    secs(timeline.duration)
                ),
                None => "never opened, so never half-opened".to_string(),
            };
            (false, expected, seen, opened_at)
        }
    }
}

fn count(
    timeline: &Timeline,
    breaker: &Name,
    event: Event,
    bound: CountBound,
    window: &Window,
) -> Judgement {
    let where_ = describe(window);
    let expected = match bound {
        CountBound::AtMost(0) => format!("never {} {where_}", event.verb()),
        CountBound::AtMost(n) => format!("{} at most {} {where_}", event.verb(), times(n as usize)),
        CountBound::AtLeast(n) => {
            format!("{} at least {} {where_}", event.verb(), times(n as usize))
        }
        CountBound::Exactly(n) => {
            format!("{} exactly {} {where_}", event.verb(), times(n as usize))
        }
    };
    let intervals = match resolve(window, timeline) {
        Ok(i) => i,
        Err(seen) => return (false, expected, seen, None),
    };
    let hits: Vec<Duration> = of(timeline, breaker)
        .filter(|t| t.to == event.state() && contains(&intervals, t.at))
        .map(|t| t.at)
        .collect();
    let passed = bound.holds(hits.len());
    let seen = if hits.is_empty() {
        format!("{} 0 times {where_}", event.past())
    } else {
        format!(
            "{} {} {where_}: at {}",
            event.past(),
            times(hits.len()),
            list_times(&hits, 8)
        )
    };
    // Where to look: the first transition beyond an upper bound, else the
    // first transition or the window's start.
    let at = match bound {
        CountBound::AtMost(n) | CountBound::Exactly(n) if hits.len() > n as usize => {
            Some(hits[n as usize])
        }
        _ => hits.first().copied().or(intervals.first().map(|i| i.0)),
    };
    (passed, expected, seen, at)
}

fn stays(timeline: &Timeline, breaker: &Name, state: State, window: &Window) -> Judgement {
    let where_ = describe(window);
    let expected = format!("{state} throughout, {where_}");
    let intervals = match resolve(window, timeline) {
        Ok(i) => i,
        Err(seen) => return (false, expected, seen, None),
    };
    if intervals.is_empty() {
        let seen = format!("nothing to judge: no time {where_} (holds vacuously)");
        return (true, expected, seen, None);
    }
    for (start, end) in &intervals {
        let at_start = state_at(timeline, &breaker.text, *start);
        if at_start != state {
            let seen = format!("{at_start} at {} {where_}", secs(*start));
            return (false, expected, seen, Some(*start));
        }
        if let Some(t) = of(timeline, breaker).find(|t| t.at > *start && t.at < *end) {
            let seen = format!("left {state} at {} (to {}) {where_}", secs(t.at), t.to);
            return (false, expected, seen, Some(t.at));
        }
    }
    let seen = format!("{state} throughout, {where_}");
    (true, expected, seen, intervals.first().map(|i| i.0))
}
