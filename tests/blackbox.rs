//! A user's own service as the system under test: firedrill proxies its
//! dependency on a fixed port, sends load at it, and infers its breaker
//! black-box. The services are real separate processes: `firedrill defend`
//! (its breaker is unknown to the experiment; its journal is the service's
//! own log), and the Node (opossum) and Python (pybreaker) services under
//! `tests/services/`. Loopback only; each drill is bounded (12 s).

mod blackbox_support;

use std::path::{Path, PathBuf};

use blackbox_support::{Drill, Service, free_port, journal_sequence, report_sequence};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/blackbox")
        .join(name)
}

#[test]
fn the_inferred_breaker_of_a_separate_defense_process_follows_its_own_journal() {
    let dependency_port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("service-journal.jsonl");
    let service = Service::defend(&fixture("service-defense.yaml"), dependency_port, &journal);
    let drill = Drill::run(
        &fixture("defend-service.yaml"),
        service.port,
        dependency_port,
        dir.path(),
    );
    drop(service);
    assert_eq!(drill.exit, Some(0), "{}", drill.output);
    let own = journal_sequence(&journal);
    assert_eq!(
        own,
        ["closed -> open", "open -> half_open", "half_open -> closed"],
        "the service's own journal"
    );
    assert_eq!(report_sequence(&drill.report, "inventory"), own);
}

#[test]
fn a_fault_naming_an_unknown_dependency_is_a_located_error_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.yaml");
    let text = std::fs::read_to_string(fixture("defend-service.yaml"))
        .unwrap()
        .replace("${SERVICE_PORT}", "18080")
        .replace("${DEPENDENCY_PORT}", "19001")
        .replace(
            "- { name: inventory-500, match:",
            "- { name: inventory-500, dependency: payments, match:",
        );
    std::fs::write(&file, text).unwrap();
    let out = assert_cmd::Command::cargo_bin("firedrill")
        .unwrap()
        .args(["validate"])
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("bad.yaml:")
            && stderr.contains(
                "faults[0].dependency: unknown dependency `payments`: expected one of inventory"
            ),
        "{stderr}"
    );
}

#[test]
fn a_dependency_port_in_use_is_a_located_error_exit_3() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let drill = Drill::run(
        &fixture("defend-service.yaml"),
        free_port(),
        port,
        dir.path(),
    );
    assert_eq!(drill.exit, Some(3), "{}", drill.output);
    assert!(
        drill.output.contains(&format!(
            "dependencies.inventory.listen: 127.0.0.1:{port}: cannot listen:"
        )) && drill.output.contains("experiment.yaml:"),
        "{}",
        drill.output
    );
}

#[test]
fn an_unreachable_upstream_is_a_located_error_exit_3() {
    let closed = free_port();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("unreachable.yaml");
    let text = std::fs::read_to_string(fixture("defend-service.yaml"))
        .unwrap()
        .replace(
            "    builtin:\n      routes:\n        - { path: /inventory/*, latency: 5ms, status: 200, body: '{\"items\":[\"sku-1\"]}' }\n",
            &format!("    upstream: http://127.0.0.1:{closed}\n"),
        );
    assert!(
        text.contains("upstream: http://127.0.0.1:"),
        "fixture changed"
    );
    std::fs::write(&file, text).unwrap();
    let drill = Drill::run(&file, free_port(), free_port(), dir.path());
    assert_eq!(drill.exit, Some(3), "{}", drill.output);
    assert!(
        drill.output.contains(&format!(
            "dependencies.inventory.upstream: http://127.0.0.1:{closed}: unreachable at start:"
        )),
        "{}",
        drill.output
    );
}

#[test]
fn with_external_load_the_drill_judges_from_what_reached_the_dependency() {
    let dependency_port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("service-journal.jsonl");
    let service = Service::defend(&fixture("service-defense.yaml"), dependency_port, &journal);
    // The outside load: 20 requests a second for 9 s from this thread,
    // over before the 10 s drill (and its dependency proxy) ends.
    let load = blackbox_support::outside_load(service.port, "/inventory/sku-1", 20, 9);
    let drill = Drill::run(
        &fixture("external-load.yaml"),
        service.port,
        dependency_port,
        dir.path(),
    );
    let sent = load.join().unwrap();
    drop(service);
    assert!(sent >= 150, "the outside load sent only {sent} requests");
    assert_eq!(
        drill.exit,
        Some(0),
        "{}\n{:#}",
        drill.output,
        drill.report["verdicts"]
    );
    assert_eq!(
        report_sequence(&drill.report, "inventory"),
        journal_sequence(&journal),
        "{:#}",
        drill.report["breakers"]
    );
    assert_eq!(
        drill.report["routes"].as_array().map(Vec::len),
        Some(0),
        "firedrill sent no load of its own"
    );
}
