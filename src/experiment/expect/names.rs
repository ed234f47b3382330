//! Joins the expectation language to an experiment: every expectation is
//! parsed and its names checked before the run, and judged after it.

use crate::experiment::config::Experiment;
use crate::experiment::expect::{self, Expectation, Names, Verdict};

/// An expectation that parsed and names only things the experiment has.
pub type Checked = Expectation;

/// The names an experiment's expectations may refer to.
pub fn names(experiment: &Experiment) -> Names {
    let mut names = Names::default();
    let defenses = experiment.defense.iter().chain(
        experiment
            .dependencies
            .iter()
            .filter_map(|d| d.defense.as_ref()),
    );
    let mut pools = Vec::new();
    for defense in defenses {
        names
            .breakers
            .extend(defense.breakers().map(|(name, ..)| name.to_string()));
        pools.extend(defense.pools.iter().map(|(name, pool)| {
            (
                name.as_str(),
                pool.servers
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>(),
            )
        }));
    }
    names = names.with_pools(pools);
    if let crate::experiment::config::TargetSpec::Builtin(target) = &experiment.target {
        names.instances.extend(target.instances.keys().cloned());
    }
    if let Some(system) = &experiment.system {
        names.breakers.extend(system.breakers.keys().cloned());
        names.unknown_waits.extend(
            system
                .breakers
                .iter()
                .filter(|(_, b)| b.wait_in_open.is_none())
                .map(|(name, _)| name.clone()),
        );
    }
    names
        .faults
        .extend(experiment.faults.iter().map(|f| f.name.clone()));
    names
        .routes
        .extend(experiment.load.iter().map(|l| l.name.clone()));
    names
        .queries
        .extend(experiment.queries.iter().map(|q| q.name.clone()));
    names
        .phases
        .extend(experiment.phases.iter().map(|p| p.name.clone()));
    names
}

/// Parses and checks every expectation: the good ones, and the index of
/// each bad one with what is wrong with it.
pub fn check_all(experiment: &Experiment) -> (Vec<Checked>, Vec<(usize, String)>) {
    let names = names(experiment);
    let mut checked = Vec::new();
    let mut problems = Vec::new();
    for (i, text) in experiment.expect.iter().enumerate() {
        let parsed = expect::parse(text).map_err(|e| e.to_string());
        match parsed.and_then(|p| expect::check(&p, &names).map(|()| p)) {
            Ok(parsed) => checked.push(parsed),
            Err(e) => problems.push((i, e)),
        }
    }
    (checked, problems)
}

/// Judges every expectation on a run's timeline.
pub fn judge(
    expectations: &[Checked],
    timeline: &crate::experiment::timeline::Timeline,
) -> Vec<Verdict> {
    expect::evaluate_all(expectations, timeline)
}
