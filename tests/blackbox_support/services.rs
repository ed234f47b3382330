//! The real services of `tests/services/` (opossum, pybreaker, the gRPC
//! shop, the hand-written breaker with its switches), each started as its
//! own process on a free port calling the dependency proxy, and a drill of
//! an experiment against one of them with what the service wrote: its own
//! events and the calls it leaked.

use std::path::{Path, PathBuf};

use super::{Drill, Service, free_port};

/// The repository's root.
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The opossum service (installed by ci/install-test-clients.sh).
pub fn opossum(dependency_port: u16, events: &Path, breaker: bool) -> Service {
    opossum_closing_late(dependency_port, events, breaker, 0)
}

/// The opossum service closing a timed-out call's socket `late_ms` after
/// opossum gave up on it.
pub fn opossum_closing_late(
    dependency_port: u16,
    events: &Path,
    breaker: bool,
    late_ms: u64,
) -> Service {
    let server = root().join("tests/services/opossum/server.js");
    let mut env = vec![
        ("CLOSE_LATE_MS", late_ms.to_string()),
        (
            "DEPENDENCY_URL",
            format!("http://127.0.0.1:{dependency_port}"),
        ),
        ("EVENTS_FILE", events.display().to_string()),
        ("RESET_TIMEOUT_MS", "2000".to_string()),
        ("ROLLING_COUNT_TIMEOUT_MS", "1000".to_string()),
    ];
    if !breaker {
        env.push(("NO_BREAKER", "1".to_string()));
    }
    Service::program("node", &[server.to_str().unwrap()], &env)
}

/// The pybreaker service (installed by ci/install-test-clients.sh).
pub fn pybreaker(dependency_port: u16, events: &Path, breaker: bool) -> Service {
    let python = root().join("tests/services/pybreaker/.venv/bin/python");
    let service = root().join("tests/services/pybreaker/service.py");
    let mut env = vec![
        (
            "DEPENDENCY_URL",
            format!("http://127.0.0.1:{dependency_port}"),
        ),
        ("EVENTS_FILE", events.display().to_string()),
        ("RESET_TIMEOUT_S", "2".to_string()),
    ];
    if !breaker {
        env.push(("NO_BREAKER", "1".to_string()));
    }
    Service::program(python.to_str().unwrap(), &[service.to_str().unwrap()], &env)
}

/// A finished drill of `experiments/blackbox/NAME.yaml` and what the
/// service wrote: its events file, and the calls it leaked
/// (`leaks.jsonl` beside it, the hand-written service's `LEAK_EVENTS`).
pub struct Ran {
    /// The finished drill.
    pub drill: Drill,
    /// `(at_ms, from, to)` of each line of the service's events file.
    pub events: Vec<(f64, String, String)>,
    /// The calls the service leaked while open, one JSON line each.
    pub leaks: Vec<serde_json::Value>,
}

/// `experiments/blackbox/NAME.yaml`.
pub fn experiment(name: &str) -> PathBuf {
    root().join(format!("experiments/blackbox/{name}.yaml"))
}

/// Runs the experiment `file` (its `reported:` source written
/// `{ events: /tmp/STEM-events.jsonl }`, STEM the file's name without
/// `.yaml`) against a service started by `start` (the dependency proxy's
/// port, the events file), with that source replaced by what `reported`
/// gives for the events file and the service's port, and each `(from, to)`
/// of `edits` replaced.
pub fn black_box_run(
    file: &Path,
    start: impl Fn(u16, &Path) -> Service,
    reported: impl Fn(&Path, u16) -> String,
    edits: &[(&str, String)],
) -> Ran {
    let dependency_port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events.jsonl");
    let service = start(dependency_port, &events);
    let name = file.file_stem().unwrap().to_str().unwrap();
    let text = std::fs::read_to_string(file).unwrap();
    for (from, _) in edits {
        assert!(text.contains(from), "{name}.yaml no longer holds {from:?}");
    }
    let mut replacements = vec![(
        format!("{{ events: /tmp/{name}-events.jsonl }}"),
        reported(&events, service.port),
    )];
    replacements.extend(edits.iter().map(|(f, t)| (f.to_string(), t.clone())));
    let replacements: Vec<(&str, String)> = replacements
        .iter()
        .map(|(f, t)| (f.as_str(), t.clone()))
        .collect();
    let drill = Drill::run_with(
        file,
        service.port,
        dependency_port,
        dir.path(),
        &replacements,
    );
    drop(service);
    let leaks = leaks_in(&events.with_file_name("leaks.jsonl"));
    Ran {
        drill,
        events: super::events(&events),
        leaks,
    }
}

/// The service's events file as the experiment's `reported:` source.
pub fn events_file(events: &Path, _port: u16) -> String {
    format!("{{ events: {} }}", events.display())
}

/// Runs `experiments/blackbox/NAME.yaml` against a service started by
/// `start`; returns the drill and the service's own events.
pub fn black_box_drill(
    name: &str,
    start: fn(u16, &Path, bool) -> Service,
    breaker: bool,
) -> (Drill, Vec<(f64, String, String)>) {
    let ran = black_box_run(
        &experiment(name),
        |port, events| start(port, events, breaker),
        events_file,
        &[],
    );
    (ran.drill, ran.events)
}

