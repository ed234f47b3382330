//! The live view of a real-time run: heartbeat lines when stderr is a pipe,
//! and on a terminal (tmux) a panel that shows the active fault and the
//! breaker's transition while the run goes on, coloured unless NO_COLOR.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

const DRILL: &str = "fixtures/live/short_outage.yaml";

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
#[allow(clippy::disallowed_methods)] // Polls a real terminal in wall time.
fn panel_in_tmux(session: &str, env: &str, wanted: &[&str]) -> String {
    let binary = env!("CARGO_BIN_EXE_firedrill");
    let command = format!(
        "cd {} && {env} {binary} run {DRILL}; sleep 60",
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
            "200",
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
