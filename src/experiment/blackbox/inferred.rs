//! A user's service's breakers, inferred from one run: for each declared
//! breaker, the requests sent on its routes and the calls that reached its
//! dependency, read by [`super::infer`] into the journal's transitions.

use super::infer::{InferParams, infer};
use crate::clock::Duration;
use crate::defense::breaker::State;
use crate::defense::breaker::journal::{Reason, Transition};
use crate::experiment::config::{LoadRoute, SystemSpec};
use crate::experiment::timeline::{BreakerInfo, RequestRecord};
use crate::fault::FaultPlan;

/// The service's breakers as inferred from the run: their transitions, in
/// the journal's form (reason `inferred`, with the evidence), and what
/// expectations need to know of each.
pub fn breakers(
    system: &SystemSpec,
    load: &[LoadRoute],
    requests: &[RequestRecord],
    dependencies: &[(&str, &FaultPlan)],
    duration: Duration,
) -> (Vec<Transition>, Vec<BreakerInfo>) {
    let mut transitions = Vec::new();
    let mut infos = Vec::new();
    for (name, breaker) in &system.breakers {
        let uses =
            |route: &str| breaker.routes.is_empty() || breaker.routes.iter().any(|r| r == route);
        let mut sends: Vec<Duration> = requests
            .iter()
            .filter(|r| uses(&r.route))
            .map(|r| r.sent)
            .collect();
        sends.sort();
        let mut arrivals: Vec<Duration> = dependencies
            .iter()
            .filter(|(name, _)| *name == breaker.dependency)
            .flat_map(|(_, plan)| plan.arrivals())
            .filter(|a| {
                breaker
                    .path
                    .as_ref()
                    .is_none_or(|m| m.matches(&http::Method::GET, &a.path, &http::HeaderMap::new()))
            })
            .map(|a| a.at)
            .filter(|at| *at <= duration)
            .collect();
        arrivals.sort();
        let rate: f64 = load.iter().filter(|l| uses(&l.name)).map(|l| l.rate).sum();
        let mut params = InferParams::for_rate(if rate > 0.0 {
            rate
        } else {
            observed_rate(&arrivals, duration)
        });
        if let Some(gap) = breaker.gap {
            params.gap = gap;
        }
        params.probes = breaker.probes;
        for t in infer(&sends, &arrivals, &params) {
            // A breaker opens once the call that tripped it has come back:
            // just after its arrival, so that call is not one let through
            // while open.
            let at = if t.to == State::Open {
                t.at + OPENED_AFTER_ARRIVAL
            } else {
                t.at
            };
            transitions.push(Transition {
                at,
                breaker: name.clone(),
                from: t.from,
                to: t.to,
                reason: Reason::Inferred {
                    evidence: t.reason,
                    arrivals: t.arrivals,
                    sends: t.sends,
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
        });
    }
    (transitions, infos)
}

/// How long after the arrival of the call that tripped it an inferred
/// breaker counts as open.
const OPENED_AFTER_ARRIVAL: Duration = Duration::from_millis(1);

/// Arrivals per second over the run, for external load (no rate known).
fn observed_rate(arrivals: &[Duration], duration: Duration) -> f64 {
    let seconds = duration.as_secs_f64().max(1.0);
    (arrivals.len() as f64 / seconds).max(1.0)
}
