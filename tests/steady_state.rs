//! Steady state: checked over the warm-up before the first fault and again
//! after the last; unhealthy before injection means no fault is injected
//! (the fault proxy's counter stays at 0) and exit 4.

use serde_json::Value;

mod run_support;

fn run(file: &str) -> (Option<i32>, String, Value) {
    let dir = tempfile::tempdir().unwrap();
    let ran = run_support::run(file, dir.path(), &[]);
    (ran.code, ran.stdout, ran.report)
}

fn injected(report: &Value, fault: &str) -> u64 {
    report["faults"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == fault)
        .unwrap()["injected"]
        .as_u64()
        .unwrap()
}

#[test]
fn a_system_unhealthy_before_injection_gets_no_fault_and_exit_4() {
    let (code, stdout, report) = run("fixtures/steady/unhealthy_before.yaml");
    assert_eq!(code, Some(4), "{stdout}");
    assert!(
        stdout.contains("NOT HEALTHY BEFORE INJECTION: no fault was injected"),
        "{stdout}"
    );
    assert_eq!(
        injected(&report, "stock-down"),
        0,
        "the proxy never hit a request"
    );
    assert_eq!(report["ending"]["kind"], "not_healthy", "{report:#}");
    assert_eq!(report["ending"]["failed"].as_array().unwrap().len(), 1);
    assert!(!report["passed"].as_bool().unwrap());
    // The run stopped at the warm-up's end: nothing was sent after 3 s.
    assert!(
        report["duration_ms"].as_f64().unwrap() < 3000.0,
        "{}",
        report["duration_ms"]
    );
    let after: Vec<&Value> = report["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["expectation"].as_str().unwrap().contains("between 6s"))
        .collect();
    assert!(
        after.is_empty(),
        "no after-check for a run that never injected"
    );
}

#[test]
fn a_system_healthy_before_and_after_passes_both_checks_and_gets_its_fault() {
    let (code, stdout, report) = run("fixtures/steady/healthy_around_outage.yaml");
    assert_eq!(code, Some(0), "{stdout}");
    assert!(injected(&report, "stock-down") > 0, "{report:#}");
    let sentences: Vec<&str> = report["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["expectation"].as_str().unwrap())
        .collect();
    for s in [
        "route shop success between 0s and 3s >= 99%",
        "route shop fallback between 0s and 3s <= 10%",
        "route shop fallback between 6s and 10s <= 10%",
        "route shop p99 between 0s and 3s <= 300ms",
        "route shop p99 between 6s and 10s <= 300ms",
    ] {
        assert!(sentences.contains(&s), "{s} in {sentences:?}");
    }
}

#[test]
fn a_system_that_does_not_recover_fails_the_check_after_the_last_fault() {
    let (code, stdout, report) = run("fixtures/steady/not_steady_after.yaml");
    assert_eq!(code, Some(1), "{stdout}");
    assert!(injected(&report, "stock-down") > 0);
    let failed: Vec<&str> = report["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["passed"] == false)
        .map(|v| v["expectation"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["route shop fallback between 6s and 10s <= 5%"]);
}
