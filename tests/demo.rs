//! `firedrill demo` as a new user first runs it: real sockets on loopback,
//! the real clock, a few seconds. Its table counts in the words every
//! other view uses, and its figures add up.

use assert_cmd::Command;
use firedrill::experiment::vocabulary::{ERRORS, REQUESTS, SUCCESS, TIMEOUTS};

#[test]
fn demo_counts_each_second_in_the_vocabulary_and_success_plus_errors_is_requests() {
    let out = Command::cargo_bin("firedrill")
        .unwrap()
        .args(["demo", "--duration", "3s", "--rate", "20"])
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{stdout}");
    let header = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("t "))
        .unwrap_or_else(|| panic!("no table header in:\n{stdout}"));
    let columns: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(
        columns[..6],
        [
            "t",
            REQUESTS.word,
            SUCCESS.word,
            ERRORS.word,
            "5xx",
            TIMEOUTS.word
        ],
        "{header}"
    );
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|c| {
            c.first()
                .is_some_and(|t| t.ends_with('s') && t[..t.len() - 1].parse::<u64>().is_ok())
        })
        .collect();
    assert!(rows.len() >= 3, "a line per second:\n{stdout}");
    let mut sent = 0;
    for row in &rows {
        let n = |i: usize| row[i].parse::<u64>().unwrap();
        assert_eq!(n(1), n(2) + n(3), "requests = success + errors: {row:?}");
        assert!(n(4) + n(5) <= n(3), "5xx and timeouts are errors: {row:?}");
        sent += n(1);
    }
    assert_eq!(sent, 60, "3 s at 20 req/s:\n{stdout}");
    assert!(stdout.contains("fault slow-inventory"), "{stdout}");
}
