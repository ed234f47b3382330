//! A user's own service as the system under test: firedrill proxies its
//! dependency on a fixed port, sends load at it, and infers its breaker
//! black-box. The services are real separate processes: `firedrill defend`
//! (its breaker is unknown to the experiment; its journal is the service's
//! own log), and the Node (opossum), Python (pybreaker), gRPC (grpcio with
//! pybreaker, called over HTTP/2) and hand-written services under
//! `tests/services/`; the hand-written one is also broken on
//! purpose (a leak while open, a burst half-open, no breaker) to prove the
//! verdicts fail when they should. Loopback only; each drill is bounded
//! (12 s).

mod blackbox_support;
mod port_support;

use std::path::{Path, PathBuf};

use blackbox_support::services::{
    Ran, black_box_drill, black_box_run, events_file, experiment, fails_as_without_a_breaker,
    fails_the_counter_proof_naming_a_leak, grpc_pybreaker, handwritten, handwritten_with, opossum,
    opossum_closing_late, pybreaker, root,
};
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
    let metrics_port = free_port();
    let service = Service::defend_with_metrics(
        &fixture("service-defense.yaml"),
        dependency_port,
        &journal,
        metrics_port,
    );
    let drill = Drill::run_with(
        &fixture("defend-service.yaml"),
        service.port,
        dependency_port,
        dir.path(),
        &[("${METRICS_PORT:-9}", metrics_port.to_string())],
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
    // Its /metrics, scraped during the drill, is shown beside the inference.
    let scraped: Vec<String> = drill.report["breakers"][0]["reported"]
        .as_array()
        .expect("the report shows what the service reported")
        .iter()
        .map(|t| {
            format!(
                "{} -> {}",
                t["from"].as_str().unwrap(),
                t["to"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(scraped, own, "scraped from the service's /metrics");
    // Every request through the dependency proxy is in dependencies.jsonl.
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(
        blackbox_support::Drill::dir(dir.path()).join("dependencies.jsonl"),
    )
    .unwrap()
    .lines()
    .map(|l| serde_json::from_str(l).unwrap())
    .collect();
    assert_eq!(
        lines.len() as u64,
        drill.report["target_hits"].as_u64().unwrap()
    );
    assert!(lines.iter().all(|l| l["proxy"] == "inventory"));
    let injected: Vec<_> = lines
        .iter()
        .filter(|l| l["fault"] == "inventory-500")
        .collect();
    assert!(
        injected.len() >= 5,
        "the breaker needed 5 failures: {}",
        injected.len()
    );
    assert!(
        injected
            .iter()
            .all(|l| l["status"] == 500 && l["reached_upstream"] == false)
    );
    assert!(
        lines
            .iter()
            .filter(|l| l["fault"].is_null())
            .all(|l| l["status"] == 200 && l["reached_upstream"] == true)
    );
}

/// `defend-service.yaml` with each `(from, to)` replaced (every `from`
/// must be there), written to `dir/name`.
fn edited_fixture(dir: &Path, name: &str, edits: &[(&str, String)]) -> PathBuf {
    let mut text = std::fs::read_to_string(fixture("defend-service.yaml")).unwrap();
    for (from, to) in edits {
        assert!(text.contains(from), "the fixture no longer holds {from:?}");
        text = text.replace(from, to);
    }
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    file
}

/// `firedrill validate FILE`'s stderr, once it said exit 2 (bad input).
fn invalid(file: &Path) -> String {
    let out = assert_cmd::Command::cargo_bin("firedrill")
        .unwrap()
        .arg("validate")
        .arg(file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    stderr
}

#[test]
fn a_fault_naming_an_unknown_dependency_is_a_located_error_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = edited_fixture(
        dir.path(),
        "bad.yaml",
        &[
            ("${SERVICE_PORT}", "18080".to_string()),
            ("${DEPENDENCY_PORT}", "19001".to_string()),
            (
                "- { name: inventory-500, match:",
                "- { name: inventory-500, dependency: payments, match:".to_string(),
            ),
        ],
    );
    let stderr = invalid(&file);
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
    // The service must take a connection (system.url is probed before the
    // dependency's address is bound).
    let service = blackbox_support::silent_service();
    let drill = Drill::run(&fixture("defend-service.yaml"), service, port, dir.path());
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
    let file = edited_fixture(
        dir.path(),
        "unreachable.yaml",
        &[(
            "    builtin:\n      routes:\n        - { path: /inventory/*, latency: 5ms, status: 200, body: '{\"items\":[\"sku-1\"]}' }\n",
            format!("    upstream: http://127.0.0.1:{closed}\n"),
        )],
    );
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

/// The drill passes, and its inferred transitions are the library's own
/// (see [`inferred_follows_the_events`]).
fn inferred_matches_the_library(name: &str, start: fn(u16, &Path, bool) -> Service) {
    let (drill, events) = black_box_drill(name, start, true);
    assert_eq!(
        drill.exit,
        Some(0),
        "{}\n{:#}",
        drill.output,
        drill.report["verdicts"]
    );
    inferred_follows_the_events(name, &drill, &events);
    // report.html draws both bands, and what reached the dependency.
    for row in [
        "<b>inventory</b><small>inferred</small>",
        "<b>inventory</b><small>reported by the service</small>",
        "class=\"row dependency-row\"",
    ] {
        assert_eq!(drill.html.matches(row).count(), 1, "{row}");
    }
}

/// The inferred transitions are the service's own events: the same
/// sequence, each within two inter-arrival intervals (20 req/s) plus 50 ms
/// of the service's event; the report shows the events beside them.
fn inferred_follows_the_events(name: &str, drill: &Drill, events: &[(f64, String, String)]) {
    let inferred = blackbox_support::transitions(&drill.report, "inventory");
    let sequence = |t: &[(f64, String, String)]| -> Vec<String> {
        t.iter().map(|(_, f, to)| format!("{f} -> {to}")).collect()
    };
    assert_eq!(
        sequence(&inferred),
        sequence(events),
        "inferred vs {name}'s own events"
    );
    let reported = blackbox_support::reported(&drill.report, "inventory");
    assert_eq!(
        sequence(&reported),
        sequence(events),
        "the report shows the events file beside the inference"
    );
    let started = drill.report["started_at_unix_ms"]
        .as_f64()
        .expect("a real-time report says when it started");
    let tolerance_ms = 2.0 * 1000.0 / 20.0 + 50.0;
    for ((at, from, to), (event_ms, ..)) in inferred.iter().zip(events) {
        let library_at = event_ms - started;
        eprintln!(
            "{name}: {from} -> {to} inferred {at:.0} ms, library {library_at:.0} ms, off by {:.0} ms",
            at - library_at
        );
        assert!(
            (at - library_at).abs() <= tolerance_ms,
            "{from} -> {to}: inferred at {at:.0} ms, {name} at {library_at:.0} ms"
        );
    }
}

/// Without a breaker the same drill fails: the dependency sees every call,
/// so nothing opens.
fn without_a_breaker_the_drill_fails(name: &str, start: fn(u16, &Path, bool) -> Service) {
    let (drill, events) = black_box_drill(name, start, false);
    fails_as_without_a_breaker(name, &drill, &events);
}

#[test]
fn opossum_breaker_is_inferred_as_its_own_events_say() {
    inferred_matches_the_library("opossum", opossum);
}

/// opossum-prometheus's event counters, scraped every 100 ms during the
/// drill, give the report the same changes as opossum's own events, each
/// within two scrape intervals plus 50 ms (a scrape sees a change up to one
/// interval late; a busy machine can delay it one more).
#[test]
fn opossum_prometheus_counters_scraped_during_the_drill_match_its_own_events() {
    let interval_ms = 100.0;
    let scraped = |_: &Path, port: u16| {
        format!(
            "{{ prometheus: {{ url: http://127.0.0.1:{port}/metrics, name: inventory, interval: {interval_ms}ms }} }}"
        )
    };
    let Ran { drill, events, .. } = black_box_run(
        &experiment("opossum"),
        |p, e| opossum(p, e, true),
        scraped,
        &[],
    );
    assert_eq!(drill.exit, Some(0), "{}", drill.output);
    let reported = blackbox_support::reported(&drill.report, "inventory");
    let started = drill.report["started_at_unix_ms"].as_f64().unwrap();
    assert_eq!(
        reported.len(),
        events.len(),
        "{reported:?} vs opossum's {events:?}"
    );
    assert_eq!(events.len(), 3, "{events:?}");
    for ((at, from, to), (event_ms, event_from, event_to)) in reported.iter().zip(&events) {
        assert_eq!((from, to), (event_from, event_to));
        let library_at = event_ms - started;
        eprintln!(
            "opossum-prometheus: {from} -> {to} scraped {at:.0} ms, library {library_at:.0} ms"
        );
        assert!(
            (at - library_at).abs() <= 2.0 * interval_ms + 50.0,
            "{from} -> {to}: scraped at {at:.0} ms, opossum at {library_at:.0} ms"
        );
    }
}

#[test]
fn pybreaker_breaker_is_inferred_as_its_own_events_say() {
    inferred_matches_the_library("pybreaker", pybreaker);
}

/// A grpcio service called over HTTP/2, its gRPC dependency failing with
/// UNAVAILABLE (on HTTP 200): the inference judges the gRPC status.
#[test]
fn a_grpc_service_s_pybreaker_is_inferred_as_its_own_events_say() {
    inferred_matches_the_library("grpc_pybreaker", grpc_pybreaker);
}

#[test]
fn a_grpc_service_without_its_breaker_fails_the_drill() {
    without_a_breaker_the_drill_fails("grpc_pybreaker", grpc_pybreaker);
}

#[test]
fn an_opossum_service_without_its_breaker_fails_the_drill() {
    without_a_breaker_the_drill_fails("opossum", opossum);
}

#[test]
fn a_pybreaker_service_without_its_breaker_fails_the_drill() {
    without_a_breaker_the_drill_fails("pybreaker", pybreaker);
}

#[test]
fn a_defense_line_per_dependency_guards_a_service_that_has_no_breaker() {
    let dependency_port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events.jsonl");
    let service = opossum(dependency_port, &events, false);
    let drill = Drill::run(
        &fixture("guarded-dependency.yaml"),
        service.port,
        dependency_port,
        dir.path(),
    );
    drop(service);
    assert_eq!(
        drill.exit,
        Some(0),
        "{}\n{:#}",
        drill.output,
        drill.report["verdicts"]
    );
    assert_eq!(
        report_sequence(&drill.report, "inventory-guard"),
        ["closed -> open", "open -> half_open", "half_open -> closed"]
    );
}

/// A drill of `handwritten.yaml` against the hand-written service with
/// `switches`, with `expectation` added to the experiment's.
fn handwritten_drill(switches: &[(&str, &str)], expectation: Option<&str>) -> Ran {
    let last = "  - route stock success >= 99%";
    let edits: Vec<(&str, String)> = expectation
        .map(|e| (last, format!("{last}\n  - {e}")))
        .into_iter()
        .collect();
    black_box_run(
        &experiment("handwritten"),
        |port, events| handwritten_with(port, events, switches),
        events_file,
        &edits,
    )
}

/// A service with no breaker stalls 400 ms from its `at`th request at
/// 20 req/s (request n is sent (n - 1) / 20 s in) in the last second of a
/// 5 s drill, under each seed: the requests the stall holds past the end
/// are cut off, not answered without reaching the dependency, so nothing
/// opens.
#[test]
fn a_stall_in_the_last_second_of_the_drill_never_opens_a_breaker() {
    let file = root().join("fixtures/blackbox/stall-at-the-end.yaml");
    for at in [82, 92, 95, 98, 100] {
        let runs = blackbox_support::under_seeds(|seed| {
            let dependency_port = free_port();
            let dir = tempfile::tempdir().unwrap();
            let stall = at.to_string();
            let service = handwritten_with(
                dependency_port,
                &dir.path().join("events.jsonl"),
                &[("NO_BREAKER", "1"), ("STALL_AT", &stall)],
            );
            let seed_line = format!("seed: {seed}");
            let drill = Drill::run_with(
                &file,
                service.port,
                dependency_port,
                dir.path(),
                &[("seed: 11", seed_line)],
            );
            drop(service);
            drill
        });
        for (seed, drill) in runs {
            assert_eq!(
                drill.exit,
                Some(0),
                "stall from request {at}, seed {seed}: {}\n{:#}",
                drill.output,
                drill.report["verdicts"]
            );
        }
    }
}

/// The verdict of `expectation` in a report.
fn verdict<'a>(report: &'a serde_json::Value, expectation: &str) -> &'a serde_json::Value {
    report["verdicts"]
        .as_array()
        .and_then(|v| v.iter().find(|v| v["expectation"] == expectation))
        .unwrap_or_else(|| panic!("no verdict for {expectation}: {report:#}"))
}

#[test]
fn a_correct_hand_written_breaker_passes_the_drill_as_its_own_events_say() {
    inferred_matches_the_library("handwritten", handwritten);
}

#[test]
fn a_hand_written_service_without_its_breaker_fails_the_drill() {
    without_a_breaker_the_drill_fails("handwritten", handwritten);
}

/// The counter proof against a breaker that sends every `every`th call
/// while open to the dependency anyway: the proof fails and names a
/// leaked call (its path and the load request's id).
fn a_leaking_breaker_fails_the_counter_proof(every: &str) {
    let ran = handwritten_drill(&[("LEAK_EVERY", every)], None);
    fails_the_counter_proof_naming_a_leak(&format!("LEAK_EVERY={every}"), &ran);
}

#[test]
fn a_breaker_leaking_every_5th_call_while_open_fails_the_counter_proof() {
    a_leaking_breaker_fails_the_counter_proof("5");
}

#[test]
fn a_breaker_leaking_every_20th_call_while_open_fails_the_counter_proof() {
    a_leaking_breaker_fails_the_counter_proof("20");
}

/// A leak every 5th call (every 250 ms at 20 req/s) hides the open breaker
/// from an inference that waits for silence: `never opens` must still fail,
/// since the service's own events say it opened.
#[test]
fn a_breaker_leaking_every_5th_call_does_not_pass_never_opens() {
    let never = "breaker inventory never opens";
    let Ran {
        drill,
        events,
        leaks,
    } = handwritten_drill(&[("LEAK_EVERY", "5")], Some(never));
    assert!(
        events.iter().any(|(_, _, to)| to == "open") && !leaks.is_empty(),
        "the service opened and leaked: {events:?} {leaks:?}"
    );
    let verdict = verdict(&drill.report, never);
    assert_eq!(verdict["passed"], false, "{verdict:#}");
}

/// In a burst half-open every call goes through until the slow (400 ms)
/// trial completes: the inference must close the breaker when the service
/// did, not at the second arrival.
#[test]
fn a_burst_half_open_is_inferred_as_its_own_events_say() {
    let Ran { drill, events, .. } = handwritten_drill(&[("HALF_OPEN", "burst")], None);
    inferred_follows_the_events("handwritten (burst)", &drill, &events);
}

/// What report.json says of how the arrivals were paired with requests.
fn correlation(report: &serde_json::Value) -> (u64, u64, String) {
    let c = &report["breakers"][0]["correlation"];
    (
        c["paired"].as_u64().unwrap(),
        c["of"].as_u64().unwrap(),
        c["by"].as_str().unwrap().to_string(),
    )
}

#[test]
fn a_service_passing_the_request_id_on_has_every_arrival_paired_by_id() {
    let Ran { drill, .. } = handwritten_drill(&[("PROPAGATE", "1")], None);
    let (paired, of, by) = correlation(&drill.report);
    assert_eq!(of, drill.report["target_hits"].as_u64().unwrap());
    assert!(of >= 100, "{of} arrivals");
    assert_eq!(
        (paired, by.as_str()),
        (of, "id"),
        "{:#}",
        drill.report["breakers"]
    );
}

/// The experiment names its correlation headers, so the calls must carry
/// the requests' ids: a service that strips them leaves the breaker's
/// verdicts inconclusive (exit 5), the reason naming the evidence, while
/// the route's own figure is still judged.
#[test]
fn a_service_stripping_the_request_ids_the_drill_expects_is_inconclusive() {
    let Ran { drill, .. } = handwritten_drill(&[("PROPAGATE", "0")], None);
    let (paired, of, by) = correlation(&drill.report);
    assert!(of >= 100, "{of} arrivals");
    assert_eq!(
        (paired, by.as_str()),
        (0, "time"),
        "{:#}",
        drill.report["breakers"]
    );
    assert_eq!(drill.exit, Some(5), "{}", drill.output);
    assert_eq!(drill.report["verdict"], "inconclusive");
    let reason = drill.report["inconclusive"][0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with(&format!(
            "0 of {of} calls to its dependency (0.0%) carried the id"
        )),
        "{reason}"
    );
    let proof = drill.verdict("calls to /inventory/* while inventory is open == 0");
    assert!(proof["inconclusive"].is_string(), "{proof}");
    let route = drill.verdict("route stock success >= 99%");
    assert_eq!(
        (route["passed"].as_bool(), route.get("inconclusive")),
        (Some(true), None)
    );
    assert!(
        drill.html.contains("id=\"inconclusive\""),
        "the page says why"
    );
    assert!(
        drill
            .output
            .contains("  ???? calls to /inventory/* while inventory is open == 0")
            && drill
                .output
                .contains("INCONCLUSIVE: 1 of 5 expectations held; 4 inconclusive"),
        "{}",
        drill.output
    );
    assert!(
        drill.junit.contains("type=\"inconclusive\""),
        "{}",
        drill.junit
    );
}

/// A declared `probes: 25` on a breaker that closes after one trial: a
/// short burst of 500s after it closed makes the walk reopen a breaker the
/// service had closed, and the caller then sees no short-circuit while the
/// calls go on. The caller contradicts the declaration: inconclusive, not
/// 20 healthy calls named as leaks.
#[test]
fn a_breaker_declared_with_settings_the_caller_contradicts_is_inconclusive() {
    let ran = black_box_run(
        &experiment("handwritten"),
        |port, events| handwritten_with(port, events, &[]),
        events_file,
        &[
            ("wait_in_open: 2s", "wait_in_open: 2s\n      probes: 25".to_string()),
            (
                "at: 5s, for: 1500ms }",
                "at: 5s, for: 1500ms }\n  - { name: blip, match: /inventory/*, status: { code: 500 }, at: 6s, for: 100ms }"
                    .to_string(),
            ),
        ],
    );
    let reasons = ran.drill.inconclusive();
    assert!(
        reasons.iter().any(
            |r| r.starts_with("the caller contradicts its declared settings")
                && r.contains("no request was short-circuited")
        ),
        "{reasons:?}"
    );
    // The service's own events: it closed once and stayed closed.
    let opens = ran.events.iter().filter(|(_, _, to)| to == "open").count();
    assert_eq!(opens, 1, "{:?}", ran.events);
}

#[test]
fn a_bad_correlation_header_is_a_located_error_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(experiment("handwritten"))
        .unwrap()
        .replace(
            "correlation: { headers: [x-request-id, traceparent] }",
            "correlation: { headers: [x-request-id, x-firedrill-request-id] }",
        );
    let file = dir.path().join("bad.yaml");
    std::fs::write(&file, text).unwrap();
    let stderr = invalid(&file);
    assert!(
        stderr.contains("bad.yaml:30:")
            && stderr.contains(
                "system.correlation.headers[1]: `x-firedrill-request-id` is not free for ids"
            ),
        "{stderr}"
    );
}

/// The drill stopped with exit 3, its error located at `system.url` and
/// saying `message`, and wrote no report (there was no verdict).
fn stopped_at_system_url(drill: &Drill, message: &str) {
    assert_eq!(drill.exit, Some(3), "{}", drill.output);
    assert!(
        drill.output.contains("experiment.yaml:")
            && drill.output.contains(&format!("system.url: {message}")),
        "{}",
        drill.output
    );
    assert!(drill.report.is_null(), "no verdict: {:#}", drill.report);
}

#[test]
fn a_service_that_is_down_at_start_is_a_located_error_exit_3_before_any_load() {
    let down = free_port();
    let dir = tempfile::tempdir().unwrap();
    let drill = Drill::run(
        &fixture("defend-service.yaml"),
        down,
        free_port(),
        dir.path(),
    );
    stopped_at_system_url(
        &drill,
        &format!("http://127.0.0.1:{down}: unreachable at start:"),
    );
    // No load was sent: no requests.jsonl either (it was left empty).
    assert!(
        !Drill::dir(dir.path()).join("requests.jsonl").exists(),
        "a run refused before its load left a requests.jsonl"
    );
}

#[test]
fn the_clock_flag_virtual_on_an_own_service_experiment_is_refused_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = edited_fixture(
        dir.path(),
        "own.yaml",
        &[
            ("${SERVICE_PORT}", free_port().to_string()),
            ("${DEPENDENCY_PORT}", free_port().to_string()),
        ],
    );
    let (exit, output) =
        blackbox_support::firedrill(&["run", "--quiet", "--clock", "virtual"], &file);
    assert_eq!(exit, Some(2), "{output}");
    assert!(
        output.contains("--clock virtual: ") && output.contains("system"),
        "{output}"
    );
}

#[test]
fn the_clock_flag_virtual_on_a_real_target_experiment_is_refused_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("real-target.yaml");
    std::fs::write(
        &file,
        "name: a real target\nduration: 5s\nclock: real\ntarget: { url: http://127.0.0.1:9 }\nload:\n  - { name: a, request: GET /a, rate: 1/s }\n",
    )
    .unwrap();
    let (exit, output) =
        blackbox_support::firedrill(&["run", "--quiet", "--clock", "virtual"], &file);
    assert_eq!(exit, Some(2), "{output}");
    assert!(
        output.contains("--clock virtual: a real target (target.url) needs the real clock"),
        "{output}"
    );
}

