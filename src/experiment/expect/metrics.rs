//! Judging figures over a window: calls that reached the target (the
//! counter proof) and the per-route figures (shares, counts, latency
//! percentiles, amplification).
//!
//! # Empty windows
//!
//! A share, a percentile or an amplification over zero requests cannot be
//! computed. Such an expectation fails ("no requests from route A while
//! inventory is open") — except with `<=` or `<`, where it holds vacuously:
//! an upper bound says "no more than", and nothing was seen. Counts
//! (`requests`, `timeouts`, `calls to`) are always computable: zero.

use crate::experiment::timeline::Timeline;

use super::ast::{Bound, LatencyStat, Metric, Name, PathGlob, Value, Window};
use super::tally::{CallTally, RouteTally, counts_hit};
use super::verdict::{
    Judgement, latency, latency_against, percent, percent_against, ratio, ratio_against, secs,
};
use super::window::{Intervals, contains, describe, resolve, total};

/// `>= 99.0%`, `within 5% of 600`.
pub(crate) fn show_bound(bound: Bound) -> String {
    match bound {
        Bound::Cmp(op, value) => format!("{} {}", op.symbol(), show_value(value)),
        Bound::Within { tolerance, of } => {
            format!("within {} of {}", percent_plain(tolerance), show_value(of))
        }
    }
}

/// A tolerance as written: `5%`, `2.5%`.
fn percent_plain(value: f64) -> String {
    format!("{}%", ratio(value))
}

fn show_value(value: Value) -> String {
    match value {
        Value::Percent(p) => percent(p),
        Value::Duration(d) => latency(d),
        Value::Count(n) => n.to_string(),
        Value::Number(x) => ratio(x),
    }
}

/// The hits `calls to GLOB` counts in `intervals`, from the whole timeline.
///
/// A call counts in an interval when it arrived in it and was issued after
/// it began: a call sent before a breaker opened (or at the very instant, as
/// the call whose failure opened it) may still be on its way when it opens,
/// and that is not a call let through while open. Calls without a known
/// request are judged by arrival alone.
pub(crate) fn tally_calls(
    timeline: &Timeline,
    glob: &PathGlob,
    instance: Option<&Name>,
    intervals: &Intervals,
) -> CallTally {
    let mut tally = CallTally::default();
    timeline.each_hit(&mut |h, sender| {
        let issued_in = intervals
            .iter()
            .any(|(a, b)| *a <= h.at && h.at < *b && sender.is_none_or(|s| s.sent > *a));
        if counts_hit(glob, instance, h) && issued_in {
            tally.add(h);
        }
    });
    tally
}

/// The requests of `route` sent in `intervals`, from the whole timeline.
pub(crate) fn tally_route(timeline: &Timeline, route: &Name, intervals: &Intervals) -> RouteTally {
    let mut tally = RouteTally::default();
    let counted = |route_of: &str, sent| route_of == route.text && contains(intervals, sent);
    timeline.each_request(&mut |r| {
        if counted(&r.route, r.sent) {
            tally.add(r);
        }
    });
    // Amplification: the target hits of these requests (a run streams the
    // same count as each request's `reached_dependency`).
    let mut reached = 0;
    timeline.each_hit(&mut |_, sender| {
        reached += u64::from(sender.is_some_and(|s| counted(&s.route, s.sent)));
    });
    tally.reached = reached;
    tally
}

/// `calls to GLOB [on instance I] [WINDOW] BOUND`, on the hits `tally`
/// counted.
pub(crate) fn calls(
    timeline: &Timeline,
    glob: &PathGlob,
    instance: Option<&Name>,
    window: &Window,
    bound: Bound,
    tally: &CallTally,
) -> Judgement {
    let where_ = describe(window);
    let to = match instance {
        Some(i) if glob.as_str() == "*" => format!("instance {i}"),
        Some(i) => format!("{} on instance {i}", glob.as_str()),
        None => glob.as_str().to_string(),
    };
    let expected = format!("calls to {to} {where_} {}", show_bound(bound));
    let intervals = match resolve(window, timeline) {
        Ok(i) => i,
        Err(seen) => return (false, expected, seen, None),
    };
    let passed = bound.holds(tally.count as f64);
    let seen = if tally.named.is_empty() {
        format!("0 calls to {to} {where_} ({})", span(&intervals))
    } else {
        format!(
            "{} to {to} {where_}: {}",
            plural(tally.count, "call"),
            named(tally)
        )
    };
    let at = tally
        .named
        .first()
        .map(|c| c.at)
        .or(intervals.first().map(|i| i.0));
    (passed, expected, seen, at)
}

/// The calls a tally names: `12.1s /inventory/1 (request 7), 12.6s
/// /inventory/2`, and how many more it counted.
fn named(tally: &CallTally) -> String {
    let mut names: Vec<String> = tally
        .named
        .iter()
        .map(|c| {
            let request = c
                .request_id
                .map(|id| format!(" (request {id})"))
                .unwrap_or_default();
            format!("{} {}{request}", secs(c.at), c.path)
        })
        .collect();
    let more = tally.count.saturating_sub(tally.named.len() as u64);
    if more > 0 {
        names.push(format!("and {more} more"));
    }
    names.join(", ")
}

