//! Judging the pool sentences: when a server was ejected or came back, that
//! it never was, a server's share of its pool's calls, and the share a
//! backup answered.

use crate::clock::Duration;
use crate::experiment::timeline::Timeline;

use super::ast::{Anchor, Bound, PoolRule, Server, Window};
use super::metrics::{share, show_bound, uncomputable};
use super::tally::{PoolTally, ShareTally};
use super::verdict::{Judgement, list_times, secs, times};
use super::window::{Intervals, contains, describe, health_of, resolve, within_of};

/// Judges a pool sentence; `tally` holds the pool calls its window counted.
pub(crate) fn judge(timeline: &Timeline, rule: &PoolRule, tally: &ShareTally) -> Judgement {
    match rule {
        PoolRule::Health {
            server,
            healthy,
            within,
            anchor,
        } => health(timeline, server, *healthy, *within, anchor),
        PoolRule::NeverEjected { server, window } => never_ejected(timeline, server, window),
        PoolRule::Share {
            server,
            window,
            bound,
        } => {
            let expected = format!("{server} share {} {}", describe(window), show_bound(*bound));
            let pool = pool_of(timeline, server, tally);
            let calls = pool.and_then(|p| tally.pools.get(p));
            let answered = |t: &PoolTally| t.servers.get(&server.name.text).copied().unwrap_or(0);
            let label = format!("{server} answered");
            figure(timeline, window, *bound, expected, &label, calls, answered)
        }
        PoolRule::Backup {
            pool,
            window,
            bound,
        } => {
            let expected = format!(
                "pool {pool} served by backup {} {}",
                describe(window),
                show_bound(*bound)
            );
            let calls = tally.pools.get(&pool.text);
            let label = format!("backups of {pool} answered");
            figure(timeline, window, *bound, expected, &label, calls, |t| {
                t.backup
            })
        }
    }
}

/// The calls `PoolRule::Share` / `Backup` count: the requests a pool
/// server answered that the pool routed in `intervals` (by the time it
/// chose the server, the clock its health changes are stamped on: a
/// request sent just before a server came back may be routed to it just
/// after), from the whole timeline.
pub(crate) fn tally_shares(timeline: &Timeline, intervals: &Intervals) -> ShareTally {
    let mut tally = ShareTally::default();
    timeline.each_request(&mut |r| {
        if r.served_by
            .as_ref()
            .is_some_and(|by| contains(intervals, by.picked))
        {
            tally.add(r);
        }
    });
    tally
}

/// The pool a server belongs to: the one written, else the pool of the run
/// that has a server of that name, else one whose calls it answered.
fn pool_of<'a>(
    timeline: &'a Timeline,
    server: &'a Server,
    tally: &'a ShareTally,
) -> Option<&'a str> {
    if let Some(pool) = &server.pool {
        return Some(&pool.text);
    }
    let name = &server.name.text;
    timeline
        .pools
        .iter()
        .find(|p| p.servers.iter().any(|(s, _)| s == name))
        .map(|p| p.name.as_str())
        .or_else(|| {
            tally
                .pools
                .iter()
                .find(|(_, t)| t.servers.contains_key(name))
                .map(|(p, _)| p.as_str())
        })
}

/// A share of a pool's calls in a window: `part` of them, judged against
/// `bound` (holding vacuously over no calls for an upper bound).
fn figure(
    timeline: &Timeline,
    window: &Window,
    bound: Bound,
    expected: String,
    label: &str,
    calls: Option<&PoolTally>,
    part: impl Fn(&PoolTally) -> u64,
) -> Judgement {
    let where_ = describe(window);
    let intervals = match resolve(window, timeline) {
        Ok(i) => i,
        Err(seen) => return (false, expected, seen, None),
    };
    let at = intervals.first().map(|i| i.0);
    let figure = calls.and_then(|t| share(part(t), t.served, bound));
    match figure {
        Some((value, shown)) => {
            let seen = format!("{label} {shown} of the pool's calls {where_}");
            (bound.holds(value), expected, seen, at)
        }
        None => {
            let nothing = format!("no calls answered by the pool {where_}");
            let (passed, seen) = uncomputable(&nothing, "the share", &intervals, bound);
            (passed, expected, seen, at)
        }
    }
}

/// `ejected` or `back in rotation`.
fn change(healthy: bool) -> &'static str {
    if healthy {
        "back in rotation"
    } else {
        "ejected"
    }
}

fn health(
    timeline: &Timeline,
    server: &Server,
    healthy: bool,
    within: Duration,
    anchor: &Anchor,
) -> Judgement {
    let what = change(healthy);
    let first = |from| {
        health_of(timeline, server)
            .find(|h| h.healthy == healthy && h.at >= from)
            .map(|h| (h.at, format!(" ({})", h.by)))
    };
    let missing = |from, label: &str| {
        format!(
            "not {what} at or after {label} ({}); the run ended at {}",
            secs(from),
            secs(timeline.duration)
        )
    };
    let subject = format!("{server} {what}");
    within_of(timeline, anchor, within, (&subject, what), first, missing)
}

fn never_ejected(timeline: &Timeline, server: &Server, window: &Window) -> Judgement {
    let where_ = describe(window);
    let expected = format!("{server} never ejected {where_}");
    let intervals = match resolve(window, timeline) {
        Ok(i) => i,
        Err(seen) => return (false, expected, seen, None),
    };
    let ejections: Vec<Duration> = health_of(timeline, server)
        .filter(|h| !h.healthy && contains(&intervals, h.at))
        .map(|h| h.at)
        .collect();
    if ejections.is_empty() {
        let seen = format!("ejected 0 times {where_}");
        return (true, expected, seen, intervals.first().map(|i| i.0));
    }
    let seen = format!(
        "ejected {} {where_}: at {}",
        times(ejections.len()),
        list_times(&ejections, 8)
    );
    (false, expected, seen, ejections.first().copied())
}
