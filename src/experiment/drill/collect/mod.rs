//! The third stage, collect: what the run recorded, as one [`Timeline`]
//! (the requests the stream kept, every arrival at a dependency, the
//! breakers' transitions, recorded or inferred, the fault windows as they
//! were applied), the stream's tallies, what the service reported, and the
//! warnings a reader needs. Hands a [`RunResult`] to the judge stage.

use std::collections::BTreeMap;

use super::drive::Driven;
use super::outcome::{Ending, RunResult};
use super::stand_up::Stood;
use crate::clock::Duration;
use crate::experiment::config::Experiment;
use crate::experiment::error::RunError;
use crate::experiment::file::Loaded;
use crate::experiment::timeline::{
    BreakerInfo, FaultWindows, Phase, PoolInfo, RequestRecord, TargetHit, Timeline,
};

pub mod stream;

/// Collects what the run recorded once it was driven to its end.
pub fn collect(loaded: &Loaded, stood: Stood<'_>, driven: Driven) -> Result<RunResult, RunError> {
    let experiment = &loaded.experiment;
    let duration = if driven.ending == Ending::Completed {
        experiment.duration
    } else {
        driven.ended_at
    };
    let manual = driven
        .control
        .as_ref()
        .map(|c| c.windows(duration))
        .unwrap_or_default();
    let mut counted = stood.stream.finish().map_err(RunError::Records)?;
    let mut timeline = timeline(
        experiment,
        &stood,
        &manual,
        duration,
        std::mem::take(&mut counted.requests),
    );
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
    if stood.under_test.judged_after_the_run() {
        let (reported, unread) = stood.under_test.reported(stood.started_at_unix_ms);
        timeline.reported = reported;
        timeline.dependency_requests = stood
            .dependencies
            .iter()
            .filter_map(|d| d.records.as_ref())
            .flat_map(|r| r.records())
            .collect();
        timeline
            .dependency_requests
            .sort_by(|a, b| a.at_ms.total_cmp(&b.at_ms));
        warnings.extend(unread);
    }
    let mut injected = BTreeMap::new();
    for dependency in &stood.dependencies {
        for (name, n) in dependency.plan.injected_by_name() {
            *injected.entry(name).or_insert(0) += n;
        }
    }
    Ok(RunResult {
        timeline,
        ending: driven.ending,
        injected,
        counted,
        shed: driven.load.shed(),
        started_at_unix_ms: stood.started_at_unix_ms,
        warnings,
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

/// The timeline of the run up to `duration` (`manual`: when people
/// started and stopped each manual fault); `requests` are the ones the
/// stream kept (a user's service's run), none otherwise.
pub fn timeline(
    experiment: &Experiment,
    stood: &Stood<'_>,
    manual: &BTreeMap<String, Vec<(Duration, Duration)>>,
    duration: Duration,
    requests: Vec<RequestRecord>,
) -> Timeline {
    let line = stood.line.as_deref();
    // The dependency is the fault proxy and the target behind it: a call
    // answered by a fault in the target's place reached it too.
    let mut target_hits: Vec<TargetHit> = stood
        .dependencies
        .iter()
        .flat_map(|d| {
            d.plan.arrivals().into_iter().map(|a| TargetHit {
                at: a.at,
                path: a.path,
                request_id: a.request_id,
                instance: d.instance.clone(),
            })
        })
        .collect();
    target_hits.sort_by_key(|h| h.at);
    let defenses = line.and(experiment.defense.as_ref()).into_iter().chain(
        experiment
            .dependencies
            .iter()
            .filter_map(|d| d.defense.as_ref()),
    );
    let mut breakers: Vec<BreakerInfo> = defenses
        .flat_map(|config| config.breakers())
        .map(|(name, breaker, glob)| BreakerInfo {
            name: name.to_string(),
            wait_in_open: breaker.wait_in_open(),
            path_glob: glob.map(str::to_string),
        })
        .collect();
    let pools = line
        .and(experiment.defense.as_ref())
        .map(pools)
        .unwrap_or_default();
    let mut transitions = stood.recorder.transitions();
    if stood.under_test.judged_after_the_run() {
        let (inferred, infos) = stood
            .under_test
            .inferred(&requests, &stood.dependencies, duration);
        transitions.extend(inferred);
        transitions.sort_by_key(|t| t.at);
        breakers.extend(infos);
    }
    Timeline {
        duration,
        requests,
        target_hits,
        transitions,
        health: stood.recorder.health_changes(),
        pools,
        reported: Vec::new(),
        dependency_requests: Vec::new(),
        faults: fault_windows(experiment, manual, duration),
        breakers,
        phases: experiment
            .phases
            .iter()
            .map(|p| Phase {
                name: p.name.clone(),
                from: p.from.get(),
                to: p.to.get(),
            })
            .collect(),
    }
}

/// Each fault's windows up to `duration`. From the experiment, not the
/// plan: a halt empties the plan, and the windows end at the halt anyway
/// (the run's duration).
fn fault_windows(
    experiment: &Experiment,
    manual: &BTreeMap<String, Vec<(Duration, Duration)>>,
    duration: Duration,
) -> Vec<FaultWindows> {
    experiment
        .faults
        .iter()
        .map(|f| FaultWindows {
            name: f.name.clone(),
            kind: f.kind.key().to_string(),
            // A manual fault: when people started and stopped it.
            windows: if f.manual {
                manual.get(&f.name).cloned().unwrap_or_default()
            } else {
                f.window.windows_within(duration)
            },
        })
        .collect()
}

/// The pools of the defense line `config`: each with its servers.
fn pools(config: &crate::defense::DefenseConfig) -> Vec<PoolInfo> {
    config
        .pools
        .iter()
        .map(|(name, pool)| PoolInfo {
            name: name.clone(),
            servers: pool
                .servers
                .iter()
                .map(|s| (s.name.clone(), s.backup))
                .collect(),
            starts_out: pool.health_check.is_some(),
        })
        .collect()
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
