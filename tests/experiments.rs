//! Every experiment in `experiments/` runs in virtual time and holds; the
//! quickstart, a pool's dying instance and a gRPC dependency also run once in real time; a run is reproducible byte for
//! byte; a wrong expectation fails with exit 1 and says expected vs seen;
//! the JUnit report matches the verdicts.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use firedrill::experiment::config::ClockKind;
use firedrill::experiment::drill::Live;
use firedrill::experiment::file::load;
use firedrill::report::{Exporter, RunReport, RunResult};

/// Runs `loaded` to the end (no interrupt) and judges it.
fn execute(
    loaded: &firedrill::experiment::file::Loaded,
    clock: ClockKind,
    live: Live,
) -> Result<(RunResult, RunReport), firedrill::experiment::drill::RunError> {
    firedrill::report::execute(loaded, clock, std::future::pending(), live)
}

fn experiments() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_experiment_holds_in_virtual_time() {
    let files = experiments();
    assert!(
        files.len() >= 14,
        "the nine reference scenarios (with their contrasts) and the quickstart"
    );
    let mut failures = Vec::new();
    for file in &files {
        let loaded = load(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert!(
            !loaded.expectations.is_empty(),
            "{} asserts nothing",
            file.display()
        );
        let (_, report) = execute(&loaded, ClockKind::Virtual, Live::default()).unwrap();
        if !report.passed {
            failures.push(format!(
                "{}:\n{}",
                file.display(),
                firedrill::report::console::render(&report)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Runs `experiments/NAME` on loopback in real time and asserts it holds.
fn holds_in_real_time(name: &str) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("experiments")
        .join(name);
    let loaded = load(&file).unwrap();
    let (_, report) = execute(&loaded, ClockKind::Real, Live::default()).unwrap();
    assert!(
        report.passed,
        "{}",
        firedrill::report::console::render(&report)
    );
}

#[test]
fn quickstart_holds_in_real_time_on_loopback() {
    holds_in_real_time("quickstart.yaml");
}

#[test]
fn a_pool_instance_dying_holds_in_real_time_on_loopback() {
    // 45 s of wall time: health checks, ejection, slow start on real sockets.
    holds_in_real_time("pool_instance_dies.yaml");
}

#[test]
fn a_grpc_dependency_behind_the_breaker_holds_in_real_time_on_loopback() {
    holds_in_real_time("grpc_dependency.yaml");
}

/// The gRPC breaker drill's expectations on a line with no breaker: every
/// UNAVAILABLE rides on HTTP 200, and each verdict still fails, saying
/// what it saw.
#[test]
fn a_grpc_drill_fails_without_a_breaker_though_every_failed_call_is_an_http_200() {
    let (dir, out, stdout) = run_with_report_dir("fixtures/experiments/grpc_breaker_missing.yaml");
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    for seen in [
        "seen:     route shop success 66.5% (163 of 245) over the run",
        "seen:     route shop fallback 0.0% (0 of 82) during inventory-down",
        "seen:     82 calls to /inventory.Inventory/* during inventory-down",
    ] {
        assert!(stdout.contains(seen), "{seen}\n{stdout}");
    }
    let requests = std::fs::read_to_string(dir.path().join("requests.jsonl")).unwrap();
    let statuses: Vec<(u64, u64)> = requests
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|r| {
            (
                r["status"].as_u64().unwrap(),
                r["grpc_status"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(statuses.len(), 245);
    assert!(statuses.iter().all(|(http, _)| *http == 200), "{requests}");
    let unavailable = statuses.iter().filter(|(_, g)| *g == 14).count();
    let ok = statuses.iter().filter(|(_, g)| *g == 0).count();
    assert_eq!((unavailable, ok), (82, 163), "grpc_status of every call");
    // Each format lists the route's gRPC statuses.
    assert!(
        stdout.contains("shop         gRPC statuses: OK 163, UNAVAILABLE 82"),
        "{stdout}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("report.json")).unwrap()).unwrap();
    assert_eq!(
        json["routes"][0]["grpc_statuses"],
        serde_json::json!({ "OK": 163, "UNAVAILABLE": 82 })
    );
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(
        html.contains("shop: gRPC statuses <code>OK</code> 163, <code>UNAVAILABLE</code> 82"),
        "{html}"
    );
}

#[test]
fn same_experiment_and_seed_give_a_byte_identical_json_report() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/outage_contained.yaml");
    let loaded = load(&file).unwrap();
    let render = || {
        let (_, report) = execute(&loaded, ClockKind::Virtual, Live::default()).unwrap();
        firedrill::report::json::Json.render(&report).unwrap()
    };
    let first = render();
    assert_eq!(first, render());
    let mut other = loaded.clone();
    other.experiment.seed += 1;
    let (_, report) = execute(&other, ClockKind::Virtual, Live::default()).unwrap();
    assert_ne!(
        first,
        firedrill::report::json::Json.render(&report).unwrap(),
        "the seed matters"
    );
}

/// Runs `firedrill run FILE --report-dir TMP` from the crate root.
fn run_with_report_dir(file: &str) -> (tempfile::TempDir, std::process::Output, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("firedrill")
        .unwrap()
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")))
        .args(["run", file, "--report-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    (dir, out, stdout)
}

#[test]
fn a_wrong_expectation_exits_1_and_shows_expected_and_seen() {
    let (dir, out, stdout) = run_with_report_dir("fixtures/experiments/wrong_expectation.yaml");
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("FAIL breaker dep never opens"), "{stdout}");
    assert!(
        stdout.contains("expected:") && stdout.contains("seen:"),
        "{stdout}"
    );
    assert!(
        stdout.contains("ok   route calls requests >= 100"),
        "{stdout}"
    );
    for file in [
        "report.json",
        "junit.xml",
        "journal.jsonl",
        "requests.jsonl",
    ] {
        assert!(dir.path().join(file).exists(), "{file} written");
    }
}

/// 96 of 97 is 98.97%: a failing figure is never shown rounded onto its
/// bound (`99.0%` next to `>= 99%`), in any of the formats.
#[test]
fn a_failing_share_one_request_short_of_its_bound_shows_the_digits_that_decide() {
    let (dir, out, stdout) =
        run_with_report_dir("fixtures/experiments/one_short_of_the_bound.yaml");
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let seen = "route calls success 98.97% (96 of 97) over the run";
    assert!(stdout.contains(&format!("seen:     {seen}")), "{stdout}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("report.json")).unwrap()).unwrap();
    assert_eq!(json["verdicts"][0]["seen"], seen, "{json}");
    for file in ["junit.xml", "report.html"] {
        let text = std::fs::read_to_string(dir.path().join(file)).unwrap();
        assert!(text.contains(seen), "{file}: {text}");
        assert!(!text.contains("99.0% (96 of 97)"), "{file}: {text}");
    }
}

/// Runs `firedrill run experiments/quickstart.yaml` with `args` after.
fn run_quickstart(args: &[&std::ffi::OsStr]) -> (Option<i32>, String, String) {
    let out = Command::cargo_bin("firedrill")
        .unwrap()
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")))
        .args(["run", "experiments/quickstart.yaml", "--clock", "virtual"])
        .args(args)
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

/// Every output path is checked before the clock starts: one that cannot
/// be written is a bad argument (exit 2) naming the flag, the path and
/// why, and nothing runs (the report directory's `requests.jsonl`, written
/// as the run goes, is never started).
#[test]
fn an_output_path_that_cannot_be_written_is_refused_with_exit_2_before_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let reports = tmp.path().join("reports");
    let missing = tmp.path().join("no/dir/j.xml");
    let (d, f, m, r) = (
        file.as_os_str(),
        missing.as_os_str(),
        tmp.path().as_os_str(),
        reports.as_os_str(),
    );
    let flag = std::ffi::OsStr::new;
    let cases: [(Vec<&std::ffi::OsStr>, String); 4] = [
        (
            vec![flag("--report-dir"), d],
            format!("--report-dir {}: not a directory", file.display()),
        ),
        (
            vec![flag("--report-dir"), r, flag("--junit"), f],
            format!(
                "--junit {}: its folder {} does not exist",
                missing.display(),
                missing.parent().unwrap().display()
            ),
        ),
        (
            vec![flag("--report-dir"), r, flag("--json"), f],
            format!("--json {}: its folder", missing.display()),
        ),
        (
            vec![flag("--report-dir"), r, flag("--json"), m],
            format!("--json {}: is a directory", tmp.path().display()),
        ),
    ];
    for (args, message) in cases {
        let (code, stdout, stderr) = run_quickstart(&args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(&message), "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: no summary: {stdout}");
        assert!(
            !reports.join("requests.jsonl").exists(),
            "{args:?}: the run never started"
        );
    }
}

mod client_support;

#[test]
fn junit_report_read_by_junitparser_counts_one_case_per_expectation() {
    let Some(python) = client_support::venv_python() else {
        client_support::missing("the Python JUnit parser (junitparser)")
    };
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("junit.xml");
    let status = Command::cargo_bin("firedrill")
        .unwrap()
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")))
        .args([
            "run",
            "--quiet",
            "fixtures/experiments/wrong_expectation.yaml",
            "--junit",
        ])
        .arg(&junit)
        .output()
        .unwrap()
        .status;
    assert_eq!(status.code(), Some(1));
    let out = std::process::Command::new(python)
        .arg(client_support::clients_dir().join("python/junit_counts.py"))
        .arg(&junit)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout,
        "FAIL breaker dep never opens\nPASS route calls requests >= 100\ntests=2 failures=1\n"
    );
}

#[test]
fn a_halt_condition_aborts_the_drill_removes_faults_and_writes_a_partial_report() {
    let (dir, out, stdout) = run_with_report_dir("fixtures/experiments/halt_on_errors.yaml");
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("HALTED: route shop success < 50% for 2s"),
        "{stdout}"
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("report.json")).unwrap()).unwrap();
    assert_eq!(report["ending"]["kind"], "halted");
    let duration = report["duration_ms"].as_f64().unwrap();
    assert!(
        (4000.0..=7000.0).contains(&duration),
        "halted about 2 s after the failures began, not at 60 s: {duration}"
    );
    // The fault's window ends where the drill stopped: removed, not left on.
    let window_end = report["faults"][0]["windows_ms"][0][1].as_f64().unwrap();
    assert_eq!(window_end, duration);
    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    assert!(
        junit.contains("run completes")
            && junit.contains("halted: route shop success &lt; 50% for 2s"),
        "{junit}"
    );
}

#[test]
#[allow(clippy::disallowed_methods)] // a real process in real time
fn ctrl_c_removes_faults_writes_a_partial_report_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("firedrill"))
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")))
        .args([
            "run",
            "experiments/quickstart.yaml",
            "--quiet",
            "--report-dir",
        ])
        .arg(dir.path())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(2));
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("report.json")).unwrap()).unwrap();
    assert_eq!(report["ending"]["kind"], "interrupted");
    assert!(
        report["duration_ms"].as_f64().unwrap() < 12_000.0,
        "stopped before the planned 12 s"
    );
    assert!(
        report["routes"][0]["requests"].as_u64().unwrap() > 0,
        "what ran is in the report"
    );
}
