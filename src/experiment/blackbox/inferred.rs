//! A user's service's breakers, inferred from one run: for each declared
//! breaker, the requests sent on its routes and the calls that reached its
//! dependency. With firedrill's own load both sides are read
//! ([`super::caller`]: short-circuits, trials and their outcomes); with
//! outside traffic only the arrivals ([`super::infer`]).

use super::caller::{Call, CallerParams, DEFAULT_MIN_SHORT_CIRCUITS, Step, walk};
use super::evidence::{Asked, ONE_SIDE, OnRoute, Quality, answered, call, gather_streamed};
use super::infer::count as plural;
use super::infer::{InferParams, InferredTransition, Sends, infer_sorted};
use super::stream::{Failed, sorted, sorted_twice};
use crate::clock::Duration;
use crate::defense::breaker::State;
use crate::defense::breaker::journal::{Reason, Transition};
use crate::experiment::config::{InferredBreaker, LoadRoute, SystemSpec};
use crate::experiment::expect::verdict::secs;
use crate::experiment::timeline::{BreakerInfo, RequestRecord};
use crate::fault::plan::Arrival;
use crate::proxy::record::Record;
use crate::spill::{Replay, Spill};

/// What one dependency proxy of the run saw.
#[derive(Clone, Copy)]
pub struct Seen<'a> {
    /// The dependency's name.
    pub name: &'a str,
    /// Every arrival its fault plan recorded, in order.
    pub arrivals: &'a dyn Replay<Arrival>,
    /// Its records: every call with its outcome, in the order they ended.
    pub records: &'a dyn Replay<Record>,
    /// What its agent lost of the records (dropped, or not read), if
    /// anything.
    pub lost: Option<&'a str>,
}

impl std::fmt::Debug for Seen<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Seen")
            .field("name", &self.name)
            .field("lost", &self.lost)
            .finish_non_exhaustive()
    }
}

/// The service's breakers as inferred from the run: their transitions, in
/// the journal's form (reason `inferred`, with the evidence), what
/// expectations need to know of each, and the first error of the spills the
/// inference sorts its lists in (what was inferred after it may miss
/// items). The lists are read in passes, on disk between them: what stays
/// in memory is one breaker's transitions and contradictions, the requests
/// in flight at once and a sort's run.
pub fn breakers(
    system: &SystemSpec,
    load: &[LoadRoute],
    requests: &dyn Replay<RequestRecord>,
    dependencies: &[Seen<'_>],
    duration: Duration,
) -> (Vec<Transition>, Vec<BreakerInfo>, Option<std::io::Error>) {
    let mut failed = Failed::default();
    // Every request by id (of one id, as they came), as the inference
    // reads it.
    let mut by_id = Spill::new();
    let (mut seq, mut last, mut in_order) = (0u64, None, true);
    requests.replay(&mut |r| {
        in_order &= last.is_none_or(|last| last <= r.id);
        last = Some(r.id);
        by_id.push(&Sent {
            seq,
            id: r.id,
            route: r.route,
            sent: r.sent,
            answered: answered(r.sent, r.latency, duration),
        });
        seq += 1;
    });
    if !in_order {
        by_id = sorted(by_id, |a: &Sent, b| a.id.cmp(&b.id), &mut failed);
    }
    let mut transitions = Vec::new();
    let mut infos = Vec::new();
    for (name, breaker) in &system.breakers {
        let (inferred, confidence, mut quality) = infer_one(
            breaker,
            load,
            &mut by_id,
            dependencies,
            duration,
            &mut failed,
        );
        if let Some(q) = &mut quality {
            q.ids_expected |= system.correlation_declared || breaker.via.is_some();
            let lost: Vec<&str> = dependencies
                .iter()
                .filter(|d| d.name == breaker.dependency || Some(d.name) == breaker.via.as_deref())
                .filter_map(|d| d.lost)
                .collect();
            q.lost = (!lost.is_empty()).then(|| lost.join("; "));
        }
        for t in inferred {
            transitions.push(Transition {
                at: t.at,
                breaker: name.clone(),
                from: t.from,
                to: t.to,
                reason: Reason::Inferred {
                    evidence: t.reason,
                    arrivals: t.arrivals,
                    sends: t.sends,
                    confidence,
                    proven: t.proven,
                },
            });
        }
        infos.push(BreakerInfo {
            name: name.clone(),
            wait_in_open: breaker.wait_in_open.unwrap_or_default(),
            path_glob: breaker
                .path
                .as_ref()
                .and_then(|m| m.path_glob())
                .map(str::to_string),
            evidence: quality,
        });
    }
    failed.spill(&by_id);
    (transitions, infos, failed.0)
}

/// A request as the inference reads it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Sent {
    /// Its place among the requests as they came.
    seq: u64,
    /// Its id.
    id: u64,
    /// The load route that sent it.
    route: String,
    /// When it was sent.
    sent: Duration,
    /// When it was answered, if before the end of the run.
    answered: Option<Duration>,
}