/// `1 call`, `3 calls`.
fn plural(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// A figure and the words that explain it (`(612 of 998)`); `None` when it
/// cannot be computed over the requests.
pub(crate) type Figure = Option<(f64, String)>;

/// A share: `k` of `n` requests, shown with the digits that decide it
/// against `bound`.
pub(crate) fn share(k: u64, n: u64, bound: Bound) -> Figure {
    if n == 0 {
        return None;
    }
    let value = (k as f64 * 100.0) / n as f64;
    Some((
        value,
        format!("{} ({k} of {n})", percent_against(value, bound)),
    ))
}

/// A count: `k` of `n` requests.
pub(crate) fn count(k: u64, n: u64) -> Figure {
    Some((k as f64, format!("{k} (of {})", plural(n, "request"))))
}

/// A latency statistic of the requests that got a response: nearest rank
/// (the smallest latency at or above which `p`% of them lie), shown with
/// the digits that decide it against `bound`.
fn latency_stat(tally: &RouteTally, stat: LatencyStat, bound: Bound) -> Figure {
    let value = match stat {
        LatencyStat::Max => tally.latency_max()?,
        LatencyStat::Percentile(p) => tally.latency_percentile(p)?,
    };
    Some((
        value.as_secs_f64(),
        format!(
            "{} (of {} responses)",
            latency_against(value, bound),
            tally.responses()
        ),
    ))
}

/// Target hits carrying these requests' ids, per request, shown with the
/// digits that decide it against `bound`.
fn amplification(tally: &RouteTally, bound: Bound) -> Figure {
    if tally.requests == 0 {
        return None;
    }
    let value = tally.reached as f64 / tally.requests as f64;
    Some((
        value,
        format!(
            "{} ({} target hits for {} requests)",
            ratio_against(value, bound),
            tally.reached,
            tally.requests
        ),
    ))
}

/// `route R METRIC [WINDOW] BOUND`.
pub(crate) fn route(
    timeline: &Timeline,
    route: &Name,
    metric: Metric,
    window: &Window,
    bound: Bound,
    tally: &RouteTally,
) -> Judgement {
    let where_ = describe(window);
    let expected = format!("route {route} {metric} {where_} {}", show_bound(bound));
    let intervals = match resolve(window, timeline) {
        Ok(i) => i,
        Err(seen) => return (false, expected, seen, None),
    };
    let n = tally.requests;
    let figure = route_figure(metric, tally, bound);
    let at = intervals.first().map(|i| i.0);
    match figure {
        Some((value, shown)) => {
            let seen = format!("route {route} {metric} {shown} {where_}");
            (bound.holds(value), expected, seen, at)
        }
        None => {
            let nothing = format!("{} from route {route} {where_}", nothing(n));
            let (passed, seen) = uncomputable(&nothing, &metric.to_string(), &intervals, bound);
            (passed, expected, seen, at)
        }
    }
}

/// What a figure over a route's requests could not be computed for.
pub(crate) fn nothing(requests: u64) -> &'static str {
    if requests == 0 {
        "no requests"
    } else {
        "no responses"
    }
}

/// A route's figure over the requests `tally` counted (a latency in
/// seconds), shown with the digits that decide it against `bound`.
pub(crate) fn route_figure(metric: Metric, tally: &RouteTally, bound: Bound) -> Figure {
    let n = tally.requests;
    match metric {
        Metric::Success => share(tally.succeeded, n, bound),
        Metric::Errors => share(n - tally.succeeded, n, bound),
        Metric::Fallback(None) => share(tally.fallback(), n, bound),
        Metric::Fallback(Some(kind)) => {
            share(tally.fallbacks.get(&kind).copied().unwrap_or(0), n, bound)
        }
        Metric::Rejected => share(tally.rejected, n, bound),
        Metric::Timeouts => count(tally.timeouts, n),
        Metric::Requests => count(n, n),
        Metric::Latency(stat) => latency_stat(tally, stat, bound),
        Metric::Amplification => amplification(tally, bound),
        Metric::Grpc(code) => share(tally.grpc.get(&code).copied().unwrap_or(0), n, bound),
    }
}

/// A figure over nothing (`nothing` says what was missing where): it
/// fails, except under an upper bound, where it holds vacuously.
pub(crate) fn uncomputable(
    nothing: &str,
    figure: &str,
    intervals: &Intervals,
    bound: Bound,
) -> (bool, String) {
    let mut seen = format!(
        "{nothing} ({}): {figure} cannot be computed",
        span(intervals)
    );
    if bound.is_upper() {
        seen.push_str(&format!(" (holds vacuously for {})", show_bound(bound)));
    }
    (bound.is_upper(), seen)
}

/// `20s in 1 interval`, `7s in 2 intervals`.
fn span(intervals: &Intervals) -> String {
    format!(
        "{} in {} interval{}",
        secs(total(intervals)),
        intervals.len(),
        if intervals.len() == 1 { "" } else { "s" }
    )
}
