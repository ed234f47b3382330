//! Drill history end to end: 30 virtual runs of one drill (seeds 1 to 30,
//! run 20 with a breaker that needs 60 calls to judge) recorded in SQLite
//! and in a real PostgreSQL server; both give back the same trend, and the
//! regression expectation fails exactly at run 20. Four parallel writers to
//! one SQLite file lose no run; a file that is not a history, a history of
//! a newer schema, and a history that is not there are exit 3 with the
//! file left as it was.

mod history_support;
mod port_support;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

const DRILL: &str = "experiments/history/scheduled-drill.yaml";
const REGRESSED: usize = 20;
const OPENS: &str =
    "breaker inventory opens no later than the median of the last 5 passing runs + 500ms";

fn firedrill(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .args(args)
        .output()
        .unwrap()
}

/// Runs the drill with `seed` into `history`; the injected regression
/// when `regressed`.
fn drill(history: &str, seed: usize, regressed: bool) -> Output {
    let seed = seed.to_string();
    let mut args = vec![
        "run",
        DRILL,
        "--quiet",
        "--seed",
        &seed,
        "--history",
        history,
    ];
    if regressed {
        args.extend([
            "--set",
            "defense.routes.inventory.breaker.sliding_window_size=60",
            "--set",
            "defense.routes.inventory.breaker.minimum_calls=60",
        ]);
    }
    firedrill(&args)
}

