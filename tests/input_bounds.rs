//! Inputs held to bounds of the whole file rather than of one value: the
//! windows all the faults' patterns open together, and how much of a bad
//! input an error quotes back.

mod run_support;

use std::path::Path;

/// An experiment of `faults` faults, each flapping every 1 ms (10,000
/// windows in its 20 s), on the built-in target.
fn flapping_faults(faults: usize) -> String {
    let mut text = String::from(
        "name: many patterns\nseed: 1\nduration: 20s\n\
         target:\n  builtin:\n    routes:\n      - { path: /dep/*, latency: 1ms }\n\
         load:\n  - { name: calls, request: GET /dep/x, rate: 10/s }\nfaults:\n",
    );
    for i in 0..faults {
        text.push_str(&format!(
            "  - {{ name: f{i}, match: /dep/*, status: {{ code: 503 }}, probability: 1%, pattern: {{ up: 1ms, down: 1ms }} }}\n"
        ));
    }
    text
}

/// `firedrill run FILE` in virtual time, reporting into `dir/reports`.
fn run_in(dir: &Path, text: &str) -> run_support::Ran {
    let file = dir.join("drill.yaml");
    std::fs::write(&file, text).unwrap();
    run_support::run(&file, &dir.join("reports"), &["--clock", "virtual", "-q"])
}

/// 100 faults of 10,000 windows each are each within their own bound, but
/// together held 600 MB and wrote a 228 MB report.html: the run is refused
/// before it starts, at the fault that passes the limit, with the total.
#[test]
fn patterns_opening_more_windows_in_all_than_the_run_limit_are_refused_at_the_fault_passing_it() {
    let dir = tempfile::tempdir().unwrap();
    let ran = run_in(dir.path(), &flapping_faults(100));
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    let file = dir.path().join("drill.yaml");
    assert_eq!(
        ran.stderr,
        format!(
            "error: {}:13:81: faults[2].pattern: the faults' patterns open 1000000 windows in the run \
             (this fault's passes the limit): expected at most 20000 in all faults together \
             (fewer patterned faults, or longer `up` and `down` phases)\n",
            file.display()
        )
    );
    assert!(!dir.path().join("reports").exists());
}

/// Two faults of 10,000 windows are exactly at the limit and run.
#[test]
fn patterns_opening_exactly_the_run_limit_of_windows_run() {
    let dir = tempfile::tempdir().unwrap();
    let ran = run_in(dir.path(), &flapping_faults(2));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let windows: Vec<usize> = ran.report["faults"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["windows_ms"].as_array().unwrap().len())
        .collect();
    assert_eq!(windows, [10_000, 10_000]);
}
