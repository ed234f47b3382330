//! The two databases a history lives in, behind one small surface: a
//! statement with parameters, a query whose columns are read as the kinds
//! the caller names, and a transaction that takes the write lock first.
//! The SQL is written once, with `$1`-style parameters; SQLite reads them
//! as `?1`.

use std::path::PathBuf;

use super::HistoryError;

/// A value bound to a parameter or read from a column.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cell {
    /// TEXT.
    Text(String),
    /// BIGINT / INTEGER.
    Int(i64),
    /// DOUBLE PRECISION / REAL.
    Real(f64),
    /// BOOLEAN (an integer 0/1 in SQLite).
    Bool(bool),
    /// NULL, of a column of this kind.
    Null(Kind),
}

impl Cell {
    /// Text, or `None` for NULL.
    pub(crate) fn text(self) -> Option<String> {
        match self {
            Cell::Text(s) => Some(s),
            _ => None,
        }
    }

    pub(crate) fn int(&self) -> i64 {
        match self {
            Cell::Int(i) => *i,
            _ => 0,
        }
    }

    pub(crate) fn real(&self) -> Option<f64> {
        match self {
            Cell::Real(x) => Some(*x),
            _ => None,
        }
    }

    pub(crate) fn bool(&self) -> bool {
        matches!(self, Cell::Bool(true))
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Cell {
        Cell::Text(s.to_string())
    }
}

impl From<Option<&str>> for Cell {
    fn from(s: Option<&str>) -> Cell {
        s.map_or(Cell::Null(Kind::Text), Cell::from)
    }
}

impl From<f64> for Cell {
    fn from(x: f64) -> Cell {
        Cell::Real(x)
    }
}

impl From<Option<f64>> for Cell {
    fn from(x: Option<f64>) -> Cell {
        x.map_or(Cell::Null(Kind::Real), Cell::Real)
    }
}

impl From<i64> for Cell {
    fn from(i: i64) -> Cell {
        Cell::Int(i)
    }
}

impl From<bool> for Cell {
    fn from(b: bool) -> Cell {
        Cell::Bool(b)
    }
}

/// The kind a column is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Text,
    Int,
    Real,
    Bool,
}

/// Where a history is: a SQLite file or a PostgreSQL server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A SQLite file, created on first use.
    Sqlite(PathBuf),
    /// A `postgres://` or `postgresql://` URL.
    Postgres(String),
}

impl Location {
    /// A URL with a PostgreSQL scheme, otherwise a file path.
    pub fn parse(text: &str) -> Location {
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            Location::Postgres(text.to_string())
        } else {
            Location::Sqlite(PathBuf::from(text))
        }
    }

    /// As the messages name it: the path, or the URL without its password.
    pub fn shown(&self) -> String {
        match self {
            Location::Sqlite(path) => path.display().to_string(),
            Location::Postgres(url) => without_password(url),
        }
    }
}

/// `postgres://user:secret@host/db` as `postgres://user:***@host/db`.
fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let Some((credentials, host)) = rest.rsplit_once('@') else {
        return url.to_string();
    };
    match credentials.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_string(),
    }
}

/// An open history database.
pub(crate) enum Db {
    Sqlite(rusqlite::Connection),
    Postgres(Box<postgres::Client>),
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Db::Sqlite(_) => "Db::Sqlite",
            Db::Postgres(_) => "Db::Postgres",
        })
    }
}

impl Db {
    /// Opens `location`; a SQLite file that does not exist yet is created
    /// (with its folder) only when `create`.
    pub(crate) fn open(location: &Location, create: bool) -> Result<Db, HistoryError> {
        match location {
            Location::Sqlite(path) => super::open::sqlite(path, create).map(Db::Sqlite),
            Location::Postgres(url) => postgres::Client::connect(url, postgres::NoTls)
                .map(|c| Db::Postgres(Box::new(c)))
                .map_err(|e| HistoryError::Open(location.shown(), pg_error(&e))),
        }
    }

    /// Runs one statement.
    pub(crate) fn execute(&mut self, sql: &str, params: &[Cell]) -> Result<(), String> {
        match self {
            Db::Sqlite(c) => c
                .execute(&sqlite_sql(sql), rusqlite::params_from_iter(params.iter()))
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Db::Postgres(c) => c
                .execute(sql, &pg_params(params))
                .map(|_| ())
                .map_err(|e| pg_error(&e)),
        }
    }

    /// Runs statements with no parameters, one after the other.
    pub(crate) fn batch(&mut self, sql: &str) -> Result<(), String> {
        match self {
            Db::Sqlite(c) => c.execute_batch(sql).map_err(|e| e.to_string()),
            Db::Postgres(c) => c.batch_execute(sql).map_err(|e| pg_error(&e)),
        }
    }

