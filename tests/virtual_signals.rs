//! A long virtual-time run, stopped by a signal: it writes its requests as
//! it goes, and on SIGINT or SIGTERM it stops with exit 130 and a partial
//! report, as a real-clock run does.
//!
//! The binary runs a 24-hour drill in virtual time (hours of simulated
//! traffic per minute of wall time), so it is always mid-run when the
//! signal comes. Waits are in wall time with generous margins; nothing here
//! measures speed.

#![allow(clippy::disallowed_methods)] // Real processes, polled in wall time.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::Duration;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Starts a day-long virtual drill writing its reports into `dir`.
fn start_long_run(dir: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .current_dir(root())
        .args([
            "run",
            "experiments/bulkhead_isolation_none.yaml",
            "--clock",
            "virtual",
            "--quiet",
            "--set",
            "duration=86400s",
            "--report-dir",
        ])
        .arg(dir)
        .spawn()
        .expect("the binary starts")
}

/// Lines in `requests.jsonl` so far (0 when it does not exist yet).
fn lines(dir: &Path) -> usize {
    std::fs::read(dir.join("requests.jsonl"))
        .map(|b| b.iter().filter(|c| **c == b'\n').count())
        .unwrap_or(0)
}

/// Polls until `requests.jsonl` holds at least `n` lines, for up to 60 s.
fn wait_for_lines(dir: &Path, n: usize) -> usize {
    for _ in 0..600 {
        let seen = lines(dir);
        if seen >= n {
            return seen;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    lines(dir)
}

/// Sends `signal` (`INT`, `TERM`) to the child.
fn signal(child: &Child, signal: &str) {
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success(), "kill -{signal} failed");
}

/// Waits up to 10 s for the child to exit; kills it and fails otherwise.
fn exit_within_10s(child: &mut Child) -> ExitStatus {
    for _ in 0..100 {
        if let Some(status) = child.try_wait().expect("wait works") {
            return status;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the run was still going 10 s after the signal");
}

/// The drill, stopped by `name` once it has written `n` requests: exit
/// 130, and a partial report that agrees with the requests file.
fn stops_on(name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let mut child = start_long_run(dir.path());
    // The requests are on disk while the run goes, not only at its end.
    let before = wait_for_lines(dir.path(), 5_000);
    assert!(
        before >= 5_000,
        "requests.jsonl held {before} lines after 60 s of a running drill"
    );
    assert!(
        child.try_wait().unwrap().is_none(),
        "a 24-hour drill ended by itself"
    );
    signal(&child, name);
    let status = exit_within_10s(&mut child);
    assert_eq!(status.code(), Some(130), "SIG{name}: {status:?}");

    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("report.json")).unwrap()).unwrap();
    assert_eq!(report["ending"]["kind"], "interrupted");
    assert_eq!(report["passed"], false);
    assert_eq!(report["planned_duration_ms"].as_f64(), Some(86_400_000.0));
    let ran = report["duration_ms"].as_f64().unwrap();
    assert!(ran > 0.0 && ran < 86_400_000.0, "duration_ms {ran}");
    // Every request the report counts is in the file, once.
    let counted: u64 = report["routes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["requests"].as_u64().unwrap())
        .sum();
    let written = lines(dir.path());
    assert!(written >= before);
    assert_eq!(counted, written as u64);
    for file in ["junit.xml", "journal.jsonl", "report.html"] {
        assert!(dir.path().join(file).exists(), "{file} missing");
    }
    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    assert!(junit.contains("interrupted"), "{junit}");
}

#[test]
fn sigint_stops_a_long_virtual_run_with_130_and_a_partial_report() {
    stops_on("INT");
}

#[test]
fn sigterm_stops_a_long_virtual_run_with_130_and_a_partial_report() {
    stops_on("TERM");
}
