//! Drill history end to end: 30 virtual runs of one drill (seeds 1 to 30,
//! run 20 with a breaker that needs 60 calls to judge) recorded in SQLite
//! and in a real PostgreSQL server; both give back the same trend, and the
//! regression expectation fails exactly at run 20. A worse run that was not
//! judged (the history too short) never enters a later baseline, and the
//! sentence names the runs its baseline was made of; a history of schema 1
//! still opens, its runs' states read from what it kept. Four parallel
//! writers to one SQLite file lose no run; a file that is not a history, a
//! history of a newer schema, and a history that is not there are exit 3
//! with the file left as it was.

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
    drill_file(DRILL, history, seed, regressed)
}

/// [`drill`] of the drill at `file`.
fn drill_file(file: &str, history: &str, seed: usize, regressed: bool) -> Output {
    let seed = seed.to_string();
    let mut args = vec![
        "run",
        file,
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
        let state = match seed {
            1..=5 => "seed",
            REGRESSED => "failed",
            _ => "held",
        };
        assert_eq!(opens["state"], state, "run {seed}: {opens}");
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
        "written by a newer firedrill (history schema 99; this build knows up to 4)",
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

/// The drill, its breaker sentence replaced by `sentence`, written into
/// `dir`; its path.
fn drill_saying(dir: &Path, sentence: &str) -> String {
    let text = std::fs::read_to_string(DRILL).unwrap();
    assert!(text.contains(OPENS));
    let file = dir.join("drill.yaml");
    std::fs::write(&file, text.replace(OPENS, sentence)).unwrap();
    file.to_str().unwrap().to_string()
}

/// The verdict on `sentence` in a stored run.
fn verdict_on<'a>(run: &'a Value, sentence: &str) -> &'a Value {
    run["expectations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["sentence"] == sentence)
        .unwrap_or_else(|| panic!("{sentence} in {run}"))
}

#[test]
fn a_worse_run_that_was_not_judged_never_enters_a_later_baseline_and_the_sentence_names_its_runs() {
    const MAX3: &str =
        "breaker inventory opens no later than the max of the last 3 passing runs + 300ms";
    let dir = tempfile::tempdir().unwrap();
    let file = drill_saying(dir.path(), MAX3);
    let history = dir.path().join("history.db");
    let history = history.to_str().unwrap();
    // Runs 3 and 5 carry the regression (their breaker opens about 1.5 s
    // later). Run 3 comes while the history is too short to judge: it is
    // not failed, but it must not become the norm that lets run 5 pass.
    for (seed, regressed, code) in [(1, false, 0), (2, false, 0), (3, true, 0), (4, false, 0)] {
        let out = drill_file(&file, history, seed, regressed);
        assert_eq!(
            out.status.code(),
            Some(code),
            "run {seed}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = drill_file(&file, history, 5, true);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the second regressed run is judged against runs #1, #2, #4, not against the first \
         regressed run: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = firedrill(&["run", &file, "--seed", "6", "--history", history]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("         baseline: max of seeds #1, #2, #4: 721ms + 300ms\n"),
        "a held sentence names the runs of its baseline: {stdout}"
    );

    let runs = trend(history);
    let states: Vec<&str> = runs
        .iter()
        .map(|r| verdict_on(r, MAX3)["state"].as_str().unwrap())
        .collect();
    assert_eq!(
        states,
        ["seed", "seed", "not_judged", "seed", "failed", "held"]
    );
    let worse = verdict_on(&runs[2], MAX3);
    assert!(
        worse["not_judged"]
            .as_str()
            .unwrap()
            .contains("this run does not seed it: it would not hold against the ones so far (max of seeds #1, #2: 721ms + 300ms)"),
        "{worse}"
    );
    for run in &runs[4..] {
        let v = verdict_on(run, MAX3);
        assert_eq!(v["baseline_runs"], serde_json::json!([1, 2, 4]), "{v}");
        assert!(
            v["expected"]
                .as_str()
                .unwrap()
                .ends_with("no later than 1.021s (max of seeds #1, #2, #4: 721ms + 300ms)"),
            "{v}"
        );
    }
}

#[test]
fn a_history_of_schema_1_still_opens_and_its_runs_states_are_read_from_what_it_kept() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("history.db");
    let history = file.to_str().unwrap();
    for seed in 1..=6 {
        assert_eq!(drill(history, seed, false).status.code(), Some(0));
    }
    // Back to what schema 1 kept: no state, no baseline runs, no figure
    // key, limit or unit (schema 3).
    let db = rusqlite::Connection::open(&file).unwrap();
    db.execute_batch(
        "ALTER TABLE firedrill_expectations DROP COLUMN state;
         ALTER TABLE firedrill_expectations DROP COLUMN baseline_runs;
         ALTER TABLE firedrill_expectations DROP COLUMN figure_key;
         ALTER TABLE firedrill_expectations DROP COLUMN figure_limit;
         ALTER TABLE firedrill_expectations DROP COLUMN figure_unit;
         UPDATE firedrill_history SET version = 1;",
    )
    .unwrap();
    drop(db);
    let runs = trend(history);
    let states: Vec<&str> = runs
        .iter()
        .map(|r| opens_verdict(r)["state"].as_str().unwrap())
        .collect();
    assert_eq!(
        states,
        [
            "not_judged",
            "not_judged",
            "not_judged",
            "not_judged",
            "not_judged",
            "held"
        ],
        "schema 1 kept whether each sentence held and why one was not judged; \
         whether a run seeded a baseline it did not"
    );
    assert!(opens_verdict(&runs[5]).get("baseline_runs").is_none());
    assert!(opens_verdict(&runs[5]).get("figure_limit").is_none());
    let out = drill(history, 7, false);
    assert_eq!(out.status.code(), Some(0));
    let runs = trend(history);
    let seventh = opens_verdict(&runs[6]);
    assert_eq!(seventh["state"], "seed", "{seventh}");
    assert!(
        seventh["not_judged"]
            .as_str()
            .unwrap()
            .starts_with("the history has 1 past run fit for its baseline;"),
        "only run #6 was judged and held: {seventh}"
    );
    // Brought to schema 3, the history keeps each sentence's figure key
    // and unit again (no limit: the seventh run was not judged).
    assert_eq!(
        seventh["figure_key"], "breaker inventory opens",
        "{seventh}"
    );
    assert_eq!(seventh["figure_unit"], "ms", "{seventh}");
    assert!(seventh.get("figure_limit").is_none(), "{seventh}");
}

#[test]
fn run_and_history_help_name_firedrill_history_but_never_print_the_url_it_holds() {
    for sub in ["run", "history"] {
        let out = Command::new(env!("CARGO_BIN_EXE_firedrill"))
            .args([sub, "--help"])
            .env("FIREDRILL_HISTORY", "postgres://u:s3cret@h/db")
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(help.contains("FIREDRILL_HISTORY"), "{sub}: {help}");
        assert!(!help.contains("s3cret"), "{sub}: {help}");
    }
}

#[test]
fn a_schema_3_history_brings_its_query_figures_to_prometheus_scale_and_leaves_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("history.db");
    let history = file.to_str().unwrap();
    assert_eq!(drill(history, 1, false).status.code(), Some(0));
    // What schema 3 kept of two bounded query sentences: a p99 in the
    // bound's milliseconds and a success ratio in its percent.
    let db = rusqlite::Connection::open(&file).unwrap();
    db.execute_batch(
        "INSERT INTO firedrill_figures (run_id, name, value) VALUES
            (1, 'query p99 max during slow', 287.5),
            (1, 'query ok min during slow', 99.5);
         INSERT INTO firedrill_expectations (run_id, position, sentence, passed, expected, seen,
            figure, state, figure_key, figure_limit, figure_unit) VALUES
            (1, 100, 'query p99 max during slow <= 300ms', 1, '', '', 287.5, 'held',
             'query p99 max during slow', 300, 'ms'),
            (1, 101, 'query ok min during slow >= 99%', 1, '', '', 99.5, 'held',
             'query ok min during slow', 99, '%');
         UPDATE firedrill_history SET version = 3;",
    )
    .unwrap();
    let before: f64 = db
        .query_row(
            "SELECT value FROM firedrill_figures WHERE name = 'breaker inventory opens'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    drop(db);
    let runs = trend(history);
    assert_eq!(runs.len(), 1);
    let db = rusqlite::Connection::open(&file).unwrap();
    let figure = |name: &str| -> f64 {
        db.query_row(
            "SELECT value FROM firedrill_figures WHERE name = ?1",
            [name],
            |r| r.get(0),
        )
        .unwrap()
    };
    assert_eq!(figure("query p99 max during slow"), 0.2875);
    assert_eq!(figure("query ok min during slow"), 0.995);
    assert_eq!(
        figure("breaker inventory opens"),
        before,
        "a breaker's time stays in ms"
    );
    let kept = |position: i64| -> (f64, f64, Option<String>) {
        db.query_row(
            "SELECT figure, figure_limit, figure_unit FROM firedrill_expectations \
             WHERE run_id = 1 AND position = ?1",
            [position],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap()
    };
    assert_eq!(kept(100), (0.2875, 0.3, Some("s".to_string())));
    assert_eq!(kept(101), (0.995, 0.99, None));
    let version: i64 = db
        .query_row("SELECT version FROM firedrill_history", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 4);
}
