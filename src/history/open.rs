//! Opening a SQLite history, and refusing one before the drill runs when
//! it cannot take the run: a file that is not a database, a database
//! whose pages are damaged (SQLite's `quick_check`), a file this process
//! may not write, a disk with no room left. Each is refused with the file
//! left as it was.

use std::path::Path;
use std::time::Duration;

use super::HistoryError;

/// How long a writer waits for another's lock (parallel CI jobs on one
/// SQLite file).
const BUSY: Duration = Duration::from_secs(60);

/// How many of `quick_check`'s findings a refusal quotes.
const FINDINGS: usize = 3;

/// Opens the SQLite file at `path`; one that does not exist yet is created
/// (with its folder) only when `write` (a run records into it; otherwise
/// it is read, and may be read-only).
pub(super) fn sqlite(path: &Path, write: bool) -> Result<rusqlite::Connection, HistoryError> {
    let shown = path.display().to_string();
    let exists = path.exists();
    if !exists && !write {
        return Err(HistoryError::Missing(shown));
    }
    if !exists && let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| HistoryError::Open(shown.clone(), e.to_string()))?;
    }
    let connection = rusqlite::Connection::open(path)
        .map_err(|e| HistoryError::Open(shown.clone(), e.to_string()))?;
    connection
        .busy_timeout(BUSY)
        .map_err(|e| HistoryError::Open(shown.clone(), e.to_string()))?;
    // SQLite opens a file it may not write read-only, and says so only at
    // the first write: after the drill. Asked here, before it.
    if write && connection.is_readonly(rusqlite::MAIN_DB).unwrap_or(false) {
        return Err(HistoryError::ReadOnly(shown));
    }
    // Reading the schema first tells a file that is not a database before
    // anything is written to it.
    connection
        .query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))
        .map_err(|e| HistoryError::NotHistory(shown.clone(), e.to_string()))?;
    damage(&connection).map_err(|found| HistoryError::Damaged(shown.clone(), found))?;
    Ok(connection)
}

/// What SQLite's `quick_check` finds wrong with the database's pages (its
/// first [`FINDINGS`]), or the error it stops at. A write into a damaged
/// table can succeed and the damage surface only when it is read back.
fn damage(connection: &rusqlite::Connection) -> Result<(), String> {
    let mut statement = connection
        .prepare(&format!("PRAGMA quick_check({FINDINGS})"))
        .map_err(|e| e.to_string())?;
    let findings = statement
        .query_map([], |row| row.get::<_, String>(0))
        .and_then(|rows| rows.collect::<Result<Vec<String>, _>>())
        .map_err(|e| e.to_string())?;
    match findings.as_slice() {
        [ok] if ok == "ok" => Ok(()),
        _ => Err(findings
            .iter()
            .flat_map(|f| f.lines())
            .filter(|line| !line.starts_with("***"))
            .take(FINDINGS)
            .collect::<Vec<_>>()
            .join("; ")),
    }
}

/// `error`, said as a full disk when that is why SQLite failed: its own
/// "database or disk is full" (SQLITE_FULL), or an I/O error (a WAL
/// history's shared-memory file that cannot grow) on a file system with
/// no room left.
pub(super) fn when_full(path: &Path, error: HistoryError) -> HistoryError {
    let (shown, cause) = match &error {
        HistoryError::Open(shown, cause)
        | HistoryError::NotHistory(shown, cause)
        | HistoryError::Damaged(shown, cause)
        | HistoryError::Query(shown, cause) => (shown, cause),
        _ => return error,
    };
    let full =
        cause.contains("disk is full") || (cause.contains("disk I/O error") && no_room_left(path));
    if full {
        HistoryError::DiskFull(shown.clone(), cause.clone())
    } else {
        error
    }
}

/// Whether the file system `path` is on has no block left for this
/// process.
fn no_room_left(path: &Path) -> bool {
    let folder = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(folder) => folder,
        None => Path::new("."),
    };
    rustix::fs::statvfs(folder).is_ok_and(|fs| fs.f_bavail == 0)
}
