//! Runs read back from a history, and the past runs a regression
//! sentence's baseline is made of.
//!
//! A past run is fit for a sentence's baseline when it passed and, in it,
//!
//! * the sentence was judged and held (`held`), or
//! * the sentence was not judged for too little history but seeded the
//!   baseline (`seed`: the first run, or one that held against the seeds
//!   before it; see `experiment::expect::baseline`), or
//! * the sentence was not there at all (new to the experiment, or
//!   reworded) and every sentence of the run was judged.
//!
//! A run in which the sentence was not judged otherwise, or failed, never
//! is: a worse run does not become the norm by not being judged.

use serde::Serialize;

use super::db::{Cell, Db, Kind};
use crate::experiment::expect::baseline::PastRun;

/// Which runs to read.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only this experiment's runs.
    pub experiment: Option<String>,
    /// Only the last N of them.
    pub last: Option<usize>,
}

/// One recorded run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredRun {
    /// Its id in the history (runs are numbered as they are recorded).
    pub id: i64,
    /// The experiment's name.
    pub experiment: String,
    /// The hash of the experiment as run.
    pub file_hash: String,
    /// The firedrill build.
    pub build: String,
    /// The seed.
    pub seed: String,
    /// `virtual` or `real`.
    pub clock: String,
    /// A real run's start (RFC 3339).
    pub started_at: Option<String>,
    /// When it was recorded (RFC 3339).
    pub recorded_at: String,
    /// A real run's machine.
    pub host: Option<String>,
    /// `passed`, `failed`, `not_healthy`, `halted`, `interrupted`.
    pub verdict: String,
    /// Whether it passed.
    pub passed: bool,
    /// How long it lasted.
    pub duration_ms: f64,
    /// Where its report folder went.
    pub report_dir: Option<String>,
    /// Its figures by name.
    pub figures: std::collections::BTreeMap<String, f64>,
    /// Its expectations, in order.
    pub expectations: Vec<StoredExpectation>,
}

/// One expectation of a recorded run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredExpectation {
    /// The sentence.
    pub sentence: String,
    /// Whether it held.
    pub passed: bool,
    /// Why it was not judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_judged: Option<String>,
    /// What it required.
    pub expected: String,
    /// What the run showed.
    pub seen: String,
    /// Its figure, where it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub figure: Option<f64>,
    /// `held`, `failed`, `not_judged`, or `seed` (not judged for too little
    /// history, and seeds the baseline): what a baseline is chosen by.
    pub state: String,
    /// A regression sentence judged against past runs: their numbers.
    /// Empty for one recorded before history schema 2 (not kept then).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub baseline_runs: Vec<i64>,
    /// The name its figure is kept under (a figure of the run's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub figure_key: Option<String>,
    /// The limit its figure was judged against, in the figure's unit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub figure_limit: Option<f64>,
    /// The figure's unit (`ms`, `%`), none for a number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub figure_unit: Option<String>,
}

/// A sentence's state in a run: judged and held.
pub const HELD: &str = "held";
/// Judged and failed.
pub const FAILED: &str = "failed";
/// Not judged (the reason is kept beside it).
pub const NOT_JUDGED: &str = "not_judged";
/// Not judged for too little history, and seeds the sentence's baseline.
pub const SEED: &str = "seed";
/// Judged, but the evidence could not carry the verdict (the reason is
/// kept beside it): neither held nor failed, never in a baseline.
pub const INCONCLUSIVE: &str = "inconclusive";

const RUN_COLUMNS: &str = "id, experiment, file_hash, build, seed, clock, started_at, \
     recorded_at, host, verdict, passed, duration_ms, report_dir";
const RUN_KINDS: [Kind; 13] = [
    Kind::Int,
    Kind::Text,
    Kind::Text,
    Kind::Text,
    Kind::Text,
    Kind::Text,
    Kind::Text,
    Kind::Text,
    Kind::Text,
    Kind::Text,
    Kind::Bool,
    Kind::Real,
    Kind::Text,
];

