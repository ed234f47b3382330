//! The history's tables and their versioned migrations. The version lives
//! in `firedrill_history`; a migration runs inside the write lock, so the
//! first runs of parallel CI jobs create the tables once. A database that
//! holds someone else's tables, or a version newer than this build knows,
//! is refused before anything is written.

use super::HistoryError;
use super::db::{Cell, Db, Kind};

/// One step of the schema.
struct Migration {
    /// The version the database has after it.
    version: i64,
    /// Its statements; `{id}` is the auto-numbered key's type.
    sql: &'static str,
}

const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        sql: "
CREATE TABLE firedrill_runs (
    id {id},
    experiment TEXT NOT NULL,
    file_hash TEXT NOT NULL,
    build TEXT NOT NULL,
    seed TEXT NOT NULL,
    clock TEXT NOT NULL,
    started_at TEXT,
    recorded_at TEXT NOT NULL,
    host TEXT,
    verdict TEXT NOT NULL,
    passed BOOLEAN NOT NULL,
    duration_ms DOUBLE PRECISION NOT NULL,
    report_dir TEXT
);
CREATE INDEX firedrill_runs_by_experiment ON firedrill_runs (experiment, id);
CREATE TABLE firedrill_figures (
    run_id BIGINT NOT NULL REFERENCES firedrill_runs (id),
    name TEXT NOT NULL,
    value DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (run_id, name)
);
CREATE INDEX firedrill_figures_by_name ON firedrill_figures (name, run_id);
CREATE TABLE firedrill_expectations (
    run_id BIGINT NOT NULL REFERENCES firedrill_runs (id),
    position BIGINT NOT NULL,
    sentence TEXT NOT NULL,
    passed BOOLEAN NOT NULL,
    not_judged TEXT,
    expected TEXT NOT NULL,
    seen TEXT NOT NULL,
    figure DOUBLE PRECISION,
    PRIMARY KEY (run_id, position)
);
",
    },
    // Each sentence's state in its run, so a baseline takes only the runs
    // in which its sentence was judged and held (or seeded it), and the
    // runs a regression sentence's baseline was made of. A run recorded
    // by schema 1 kept whether each sentence held and why one was not
    // judged: its state is read from those; it never seeds a baseline
    // (seeds were not checked then) and its baseline runs are unknown.
    Migration {
        version: 2,
        sql: "
ALTER TABLE firedrill_expectations ADD COLUMN state TEXT;
ALTER TABLE firedrill_expectations ADD COLUMN baseline_runs TEXT;
UPDATE firedrill_expectations SET state = CASE
    WHEN not_judged IS NOT NULL THEN 'not_judged'
    WHEN passed THEN 'held'
    ELSE 'failed' END;
",
    },
    // The figure a sentence's chart draws, the limit it was judged
    // against and the figure's unit, for the trend page. Runs recorded
    // before keep none: their charts have no limit for them.
    Migration {
        version: 3,
        sql: "
ALTER TABLE firedrill_expectations ADD COLUMN figure_key TEXT;
ALTER TABLE firedrill_expectations ADD COLUMN figure_limit DOUBLE PRECISION;
ALTER TABLE firedrill_expectations ADD COLUMN figure_unit TEXT;
",
    },
    // A query's figure is kept on Prometheus's scale (seconds, ratios), so
    // a regression sentence on a query and a bounded sentence on the same
    // query keep one figure. Schema 3 kept a bounded sentence's in its
    // bound's unit (`ms`, `%`): brought to Prometheus's scale. A query
    // figure recorded before schema 3 has no unit kept and stays as it is.
    Migration {
        version: 4,
        sql: "
UPDATE firedrill_figures SET value = value / 1000 WHERE name LIKE 'query %' AND EXISTS (
    SELECT 1 FROM firedrill_expectations e WHERE e.run_id = firedrill_figures.run_id
    AND e.figure_key = firedrill_figures.name AND e.figure_unit = 'ms');
UPDATE firedrill_figures SET value = value / 100 WHERE name LIKE 'query %' AND EXISTS (
    SELECT 1 FROM firedrill_expectations e WHERE e.run_id = firedrill_figures.run_id
    AND e.figure_key = firedrill_figures.name AND e.figure_unit = '%');
UPDATE firedrill_expectations SET figure = figure / 1000, figure_limit = figure_limit / 1000,
    figure_unit = 's' WHERE figure_key LIKE 'query %' AND figure_unit = 'ms';
UPDATE firedrill_expectations SET figure = figure / 100, figure_limit = figure_limit / 100,
    figure_unit = NULL WHERE figure_key LIKE 'query %' AND figure_unit = '%';
",
    },
];

