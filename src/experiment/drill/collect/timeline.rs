//! The timeline of a run so far, from what stood up: every arrival at a
//! dependency, the breakers (recorded by the defense line, or inferred for
//! a user's service), pool health, the fault windows as applied, phases.
//! The collect stage reads it at the end; the drive stage at the end of
//! the warm-up, for the steady state.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::clock::Duration;
use crate::defense::breaker::journal::Transition;
use crate::experiment::config::Experiment;
use crate::experiment::drill::stand_up::Stood;
use crate::experiment::kept::{KeptLists, KeptRequest};
use crate::experiment::timeline::{
    BreakerInfo, FaultWindows, Phase, PoolInfo, RequestRecord, TargetHit, Timeline,
};
use crate::fault::plan::Arrival;
use crate::proxy::record::Record;
use crate::spill::{Replay, Spill};

/// The timeline of the run up to `duration` (`applied`: when people
/// started and stopped each manual fault, when agents applied and removed
/// each fault on them); `requests` and `arrivals` (each with the index of
/// its dependency) are what the stream kept (a user's service's run), none
/// otherwise. A user's service's per-request lists stay on disk
/// ([`Timeline::kept`]).
pub fn timeline(
    experiment: &Experiment,
    stood: &Stood<'_>,
    applied: &BTreeMap<String, Vec<(Duration, Duration)>>,
    duration: Duration,
    requests: Spill<KeptRequest>,
    arrivals: Spill<(usize, Arrival)>,
) -> Timeline {
    let line = stood.line.as_deref();
    let arrivals = Mutex::new(arrivals);
    // Each dependency's arrivals: those the stream kept, then those its
    // plan still holds.
    let of_each: Vec<ArrivalsOf<'_>> = stood
        .dependencies
        .iter()
        .enumerate()
        .map(|(index, d)| ArrivalsOf {
            kept: &arrivals,
            index,
            tail: d.plan.arrivals(),
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
    // The dependency is the fault proxy and the target behind it: a call
    // answered by a fault in the target's place reached it too.
    let each_hit = |take: &mut dyn FnMut(TargetHit)| {
        for (d, arrivals) in stood.dependencies.iter().zip(&of_each) {
            arrivals.replay(&mut |a| {
                take(TargetHit {
                    at: a.at,
                    path: a.path,
                    request_id: a.request_id,
                    instance: d.instance.clone(),
                })
            });
        }
    };
    let mut timeline = Timeline {
        duration,
        health: stood.recorder.health_changes(),
        faults: fault_windows(experiment, applied, duration),
        phases: experiment
            .phases
            .iter()
            .map(|p| Phase {
                name: p.name.clone(),
                from: p.from.get(),
                to: p.to.get(),
            })
            .collect(),
        ..Timeline::default()
    };
    if stood.under_test.judged_after_the_run() {
        let mut hits = Spill::new();
        each_hit(&mut |h| hits.push(&h));
        let (kept, inferred, infos) = inferred(stood, requests, hits, &of_each, duration);
        transitions.extend(inferred);
        transitions.sort_by_key(|t| t.at);
        breakers.extend(infos);
        timeline.kept = Some(kept);
    } else {
        timeline.requests = requests.into_reader().map(RequestRecord::from).collect();
        each_hit(&mut |h| timeline.target_hits.push(h));
        crate::order::sort_by_key_lean(&mut timeline.target_hits, |h| h.at, Ord::cmp);
    }
    timeline.transitions = transitions;
    timeline.breakers = breakers;
    timeline.pools = pools;
    timeline
}

/// A user's service's run: its lists on disk (`requests`, target `hits`,
/// and the dependencies' calls) and the breakers inferred from them.
fn inferred(
    stood: &Stood<'_>,
    requests: Spill<KeptRequest>,
    hits: Spill<TargetHit>,
    arrivals: &[ArrivalsOf<'_>],
    duration: Duration,
) -> (Arc<KeptLists>, Vec<Transition>, Vec<BreakerInfo>) {
    let mut calls = Spill::new();
    for records in stood.dependencies.iter().filter_map(|d| d.records.as_ref()) {
        records.each_spilled(&mut |s| calls.push(&s));
    }
    let kept = KeptLists::new(requests, hits, calls);
    let none: &Vec<Record> = &Vec::new();
    let records: Vec<&dyn Replay<Record>> = stood
        .dependencies
        .iter()
        .map(|d| match &d.records {
            Some(r) => &**r as &dyn Replay<Record>,
            None => none,
        })
        .collect();
    let arrivals: Vec<&dyn Replay<Arrival>> =
        arrivals.iter().map(|a| a as &dyn Replay<Arrival>).collect();
    let (inferred, infos, failed) = stood.under_test.inferred(
        kept.requests(),
        &stood.dependencies,
        &arrivals,
        &records,
        duration,
    );
    if let Some(err) = failed {
        kept.fail(err);
    }
    (kept, inferred, infos)
}

/// One dependency's arrivals: those the stream kept on disk (tagged with
/// the dependency's index), then those its plan still held.
struct ArrivalsOf<'a> {
    kept: &'a Mutex<Spill<(usize, Arrival)>>,
    index: usize,
    tail: Vec<Arrival>,
}

impl Replay<Arrival> for ArrivalsOf<'_> {
    fn replay(&self, take: &mut dyn FnMut(Arrival)) {
        self.kept.replay(&mut |(i, a)| {
            if i == self.index {
                take(a);
            }
        });
        self.tail.iter().cloned().for_each(take);
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