pub(crate) fn runs(db: &mut Db, filter: &Filter) -> Result<Vec<StoredRun>, String> {
    let limit = filter.last.map_or(i64::MAX, |n| n as i64);
    let rows = match &filter.experiment {
        Some(name) => db.query(
            &format!(
                "SELECT {RUN_COLUMNS} FROM firedrill_runs WHERE experiment = $1 \
                 ORDER BY id DESC LIMIT $2"
            ),
            &[Cell::from(name.as_str()), Cell::Int(limit)],
            &RUN_KINDS,
        )?,
        None => db.query(
            &format!("SELECT {RUN_COLUMNS} FROM firedrill_runs ORDER BY id DESC LIMIT $1"),
            &[Cell::Int(limit)],
            &RUN_KINDS,
        )?,
    };
    let mut runs: Vec<StoredRun> = rows.into_iter().rev().map(run_of).collect();
    let Some(first) = runs.first().map(|r| r.id) else {
        return Ok(runs);
    };
    let index: std::collections::BTreeMap<i64, usize> =
        runs.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
    for row in db.query(
        "SELECT run_id, name, value FROM firedrill_figures WHERE run_id >= $1",
        &[Cell::Int(first)],
        &[Kind::Int, Kind::Text, Kind::Real],
    )? {
        let mut row = row.into_iter();
        let (Some(id), Some(name), Some(value)) = (row.next(), row.next(), row.next()) else {
            continue;
        };
        if let (Some(i), Some(name)) = (index.get(&id.int()), name.text()) {
            runs[*i]
                .figures
                .insert(name, value.real().unwrap_or(f64::NAN));
        }
    }
    for row in db.query(
        "SELECT run_id, sentence, passed, not_judged, expected, seen, figure, state, \
         baseline_runs, figure_key, figure_limit, figure_unit FROM firedrill_expectations \
         WHERE run_id >= $1 ORDER BY run_id, position",
        &[Cell::Int(first)],
        &[
            Kind::Int,
            Kind::Text,
            Kind::Bool,
            Kind::Text,
            Kind::Text,
            Kind::Text,
            Kind::Real,
            Kind::Text,
            Kind::Text,
            Kind::Text,
            Kind::Real,
            Kind::Text,
        ],
    )? {
        let mut row = row.into_iter();
        let id = row.next().map_or(0, |c| c.int());
        let mut text = || row.next().unwrap_or(Cell::Null(Kind::Text));
        let (sentence, passed, not_judged, expected, seen, figure, state, baseline_runs) = (
            text(),
            text(),
            text(),
            text(),
            text(),
            text(),
            text(),
            text(),
        );
        let (figure_key, figure_limit, figure_unit) = (text(), text(), text());
        if let Some(i) = index.get(&id) {
            runs[*i].expectations.push(StoredExpectation {
                sentence: sentence.text().unwrap_or_default(),
                passed: passed.bool(),
                not_judged: not_judged.text(),
                expected: expected.text().unwrap_or_default(),
                seen: seen.text().unwrap_or_default(),
                figure: figure.real(),
                state: state.text().unwrap_or_default(),
                baseline_runs: baseline_runs
                    .text()
                    .map(|ids| ids.split(',').filter_map(|id| id.parse().ok()).collect())
                    .unwrap_or_default(),
                figure_key: figure_key.text(),
                figure_limit: figure_limit.real(),
                figure_unit: figure_unit.text(),
            });
        }
    }
    Ok(runs)
}

fn run_of(row: Vec<Cell>) -> StoredRun {
    let mut row = row.into_iter();
    let mut next = || row.next().unwrap_or(Cell::Null(Kind::Text));
    let id = next().int();
    StoredRun {
        id,
        experiment: next().text().unwrap_or_default(),
        file_hash: next().text().unwrap_or_default(),
        build: next().text().unwrap_or_default(),
        seed: next().text().unwrap_or_default(),
        clock: next().text().unwrap_or_default(),
        started_at: next().text(),
        recorded_at: next().text().unwrap_or_default(),
        host: next().text(),
        verdict: next().text().unwrap_or_default(),
        passed: next().bool(),
        duration_ms: next().real().unwrap_or(0.0),
        report_dir: next().text(),
        figures: std::collections::BTreeMap::new(),
        expectations: Vec::new(),
    }
}

/// A past passing run with the figure, as the baseline query reads it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Candidate {
    /// Its number.
    pub id: i64,
    /// The figure.
    pub value: f64,
    /// The sentence's state in it, once per time the run has the sentence
    /// (none: the run did not have it).
    pub states: Vec<String>,
    /// How many of its sentences were not judged (seeds included).
    pub unjudged: i64,
}