/// The schema version this build writes and reads.
pub(crate) const LATEST: i64 = 4;

/// The tables a history has; one of them without the version table is
/// not firedrill's.
const OURS: [&str; 4] = [
    "firedrill_history",
    "firedrill_runs",
    "firedrill_figures",
    "firedrill_expectations",
];

/// Brings `db` to [`LATEST`], creating the tables on first use.
pub(crate) fn migrate(db: &mut Db, shown: &str) -> Result<(), HistoryError> {
    let query = |e: String| HistoryError::Query(shown.to_string(), e);
    db.begin().map_err(query)?;
    let result = migrate_locked(db, shown);
    match result {
        Ok(()) => db.commit().map_err(query),
        Err(e) => {
            db.rollback();
            Err(e)
        }
    }
}

fn migrate_locked(db: &mut Db, shown: &str) -> Result<(), HistoryError> {
    let query = |e: String| HistoryError::Query(shown.to_string(), e);
    let version = version(db, shown)?;
    if version > LATEST {
        return Err(HistoryError::Newer {
            at: shown.to_string(),
            found: version,
            known: LATEST,
        });
    }
    let id = if db.is_sqlite() {
        "INTEGER PRIMARY KEY AUTOINCREMENT"
    } else {
        "BIGSERIAL PRIMARY KEY"
    };
    if version == 0 {
        db.batch("CREATE TABLE firedrill_history (version BIGINT NOT NULL)")
            .map_err(query)?;
        db.execute(
            "INSERT INTO firedrill_history (version) VALUES ($1)",
            &[Cell::Int(0)],
        )
        .map_err(query)?;
    }
    for migration in MIGRATIONS.iter().filter(|m| m.version > version) {
        db.batch(&migration.sql.replace("{id}", id))
            .map_err(query)?;
        db.execute(
            "UPDATE firedrill_history SET version = $1",
            &[Cell::Int(migration.version)],
        )
        .map_err(query)?;
    }
    Ok(())
}

/// The stored version; 0 for a database with none of firedrill's tables.
fn version(db: &mut Db, shown: &str) -> Result<i64, HistoryError> {
    let query = |e: String| HistoryError::Query(shown.to_string(), e);
    let tables: Vec<String> = if db.is_sqlite() {
        db.query(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
            &[],
            &[Kind::Text],
        )
    } else {
        db.query(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema()",
            &[],
            &[Kind::Text],
        )
    }
    .map_err(query)?
    .into_iter()
    .filter_map(|row| row.into_iter().next().and_then(Cell::text))
    .collect();
    if !tables.iter().any(|t| t == "firedrill_history") {
        // A SQLite file is the history's alone; a PostgreSQL database may
        // be shared, but not with tables of firedrill's names.
        let foreign: Vec<&String> = tables
            .iter()
            .filter(|t| db.is_sqlite() || OURS.contains(&t.as_str()))
            .collect();
        return match foreign.first() {
            None => Ok(0),
            Some(table) => Err(HistoryError::NotHistory(
                shown.to_string(),
                format!("it holds a table '{table}' but no firedrill_history version table"),
            )),
        };
    }
    let rows = db
        .query("SELECT version FROM firedrill_history", &[], &[Kind::Int])
        .map_err(query)?;
    match rows.as_slice() {
        [row] => Ok(row[0].int()),
        _ => Err(HistoryError::NotHistory(
            shown.to_string(),
            format!(
                "firedrill_history holds {} version rows, not one",
                rows.len()
            ),
        )),
    }
}
