//! Joins the expectation language to an experiment: every expectation is
//! parsed and its names checked before the run, and judged after it.

use super::config::Experiment;
use super::expect::{self, Expectation, Names, Verdict};

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
    for defense in defenses {
        names
            .breakers
            .extend(defense.breakers().map(|(name, ..)| name.to_string()));
    }
    if let Some(system) = &experiment.system {
        names.breakers.extend(system.breakers.keys().cloned());
    }
    names
        .faults
        .extend(experiment.faults.iter().map(|f| f.name.clone()));
    names
        .routes
        .extend(experiment.load.iter().map(|l| l.name.clone()));
    names
        .phases
        .extend(experiment.phases.iter().map(|p| p.name.clone()));
    names
}

/// Parses and checks every expectation; the error carries the index of
/// the first bad one and what is wrong with it.
pub fn check_all(experiment: &Experiment) -> Result<Vec<Checked>, (usize, String)> {
    let names = names(experiment);
    experiment
        .expect
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let parsed = expect::parse(text).map_err(|e| (i, e.to_string()))?;
            expect::check(&parsed, &names).map_err(|e| (i, e))?;
            Ok(parsed)
        })
        .collect()
}

/// Judges every expectation on a run's timeline.
pub fn judge(expectations: &[Checked], timeline: &super::timeline::Timeline) -> Vec<Verdict> {
    expect::evaluate_all(expectations, timeline)
}