#[test]
fn a_wait_relative_expectation_on_an_inferred_breaker_without_wait_in_open_is_a_located_error_exit_2()
 {
    let dir = tempfile::tempdir().unwrap();
    let file = edited_fixture(
        dir.path(),
        "no-wait.yaml",
        &[
            ("${SERVICE_PORT}", free_port().to_string()),
            ("${DEPENDENCY_PORT}", free_port().to_string()),
            ("      wait_in_open: 2s\n", String::new()),
            (
                "  - calls to /inventory/* while inventory is open == 0\n",
                "  - calls to /inventory/* while inventory is open == 0\n  - breaker inventory half_opens within wait_in_open ± 500ms after opening\n".to_string(),
            ),
        ],
    );
    for command in ["validate", "run"] {
        let (exit, output) = blackbox_support::firedrill(&[command], &file);
        assert_eq!(exit, Some(2), "firedrill {command}: {output}");
        assert!(
            output.contains("no-wait.yaml:")
                && output.contains("expect[3]")
                && output.contains(
                    "breaker \"inventory\" at column 9 has no known wait_in_open: give system.breakers.inventory.wait_in_open"
                ),
            "firedrill {command}: {output}"
        );
    }
}

/// The fixture with a short run, a short client timeout and one
/// expectation that holds whatever the service does, so only the
/// service's silence can fail the run.
fn short_drill_that_would_pass() -> Vec<(&'static str, String)> {
    vec![
        ("duration: 12s", "duration: 4s".to_string()),
        ("timeout: 3s", "timeout: 500ms".to_string()),
        (
            "  - breaker inventory goes closed -> open -> half_open -> closed\n  - breaker inventory opens within 1s of inventory-500.start\n  - calls to /inventory/* while inventory is open == 0\n  - route stock fallback while inventory is open >= 90%\n",
            "  - calls to /inventory/* == 0\n".to_string(),
        ),
    ]
}