/// One breaker's transitions, and how confident they are: from both sides
/// with firedrill's own load and the dependency's records, from the
/// dependency's side alone otherwise. `requests`: every request, by id.
fn infer_one(
    breaker: &InferredBreaker,
    load: &[LoadRoute],
    requests: &mut Spill<Sent>,
    dependencies: &[Seen<'_>],
    duration: Duration,
    failed: &mut Failed,
) -> (Vec<InferredTransition>, &'static str, Option<Quality>) {
    let uses = |route: &str| breaker.routes.is_empty() || breaker.routes.iter().any(|r| r == route);
    let (mut asked, on_routes) = asked(breaker, requests, dependencies, failed);
    let on_path = |path: &str| {
        breaker
            .path
            .as_ref()
            .is_none_or(|m| m.matches(&http::Method::GET, path, &http::HeaderMap::new()))
    };
    let seen: Vec<&Seen<'_>> = dependencies
        .iter()
        .filter(|d| d.name == breaker.dependency)
        .collect();
    let arrivals = |take: &mut dyn FnMut(Duration)| {
        for d in &seen {
            d.arrivals.replay(&mut |a| {
                if on_path(&a.path) && a.at <= duration {
                    take(a.at);
                }
            });
        }
    };
    let rate: f64 = load.iter().filter(|l| uses(&l.name)).map(|l| l.rate).sum();
    let mut params = InferParams::for_rate(if rate > 0.0 {
        rate
    } else {
        let mut count = 0;
        arrivals(&mut |_| count += 1);
        observed_rate(count, duration)
    });
    if let Some(gap) = breaker.gap {
        params.gap = gap;
    }
    params.probes = breaker.probes;
    let mut calls = Spill::new();
    for d in &seen {
        d.records.replay(&mut |r| {
            if on_path(&r.path) && r.at_ms <= duration.as_secs_f64() * 1000.0 {
                calls.push(&call(&r, duration));
            }
        });
    }
    if calls.is_empty() {
        let mut sends = Spill::new();
        asked.read_each(|a| {
            if let Some(r) = a.route {
                sends.push(&r.sent);
            }
        });
        failed.spill(&asked);
        let mut times = Spill::new();
        arrivals(&mut |at| times.push(&at));
        let arrivals = sorted(times, Ord::cmp, failed);
        (
            arrivals_only(sends, arrivals, &params, failed),
            ONE_SIDE,
            None,
        )
    } else if on_routes == 0 {
        // Outside traffic: what the caller got is not seen (and no answer
        // ends a call the service gave up on).
        let mut ends = Spill::new();
        calls.read_each(|c| ends.push(&(c.at, c.ended)));
        failed.spill(&calls);
        let mut ends = sorted(ends, Ord::cmp, failed).into_reader();
        let none = Sends {
            count: 0,
            last: None,
            after: std::iter::empty(),
            before: std::iter::empty(),
        };
        let found = infer_sorted(none, &mut ends, &params);
        failed.reader(&mut ends);
        (found, ONE_SIDE, None)
    } else {
        from_both_sides(breaker, &params, calls, &mut asked, failed)
    }
}

/// The requests by id (`requests`), marked when they had a chance to use
/// `breaker`: on its routes (and past the proxy in front of it); and how
/// many did.
fn asked(
    breaker: &InferredBreaker,
    requests: &mut Spill<Sent>,
    dependencies: &[Seen<'_>],
    failed: &mut Failed,
) -> (Spill<Asked>, u64) {
    let uses = |route: &str| breaker.routes.is_empty() || breaker.routes.iter().any(|r| r == route);
    // A breaker deeper in the system: the requests the proxy in front of
    // it passed on (one a fault answered there never reached the service),
    // by id.
    let mut reached = breaker.via.as_ref().map(|via| {
        let mut ids = Spill::new();
        for d in dependencies.iter().filter(|d| d.name == via) {
            d.records.replay(&mut |r| {
                if let Some(id) = r.request_id.filter(|_| r.reached_upstream) {
                    ids.push(&id);
                }
            });
        }
        sorted(ids, u64::cmp, failed).into_reader()
    });
    let mut asked = Spill::new();
    let mut on_routes = 0u64;
    {
        let mut reached = reached.as_mut().map(Iterator::peekable);
        requests.read_each(|r| {
            let passed = reached.as_mut().is_none_or(|ids| {
                while ids.next_if(|id| *id < r.id).is_some() {}
                ids.peek() == Some(&r.id)
            });
            let chance = uses(&r.route) && passed;
            on_routes += u64::from(chance);
            asked.push(&Asked {
                id: r.id,
                held: true,
                route: chance.then_some(OnRoute {
                    seq: r.seq,
                    sent: r.sent,
                    answered: r.answered,
                }),
            });
        });
    }
    failed.spill(requests);
    if let Some(ids) = &mut reached {
        failed.reader(ids);
    }
    (asked, on_routes)
}

/// The transitions of `breaker` read from both sides: its `calls` (as
/// the records came) and the requests `asked`.
fn from_both_sides(
    breaker: &InferredBreaker,
    params: &InferParams,
    calls: Spill<Call>,
    asked: &mut Spill<Asked>,
    failed: &mut Failed,
) -> (Vec<InferredTransition>, &'static str, Option<Quality>) {
    let caller = CallerParams {
        wait_in_open: breaker.wait_in_open,
        gap: params.gap,
        probes: breaker.probes,
        min_short_circuits: DEFAULT_MIN_SHORT_CIRCUITS,
    };
    let mut evidence = gather_streamed(calls, asked, failed);
    let mut steps = Spill::new();
    let mut index = 0;
    evidence.calls(failed, &mut |c| {
        Step::of_call(index, c, &mut |s| steps.push(&s));
        index += 1;
    });
    let mut index = 0;
    evidence.shorts(failed, &mut |s| {
        steps.push(&Step::of_short(index, s));
        index += 1;
    });
    let mut steps = sorted(steps, Step::order, failed).into_reader();
    // The leaks are not reported: none is kept.
    let found = walk(&mut steps, &caller, &mut |_| {});
    failed.reader(&mut steps);
    let mut quality = evidence.quality;
    quality.contradicted = found
        .contradictions
        .iter()
        .map(|c| {
            format!(
                "inferred open from {} to {}, but no request was short-circuited while {} reached the dependency",
                secs(c.from),
                secs(c.to),
                plural(c.calls, "call")
            )
        })
        .collect();
    (
        found.transitions,
        evidence.pairing.confidence(),
        Some(quality),
    )
}

/// The transitions read from arrivals alone (no records: when each call
/// ended is not known): a breaker opens once the call that tripped it has
/// come back, just after its arrival, so that call is not one let through
/// while open. `arrivals` sorted, `sends` not.
fn arrivals_only(
    sends: Spill<Duration>,
    arrivals: Spill<Duration>,
    params: &InferParams,
    failed: &mut Failed,
) -> Vec<InferredTransition> {
    let mut sends = sends;
    let mut last = None;
    sends.read_each(|s| last = last.max(Some(s)));
    let (after, before) = sorted_twice(sends, Ord::cmp, failed);
    let count = after.len() as u64;
    let (mut after, mut before) = (after.into_reader(), before.into_reader());
    let mut arrivals = arrivals.into_reader();
    let sends = Sends {
        count,
        last,
        after: &mut after,
        before: &mut before,
    };
    let mut out = infer_sorted(sends, (&mut arrivals).map(|at| (at, Some(at))), params);
    failed.reader(&mut after);
    failed.reader(&mut before);
    failed.reader(&mut arrivals);
    for t in out.iter_mut().filter(|t| t.to == State::Open) {
        t.at += OPENED_AFTER_ARRIVAL;
    }
    out
}

/// How long after the arrival of the call that tripped it an inferred
/// breaker counts as open, when its end is not known.
const OPENED_AFTER_ARRIVAL: Duration = Duration::from_millis(1);

/// Arrivals per second over the run, for external load (no rate known).
fn observed_rate(arrivals: usize, duration: Duration) -> f64 {
    let seconds = duration.as_secs_f64().max(1.0);
    (arrivals as f64 / seconds).max(1.0)
}

#[cfg(test)]
#[path = "inferred_tests.rs"]
mod tests;
