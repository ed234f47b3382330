//! The live view: heartbeat lines when stderr is a pipe (a real-time run
//! by its clock, a day-long virtual run by its hundredths, none of it in
//! the report files), and on a terminal (tmux) a panel that shows the
//! active fault, the breaker's transition, the errors and a pool's servers
//! in rotation while the run goes on, within 80 columns, coloured unless
//! NO_COLOR.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

const DRILL: &str = "fixtures/live/short_outage.yaml";
const POOL_DRILL: &str = "fixtures/live/pool_outage.yaml";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn a_piped_real_time_run_prints_heartbeat_lines() {
    let out = Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .current_dir(root())
        .args(["run", DRILL, "--progress-interval", "1s"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let beats: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("[firedrill] "))
        .collect();
    // Six seconds, a line a second: generous for a busy machine.
    assert!(beats.len() >= 3, "{stderr}");
    assert!(
        beats
            .iter()
            .any(|l| l.contains("active: dep-down") && l.contains("breaker dep: open since")),
        "{stderr}"
    );
    assert!(
        beats.iter().all(|l| !l.contains('\x1b')),
        "no colour in a pipe"
    );
}

#[test]
fn a_piped_run_with_progress_interval_0s_prints_no_heartbeat() {
    let out = Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .current_dir(root())
        .args([
            "run",
            DRILL,
            "--progress-interval",
            "0s",
            "--clock",
            "virtual",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("[firedrill]"));
}

/// tmux is installed by ci/install-test-clients.sh; without it (outside CI)
/// the terminal test cannot run.
fn tmux() -> bool {
    let found = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found || std::env::var_os("CI").is_none(),
        "tmux missing under CI"
    );
    found
}

/// Runs the drill in a detached tmux session and returns the pane (with
/// its escape sequences) once it shows `wanted`, or the last capture.
fn panel_in_tmux(session: &str, env: &str, wanted: &[&str]) -> String {
    drill_in_tmux(session, DRILL, "200", env, wanted)
}

/// Runs `drill` in a detached tmux session `columns` wide and returns
/// the pane once it shows `wanted`, or the last capture.
#[allow(clippy::disallowed_methods)] // Polls a real terminal in wall time.
fn drill_in_tmux(session: &str, drill: &str, columns: &str, env: &str, wanted: &[&str]) -> String {
    let binary = env!("CARGO_BIN_EXE_firedrill");
    let command = format!(
        "cd {} && {env} {binary} run {drill}; sleep 60",
        root().display()
    );
    let _ = Command::new("tmux")
        .args(["kill-session", "-t", session])
        .output();
    let started = Command::new("tmux")
        .args([
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            columns,
            "-y",
            "40",
            &command,
        ])
        .status()
        .unwrap();
    assert!(started.success());
    let mut pane = String::new();
    // The fault starts at 1 s, the breaker opens soon after; the run lasts
    // 6 s. Poll for up to 30 s.
    for _ in 0..120 {
        std::thread::sleep(Duration::from_millis(250));
        let out = Command::new("tmux")
            .args(["capture-pane", "-p", "-e", "-t", session])
            .output()
            .unwrap();
        pane = String::from_utf8_lossy(&out.stdout).into_owned();
        if wanted.iter().all(|w| pane.contains(w)) {
            break;
        }
    }
    let _ = Command::new("tmux")
        .args(["kill-session", "-t", session])
        .output();
    pane
}

#[test]
fn on_a_terminal_the_panel_shows_the_active_fault_and_the_breaker_transition_while_running() {
    if !tmux() {
        return;
    }
    let pane = panel_in_tmux(
        "firedrill-live",
        "",
        &["active: dep-down", "last: closed -> open at"],
    );
    assert!(pane.contains("active: dep-down"), "{pane}");
    assert!(pane.contains("last: closed -> open at"), "{pane}");
    assert!(
        pane.contains("route") && pane.contains("fallback"),
        "{pane}"
    );
    // Still running: the summary is not there yet.
    assert!(!pane.contains("expectations:"), "{pane}");
    assert!(pane.contains("\x1b["), "colour on a terminal: {pane}");
}

#[test]
fn no_color_turns_the_panels_colour_off() {
    if !tmux() {
        return;
    }
    let pane = panel_in_tmux(
        "firedrill-nocolor",
        "NO_COLOR=1",
        &["last: closed -> open at"],
    );
    assert!(pane.contains("last: closed -> open at"), "{pane}");
    assert!(!pane.contains("\x1b["), "{pane:?}");
}

/// The panel of a pool drill in an 80-column terminal: the header whole
/// on one line (it does not wrap), the errors b's 503s made before it was
/// ejected, success + errors = requests, the rate and latency of the last
/// second, and the pool line naming the server out of rotation.
#[test]
fn on_an_80_column_terminal_the_panel_shows_errors_and_the_server_out_of_rotation() {
    if !tmux() {
        return;
    }
    let pane = drill_in_tmux(
        "firedrill-pool",
        POOL_DRILL,
        "80",
        "NO_COLOR=1",
        &["pool inventory: 2 of 3 in rotation (out: b)"],
    );
    assert!(
        pane.contains("pool inventory: 2 of 3 in rotation (out: b)"),
        "{pane}"
    );
    assert!(pane.contains("live pool drill  "), "{pane}");
    let header: Vec<&str> = pane
        .lines()
        .find(|l| l.trim_start().starts_with("route "))
        .unwrap_or_else(|| panic!("no header: {pane}"))
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        [
            "route", "requests", "success", "fallback", "errors", "rejected", "timeouts"
        ],
        "the header on one line: {pane}"
    );
    let row: Vec<u64> = pane
        .lines()
        .find(|l| l.trim_start().starts_with("shop "))
        .unwrap_or_else(|| panic!("no row: {pane}"))
        .split_whitespace()
        .skip(1)
        .map(|c| c.parse().unwrap())
        .collect();
    assert!(row[3] > 0, "b's 503s are errors: {row:?}\n{pane}");
    assert_eq!(
        row[0],
        row[1] + row[3],
        "success + errors = requests: {row:?}"
    );
    assert!(
        pane.contains("last 1s") && pane.contains("req/s") && pane.contains("p99"),
        "{pane}"
    );
    assert!(!pane.contains("expectations:"), "still running: {pane}");
}

