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

use std::collections::BTreeSet;

use crate::experiment::timeline::{RequestRecord, Timeline};

use super::ast::{Bound, LatencyStat, Metric, Name, PathGlob, Value, Window};
use super::eval::Judgement;
use super::verdict::{latency, percent, ratio, secs};
use super::window::{contains, describe, resolve, total};

/// `>= 99.0%`, `within 5% of 600`.
fn show_bound(bound: Bound) -> String {
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

/// `calls to GLOB [WINDOW] BOUND`.
pub(crate) fn calls(
    timeline: &Timeline,
    glob: &PathGlob,
    window: &Window,
    bound: Bound,
) -> Judgement {
    let where_ = describe(window);
    let expected = format!("calls to {} {where_} {}", glob.as_str(), show_bound(bound));
    let intervals = match resolve(window, timeline) {
        Ok(i) => i,
        Err(seen) => return (false, expected, seen, None),
    };
    // A call counts in an interval when it arrived in it and was issued
    // after it began: a call sent before a breaker opened (or at the very
    // instant, as the call whose failure opened it) may still be on its way
    // when it opens, and that is not a call let through while open. Calls
    // without a known request are judged by arrival alone.
    let sent: std::collections::BTreeMap<u64, crate::clock::Duration> =
        timeline.requests.iter().map(|r| (r.id, r.sent)).collect();
    let issued_in = |at: crate::clock::Duration, id: Option<u64>| {
        intervals.iter().any(|(a, b)| {
            *a <= at && at < *b && id.and_then(|id| sent.get(&id)).is_none_or(|s| *s > *a)
        })
    };
    let hits: Vec<_> = timeline
        .target_hits
        .iter()
        .filter(|h| glob.is_match(&h.path) && issued_in(h.at, h.request_id))
        .collect();
    let passed = bound.holds(hits.len() as f64);
    let seen = match hits.first() {
        Some(first) => {
            let request = first
                .request_id
                .map(|id| format!(" (request {id})"))
                .unwrap_or_default();
            format!(
                "{} to {} {where_}: first at {}{request}",
                plural(hits.len(), "call"),
                glob.as_str(),
                secs(first.at)
            )
        }
        None => format!(
            "0 calls to {} {where_} ({} in {} interval{})",
            glob.as_str(),
            secs(total(&intervals)),
            intervals.len(),
            if intervals.len() == 1 { "" } else { "s" }
        ),
    };
    let at = hits
        .first()
        .map(|h| h.at)
        .or(intervals.first().map(|i| i.0));
    (passed, expected, seen, at)
}

/// `1 call`, `3 calls`.
fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// A figure and the words that explain it (`(612 of 998)`); `None` when it
/// cannot be computed over the requests.
type Figure = Option<(f64, String)>;

/// A share of `requests` satisfying `pick`.
fn share(requests: &[&RequestRecord], pick: impl Fn(&RequestRecord) -> bool) -> Figure {
    if requests.is_empty() {
        return None;
    }
    let k = requests.iter().filter(|r| pick(r)).count();
    let value = (k as f64 * 100.0) / requests.len() as f64;
    Some((
        value,
        format!("{} ({k} of {})", percent(value), requests.len()),
    ))
}

/// A count of `requests` satisfying `pick`.
fn count(requests: &[&RequestRecord], pick: impl Fn(&RequestRecord) -> bool) -> Figure {
    let k = requests.iter().filter(|r| pick(r)).count();
    Some((
        k as f64,
        format!("{k} (of {})", plural(requests.len(), "request")),
    ))
}

/// A latency statistic of the requests that got a response: nearest rank
/// (the smallest latency at or above which `p`% of them lie).
fn latency_stat(requests: &[&RequestRecord], stat: LatencyStat) -> Figure {
    let mut latencies: Vec<_> = requests.iter().filter_map(|r| r.latency).collect();
    latencies.sort();
    let n = latencies.len();
    let rank = match stat {
        _ if n == 0 => return None,
        LatencyStat::Max => n,
        LatencyStat::Percentile(p) => ((p / 100.0 * n as f64).ceil() as usize).clamp(1, n),
    };
    let value = latencies[rank - 1];
    Some((
        value.as_secs_f64(),
        format!("{} (of {n} responses)", latency(value)),
    ))
}

/// Target hits carrying these requests' ids, per request.
fn amplification(timeline: &Timeline, requests: &[&RequestRecord]) -> Figure {
    if requests.is_empty() {
        return None;
    }
    let ids: BTreeSet<u64> = requests.iter().map(|r| r.id).collect();
    let hits = timeline
        .target_hits
        .iter()
        .filter(|h| h.request_id.is_some_and(|id| ids.contains(&id)))
        .count();
    let value = hits as f64 / requests.len() as f64;
    Some((
        value,
        format!(
            "{} ({hits} target hits for {} requests)",
            ratio(value),
            requests.len()
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
) -> Judgement {
    let where_ = describe(window);
    let expected = format!("route {route} {metric} {where_} {}", show_bound(bound));
    let intervals = match resolve(window, timeline) {
        Ok(i) => i,
        Err(seen) => return (false, expected, seen, None),
    };
    let requests: Vec<&RequestRecord> = timeline
        .requests
        .iter()
        .filter(|r| r.route == route.text && contains(&intervals, r.sent))
        .collect();
    let figure = match metric {
        Metric::Success => share(&requests, RequestRecord::succeeded),
        Metric::Errors => share(&requests, |r| !r.succeeded()),
        Metric::Fallback(None) => share(&requests, |r| r.fallback.is_some()),
        Metric::Fallback(Some(kind)) => share(&requests, |r| r.fallback == Some(kind)),
        Metric::Rejected => share(&requests, |r| r.rejected_by.is_some()),
        Metric::Timeouts => count(&requests, RequestRecord::timed_out),
        Metric::Requests => count(&requests, |_| true),
        Metric::Latency(stat) => latency_stat(&requests, stat),
        Metric::Amplification => amplification(timeline, &requests),
    };
    let at = intervals.first().map(|i| i.0);
    match figure {
        Some((value, shown)) => {
            let seen = format!("route {route} {metric} {shown} {where_}");
            (bound.holds(value), expected, seen, at)
        }
        None => {
            let what = if requests.is_empty() {
                "no requests"
            } else {
                "no responses"
            };
            let mut seen = format!(
                "{what} from route {route} {where_} ({} in {} interval{}): {metric} cannot be computed",
                secs(total(&intervals)),
                intervals.len(),
                if intervals.len() == 1 { "" } else { "s" }
            );
            if bound.is_upper() {
                seen.push_str(&format!(" (holds vacuously for {})", show_bound(bound)));
            }
            (bound.is_upper(), expected, seen, at)
        }
    }
}
