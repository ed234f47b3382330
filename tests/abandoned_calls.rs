//! Calls the caller abandons before the defense line's timeout: recorded
//! as cancelled (requests.jsonl, the route's figures), flagged in the
//! report, and counted as failures by a breaker with count_cancelled.

mod run_support;

const FILE: &str = "fixtures/experiments/abandoned_calls.yaml";

fn cancelled_lines(dir: &std::path::Path) -> usize {
    std::fs::read_to_string(dir.join("requests.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"defense_error\":\"cancelled\""))
        .count()
}

#[test]
fn abandoned_calls_are_recorded_as_cancelled_and_the_blind_breaker_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let ran = run_support::run_ok(FILE, dir.path(), &["--quiet"]);
    // 4 s of hanging at 20 requests a second, each abandoned after 200 ms.
    let cancelled = cancelled_lines(dir.path());
    assert!(cancelled >= 70, "{cancelled}");
    assert_eq!(
        ran.report["routes"][0]["cancelled"].as_u64(),
        Some(cancelled as u64)
    );
    let breaker = &ran.report["breakers"][0];
    assert_eq!(
        breaker["transitions"].as_array().unwrap().len(),
        0,
        "blind: {breaker}"
    );
    let warnings = ran.report["warnings"].to_string();
    assert!(
        warnings
            .contains("route shop: its timeout (200ms) is shorter than defense route dep's (1s)"),
        "{warnings}"
    );
}

#[test]
fn with_count_cancelled_the_breaker_counts_abandoned_calls_and_opens() {
    let dir = tempfile::tempdir().unwrap();
    let set = "defense.routes.dep.breaker.count_cancelled=true";
    let ran = run_support::run_ok(FILE, dir.path(), &["--quiet", "--set", set]);
    let transitions = ran.report["breakers"][0]["transitions"]
        .as_array()
        .unwrap()
        .clone();
    let open = &transitions[0];
    assert_eq!(open["to"], "open", "{transitions:?}");
    // The hang starts at 1 s; five abandoned calls 50 ms apart are enough.
    let at = open["at_ms"].as_f64().unwrap();
    assert!((1000.0..2000.0).contains(&at), "{open}");
    assert!(
        ran.report.get("warnings").is_none(),
        "{}",
        ran.report["warnings"]
    );
}