    /// The rows of a query, each column read as `kinds` says.
    pub(crate) fn query(
        &mut self,
        sql: &str,
        params: &[Cell],
        kinds: &[Kind],
    ) -> Result<Vec<Vec<Cell>>, String> {
        match self {
            Db::Sqlite(c) => {
                let mut statement = c.prepare(&sqlite_sql(sql)).map_err(|e| e.to_string())?;
                let rows = statement
                    .query_map(rusqlite::params_from_iter(params.iter()), |row| {
                        kinds
                            .iter()
                            .enumerate()
                            .map(|(i, k)| sqlite_cell(row, i, *k))
                            .collect::<Result<Vec<Cell>, _>>()
                    })
                    .map_err(|e| e.to_string())?;
                rows.collect::<Result<Vec<_>, _>>()
                    .map_err(|e| e.to_string())
            }
            Db::Postgres(c) => {
                let rows = c.query(sql, &pg_params(params)).map_err(|e| pg_error(&e))?;
                rows.iter()
                    .map(|row| {
                        kinds
                            .iter()
                            .enumerate()
                            .map(|(i, k)| pg_cell(row, i, *k))
                            .collect::<Result<Vec<Cell>, _>>()
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| pg_error(&e))
            }
        }
    }

    /// Starts a transaction that holds the write lock from its first
    /// statement (SQLite: `BEGIN IMMEDIATE`; PostgreSQL: an advisory lock
    /// of firedrill's), so two writers never interleave a migration.
    pub(crate) fn begin(&mut self) -> Result<(), String> {
        match self {
            Db::Sqlite(_) => self.batch("BEGIN IMMEDIATE"),
            Db::Postgres(_) => self.batch("BEGIN; SELECT pg_advisory_xact_lock(7461830291)"),
        }
    }

    pub(crate) fn commit(&mut self) -> Result<(), String> {
        self.batch("COMMIT")
    }

    pub(crate) fn rollback(&mut self) {
        let _ = self.batch("ROLLBACK");
    }

    /// SQLite: write-ahead logging, so readers never wait for a writer and
    /// parallel writers queue on the lock. Set once the file is known to
    /// be a history (it changes the file's header).
    pub(crate) fn prefer_wal(&mut self) -> Result<(), String> {
        match self {
            Db::Sqlite(c) => c
                .query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))
                .map_err(|e| e.to_string()),
            Db::Postgres(_) => Ok(()),
        }
    }

    /// Whether this is SQLite (the schema's few differences).
    pub(crate) fn is_sqlite(&self) -> bool {
        matches!(self, Db::Sqlite(_))
    }
}

/// `$1` as SQLite's `?1`.
fn sqlite_sql(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('?');
        } else {
            out.push(c);
        }
    }
    out
}

impl rusqlite::ToSql for Cell {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, Value, ValueRef};
        Ok(match self {
            Cell::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            Cell::Int(i) => ToSqlOutput::Owned(Value::Integer(*i)),
            Cell::Real(x) => ToSqlOutput::Owned(Value::Real(*x)),
            Cell::Bool(b) => ToSqlOutput::Owned(Value::Integer(i64::from(*b))),
            Cell::Null(_) => ToSqlOutput::Owned(Value::Null),
        })
    }
}

fn sqlite_cell(row: &rusqlite::Row<'_>, i: usize, kind: Kind) -> rusqlite::Result<Cell> {
    Ok(match kind {
        Kind::Text => row
            .get::<_, Option<String>>(i)?
            .map_or(Cell::Null(kind), Cell::Text),
        Kind::Int => row
            .get::<_, Option<i64>>(i)?
            .map_or(Cell::Null(kind), Cell::Int),
        Kind::Real => row
            .get::<_, Option<f64>>(i)?
            .map_or(Cell::Null(kind), Cell::Real),
        Kind::Bool => row
            .get::<_, Option<i64>>(i)?
            .map_or(Cell::Null(kind), |b| Cell::Bool(b != 0)),
    })
}

/// A PostgreSQL error with what caused it (the server's message, the
/// type that did not fit).
fn pg_error(e: &postgres::Error) -> String {
    match std::error::Error::source(e) {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    }
}

fn pg_params(params: &[Cell]) -> Vec<&(dyn postgres::types::ToSql + Sync)> {
    params
        .iter()
        .map(|p| -> &(dyn postgres::types::ToSql + Sync) {
            match p {
                Cell::Text(s) => s,
                Cell::Int(i) => i,
                Cell::Real(x) => x,
                Cell::Bool(b) => b,
                Cell::Null(Kind::Text) => &None::<String>,
                Cell::Null(Kind::Int) => &None::<i64>,
                Cell::Null(Kind::Real) => &None::<f64>,
                Cell::Null(Kind::Bool) => &None::<bool>,
            }
        })
        .collect()
}

fn pg_cell(row: &postgres::Row, i: usize, kind: Kind) -> Result<Cell, postgres::Error> {
    Ok(match kind {
        Kind::Text => row
            .try_get::<_, Option<String>>(i)?
            .map_or(Cell::Null(kind), Cell::Text),
        Kind::Int => row
            .try_get::<_, Option<i64>>(i)?
            .map_or(Cell::Null(kind), Cell::Int),
        Kind::Real => row
            .try_get::<_, Option<f64>>(i)?
            .map_or(Cell::Null(kind), Cell::Real),
        Kind::Bool => row
            .try_get::<_, Option<bool>>(i)?
            .map_or(Cell::Null(kind), Cell::Bool),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollar_parameters_become_sqlite_question_marks_and_nothing_else_changes() {
        assert_eq!(
            sqlite_sql("SELECT '$x' FROM t WHERE a = $1 AND b = $12"),
            "SELECT '$x' FROM t WHERE a = ?1 AND b = ?12"
        );
    }

    #[test]
    fn a_postgres_url_is_shown_without_its_password() {
        assert_eq!(
            Location::parse("postgres://drill:s3cret@127.0.0.1:5432/h").shown(),
            "postgres://drill:***@127.0.0.1:5432/h"
        );
        assert_eq!(
            Location::parse("postgresql://drill@127.0.0.1/h").shown(),
            "postgresql://drill@127.0.0.1/h"
        );
        assert_eq!(
            Location::parse("runs/history.db"),
            Location::Sqlite(PathBuf::from("runs/history.db"))
        );
    }
}
