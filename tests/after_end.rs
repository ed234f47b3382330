//! A call still in flight when the run ends may move a breaker afterwards:
//! that transition is kept, marked after the end in the journal, the JSON
//! report and the console, and never judged by an expectation.

mod run_support;

const FILE: &str = "fixtures/experiments/after_the_end.yaml";

#[test]
fn a_transition_after_the_end_is_shown_marked_and_not_judged() {
    let dir = tempfile::tempdir().unwrap();
    let ran = run_support::run_ok(FILE, dir.path(), &[]);
    let transitions = ran.report["breakers"][0]["transitions"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(transitions.len(), 1, "{transitions:?}");
    let open = &transitions[0];
    assert_eq!(
        (open["from"].as_str(), open["to"].as_str()),
        (Some("closed"), Some("open"))
    );
    assert!(open["at_ms"].as_f64().unwrap() >= 4000.0, "{open}");
    assert_eq!(open["after_end"], true);
    let journal = std::fs::read_to_string(dir.path().join("journal.jsonl")).unwrap();
    let line: serde_json::Value = serde_json::from_str(journal.lines().next().unwrap()).unwrap();
    assert_eq!(line["after_end"], true, "{journal}");
    assert!(
        ran.stdout.contains("[after the end: not judged]"),
        "{}",
        ran.stdout
    );
    // Both expectations hold: the run itself never saw the breaker open.
    let held: Vec<bool> = ran.report["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["passed"].as_bool().unwrap())
        .collect();
    assert_eq!(held, [true, true]);
}

#[test]
fn transitions_inside_the_run_carry_no_after_end_mark() {
    let dir = tempfile::tempdir().unwrap();
    let ran = run_support::run_ok(
        "experiments/quickstart.yaml",
        dir.path(),
        &["--clock", "virtual"],
    );
    let transitions = ran.report["breakers"][0]["transitions"].as_array().unwrap();
    assert!(!transitions.is_empty());
    assert!(
        transitions.iter().all(|t| t.get("after_end").is_none()),
        "{transitions:?}"
    );
    let journal = std::fs::read_to_string(dir.path().join("journal.jsonl")).unwrap();
    assert!(!journal.contains("after_end"), "{journal}");
}
