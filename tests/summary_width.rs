//! The final summary's width: on a terminal every line fits the
//! terminal (80 columns at least), the route table in one piece when it
//! is wide enough and in two otherwise, a longer line going on over the
//! next lines; off a terminal the tables take 80 columns and every other
//! line stays whole, for grep. The terminal is a real pseudo-terminal
//! (util-linux's `script`) of the width set with `stty`.

mod cli_support;

use std::path::PathBuf;
use std::process::Command;

use cli_support::firedrill;

/// A virtual drill whose breaker's reasons run past 80 columns.
fn experiment() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("experiments/outage_contained.yaml")
}

/// The summary as a terminal `columns` wide shows it (the live panel, on
/// stderr, left out).
fn on_a_terminal(columns: u16) -> String {
    let bin = assert_cmd::cargo::cargo_bin("firedrill");
    let inner = format!(
        "stty cols {columns} rows 50; '{}' run '{}' 2>/dev/null",
        bin.display(),
        experiment().display()
    );
    let out = Command::new("script")
        .args(["-qec", &inner, "/dev/null"])
        .output()
        .expect("util-linux's script");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).replace('\r', "")
}

const OUTCOMES: &str = "  route        requests  success  fallback   errors  rejected";
const TIMES: &str = "  route         timeouts       p50       p99  ampl.";

#[test]
fn on_an_80_column_terminal_every_line_fits_and_the_route_table_comes_in_two() {
    let shown = on_a_terminal(80);
    for line in shown.lines() {
        assert!(
            line.chars().count() <= 80,
            "{} columns: {line}\n{shown}",
            line.chars().count()
        );
    }
    assert!(shown.lines().any(|l| l == OUTCOMES), "{shown}");
    assert!(shown.lines().any(|l| l == TIMES), "{shown}");
    // A reason too long for one line goes on, indented, word for word.
    let at = shown
        .lines()
        .position(|l| l.contains("half_open -> closed  (failure_rate 0%"))
        .expect("the closing transition");
    let line = shown.lines().nth(at).unwrap();
    let next = shown.lines().nth(at + 1).unwrap();
    let indent = |l: &str| l.len() - l.trim_start().len();
    assert_eq!(indent(next), indent(line) + 4, "{shown}");
    assert!(next.trim_end().ends_with("over 3 calls)"), "{shown}");
}

#[test]
fn a_wide_terminal_gets_the_route_table_in_one_piece_and_long_lines_whole() {
    let shown = on_a_terminal(160);
    assert!(
        shown
            .lines()
            .any(|l| l.starts_with(OUTCOMES) && l.ends_with("ampl.")),
        "{shown}"
    );
    assert!(!shown.lines().any(|l| l == TIMES), "{shown}");
    assert!(
        shown
            .lines()
            .any(|l| l
                .contains("(failure_rate 0% and slow_call_rate 0% below thresholds over 3 calls)")),
        "{shown}"
    );
}

#[test]
fn off_a_terminal_the_tables_take_80_columns_and_other_lines_stay_whole() {
    let out = firedrill().arg("run").arg(experiment()).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let shown = String::from_utf8(out.stdout).unwrap();
    let header = shown
        .lines()
        .position(|l| l == OUTCOMES)
        .expect("the outcomes table");
    let times = shown
        .lines()
        .position(|l| l == TIMES)
        .expect("the times table");
    for line in shown.lines().skip(header).take(times - header + 2) {
        assert!(line.chars().count() <= 80, "{line}");
    }
    // For grep: a long line is not broken.
    assert!(
        shown.lines().any(|l| l
            .contains("(6 more transitions, all in journal.jsonl and report.html)")
            && l.contains("... the 2 transitions above again")),
        "{shown}"
    );
}
