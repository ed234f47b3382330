//! `firedrill sweep` and `run --set`: the grid, seeds, formats, report
//! directories, bad input, and two results a sweep exists to show — the
//! permitted-calls setting that stops half-open flapping, and a bulkhead
//! that loses what Erlang-B says it loses.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn firedrill(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")))
        .args(args)
        .output()
        .unwrap()
}

fn json(out: &Output) -> Value {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

const PERMITTED: &str = "defense.routes.stock.breaker.permitted_calls_in_half_open";

/// Erlang-B loss B(c, a), by the usual recursion.
fn erlang_b(c: u32, a: f64) -> f64 {
    (1..=c).fold(1.0, |b, k| a * b / (f64::from(k) + a * b))
}

#[test]
fn erlang_b_recursion_gives_the_textbook_values() {
    assert!((erlang_b(1, 2.5) - 2.5 / 3.5).abs() < 1e-12);
    assert!((erlang_b(5, 2.5) - 0.069_73).abs() < 1e-4);
}

/// A bulkhead of c slots, no queue, under Poisson load of 2.5 Erlang
/// rejects B(c, 2.5) of the requests: every point within 1.5 points.
#[test]
fn a_bulkhead_sweep_reproduces_erlang_b_for_c_1_to_10() {
    let out = firedrill(&[
        "sweep",
        "fixtures/sweeps/erlang_b.yaml",
        "--vary",
        "defense.routes.work.bulkhead.max_concurrent=1,2,3,4,5,6,7,8,9,10",
        "--format",
        "json",
    ]);
    let sweep = json(&out);
    let points = sweep["points"].as_array().unwrap();
    assert_eq!(points.len(), 10);
    for (c, point) in (1..=10).zip(points) {
        let rejected = point["runs"][0]["rejected_pct"].as_f64().unwrap();
        let expected = erlang_b(c, 2.5) * 100.0;
        eprintln!("c={c}: rejected {rejected:.1}%, Erlang-B {expected:.1}%");
        assert!(
            (rejected - expected).abs() <= 1.5,
            "c={c}: rejected {rejected:.1}%, Erlang-B {expected:.1}%"
        );
    }
}

/// The flapping experiment with 1 permitted call never closes; with 5 it
/// closes (its expectation "never closes" fails there).
#[test]
fn sweeping_permitted_calls_shows_1_flapping_and_5_closing() {
    sweep_shows_1_flapping_and_5_closing("experiments/half_open_flapping_permitted_1.yaml");
}

/// The same on the replayed incident: the recording's cold calls make
/// every lone probe fail; five probes close the breaker.
#[test]
fn sweeping_permitted_calls_on_the_replayed_incident_shows_1_flapping_and_5_closing() {
    sweep_shows_1_flapping_and_5_closing("experiments/incident_replay.yaml");
}

/// Sweeps `experiment` over permitted calls {1, 5}: "never closes" holds
/// with 1 and fails with 5, and the same sweep gives the same bytes again.
fn sweep_shows_1_flapping_and_5_closing(experiment: &str) {
    let vary = format!("{PERMITTED}=1,5");
    let args = ["sweep", experiment, "--vary", &vary, "--format", "json"];
    let out = firedrill(&args);
    let sweep = json(&out);
    let never_closes = sweep["expectations"]
        .as_array()
        .unwrap()
        .iter()
        .position(|e| e == "breaker stock never closes")
        .unwrap();
    let held = |i: usize| sweep["points"][i]["runs"][0]["verdicts"][never_closes].as_bool();
    assert_eq!(held(0), Some(true), "1 permitted call: never closes");
    assert_eq!(held(1), Some(false), "5 permitted calls: closes");
    let failed_probes = |i: usize| sweep["points"][i]["runs"][0]["half_open_to_open"].as_u64();
    assert!(failed_probes(0) > failed_probes(1), "{sweep:#}");
    assert_eq!(
        firedrill(&args).stdout,
        out.stdout,
        "same sweep, same bytes"
    );
}

#[test]
fn seeds_give_each_point_several_runs_with_mean_spread_and_k_of_n() {
    let out = firedrill(&[
        "sweep",
        "experiments/quickstart.yaml",
        "--vary",
        "load.shop.rate=10/s,20/s",
        "--vary",
        "defense.routes.inventory.breaker.wait_in_open=2s",
        "--seeds",
        "3",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let table = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| l.trim_start().starts_with("10/s") || l.trim_start().starts_with("20/s"))
        .collect();
    assert_eq!(rows.len(), 2, "{table}");
    for row in rows {
        assert!(row.contains("2s"), "{row}");
        assert!(row.contains("/3"), "k of 3 seeds: {row}");
        assert!(row.contains('±'), "mean and spread: {row}");
    }
    assert!(table.contains("E1: breaker inventory goes closed -> open -> half_open -> closed"));
}

#[test]
fn csv_has_a_header_of_full_paths_and_sentences_and_a_row_per_point() {
    let out = firedrill(&[
        "sweep",
        "experiments/quickstart.yaml",
        "--vary",
        "load.shop.rate=10/s,20/s,30/s",
        "--format",
        "csv",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[0].starts_with("load.shop.rate,breaker inventory goes"));
    assert!(lines[0].ends_with("opens,half_open->open,success%,fallback%,rejected%,p99ms"));
    assert!(lines[3].starts_with("30/s,"));
}

#[test]
fn report_dir_keeps_every_runs_reports() {
    let dir = tempfile::tempdir().unwrap();
    let out = firedrill(&[
        "sweep",
        "experiments/quickstart.yaml",
        "--vary",
        "load.shop.rate=10/s,20/s",
        "--seeds",
        "2",
        "--report-dir",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    for point in ["001-10-s", "002-20-s"] {
        for seed in ["seed-7", "seed-8"] {
            let report = dir.path().join(point).join(seed).join("report.json");
            let r: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
            assert_eq!(r["clock"], "virtual", "{}", report.display());
        }
    }
}

/// Runs firedrill with `args`: it must exit 2 with `message` on stderr
/// and print nothing on stdout.
fn refused(args: &[&str], message: &str) {
    let out = firedrill(args);
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(message), "{stderr}");
    assert!(out.stdout.is_empty(), "nothing ran");
}

#[test]
fn a_bad_path_or_value_is_named_with_exit_2_before_anything_runs() {
    let sweep = |file: &'static str, vary: &'static str| ["sweep", file, "--vary", vary];
    refused(
        &sweep("experiments/quickstart.yaml", "load.nope.rate=1/s"),
        "--set load.nope.rate=1/s: `nope`: no item of the list has this name",
    );
    refused(
        &sweep(
            "experiments/quickstart.yaml",
            "defense.routes.inventory.breaker.minimum_calls=5,0",
        ),
        "minimum_calls=0: defense.routes.inventory.breaker.minimum_calls: must be at least 1",
    );
    refused(
        &sweep("experiments/blackbox/opossum.yaml", "seed=1"),
        "a sweep runs in virtual time",
    );
}

#[test]
fn a_report_dir_that_is_a_file_is_refused_with_exit_2_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let path = file.to_str().unwrap();
    let args = [
        "sweep",
        "experiments/quickstart.yaml",
        "--vary",
        "load.shop.rate=10/s,20/s",
        "--report-dir",
        path,
    ];
    refused(&args, &format!("--report-dir {path}: not a directory"));
}

/// `run --set` changes the field for this run only; a bad value is
/// located at the flag, exit 2.
#[test]
fn run_set_overrides_a_field_and_a_bad_value_names_the_flag() {
    let out = firedrill(&[
        "run",
        "experiments/half_open_flapping_permitted_1.yaml",
        "--clock",
        "virtual",
        "--quiet",
        "--set",
        &format!("{PERMITTED}=5"),
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "5 permitted calls close: the flapping expectations fail"
    );
    refused(
        &[
            "run",
            "experiments/quickstart.yaml",
            "--set",
            "load.shop.rate=fast",
        ],
        "with --set load.shop.rate=fast: load[0].rate: invalid rate `fast`: expected requests per second",
    );
}

/// SIGINT to a running sweep: no new point starts, the running ones are
/// interrupted (their partial reports written, as `run` writes one), and
/// the sweep writes what it has: sweep.html and sweep.json marked partial,
/// the table with the points done; exit 130. The first point is 20 s
/// of virtual time, every other one a day, so the signal, sent once the
/// first point's report is on disk, always lands mid-sweep.
#[test]
#[allow(clippy::disallowed_methods)] // A real process, polled in wall time.
fn sigint_stops_a_sweep_and_writes_the_partial_sweep_with_exit_130() {
    let dir = tempfile::tempdir().unwrap();
    let mut values = vec!["20s".to_string()];
    values.extend((0..40).map(|i| format!("{}s", 86_400 - i)));
    let vary = format!("duration={}", values.join(","));
    let child = Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")))
        .args([
            "sweep",
            "experiments/bulkhead_isolation_none.yaml",
            "--vary",
            &vary,
        ])
        .arg("--report-dir")
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let first = dir.path().join("001-20s").join("report.json");
    for _ in 0..600 {
        if first.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(first.exists(), "the first point's report after 60 s");
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    // `wait_with_output` reads both pipes to the end; a sweep that ignored
    // the signal would run 40 days of virtual time (the test's own timeout
    // is the safety net).
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stdout}{stderr}");
    assert!(stdout.contains("partial"), "{stdout}");
    let html = std::fs::read_to_string(dir.path().join("sweep.html")).unwrap();
    assert!(html.contains("partial"), "{html}");
    assert!(
        html.contains("001-20s/report.html"),
        "the point done is listed"
    );
    let sweep: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("sweep.json")).unwrap()).unwrap();
    assert_eq!(sweep["partial"], true);
    let points = sweep["points"].as_array().unwrap();
    assert!(!points.is_empty() && points.len() < values.len(), "{sweep}");
    assert_eq!(points[0]["values"][0], "20s");
    // A point cut short has its partial report, as an interrupted run.
    let cut = dir.path().join("002-86400s").join("report.json");
    let report: Value = serde_json::from_slice(&std::fs::read(&cut).unwrap()).unwrap();
    assert_eq!(report["ending"]["kind"], "interrupted", "{report}");
}

/// Off a terminal a sweep says how many runs are done on stderr (here at
/// most every millisecond of wall time), never on stdout with the table.
#[test]
fn a_sweep_prints_progress_lines_of_the_runs_done_off_a_terminal() {
    let out = firedrill(&[
        "sweep",
        "experiments/quickstart.yaml",
        "--vary",
        "load.shop.rate=10/s,20/s,30/s,40/s",
        "--progress-interval",
        "1ms",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("[firedrill] sweep: "))
        .collect();
    // A line when a run is done; between them, a heartbeat naming the
    // points going on and how far each has got in simulated time.
    let (beats, done): (Vec<&str>, Vec<&str>) =
        lines.iter().partition(|l| l.contains("; running: "));
    let done: Vec<usize> = done
        .iter()
        .map(|l| {
            let (k, rest) = l.split_once(" of ").unwrap();
            assert_eq!(rest, "4 runs done", "{l}");
            k.parse().unwrap()
        })
        .collect();
    assert!(!done.is_empty(), "no progress line: {stderr}");
    assert!(done.windows(2).all(|w| w[0] < w[1]), "once each: {done:?}");
    assert_eq!(done.last(), Some(&4), "the last run's line: {stderr}");
    for beat in beats {
        let running = beat.split_once("; running: ").unwrap().1;
        assert!(
            running
                .split(", ")
                .all(|r| r.starts_with("00") && r.ends_with(" of 12s")),
            "{beat}"
        );
    }
    assert!(!String::from_utf8_lossy(&out.stdout).contains("[firedrill]"));
    let quiet = firedrill(&[
        "sweep",
        "experiments/quickstart.yaml",
        "--vary",
        "load.shop.rate=10/s,20/s",
        "--progress-interval",
        "0s",
    ]);
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("[firedrill]"));
}

/// A long point (here two hours of simulated time) is not silent: the
/// heartbeat says how far each running point has got, its figures growing,
/// and the last run's line comes.
#[test]
fn a_sweep_of_long_points_prints_a_heartbeat_with_each_points_simulated_time() {
    let out = firedrill(&[
        "sweep",
        "experiments/quickstart.yaml",
        "--set",
        "duration=2h",
        "--vary",
        "load.shop.rate=1/s,2/s",
        "--progress-interval",
        "1ms",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let beats: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("; running: 00"))
        .collect();
    assert!(!beats.is_empty(), "no heartbeat: {stderr}");
    assert!(beats.iter().all(|b| b.contains(" of 2h")), "{beats:#?}");
    assert!(
        beats.iter().any(|b| b.contains("m of 2h")),
        "a point seen part-way: {beats:#?}"
    );
    assert!(
        stderr.contains("[firedrill] sweep: 2 of 2 runs done"),
        "{stderr}"
    );
}

/// `sweep --set` changes the field for every point, as `run --set` does:
/// 5 permitted calls close the breaker at both seeds' points, so "never
/// closes" fails at each; a bad value names the flag, exit 2.
#[test]
fn sweep_set_changes_a_field_for_every_point_and_a_bad_value_names_the_flag() {
    let set = format!("{PERMITTED}=5");
    let out = firedrill(&[
        "sweep",
        "experiments/half_open_flapping_permitted_1.yaml",
        "--set",
        &set,
        "--vary",
        "seed=1,2",
        "--format",
        "json",
    ]);
    let sweep = json(&out);
    let never_closes = sweep["expectations"]
        .as_array()
        .unwrap()
        .iter()
        .position(|e| e == "breaker stock never closes")
        .unwrap();
    for point in sweep["points"].as_array().unwrap() {
        assert_eq!(point["runs"][0]["verdicts"][never_closes], false, "{point}");
    }
    refused(
        &[
            "sweep",
            "experiments/quickstart.yaml",
            "--set",
            "load.shop.rate=fast",
            "--vary",
            "seed=1,2",
        ],
        "--set load.shop.rate=fast",
    );
}

/// Runs a sweep with `args` into a new report directory; returns it and
/// its sweep.html.
fn sweep_page(args: &[&str]) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut all = vec!["sweep"];
    all.extend(args);
    all.extend(["--report-dir", dir.path().to_str().unwrap()]);
    let out = firedrill(&all);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(dir.path().join("sweep.html")).unwrap();
    (dir, html)
}

/// The chart shows the figure the points differ in: the flapping sweep's
/// first expectation is about opens (27, 5, 4), not success (100 at every
/// point); `--chart` still picks one.
#[test]
fn the_sweep_chart_shows_the_figure_that_varies_not_success_flat_at_100() {
    let vary = format!("{PERMITTED}=1,3,5");
    let args = [
        "experiments/half_open_flapping_permitted_1.yaml",
        "--vary",
        &vary,
    ];
    let (_dir, html) = sweep_page(&args);
    assert!(html.contains("<h2>opens by point</h2>"), "{html}");
    let mut chosen = args.to_vec();
    chosen.extend(["--chart", "success"]);
    let (_dir, html) = sweep_page(&chosen);
    assert!(html.contains("<h2>success % by point</h2>"), "{html}");
}

/// With `--seeds` every seed's report is linked from its point's row.
#[test]
fn with_seeds_every_seeds_report_is_linked() {
    let (dir, html) = sweep_page(&[
        "experiments/quickstart.yaml",
        "--vary",
        "load.shop.rate=10/s,20/s",
        "--seeds",
        "3",
    ]);
    for point in ["001-10-s", "002-20-s"] {
        for seed in [7, 8, 9] {
            let link = format!("{point}/seed-{seed}/report.html");
            assert!(html.contains(&format!("href=\"{link}\"")), "{link}: {html}");
            assert!(dir.path().join(&link).is_file(), "{link}");
        }
    }
}
