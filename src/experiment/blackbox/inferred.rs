//! A user's service's breakers, inferred from one run: for each declared
//! breaker, the requests sent on its routes and the calls that reached its
//! dependency. With firedrill's own load both sides are read
//! ([`super::caller`]: short-circuits, trials and their outcomes); with
//! outside traffic only the arrivals ([`super::infer`]).

use super::caller::{CallerParams, DEFAULT_MIN_SHORT_CIRCUITS, infer_from_caller};
use crate::order::SortedIds;
use std::collections::BTreeSet;

use super::evidence::{ONE_SIDE, Quality, gather};
use super::infer::count as plural;
use super::infer::{InferParams, InferredTransition, infer, infer_calls};
use crate::clock::Duration;
use crate::defense::breaker::State;
use crate::defense::breaker::journal::{Reason, Transition};
use crate::experiment::config::{InferredBreaker, LoadRoute, SystemSpec};
use crate::experiment::expect::verdict::secs;
use crate::experiment::timeline::{BreakerInfo, RequestRecord};
use crate::fault::plan::Arrival;
use crate::proxy::record::Record;
use crate::spill::Replay;

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
/// the journal's form (reason `inferred`, with the evidence), and what
/// expectations need to know of each.
pub fn breakers(
    system: &SystemSpec,
    load: &[LoadRoute],
    requests: &dyn Replay<RequestRecord>,
    dependencies: &[Seen<'_>],
    duration: Duration,
) -> (Vec<Transition>, Vec<BreakerInfo>) {
    // TODO(streaming): read the lists whole for now.
    let requests = &all(requests);
    let held: Vec<(Vec<Arrival>, Vec<Record>)> = dependencies
        .iter()
        .map(|d| (all(d.arrivals), all(d.records)))
        .collect();
    let dependencies: Vec<Held<'_>> = dependencies
        .iter()
        .zip(&held)
        .map(|(d, (arrivals, records))| Held {
            name: d.name,
            arrivals,
            records,
            lost: d.lost,
        })
        .collect();
    let dependencies = &dependencies[..];
    let mut transitions = Vec::new();
    let mut infos = Vec::new();
    let sent: SortedIds = requests.iter().map(|r| r.id).collect();
    for (name, breaker) in &system.breakers {
        let (inferred, confidence, mut quality) =
            infer_one(breaker, load, requests, &sent, dependencies, duration);
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
    (transitions, infos)
}

fn all<T>(list: &dyn Replay<T>) -> Vec<T> {
    let mut out = Vec::new();
    list.replay(&mut |item| out.push(item));
    out
}

struct Held<'a> {
    name: &'a str,
    arrivals: &'a [Arrival],
    records: &'a [Record],
    lost: Option<&'a str>,
}

/// One breaker's transitions, and how confident they are: from both sides
/// with firedrill's own load and the dependency's records, from the
/// dependency's side alone otherwise.
fn infer_one(
    breaker: &InferredBreaker,
    load: &[LoadRoute],
    requests: &[RequestRecord],
    sent: &SortedIds,
    dependencies: &[Held<'_>],
    duration: Duration,
) -> (Vec<InferredTransition>, &'static str, Option<Quality>) {
    let uses = |route: &str| breaker.routes.is_empty() || breaker.routes.iter().any(|r| r == route);
    // A breaker deeper in the system: the requests the proxy in front of
    // it passed on (one a fault answered there never reached the service).
    let reached: Option<BTreeSet<u64>> = breaker.via.as_ref().map(|via| {
        dependencies
            .iter()
            .filter(|d| d.name == via)
            .flat_map(|d| d.records)
            .filter(|r| r.reached_upstream)
            .filter_map(|r| r.request_id)
            .collect()
    });
    let chance = |r: &RequestRecord| {
        uses(&r.route) && reached.as_ref().is_none_or(|ids| ids.contains(&r.id))
    };
    // The sends and the arrivals as lists of times only where they are
    // read (not beside the calls of the walk from both sides).
    let sends = || {
        let mut sends: Vec<Duration> = requests
            .iter()
            .filter(|r| chance(r))
            .map(|r| r.sent)
            .collect();
        sends.sort_unstable();
        sends
    };
    let on_path = |path: &str| {
        breaker
            .path
            .as_ref()
            .is_none_or(|m| m.matches(&http::Method::GET, path, &http::HeaderMap::new()))
    };
    let seen: Vec<&Held<'_>> = dependencies
        .iter()
        .filter(|d| d.name == breaker.dependency)
        .collect();
    let arrivals = || {
        seen.iter()
            .flat_map(|d| d.arrivals)
            .filter(|a| on_path(&a.path))
            .map(|a| a.at)
            .filter(|at| *at <= duration)
    };
    let rate: f64 = load.iter().filter(|l| uses(&l.name)).map(|l| l.rate).sum();
    let mut params = InferParams::for_rate(if rate > 0.0 {
        rate
    } else {
        observed_rate(arrivals().count(), duration)
    });
    if let Some(gap) = breaker.gap {
        params.gap = gap;
    }
    params.probes = breaker.probes;
    let records: Vec<&Record> = seen
        .iter()
        .flat_map(|d| d.records)
        .filter(|r| on_path(&r.path) && r.at_ms <= duration.as_secs_f64() * 1000.0)
        .collect();
    let routes: Vec<&RequestRecord> = requests.iter().filter(|r| chance(r)).collect();
    let evidence = gather(&records, &routes, sent, duration);
    let no_records = records.is_empty();
    drop((records, routes));
    if no_records {
        let mut arrivals: Vec<Duration> = arrivals().collect();
        arrivals.sort_unstable();
        (arrivals_only(&sends(), &arrivals, &params), ONE_SIDE, None)
    } else if !requests.iter().any(chance) {
        // Outside traffic: what the caller got is not seen.
        let calls: Vec<(Duration, Option<Duration>)> =
            evidence.calls.iter().map(|c| (c.at, c.ended)).collect();
        (infer_calls(&[], &calls, &params), ONE_SIDE, None)
    } else {
        let caller = CallerParams {
            wait_in_open: breaker.wait_in_open,
            gap: params.gap,
            probes: breaker.probes,
            min_short_circuits: DEFAULT_MIN_SHORT_CIRCUITS,
        };
        let found = infer_from_caller(&evidence.calls, &evidence.shorts, &caller);
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
}

/// The transitions read from arrivals alone (no records: when each call
/// ended is not known): a breaker opens once the call that tripped it has
/// come back, just after its arrival, so that call is not one let through
/// while open.
fn arrivals_only(
    sends: &[Duration],
    arrivals: &[Duration],
    params: &InferParams,
) -> Vec<InferredTransition> {
    let mut out = infer(sends, arrivals, params);
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
