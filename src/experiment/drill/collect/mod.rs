//! The third stage, collect: what the run recorded, as one [`Timeline`]
//! (the requests the stream kept, every arrival at a dependency, the
//! breakers' transitions, recorded or inferred, the fault windows as they
//! were applied), the stream's tallies, what the service reported, and the
//! warnings a reader needs; a user's service that answered nothing stops
//! here ([`blackbox`]). Hands a [`RunResult`] to the judge stage.

use std::collections::BTreeMap;

use super::drive::Driven;
use super::outcome::{Ending, RunResult};
use super::stand_up::Stood;
use crate::experiment::config::Experiment;
use crate::experiment::error::RunError;
use crate::experiment::file::Loaded;
use crate::spill::Spill;

pub mod blackbox;
pub mod stream;
pub mod timeline;

use timeline::timeline;

/// Collects what the run recorded once it was driven to its end.
pub fn collect(loaded: &Loaded, stood: Stood<'_>, driven: Driven) -> Result<RunResult, RunError> {
    let experiment = &loaded.experiment;
    let duration = if driven.ending == Ending::Completed {
        experiment.duration
    } else {
        driven.ended_at
    };
    // Windows as they were applied: by people (manual), by agents.
    let mut applied = driven
        .control
        .as_ref()
        .map(|c| c.windows(duration))
        .unwrap_or_default();
    let remotes: Vec<&crate::experiment::drill::stand_up::remote::Remote> = stood
        .dependencies
        .iter()
        .filter_map(|d| d.remote.as_deref())
        .collect();
    for remote in &remotes {
        applied.extend(remote.applied_windows(duration));
    }
    let (mut counted, kept) = stood.stream.finish().map_err(RunError::Records)?;
    let (requests, arrivals) = kept.map_or_else(
        || (Spill::new(), Spill::new()),
        |k| (k.requests, k.arrivals),
    );
    let mut timeline = timeline(experiment, &stood, &applied, duration, requests, arrivals);
    blackbox::answered(experiment, &timeline, &driven.ending)?;
    if stood.under_test.judged_after_the_run() {
        // Its breakers were inferred after the run: judge on everything.
        let mut all = loaded.expectations.clone();
        if let Some(steady) = &loaded.steady {
            all.extend(steady.before.iter().chain(&steady.after).cloned());
        }
        counted.tallies = all
            .iter()
            .map(|e| crate::experiment::expect::tally(e, &timeline))
            .collect();
    }
    let mut warnings = warnings(experiment, driven.control.is_some());
    warnings.extend(remotes.iter().flat_map(|r| r.warnings()));
    warnings.extend(stood.swarm.iter().flat_map(|s| s.warnings()));
    warnings.extend(
        stood
            .said
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..),
    );
    if stood.under_test.judged_after_the_run() {
        let (reported, unread) = stood.under_test.reported(stood.started_at_unix_ms);
        timeline.reported = reported;
        warnings.extend(unread);
        blackbox::reach(experiment, &timeline, &mut counted.routes);
    }
    // The dependencies' records were read back whole (or not).
    if let Some(e) = stood
        .dependencies
        .iter()
        .find_map(|d| d.records.as_ref()?.error())
        .or_else(|| timeline.kept.as_ref()?.error())
    {
        return Err(RunError::Records(e));
    }
    let nothing_to_judge = blackbox::no_calls(experiment, &timeline);
    warnings.extend(nothing_to_judge.clone());
    let mut injected = BTreeMap::new();
    for dependency in &stood.dependencies {
        let remote = dependency.remote.as_ref().map(|r| r.injected());
        for (name, n) in dependency
            .plan
            .injected_by_name()
            .into_iter()
            .chain(remote.into_iter().flatten())
        {
            *injected.entry(name).or_insert(0) += n;
        }
    }
    let agents = remotes.iter().map(|r| r.report()).collect();
    let mut inconclusive =
        crate::experiment::blackbox::gate::audit(&timeline.breakers, &timeline.transitions);
    inconclusive.extend(stood.swarm.iter().filter_map(|s| s.lost()).map(|reason| {
        crate::experiment::blackbox::gate::Finding {
            breaker: None,
            reason,
        }
    }));
    Ok(RunResult {
        timeline,
        ending: driven.ending,
        injected,
        counted,
        shed: driven.load.shed(),
        started_at_unix_ms: stood.started_at_unix_ms,
        warnings,
        nothing_to_judge: nothing_to_judge.map(|_| blackbox::NO_CALLS.to_string()),
        agents,
        inconclusive,
        queried: BTreeMap::new(),
        queries: Vec::new(),
        steady_queried: BTreeMap::new(),
    })
}

/// What a reader of the report should know of the experiment as it ran:
/// TLS settings, breakers that cannot see their failures, gaps in recorded
/// faults, manual faults that never started (`controlled`: the run had a
/// control endpoint).
fn warnings(experiment: &Experiment, controlled: bool) -> Vec<String> {
    let mut warnings = experiment.tls_warnings();
    warnings.extend(blind_breakers(experiment));
    warnings.extend(crate::fault::recordings::gap_warnings(&experiment.faults));
    if !controlled {
        for f in experiment.faults.iter().filter(|f| f.manual) {
            warnings.push(format!(
                "fault {} is manual (at: manual) and the run had no --control: it never started",
                f.name
            ));
        }
    }
    warnings
}

/// A load route whose own timeout is shorter than the defense line's
/// timeout for its requests: the caller gives up first, so the breaker sees
/// a cancelled call where the dependency was slow (it never opens unless
/// `count_cancelled` is set). A finding the drill should report.
fn blind_breakers(experiment: &Experiment) -> Vec<String> {
    let Some(defense) = &experiment.defense else {
        return Vec::new();
    };
    let headers = http::HeaderMap::new();
    experiment
        .load
        .iter()
        .filter_map(|load| {
            let (name, route) = defense
                .routes
                .iter()
                .find(|(_, r)| r.matcher.matches(&load.method, &load.path, &headers))?;
            let timeout = route.timeout.or(defense.timeout)?;
            let counts = route.breaker.as_ref()?.classifier.count_cancelled;
            (timeout > load.timeout && !counts).then(|| {
                format!(
                    "route {}: its timeout ({}) is shorter than defense route {name}'s ({}): the caller gives up first, so breaker {name} sees cancelled calls, not failures (set count_cancelled: true to count them)",
                    load.name,
                    crate::schema::units::Dur(load.timeout),
                    crate::schema::units::Dur(timeout),
                )
            })
        })
        .collect()
}
