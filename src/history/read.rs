//! Runs read back from a history, and the baselines regression
//! expectations are judged against.

use serde::Serialize;

use super::db::{Cell, Db, Kind};

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
}

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
        "SELECT run_id, sentence, passed, not_judged, expected, seen, figure \
         FROM firedrill_expectations WHERE run_id >= $1 ORDER BY run_id, position",
        &[Cell::Int(first)],
        &[
            Kind::Int,
            Kind::Text,
            Kind::Bool,
            Kind::Text,
            Kind::Text,
            Kind::Text,
            Kind::Real,
        ],
    )? {
        let mut row = row.into_iter();
        let id = row.next().map_or(0, |c| c.int());
        let mut text = || row.next().unwrap_or(Cell::Null(Kind::Text));
        let (sentence, passed, not_judged, expected, seen, figure) =
            (text(), text(), text(), text(), text(), text());
        if let Some(i) = index.get(&id) {
            runs[*i].expectations.push(StoredExpectation {
                sentence: sentence.text().unwrap_or_default(),
                passed: passed.bool(),
                not_judged: not_judged.text(),
                expected: expected.text().unwrap_or_default(),
                seen: seen.text().unwrap_or_default(),
                figure: figure.real(),
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

pub(crate) fn baseline(
    db: &mut Db,
    experiment: &str,
    name: &str,
    last: usize,
) -> Result<Vec<f64>, String> {
    let rows = db.query(
        "SELECT f.value FROM firedrill_figures f JOIN firedrill_runs r ON r.id = f.run_id \
         WHERE r.experiment = $1 AND r.passed = $2 AND f.name = $3 ORDER BY r.id DESC LIMIT $4",
        &[
            Cell::from(experiment),
            Cell::Bool(true),
            Cell::from(name),
            Cell::Int(last as i64),
        ],
        &[Kind::Real],
    )?;
    Ok(rows.iter().filter_map(|r| r[0].real()).collect())
}