/// The gRPC shop service, its dependency guarded by pybreaker
/// (tests/services/grpc, installed by ci/install-test-clients.sh).
pub fn grpc_pybreaker(dependency_port: u16, events: &Path, breaker: bool) -> Service {
    let python = root().join("tests/services/grpc/.venv/bin/python");
    let service = root().join("tests/services/grpc/shop.py");
    let mut env = vec![
        ("DEPENDENCY_ADDR", format!("127.0.0.1:{dependency_port}")),
        ("EVENTS_FILE", events.display().to_string()),
        ("RESET_TIMEOUT_S", "2".to_string()),
    ];
    if !breaker {
        env.push(("NO_BREAKER", "1".to_string()));
    }
    Service::program(python.to_str().unwrap(), &[service.to_str().unwrap()], &env)
}

/// The hand-written service (`tests/services/handwritten`, Python standard
/// library only) with `switches` set; its leaked calls go to `leaks.jsonl`
/// beside the events file.
pub fn handwritten_with(dependency_port: u16, events: &Path, switches: &[(&str, &str)]) -> Service {
    let service = root().join("tests/services/handwritten/service.py");
    let mut env = vec![
        (
            "DEPENDENCY_URL",
            format!("http://127.0.0.1:{dependency_port}"),
        ),
        ("EVENTS_FILE", events.display().to_string()),
        (
            "LEAK_EVENTS",
            events.with_file_name("leaks.jsonl").display().to_string(),
        ),
        ("RESET_TIMEOUT_S", "2".to_string()),
    ];
    env.extend(switches.iter().map(|(k, v)| (*k, v.to_string())));
    Service::program("python3", &[service.to_str().unwrap()], &env)
}

/// The hand-written service, correct, or with `NO_BREAKER=1`.
pub fn handwritten(dependency_port: u16, events: &Path, breaker: bool) -> Service {
    let switches: &[(&str, &str)] = if breaker { &[] } else { &[("NO_BREAKER", "1")] };
    handwritten_with(dependency_port, events, switches)
}

/// The load request id in a leaked call's `x-request-id` (the trace id:
/// the seed, then 2^63 | the id, 16 hex digits each).
pub fn load_request_id(leak: &serde_json::Value) -> u64 {
    let value = leak["request_id"]
        .as_str()
        .unwrap_or_else(|| panic!("the leak carries no x-request-id: {leak}"));
    u64::from_str_radix(&value[16..], 16).unwrap() & !(1 << 63)
}

/// A drill of a service without its breaker failed as it must (`label`
/// says which run): no events, exit 1, the sequence, the opening and the
/// fallback while open failed, and the counter proof had nothing to prove
/// (the breaker was never open).
pub fn fails_as_without_a_breaker(label: &str, drill: &Drill, events: &[(f64, String, String)]) {
    assert!(
        events.is_empty(),
        "{label}: no breaker, no events: {events:?}"
    );
    assert_eq!(drill.exit, Some(1), "{label}: {}", drill.output);
    let verdicts = drill.report["verdicts"].as_array().unwrap();
    let failed = drill.failed();
    let is = |v: &&serde_json::Value, prefix: &str, part: &str| {
        let text = v["expectation"].as_str().unwrap();
        text.starts_with(prefix) && text.contains(part)
    };
    // The sequence, the opening's timing and the fallback while open.
    for (prefix, part) in [
        ("breaker inventory goes closed -> open", ""),
        ("breaker inventory opens within", ""),
        ("route ", " fallback service while inventory is open >= 95%"),
    ] {
        let expectation = verdicts
            .iter()
            .find(|v| is(v, prefix, part))
            .unwrap_or_else(|| panic!("{label}: no `{prefix}...{part}`"));
        assert_eq!(
            expectation["passed"], false,
            "{label}: {expectation} held: {failed:?}"
        );
    }
    // The counter proof has nothing to prove: the breaker was never open.
    let proof = verdicts
        .iter()
        .find(|v| is(v, "calls to ", " while inventory is open == 0"))
        .unwrap();
    assert!(
        proof["seen"]
            .as_str()
            .unwrap()
            .contains("0s in 0 intervals"),
        "{label}: {proof}"
    );
}

/// A drill of a breaker that leaks calls while open failed on the counter
/// proof `calls to /inventory/* while inventory is open == 0` (`label`
/// says which run), naming a call the service leaked: its path and the
/// load request's id.
pub fn fails_the_counter_proof_naming_a_leak(label: &str, ran: &Ran) {
    let proof = "calls to /inventory/* while inventory is open == 0";
    fails_naming_a_leak(label, &ran.drill, &ran.leaks, proof);
}

/// The calls a hand-written service leaked (`LEAK_EVENTS`), one JSON
/// value each (none when it wrote no file).
pub fn leaks_in(file: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A drill of a service that leaked `leaks` while open failed on the
/// counter proof `proof` (`label` says which run), naming a leaked call:
/// its path and the load request's id.
pub fn fails_naming_a_leak(label: &str, drill: &Drill, leaks: &[serde_json::Value], proof: &str) {
    assert!(
        !leaks.is_empty(),
        "{label}: the service leaked no call: {}",
        drill.output
    );
    let proof = drill.verdict(proof);
    assert_eq!(
        proof["passed"],
        false,
        "{label}: {} leaked calls: {proof:#}",
        leaks.len()
    );
    assert_eq!(drill.exit, Some(1), "{label}: {}", drill.output);
    let seen = proof["seen"].as_str().unwrap();
    let named = leaks.iter().any(|leak| {
        seen.contains(leak["path"].as_str().unwrap())
            && seen.contains(&load_request_id(leak).to_string())
    });
    assert!(
        named,
        "{label}: no leaked call named in {seen:?}: {leaks:?}"
    );
}
