//! Drill history: every run kept in a database (a SQLite file, or a
//! PostgreSQL server for a team's shared history), read back as trends and
//! as the baselines regression expectations are judged against.
//!
//! * `db` — the two databases behind one small surface, and
//!   [`Location`].
//! * `schema` — the tables and their versioned migrations.
//! * [`record`] — what a run leaves: its row, figures and expectations.
//! * [`read`] — runs read back, and the past runs a regression sentence's
//!   baseline is made of: only those in which it was judged and held, or
//!   that seeded it.
//! * [`trend`] — the trend as a table, CSV or JSON; [`page`], as
//!   `trend.html`.

mod db;
mod open;
pub mod page;
pub mod read;
pub mod record;
mod schema;
pub mod trend;

pub use db::Location;
pub use read::{Filter, StoredRun};
pub use record::Provenance;

use crate::experiment::expect::baseline::PastRun;
use crate::report::RunReport;

/// Why a history could not be used. Every one names the database.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// It could not be opened or reached.
    #[error("history {0}: cannot open it: {1}")]
    Open(String, String),
    /// Reading a history that was never written.
    #[error("history {0}: no such file (a history is created by `firedrill run --history`)")]
    Missing(String),
    /// The file or database is not a firedrill history.
    #[error("history {0}: not a firedrill history ({1}); nothing was written to it")]
    NotHistory(String, String),
    /// SQLite's `quick_check` finds its pages damaged.
    #[error(
        "history {0}: the database is damaged ({1}); nothing was written to it (restore it from a backup, or salvage it with `sqlite3 FILE .recover`)"
    )]
    Damaged(String, String),
    /// This process may not write to it (a run records into it).
    #[error("history {0}: read-only: this process may not write to it; nothing was written to it")]
    ReadOnly(String),
    /// The disk it is on has no room left.
    #[error("history {0}: disk full ({1}); nothing was written to it")]
    DiskFull(String, String),
    /// Written by a newer firedrill.
    #[error(
        "history {at}: written by a newer firedrill (history schema {found}; this build knows up to {known}); nothing was written to it"
    )]
    Newer {
        /// The database.
        at: String,
        /// Its schema version.
        found: i64,
        /// The newest this build knows.
        known: i64,
    },
    /// A statement failed.
    #[error("history {0}: {1}")]
    Query(String, String),
}

/// An open history, at its latest schema.
#[derive(Debug)]
pub struct History {
    db: db::Db,
    shown: String,
}

impl History {
    /// Opens the history at `location` for writing, creating it on first
    /// use.
    pub fn open(location: &Location) -> Result<History, HistoryError> {
        History::open_with(location, true)
    }

    /// Opens an existing history (a SQLite file that is not there is an
    /// error, not a new empty history).
    pub fn open_existing(location: &Location) -> Result<History, HistoryError> {
        History::open_with(location, false)
    }

    fn open_with(location: &Location, create: bool) -> Result<History, HistoryError> {
        let shown = location.shown();
        let opened = db::Db::open(location, create).and_then(|mut db| {
            schema::migrate(&mut db, &shown)?;
            db.prefer_wal()
                .map_err(|e| HistoryError::Query(shown.clone(), e))?;
            Ok(db)
        });
        let db = match (opened, location) {
            (Err(e), Location::Sqlite(path)) => return Err(open::when_full(path, e)),
            (opened, _) => opened?,
        };
        Ok(History { db, shown })
    }

    /// Records a run; its id in the history.
    pub fn record(
        &mut self,
        report: &RunReport,
        provenance: &Provenance,
    ) -> Result<i64, HistoryError> {
        record::insert(&mut self.db, &self.shown, report, provenance)
    }

    /// The runs `filter` selects, oldest first, with their figures and
    /// expectations.
    pub fn runs(&mut self, filter: &Filter) -> Result<Vec<StoredRun>, HistoryError> {
        read::runs(&mut self.db, filter).map_err(|e| HistoryError::Query(self.shown.clone(), e))
    }

    /// The figure `key` of the last `last` runs of `experiment` fit for
    /// the baseline of `sentence` (see [`read`]), newest first.
    pub fn baseline(
        &mut self,
        experiment: &str,
        sentence: &str,
        key: &str,
        last: usize,
    ) -> Result<Vec<PastRun>, HistoryError> {
        read::baseline(&mut self.db, experiment, sentence, key, last)
            .map_err(|e| HistoryError::Query(self.shown.clone(), e))
    }

    /// The database, as messages name it.
    pub fn shown(&self) -> &str {
        &self.shown
    }
}