#[test]
fn a_service_that_accepts_but_never_answers_is_exit_3_not_a_verdict() {
    let silent = blackbox_support::silent_service();
    let dir = tempfile::tempdir().unwrap();
    let drill = Drill::run_with(
        &fixture("defend-service.yaml"),
        silent,
        free_port(),
        dir.path(),
        &short_drill_that_would_pass(),
    );
    stopped_at_system_url(
        &drill,
        &format!("http://127.0.0.1:{silent}: the service under test did not answer:"),
    );
}

/// opossum does not pass firedrill's request id on to its dependency, so
/// the arrivals cannot be tied to requests one by one: the route's figure
/// is every arrival at its breaker's dependency per request.
#[test]
fn a_black_box_routes_amplification_is_the_arrivals_at_its_dependency_per_request() {
    let (drill, _) = black_box_drill("opossum", opossum, true);
    assert_eq!(drill.exit, Some(0), "{}", drill.output);
    let arrivals = drill.report["target_hits"].as_f64().unwrap();
    let route = &drill.report["routes"][0];
    let requests = route["requests"].as_f64().unwrap();
    let amplification = route["amplification"].as_f64().unwrap();
    assert_eq!(
        amplification,
        (arrivals * 1000.0 / requests).round() / 1000.0,
        "{arrivals} arrivals for {requests} requests: {route:#}"
    );
    // The breaker kept the dependency's calls off while it was open, and
    // the service called the dependency once per request otherwise.
    assert!(
        (0.5..1.0).contains(&amplification),
        "{amplification}: {route:#}"
    );
}

