//! What the collect stage checks of a run against a user's own service
//! (`system:`): whether the service answered at all (a run it never
//! answered is an error, not a verdict), whether any call reached a
//! dependency under `load: external`, and the routes' amplification, which
//! the service's calls cannot tie to requests one by one.

use std::collections::BTreeSet;

use super::super::outcome::Ending;
use crate::defense::report::CallError;
use crate::experiment::config::Experiment;
use crate::experiment::error::RunError;
use crate::experiment::expect::tally::RouteTally;
use crate::experiment::timeline::{ClientError, RequestRecord, Timeline};

/// The warning of a `load: external` run no call reached a dependency of,
/// and the first words of what each of its verdicts says it saw.
pub const NO_CALLS: &str = "no calls were seen at any dependency";

/// Whether the service under test answered: none of the load's requests
/// got an answer from it (each timed out, could not connect or broke, at
/// the client or at the defense line in front of it) is
/// [`RunError::Unanswered`]. A run without requests, or one interrupted,
/// is left to its ending.
pub fn answered(
    experiment: &Experiment,
    timeline: &Timeline,
    ending: &Ending,
) -> Result<(), RunError> {
    let Some(system) = &experiment.system else {
        return Ok(());
    };
    let (mut requests, mut by_the_service) = (0, false);
    let (mut timeouts, mut connect, mut broken) = (0, 0, 0);
    timeline.each_request(&mut |r| {
        requests += 1;
        by_the_service |= by_service(r);
        match r.client_error {
            Some(ClientError::Timeout) => timeouts += 1,
            Some(ClientError::Connect) => connect += 1,
            Some(ClientError::Broken) => broken += 1,
            _ => {}
        }
    });
    if requests == 0 || *ending == Ending::Interrupted || by_the_service {
        return Ok(());
    }
    let mut seen = format!(
        "none of the {requests} requests got an answer ({timeouts} timed out, {connect} could not connect, {broken} broke off"
    );
    let rest = requests - timeouts - connect - broken;
    if rest > 0 {
        seen.push_str(&format!(
            ", {rest} were answered by the defense line in front of it or shed"
        ));
    }
    seen.push_str("): no verdict can be drawn from this run");
    Err(RunError::Unanswered {
        url: system.service.endpoint.url(),
        seen,
    })
}

/// Whether the service itself answered `r`: a response head came, and
/// no defense line in front of it turned the request away or failed to
/// get an answer from the service.
fn by_service(r: &RequestRecord) -> bool {
    r.latency.is_some()
        && r.rejected_by.is_none()
        && !matches!(
            r.defense_error,
            Some(
                CallError::Timeout
                    | CallError::Connect
                    | CallError::NoServer
                    | CallError::Broken
                    | CallError::Deadline
                    | CallError::Cancelled
            )
        )
}

/// A `load: external` run against a user's service in which no call
/// reached any dependency: the warning that says so (nothing can be judged
/// of it), or none.
pub fn no_calls(experiment: &Experiment, timeline: &Timeline) -> Option<String> {
    let silent =
        experiment.system.is_some() && experiment.external_load && timeline.nothing_reached();
    silent.then(|| {
        format!(
            "{NO_CALLS} during the run (load: external: nothing called the service, or it called none of its dependencies): every expectation fails, as there was nothing to judge"
        )
    })
}

/// Each route's calls to its dependencies (`reached`, which the
/// amplification reads): a user's service does not pass firedrill's
/// request id on, so a route counts every arrival at the dependencies of
/// the breakers that name it (or name no routes); a route no breaker
/// names counts the arrivals at the only dependency, and none when there
/// are several. Routes that share a dependency each count all of its
/// arrivals.
pub fn reach(experiment: &Experiment, timeline: &Timeline, routes: &mut [(String, RouteTally)]) {
    let Some(system) = &experiment.system else {
        return;
    };
    for (route, tally) in routes {
        let mut dependencies: BTreeSet<&str> = system
            .breakers
            .values()
            .filter(|b| b.routes.is_empty() || b.routes.contains(route))
            .map(|b| b.dependency.as_str())
            .collect();
        if let ([only], true) = (experiment.dependencies.as_slice(), dependencies.is_empty()) {
            dependencies.insert(only.name.as_str());
        }
        let mut reached = 0;
        timeline.each_dependency_request(&mut |r| {
            reached += u64::from(dependencies.contains(&*r.proxy));
        });
        tally.reached = reached;
    }
}