fn trend(history: &str) -> Vec<Value> {
    let out = firedrill(&["history", "--history", history, "--format", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The regression sentence's verdict in a stored run.
fn opens_verdict(run: &Value) -> &Value {
    run["expectations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["sentence"] == OPENS)
        .unwrap()
}

/// Writes the 30 runs, checking each one's exit code as it goes, and
/// checks what the history then says; the runs as read back.
fn thirty_runs(history: &str) -> Vec<Value> {
    for seed in 1..=30 {
        let out = drill(history, seed, seed == REGRESSED);
        let code = out.status.code();
        let expected = if seed == REGRESSED { 1 } else { 0 };
        assert_eq!(
            code,
            Some(expected),
            "run {seed}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let runs = trend(history);
    assert_eq!(runs.len(), 30);
    for (i, run) in runs.iter().enumerate() {
        let seed = i + 1;
        assert_eq!(run["seed"], seed.to_string());
        let opens = opens_verdict(run);
        if seed <= 5 {
            // Not five passing runs before it yet: said, and not failed.
            assert_eq!(run["passed"], true, "run {seed}");
            assert!(
                opens["not_judged"]
                    .as_str()
                    .is_some_and(|w| w.contains("needs 5")),
                "run {seed}: {opens}"
            );
        } else if seed == REGRESSED {
            assert_eq!(run["verdict"], "failed");
            assert_eq!(opens["passed"], false, "{opens}");
            assert!(opens.get("not_judged").is_none(), "{opens}");
        } else {
            assert_eq!(run["passed"], true, "run {seed}: {run}");
            assert_eq!(opens["passed"], true, "run {seed}: {opens}");
        }
        assert!(
            run["figures"]["breaker inventory opens"].is_number(),
            "run {seed} keeps its figure: {run}"
        );
    }
    let regressed = &runs[REGRESSED - 1]["figures"]["breaker inventory opens"];
    let usual = &runs[REGRESSED - 2]["figures"]["breaker inventory opens"];
    assert!(
        regressed.as_f64().unwrap() > usual.as_f64().unwrap() + 500.0,
        "the injected run opens later: {regressed} vs {usual}"
    );
    runs
}

/// What two histories must agree on: everything but ids and clocks.
fn comparable(runs: &[Value]) -> Vec<Value> {
    runs.iter()
        .map(|r| {
            let mut r = r.clone();
            let o = r.as_object_mut().unwrap();
            for volatile in ["id", "recorded_at", "report_dir"] {
                o.remove(volatile);
            }
            r
        })
        .collect()
}

#[test]
fn thirty_runs_in_sqlite_and_postgresql_give_the_same_trend_and_fail_exactly_at_the_regression() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("history.db");
    let sqlite = thirty_runs(file.to_str().unwrap());
    let server = history_support::Postgres::start();
    let postgres = thirty_runs(&server.url);
    assert_eq!(comparable(&sqlite), comparable(&postgres));

    let table = firedrill(&[
        "history",
        "--history",
        &server.url,
        "--experiment",
        "history drill",
        "--last",
        "12",
    ]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.starts_with("history drill: 12 runs, 1 not passed\n"),
        "{text}"
    );
    assert!(text.contains("FAILED"), "{text}");
    let csv = firedrill(&[
        "history",
        "--history",
        file.to_str().unwrap(),
        "--format",
        "csv",
    ]);
    let csv = String::from_utf8_lossy(&csv.stdout);
    let opens: Vec<&str> = csv
        .lines()
        .filter(|l| l.contains(",breaker inventory opens,"))
        .collect();
    assert_eq!(opens.len(), 30, "{csv}");
    assert!(
        opens[REGRESSED - 1].contains(",failed,"),
        "{}",
        opens[REGRESSED - 1]
    );

    // A newer firedrill's schema in the shared database: refused, exit 3,
    // and not a row added.
    let mut db = postgres::Client::connect(&server.url, postgres::NoTls).unwrap();
    db.execute("UPDATE firedrill_history SET version = 99", &[])
        .unwrap();
    let out = drill(&server.url, 31, false);
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("written by a newer firedrill (history schema 99"),
        "{stderr}"
    );
    let rows: i64 = db
        .query_one("SELECT count(*) FROM firedrill_runs", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, 30);
}

#[test]
fn four_parallel_writers_to_one_sqlite_file_lose_no_run() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("shared.db");
    let history = file.to_str().unwrap().to_string();
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let history = history.clone();
            std::thread::spawn(move || {
                for i in 0..5 {
                    let out = drill(&history, 100 + w * 10 + i, false);
                    assert!(
                        out.status.code() == Some(0),
                        "writer {w} run {i}: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let runs = trend(&history);
    let mut seeds: Vec<String> = runs
        .iter()
        .map(|r| r["seed"].as_str().unwrap().to_string())
        .collect();
    seeds.sort();
    let mut expected: Vec<String> = (0..4)
        .flat_map(|w| (0..5).map(move |i| (100 + w * 10 + i).to_string()))
        .collect();
    expected.sort();
    assert_eq!(seeds, expected);
}

fn refused(history: &Path, what: &str) {
    let before = std::fs::read(history).unwrap();
    let out = drill(history.to_str().unwrap(), 1, false);
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(what), "{stderr}");
    assert!(stderr.contains("nothing was written to it"), "{stderr}");
    assert!(
        std::fs::read(history).unwrap() == before,
        "{what}: the file changed"
    );
    let read = firedrill(&["history", "--history", history.to_str().unwrap()]);
    assert_eq!(read.status.code(), Some(3));
    assert!(
        std::fs::read(history).unwrap() == before,
        "{what}: the file changed on reading"
    );
}

#[test]
fn a_file_that_is_not_a_database_is_refused_with_exit_3_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("history.db");
    std::fs::write(&file, b"these are my notes, not a database\n".repeat(200)).unwrap();
    refused(&file, "not a firedrill history (file is not a database)");
}

#[test]
fn someone_else_s_sqlite_database_is_refused_with_exit_3_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("app.db");
    let db = rusqlite::Connection::open(&file).unwrap();
    db.execute_batch("CREATE TABLE orders (id INTEGER); INSERT INTO orders VALUES (7);")
        .unwrap();
    drop(db);
    refused(
        &file,
        "it holds a table 'orders' but no firedrill_history version table",
    );
}

#[test]
fn a_history_of_a_newer_schema_is_refused_with_exit_3_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("history.db");
    assert_eq!(
        drill(file.to_str().unwrap(), 1, false).status.code(),
        Some(0)
    );
    let db = rusqlite::Connection::open(&file).unwrap();
    db.execute("UPDATE firedrill_history SET version = 99", [])
        .unwrap();
    db.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    drop(db);
    refused(
        &file,
        "written by a newer firedrill (history schema 99; this build knows up to 1)",
    );
}

#[test]
fn reading_a_history_that_is_not_there_is_exit_3_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("never-written.db");
    let out = firedrill(&["history", "--history", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no such file"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!file.exists());
}

#[test]
fn the_file_s_history_key_is_relative_to_the_file_and_the_flag_overrides_it() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(DRILL).unwrap();
    let drill_file = dir.path().join("drill.yaml");
    std::fs::write(
        &drill_file,
        text.replace(
            "clock: virtual\n",
            "clock: virtual\nhistory: runs/history.db\n",
        ),
    )
    .unwrap();
    let path = drill_file.to_str().unwrap();
    let out = firedrill(&["run", path, "--quiet"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.path().join("runs/history.db").exists());
    let other = dir.path().join("other.db");
    let out = Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .args(["run", path, "--quiet"])
        .env("FIREDRILL_HISTORY", &other)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(trend(other.to_str().unwrap()).len(), 1);
    assert_eq!(
        trend(dir.path().join("runs/history.db").to_str().unwrap()).len(),
        1
    );
}

#[test]
fn a_regression_sentence_in_a_run_without_a_history_fails_it_and_says_why() {
    let out = firedrill(&["run", DRILL]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("not judged: this run keeps no history"),
        "{stdout}"
    );
}

#[test]
fn a_bad_history_is_said_at_the_file_s_history_key_or_at_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.db"), b"not a database\n".repeat(100)).unwrap();
    let text = std::fs::read_to_string(DRILL).unwrap();
    let drill_file = dir.path().join("drill.yaml");
    std::fs::write(
        &drill_file,
        text.replace("clock: virtual\n", "clock: virtual\nhistory: bad.db\n"),
    )
    .unwrap();
    let out = firedrill(&["run", drill_file.to_str().unwrap(), "--quiet"]);
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = text.lines().position(|l| l == "clock: virtual").unwrap() + 2;
    assert!(
        stderr.contains(&format!("drill.yaml:{line}:10: history: ")),
        "{stderr}"
    );
    let bad = dir.path().join("bad.db");
    let out = drill(bad.to_str().unwrap(), 1, false);
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error: --history (or FIREDRILL_HISTORY): history "),
        "{stderr}"
    );
}