#[test]
fn external_load_that_never_came_fails_every_expectation_with_no_calls_seen() {
    let dependency_port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("service-journal.jsonl");
    let service = Service::defend(&fixture("service-defense.yaml"), dependency_port, &journal);
    let drill = Drill::run_with(
        &fixture("external-load.yaml"),
        service.port,
        dependency_port,
        dir.path(),
        &[("duration: 10s", "duration: 4s".to_string())],
    );
    drop(service);
    assert_eq!(drill.exit, Some(1), "{}", drill.output);
    let warning = "no calls were seen at any dependency";
    let warnings = drill.report["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().starts_with(warning)),
        "{warnings:?}"
    );
    assert!(
        drill.html.contains(warning),
        "report.html shows the warning"
    );
    let verdicts = drill.report["verdicts"].as_array().unwrap();
    assert_eq!(verdicts.len(), 3);
    for v in verdicts {
        assert_eq!(v["passed"], false, "{v}");
        assert!(
            v["seen"]
                .as_str()
                .unwrap()
                .starts_with("no calls were seen"),
            "{v}"
        );
    }
}

/// The drill with the dependency hanging (blackholed) for 8 s behind the
/// service's 1 s call timeout (pybreaker, which runs one call at a time,
/// needs 5 s of them to trip): the first trial hangs too, so the breaker
/// opens, probes, reopens, and at last probes and closes.
fn hanging_dependency_drill(
    name: &str,
    start: fn(u16, &Path, bool) -> Service,
) -> (blackbox_support::Drill, Vec<(f64, String, String)>) {
    let dependency_port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events.jsonl");
    let service = start(dependency_port, &events, true);
    let drill = Drill::run_with(
        &experiment(name),
        service.port,
        dependency_port,
        dir.path(),
        &[
            (
                &format!("{{ events: /tmp/{name}-events.jsonl }}"),
                format!("{{ events: {} }}", events.display()),
            ),
            ("duration: 10s", "duration: 18s".to_string()),
            (
                "status: { code: 500 }, at: 3s, for: 2s",
                "blackhole: {}, at: 3s, for: 8s".to_string(),
            ),
        ],
    );
    drop(service);
    (drill, blackbox_support::events(&events))
}