/// The newest `last` of `candidates` (newest first, one per run) fit for
/// the sentence's baseline; the rule is in the module's head.
pub(crate) fn fit(candidates: &[Candidate], last: usize) -> Vec<PastRun> {
    candidates
        .iter()
        .filter_map(|c| {
            let seed = if c.states.is_empty() {
                if c.unjudged > 0 {
                    return None;
                }
                false
            } else if c.states.iter().all(|s| s == HELD) {
                false
            } else if c.states.iter().all(|s| s == HELD || s == SEED) {
                true
            } else {
                return None;
            };
            Some(PastRun {
                run: c.id,
                value: c.value,
                seed,
            })
        })
        .take(last)
        .collect()
}

/// The past runs of `experiment` fit for the baseline of `sentence` (whose
/// figure is kept under `key`), the newest `last` of them, newest first.
pub(crate) fn baseline(
    db: &mut Db,
    experiment: &str,
    sentence: &str,
    key: &str,
    last: usize,
) -> Result<Vec<PastRun>, String> {
    let rows = db.query(
        "SELECT r.id, f.value, e.state, (SELECT count(*) FROM firedrill_expectations u \
         WHERE u.run_id = r.id AND u.state IN ($4, $5)) \
         FROM firedrill_runs r JOIN firedrill_figures f ON f.run_id = r.id AND f.name = $2 \
         LEFT JOIN firedrill_expectations e ON e.run_id = r.id AND e.sentence = $3 \
         WHERE r.experiment = $1 AND r.passed = $6 ORDER BY r.id DESC",
        &[
            Cell::from(experiment),
            Cell::from(key),
            Cell::from(sentence),
            Cell::from(NOT_JUDGED),
            Cell::from(SEED),
            Cell::Bool(true),
        ],
        &[Kind::Int, Kind::Real, Kind::Text, Kind::Int],
    )?;
    let mut candidates: Vec<Candidate> = Vec::new();
    for row in rows {
        let (id, value, state) = (row[0].int(), row[1].real(), row[2].clone().text());
        let Some(value) = value else { continue };
        if candidates.last().is_none_or(|c| c.id != id) {
            candidates.push(Candidate {
                id,
                value,
                states: Vec::new(),
                unjudged: row[3].int(),
            });
        }
        if let (Some(state), Some(c)) = (state, candidates.last_mut()) {
            c.states.push(state);
        }
    }
    Ok(fit(&candidates, last))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: i64, states: &[&str], unjudged: i64) -> Candidate {
        Candidate {
            id,
            value: id as f64 * 100.0,
            states: states.iter().map(|s| s.to_string()).collect(),
            unjudged,
        }
    }

    fn ids(past: &[PastRun]) -> Vec<(i64, bool)> {
        past.iter().map(|p| (p.run, p.seed)).collect()
    }

    #[test]
    fn a_baseline_takes_held_runs_and_seeds_and_never_a_run_whose_sentence_was_not_judged() {
        let newest_first = [
            run(9, &[HELD], 0),
            run(8, &[NOT_JUDGED], 1),
            run(7, &[FAILED], 0),
            run(6, &[HELD], 1),
            run(5, &[SEED], 1),
            run(4, &[NOT_JUDGED], 1),
            run(3, &[SEED], 1),
        ];
        assert_eq!(
            ids(&fit(&newest_first, 10)),
            vec![(9, false), (6, false), (5, true), (3, true)],
            "#8 not judged and #4 not a seed stay out; #6 held its sentence though another was not judged"
        );
        assert_eq!(ids(&fit(&newest_first, 2)), vec![(9, false), (6, false)]);
    }

    #[test]
    fn a_run_without_the_sentence_counts_only_when_every_sentence_of_it_was_judged() {
        let newest_first = [run(3, &[], 0), run(2, &[], 1), run(1, &[], 0)];
        assert_eq!(ids(&fit(&newest_first, 5)), vec![(3, false), (1, false)]);
    }

    #[test]
    fn a_sentence_written_twice_counts_a_run_only_when_it_held_both_times() {
        let newest_first = [
            run(3, &[HELD, FAILED], 0),
            run(2, &[SEED, HELD], 1),
            run(1, &[HELD, HELD], 0),
        ];
        assert_eq!(ids(&fit(&newest_first, 5)), vec![(2, true), (1, false)]);
    }
}
