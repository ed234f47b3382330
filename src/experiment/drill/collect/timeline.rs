//! The timeline of a run so far, from what stood up: every arrival at a
//! dependency, the breakers (recorded by the defense line, or inferred for
//! a user's service), pool health, the fault windows as applied, phases.
//! The collect stage reads it at the end; the drive stage at the end of
//! the warm-up, for the steady state.

use std::collections::BTreeMap;

use crate::clock::Duration;
use crate::experiment::config::Experiment;
use crate::experiment::drill::stand_up::Stood;
use crate::experiment::timeline::{
    BreakerInfo, FaultWindows, Phase, PoolInfo, RequestRecord, TargetHit, Timeline,
};
use crate::fault::plan::Arrival;
use crate::proxy::record::Record;

/// The timeline of the run up to `duration` (`applied`: when people
/// started and stopped each manual fault, when agents applied and removed
/// each fault on them); `requests` and `kept` (per
/// dependency, its arrivals) are what the stream kept (a user's service's
/// run), none otherwise.
pub fn timeline(
    experiment: &Experiment,
    stood: &Stood<'_>,
    applied: &BTreeMap<String, Vec<(Duration, Duration)>>,
    duration: Duration,
    requests: Vec<RequestRecord>,
    kept: Vec<Vec<Arrival>>,
) -> Timeline {
    let line = stood.line.as_deref();
    // Each dependency's arrivals: those the stream kept, then those its
    // plan still holds.
    let mut kept = kept.into_iter();
    let arrivals: Vec<Vec<Arrival>> = stood
        .dependencies
        .iter()
        .map(|d| {
            let mut all = kept.next().unwrap_or_default();
            all.extend(d.plan.arrivals());
            all
        })
        .collect();
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
            evidence: None,
        })
        .collect();
    let pools = line
        .and(experiment.defense.as_ref())
        .map(pools)
        .unwrap_or_default();
    let mut transitions = stood.recorder.transitions();
    let mut dependency_requests = Vec::new();
    if stood.under_test.judged_after_the_run() {
        // Each dependency's records, read back once: the inference's, then
        // `dependencies.jsonl`'s.
        let records: Vec<Vec<Record>> = stood
            .dependencies
            .iter()
            .map(|d| d.records.as_ref().map(|r| r.records()).unwrap_or_default())
            .collect();
        let (inferred, infos) = stood.under_test.inferred(
            &requests,
            &stood.dependencies,
            &arrivals,
            &records,
            duration,
        );
        transitions.extend(inferred);
        transitions.sort_by_key(|t| t.at);
        breakers.extend(infos);
        // Into the first dependency's list (no second copy of them all),
        // sorted with a key per record beside them, not a record.
        let mut records = records.into_iter();
        dependency_requests = records.next().unwrap_or_default();
        for more in records {
            dependency_requests.extend(more);
        }
        crate::order::sort_by_key_lean(&mut dependency_requests, |r| r.at_ms, f64::total_cmp);
    }
    // The dependency is the fault proxy and the target behind it: a call
    // answered by a fault in the target's place reached it too. The
    // arrivals move into the hits.
    let mut target_hits: Vec<TargetHit> = stood
        .dependencies
        .iter()
        .zip(arrivals)
        .flat_map(|(d, arrivals)| {
            arrivals.into_iter().map(|a| TargetHit {
                at: a.at,
                path: a.path,
                request_id: a.request_id,
                instance: d.instance.clone(),
            })
        })
        .collect();
    crate::order::sort_by_key_lean(&mut target_hits, |h| h.at, Ord::cmp);
    Timeline {
        duration,
        requests,
        target_hits,
        transitions,
        health: stood.recorder.health_changes(),
        pools,
        reported: Vec::new(),
        dependency_requests,
        faults: fault_windows(experiment, applied, duration),
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
/// (the run's duration). A fault applied by people or by an agent has its
/// windows as `applied` gives them.
fn fault_windows(
    experiment: &Experiment,
    applied: &BTreeMap<String, Vec<(Duration, Duration)>>,
    duration: Duration,
) -> Vec<FaultWindows> {
    experiment
        .faults
        .iter()
        .map(|f| FaultWindows {
            name: f.name.clone(),
            kind: f.kind.key().to_string(),
            windows: match applied.get(&f.name) {
                Some(windows) => windows.clone(),
                None if f.manual => Vec::new(),
                None => f.window.windows_within(duration),
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
            starts_out: pool.health_check.as_ref().is_some_and(|c| c.mandatory),
            slow_start: pool.slow_start,
        })
        .collect()
}
