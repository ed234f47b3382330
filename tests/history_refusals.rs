//! A SQLite history that cannot take a run is refused before the drill
//! runs, with exit 3, the reason named and the file's bytes unchanged: a
//! history with a damaged table page, one this process may not write, one
//! on a disk with no room left.

use std::path::Path;
use std::process::{Command, Output};

const DRILL: &str = "experiments/history/scheduled-drill.yaml";

/// `firedrill run DRILL --seed SEED --history HISTORY --report-dir DIR`.
fn run_into(history: &Path, seed: u32, reports: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["run", DRILL, "--quiet", "--seed", &seed.to_string()])
        .arg("--history")
        .arg(history)
        .arg("--report-dir")
        .arg(reports)
        .output()
        .unwrap()
}

/// A history of two runs made by the drill, in `dir`.
fn made_history(dir: &Path) -> std::path::PathBuf {
    let history = dir.join("history.db");
    for seed in [1, 2] {
        let out = run_into(&history, seed, &dir.join(format!("made-{seed}")));
        assert_eq!(out.status.code(), Some(0), "{out:?}");
    }
    history
}

/// The run was refused with exit 3 before its drill (no report) with
/// `what` said, and the history's bytes are `before`.
fn refused_before_the_drill(
    out: &Output,
    reports: &Path,
    what: &str,
    history: &Path,
    before: &[u8],
) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains(what), "{stderr}");
    assert!(stderr.contains("nothing was written to it"), "{stderr}");
    assert!(
        !reports.join("report.json").exists(),
        "the drill ran before the refusal"
    );
    assert!(
        std::fs::read(history).unwrap() == before,
        "the history changed"
    );
}

/// Overwriting bytes inside a page of `firedrill_figures` leaves a file
/// SQLite opens and writes into (the run exited 0 and said "recorded as
/// run #3"); only reading the table back found it malformed.
#[test]
fn a_history_with_a_damaged_table_page_is_refused_before_the_drill_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let history = made_history(dir.path());
    let db = rusqlite::Connection::open(&history).unwrap();
    let root: i64 = db
        .query_row(
            "SELECT rootpage FROM sqlite_master WHERE name = 'firedrill_figures'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    let page_size: i64 = db
        .query_row("PRAGMA page_size", [], |row| row.get(0))
        .unwrap();
    drop(db);
    let mut bytes = std::fs::read(&history).unwrap();
    let at = usize::try_from((root - 1) * page_size + 3000).unwrap();
    bytes[at..at + 24].fill(0x7f);
    std::fs::write(&history, &bytes).unwrap();
    let check: String = rusqlite::Connection::open(&history)
        .unwrap()
        .query_row("PRAGMA quick_check", [], |row| row.get(0))
        .unwrap();
    assert_ne!(check, "ok", "the overwritten bytes damaged nothing");
    let reports = dir.path().join("reports");
    let out = run_into(&history, 3, &reports);
    refused_before_the_drill(
        &out,
        &reports,
        "the database is damaged (",
        &history,
        &bytes,
    );
}

/// Makes `file` read-only to this process, and writable again when
/// dropped. Root writes through a mode of 0444, so as root the file is
/// made immutable (`chattr +i`), which root cannot write through either.
struct ReadOnly<'a>(&'a Path, bool);

impl<'a> ReadOnly<'a> {
    fn new(file: &'a Path) -> ReadOnly<'a> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o444)).unwrap();
        let writable = std::fs::OpenOptions::new().write(true).open(file).is_ok();
        if writable {
            let status = Command::new("chattr").arg("+i").arg(file).status();
            assert!(
                status.is_ok_and(|s| s.success()),
                "running as root, the test needs `chattr +i` to make a read-only file"
            );
            assert!(std::fs::OpenOptions::new().write(true).open(file).is_err());
        }
        ReadOnly(file, writable)
    }
}

impl Drop for ReadOnly<'_> {
    fn drop(&mut self) {
        if self.1 {
            let _ = Command::new("chattr").arg("-i").arg(self.0).status();
        }
    }
}

/// SQLite opens a file it may not write read-only; the run used to find
/// out when it recorded, after the drill ("attempt to write a readonly
/// database (the run's reports were written)").
#[test]
fn a_read_only_history_is_refused_before_the_drill_and_still_reads() {
    let dir = tempfile::tempdir().unwrap();
    let history = made_history(dir.path());
    let before = std::fs::read(&history).unwrap();
    let _read_only = ReadOnly::new(&history);
    let reports = dir.path().join("reports");
    let out = run_into(&history, 3, &reports);
    refused_before_the_drill(&out, &reports, "read-only", &history, &before);
    let read = Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .arg("history")
        .arg("--history")
        .arg(&history)
        .output()
        .unwrap();
    assert_eq!(read.status.code(), Some(0), "{read:?}");
}

/// A history on a file system with no room left: a 256 KiB tmpfs, filled,
/// mounted in a mount namespace of the test's own (`unshare`: a user
/// namespace makes this possible without root). Its WAL's shared-memory
/// file cannot grow, which SQLite reports as a "disk I/O error"; the run
/// used to call the history "not a firedrill history".
#[test]
fn a_history_on_a_full_disk_is_refused_as_disk_full_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let history = made_history(dir.path());
    let before = std::fs::read(&history).unwrap();
    let full = dir.path().join("full");
    std::fs::create_dir(&full).unwrap();
    let reports = dir.path().join("reports");
    let script = r#"set -e
mount -t tmpfs -o size=256k tmpfs "$1"
cp "$2" "$1/history.db"
dd if=/dev/zero of="$1/fill" bs=4k 2>/dev/null || true
set +e
"$3" run "$4" --quiet --seed 3 --history "$1/history.db" --report-dir "$5" 2> "$6/stderr"
echo $? > "$6/code"
cp "$1/history.db" "$6/after.db"
"#;
    let status = Command::new("unshare")
        .args([
            "--user",
            "--map-root-user",
            "--mount",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .arg(&full)
        .arg(&history)
        .arg(env!("CARGO_BIN_EXE_firedrill"))
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(DRILL))
        .arg(&reports)
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(
        status.success(),
        "the test needs `unshare` and user namespaces to mount a small tmpfs"
    );
    let out = Output {
        status: exit_status(&dir.path().join("code")),
        stdout: Vec::new(),
        stderr: std::fs::read(dir.path().join("stderr")).unwrap(),
    };
    refused_before_the_drill(
        &out,
        &reports,
        "disk full",
        &dir.path().join("after.db"),
        &before,
    );
}

/// The exit status whose code the script wrote to `file`.
fn exit_status(file: &Path) -> std::process::ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    let code: i32 = std::fs::read_to_string(file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    std::process::ExitStatus::from_raw(code << 8)
}
