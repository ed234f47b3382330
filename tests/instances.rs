//! A drill against the built-in target run as several instances, in
//! virtual time (and once on loopback in real time): until a pool spreads the calls, the load reaches the first
//! instance in name order; a fault naming another instance never touches
//! it; every hit is tagged with the instance that received it, and the
//! report counts them per instance.

use firedrill::experiment::config::ClockKind;
use firedrill::experiment::drill::Live;
use firedrill::experiment::file::load;
use firedrill::report::{RunReport, RunResult};

/// Runs `yaml` (written to a file first) in virtual time.
fn run(yaml: &str) -> (RunResult, RunReport) {
    run_with(yaml, ClockKind::Virtual)
}

/// Runs `yaml` (written to a file first) with `clock`.
fn run_with(yaml: &str, clock: ClockKind) -> (RunResult, RunReport) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("drill.yaml");
    std::fs::write(&file, yaml).unwrap();
    let loaded = load(&file).unwrap();
    firedrill::report::execute(&loaded, clock, std::future::pending(), Live::default()).unwrap()
}

/// Three instances; a fault on `a` (where the load goes) from 4s to 6s,
/// and one on `b` for the whole run.
const THREE: &str = "
name: three instances
duration: 10s
target:
  builtin:
    routes: [{ path: /inventory/*, latency: 10ms }]
    instances: { c: {}, b: {}, a: {} }
load:
  - { name: stock, request: GET /inventory/1, rate: 20/s, arrivals: constant }
faults:
  - { name: a-down, instance: a, status: { code: 503 }, at: 4s, for: 2s }
  - { name: b-down, instance: b, status: { code: 503 } }
expect:
  - route stock success between 0s and 4s >= 99%
  - route stock success between 4s and 6s <= 1%
  - route stock success between 6s and 10s >= 99%
  - calls to instance a >= 190
  - calls to /inventory/* on instance a during a-down >= 30
  - calls to instance b == 0
  - calls to instance c == 0
";

#[test]
fn the_load_reaches_the_first_instance_and_a_fault_on_another_instance_never_acts() {
    let (result, report) = run(THREE);
    assert!(
        report.passed,
        "{}",
        firedrill::report::console::render(&report)
    );
    assert!(result.injected["a-down"] > 0);
    assert_eq!(result.injected.get("b-down").copied().unwrap_or(0), 0);
    // The hits are counted as they come (the timeline keeps none): each
    // tagged with the instance that received it, all of them `a`.
    assert!(report.target_hits >= 190, "{} hits", report.target_hits);
    assert_every_hit_reached_a(&report);
}

#[test]
fn the_report_counts_hits_per_instance_every_instance_listed_in_json_and_on_the_console() {
    let (_, report) = run(THREE);
    let total = report.target_hits as u64;
    assert_eq!(report.targets, ["target: builtin, instances a, b, c"]);
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["instance_hits"]["a"], total);
    assert_eq!(json["instance_hits"]["b"], 0);
    let console = firedrill::report::console::render(&report);
    assert!(
        console.contains(&format!(
            "\n  calls that reached each instance: a {total}, b 0, c 0\n"
        )),
        "{console}"
    );
}

#[test]
fn a_target_without_instances_reports_as_before_without_instance_hits() {
    let yaml = "
name: one target
duration: 5s
target:
  builtin:
    routes: [{ path: /inventory/*, latency: 10ms }]
load:
  - { name: stock, request: GET /inventory/1, rate: 20/s }
";
    let (_, report) = run(yaml);
    assert!(report.target_hits > 0);
    assert!(report.instance_hits.is_empty());
    assert_eq!(report.targets, ["target: builtin"]);
    let json = serde_json::to_value(&report).unwrap();
    assert!(json.get("instance_hits").is_none(), "{json}");
    let console = firedrill::report::console::render(&report);
    assert!(!console.contains("instance"), "{console}");
}

#[test]
fn instances_run_on_loopback_in_real_time_each_behind_its_own_proxy() {
    let yaml = "
name: three instances, real time
duration: 1s
clock: real
target:
  builtin:
    instances: { a: {}, b: {}, c: {} }
load:
  - { name: stock, request: GET /inventory/1, rate: 20/s, arrivals: constant }
faults:
  - { name: b-down, instance: b, status: { code: 503 } }
expect:
  - route stock success >= 99%
";
    let (result, report) = run_with(yaml, ClockKind::Real);
    assert!(
        report.passed,
        "{}",
        firedrill::report::console::render(&report)
    );
    assert_eq!(result.injected.get("b-down").copied().unwrap_or(0), 0);
    assert!(report.target_hits > 0);
    assert_every_hit_reached_a(&report);
}

#[test]
fn a_halt_condition_ends_a_drill_whose_fault_takes_the_first_instance_down() {
    let yaml = "
name: halt with instances
duration: 20s
target:
  builtin:
    instances: { a: {}, b: {} }
load:
  - { name: stock, request: GET /inventory/1, rate: 20/s, arrivals: constant }
faults:
  - { name: a-down, instance: a, status: { code: 503 }, at: 5s }
halt:
  - route stock success < 50% for 2s
";
    let (result, _) = run(yaml);
    let firedrill::experiment::drill::Ending::Halted { condition, .. } = &result.ending else {
        panic!("not halted: {:?}", result.ending);
    };
    assert_eq!(condition, "route stock success < 50% for 2s");
    assert!(result.timeline.duration < firedrill::clock::Duration::from_secs(10));
}

/// Every target hit of the run reached instance `a`; `b` and `c` none.
fn assert_every_hit_reached_a(report: &firedrill::report::RunReport) {
    let only_a = [
        ("a".to_string(), report.target_hits as u64),
        ("b".to_string(), 0),
        ("c".to_string(), 0),
    ];
    assert_eq!(report.instance_hits, only_a.into_iter().collect());
}