/// Slow failures are dated when they failed, not when they arrived: with
/// a hanging dependency the inferred sequence is the library's own, each
/// transition within two inter-arrival intervals plus 50 ms (the arrival
/// of a call that hangs for 1 s is a whole second early).
fn inferred_matches_the_library_with_a_hanging_dependency(
    name: &str,
    start: fn(u16, &Path, bool) -> Service,
) {
    let (drill, events) = hanging_dependency_drill(name, start);
    assert!(events.len() >= 3, "{name} opened and probed: {events:?}");
    inferred_follows_the_events(name, &drill, &events);
    // Read from both sides: what the caller got and what the dependency
    // saw (paired by the request id the service passed on, or by time).
    let reasons: Vec<&serde_json::Value> = drill.report["breakers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["name"] == "inventory")
        .flat_map(|b| b["transitions"].as_array().into_iter().flatten())
        .map(|t| &t["reason"])
        .collect();
    for reason in reasons {
        let reason = reason.as_str().unwrap_or_default();
        assert!(
            reason.starts_with("inferred (high confidence)")
                || reason.starts_with("inferred (medium confidence)"),
            "{reason}"
        );
    }
}

#[test]
fn opossum_behind_a_hanging_dependency_is_inferred_as_its_own_events_say() {
    inferred_matches_the_library_with_a_hanging_dependency("opossum", opossum);
}

/// opossum gives up on a hanging trial at its 1 s timeout, and the app
/// closes the call's socket 250 ms or 600 ms later: the breaker reopened
/// when opossum gave up (its caller got the fallback then), not at the
/// close, so the next trial is no leak and the counter proof holds.
#[test]
fn opossum_closing_a_timed_out_call_late_reopens_when_it_gave_up_and_leaks_nothing() {
    fn late_250(port: u16, events: &Path, breaker: bool) -> Service {
        opossum_closing_late(port, events, breaker, 250)
    }
    fn late_600(port: u16, events: &Path, breaker: bool) -> Service {
        opossum_closing_late(port, events, breaker, 600)
    }
    for start in [late_250 as fn(u16, &Path, bool) -> Service, late_600] {
        let (drill, events) = hanging_dependency_drill("opossum", start);
        let proof = drill.verdict("calls to /inventory/* while inventory is open == 0");
        assert_eq!(proof["passed"], true, "{proof}");
        assert!(events.len() >= 5, "opossum reopened on a trial: {events:?}");
        inferred_follows_the_events("opossum", &drill, &events);
    }
}

#[test]
fn pybreaker_behind_a_hanging_dependency_is_inferred_as_its_own_events_say() {
    inferred_matches_the_library_with_a_hanging_dependency("pybreaker", pybreaker);
}

/// The example of docs/own-service.md ("Testing your own service") passes as written
/// against the opossum service (its reset timeout is the example's 2 s
/// wait; the ports are the test's).
#[test]
fn the_documented_example_of_testing_your_own_service_passes_against_opossum() {
    let section = std::fs::read_to_string(root().join("docs/own-service.md")).unwrap();
    let start = section.find("```yaml\n").unwrap() + "```yaml\n".len();
    let yaml = &section[start..start + section[start..].find("```").unwrap()];
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("readme.yaml");
    std::fs::write(&file, yaml).unwrap();
    let dependency_port = free_port();
    let service = opossum(dependency_port, &dir.path().join("events.jsonl"), true);
    let drill = Drill::run(&file, service.port, dependency_port, dir.path());
    drop(service);
    assert_eq!(
        drill.exit,
        Some(0),
        "{}\n{:#}",
        drill.output,
        drill.report["verdicts"]
    );
}