/// Runs `firedrill run ARGS` with stderr a pipe; returns stderr.
fn piped(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .current_dir(root())
        .arg("run")
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    stderr
}

/// A day of virtual time off a terminal prints heartbeat lines: with
/// `--progress-interval 1ms` of wall time every hundredth gets one, each
/// at its exact simulated moment (what a line says does not depend on the
/// machine), with the wall time and speed at its end.
#[test]
fn a_day_long_virtual_run_prints_heartbeat_lines_off_a_terminal() {
    let stderr = piped(&["fixtures/live/day_long.yaml", "--progress-interval", "1ms"]);
    let beats: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("[firedrill] "))
        .collect();
    assert!(beats.len() >= 50, "{} lines: {stderr}", beats.len());
    let mut last = 0;
    for beat in &beats {
        let percent: u64 = beat
            .split(" / 86400.0s (")
            .nth(1)
            .and_then(|rest| rest.split('%').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no share of the day: {beat}"));
        assert!(percent > last && percent < 100, "{beat}");
        let at = format!("[firedrill] {}.0s / 86400.0s ({percent}%)", 864 * percent);
        assert!(beat.starts_with(&at), "at its hundredth: {beat}");
        assert!(beat.contains("  shop: requests "), "{beat}");
        assert!(beat.contains("x real time)"), "{beat}");
        last = percent;
    }
    assert!(
        beats
            .iter()
            .any(|b| b.contains("active: day-outage") && b.contains("errors")),
        "{stderr}"
    );
}

/// The heartbeat's checkpoints do not change the run: the report files
/// of a virtual run with a line at every hundredth are byte for byte
/// those of a quiet run.
#[test]
fn heartbeat_lines_leave_a_virtual_runs_report_files_byte_identical() {
    let loud = tempfile::tempdir().unwrap();
    let quiet = tempfile::tempdir().unwrap();
    let experiment = "experiments/bulkhead_isolation_cap10.yaml";
    let virtual_clock = ["--clock", "virtual"];
    let dir = |d: &tempfile::TempDir| d.path().to_str().unwrap().to_string();
    let stderr = piped(&[
        experiment,
        virtual_clock[0],
        virtual_clock[1],
        "--progress-interval",
        "1ms",
        "--report-dir",
        &dir(&loud),
    ]);
    assert!(
        stderr.contains("[firedrill] "),
        "lines were printed: {stderr}"
    );
    piped(&[
        experiment,
        virtual_clock[0],
        virtual_clock[1],
        "--quiet",
        "--report-dir",
        &dir(&quiet),
    ]);
    let mut names: Vec<_> = std::fs::read_dir(quiet.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert!(names.len() >= 5, "{names:?}");
    for name in names {
        let a = std::fs::read(loud.path().join(&name)).unwrap();
        let b = std::fs::read(quiet.path().join(&name)).unwrap();
        assert!(a == b, "{name:?} differs with heartbeat lines on");
        assert!(
            !String::from_utf8_lossy(&a).contains("[firedrill]"),
            "{name:?} holds a heartbeat line"
        );
    }
}
