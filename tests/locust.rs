//! Locust as the drill's load (experiments/locust/stock.yaml): a master and
//! two workers, started by the drill, drive the hand-written breaker
//! service; the drill's figures for the route are what Locust itself saw
//! (each Locust process writes its own view of every request, apart from
//! firedrill's hook), the breaker's verdicts hold, and fail on a service
//! with no breaker or one that leaks while open, each under the harness's
//! seeds (the correct service's one after the other), the breaker's
//! inferred journal a valid path every time. Locust 2.47 comes from ci/install-test-clients.sh.

#[path = "blackbox_support/mod.rs"]
mod blackbox_support;
mod port_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use blackbox_support::{Drill, Service, free_port, invalid_path, services};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn locust() -> PathBuf {
    let locust = root().join("tests/clients/locust/.venv/bin/locust");
    assert!(
        locust.exists(),
        "{} is missing: run ci/install-test-clients.sh",
        locust.display()
    );
    locust
}

/// The drill, and each Locust process's own view: (pid, lines).
struct Ran {
    drill: Drill,
    seen: Vec<(String, Vec<serde_json::Value>)>,
    /// The calls the service leaked while open (`LEAK_EVERY`).
    leaks: Vec<serde_json::Value>,
}

impl std::ops::Deref for Ran {
    type Target = Drill;

    fn deref(&self) -> &Drill {
        &self.drill
    }
}

/// Runs experiments/locust/stock.yaml against the hand-written service
/// (`NO_BREAKER=1` unless `breaker`), its locustfile replaced by the test's
/// (which records Locust's own view), each `(from, to)` of `edits`
/// replaced.
fn run(switches: &[(&str, &str)], edits: &[(&str, &str)]) -> Ran {
    let dir = tempfile::tempdir().unwrap();
    let dependency = free_port();
    let mut env = vec![
        ("DEPENDENCY_URL", format!("http://127.0.0.1:{dependency}")),
        ("RESET_TIMEOUT_S", "2".to_string()),
        (
            "LEAK_EVENTS",
            dir.path().join("leaks.jsonl").display().to_string(),
        ),
    ];
    env.extend(switches.iter().map(|(k, v)| (*k, v.to_string())));
    let script = root().join("tests/services/handwritten/service.py");
    let service = Service::program("python3", &[script.to_str().unwrap()], &env);
    let mut text = std::fs::read_to_string(root().join("experiments/locust/stock.yaml"))
        .unwrap()
        .replace("127.0.0.1:18080", &format!("127.0.0.1:{}", service.port))
        .replace("127.0.0.1:19001", &format!("127.0.0.1:{dependency}"));
    let locustfile = root().join("tests/clients/locust/locustfile.py");
    text = text.replace(
        "locustfile: locustfile.py",
        &format!("locustfile: {}", locustfile.display()),
    );
    for (from, to) in edits {
        assert!(text.contains(from), "stock.yaml no longer holds {from:?}");
        text = text.replace(from, to);
    }
    let file = dir.path().join("stock.yaml");
    std::fs::write(&file, text).unwrap();
    let seen_dir = dir.path().join("seen");
    std::fs::create_dir(&seen_dir).unwrap();
    let reports = dir.path().join("report");
    let mut command = Command::new(env!("CARGO_BIN_EXE_firedrill"));
    command
        .env("LOCUST", locust())
        .env("SEEN_DIR", &seen_dir)
        .arg("run")
        .arg(&file)
        .arg("--quiet")
        .arg("--report-dir")
        .arg(&reports);
    let drill = Drill::finish(command, &reports);
    drop(service);
    let mut seen: Vec<(String, Vec<serde_json::Value>)> = std::fs::read_dir(&seen_dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let lines = std::fs::read_to_string(&path)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            (
                path.file_name().unwrap().to_string_lossy().into_owned(),
                lines,
            )
        })
        .collect();
    seen.sort_by(|a, b| a.0.cmp(&b.0));
    let leaks = services::leaks_in(&dir.path().join("leaks.jsonl"));
    Ran { drill, seen, leaks }
}

/// [`run`] under each of the harness's seeds: one after the other for the
/// correct service (no `switches`), whose figures a loaded box would skew
/// (Locust takes its answers in late), side by side for a broken one.
fn runs(switches: &[(&str, &str)]) -> Vec<(u64, Ran)> {
    let drill = |seed: u64| {
        let seed_line = format!("seed: {seed}");
        run(switches, &[("seed: 31", seed_line.as_str())])
    };
    if switches.is_empty() {
        blackbox_support::seed_after_seed(drill)
    } else {
        blackbox_support::under_seeds(drill)
    }
}

fn route<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["routes"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["route"] == name || r["name"] == name))
        .unwrap_or_else(|| panic!("no route {name}: {report:#}"))
}

/// A hook that loses every 10th outcome on the workers: Locust counted
/// more requests than came back, so the verdicts cannot rest on what is
/// left: inconclusive (exit 5), the loss named.
#[test]
fn outcomes_a_locust_worker_lost_leave_the_drill_inconclusive() {
    let lossy = root().join("tests/clients/locust/lossy_locustfile.py");
    let from = root().join("tests/clients/locust/locustfile.py");
    let (from, to) = (
        format!("locustfile: {}", from.display()),
        format!("locustfile: {}", lossy.display()),
    );
    let ran = run(&[], &[(from.as_str(), to.as_str())]);
    // The calls of the lost requests pair with no request either.
    let reasons = ran.inconclusive();
    assert!(
        reasons
            .iter()
            .any(|r| r.starts_with("Locust counted") && r.ends_with("lost on the way")),
        "{reasons:?}"
    );
    let verdicts = ran.report["verdicts"].as_array().unwrap();
    assert!(
        verdicts.iter().all(|v| v["inconclusive"].is_string()),
        "a loss of the whole load leaves every sentence inconclusive: {verdicts:#?}"
    );
}

#[test]
fn two_locust_workers_pass_a_correct_service_on_a_valid_path_with_the_figures_locust_saw() {
    for (seed, ran) in runs(&[]) {
        assert_eq!(invalid_path(&ran.report, "inventory"), None, "seed {seed}");
        assert_eq!(
            ran.exit,
            Some(0),
            "seed {seed}: {}\n{:#}",
            ran.output,
            ran.report["verdicts"]
        );
        figures_are_what_locust_saw(&ran);
    }
}

/// The route's figures are those Locust's own processes saw.
fn figures_are_what_locust_saw(ran: &Ran) {
    // Two worker processes made the requests (the master makes none).
    let workers: Vec<&(String, Vec<serde_json::Value>)> = ran
        .seen
        .iter()
        .filter(|(_, lines)| !lines.is_empty())
        .collect();
    assert_eq!(
        workers.len(),
        2,
        "{:?}",
        ran.seen
            .iter()
            .map(|s| (&s.0, s.1.len()))
            .collect::<Vec<_>>()
    );
    let all: Vec<&serde_json::Value> = workers.iter().flat_map(|(_, l)| l).collect();
    let count = |f: &dyn Fn(&serde_json::Value) -> bool| all.iter().filter(|v| f(v)).count() as u64;
    let requests = count(&|_| true);
    let ok = count(&|v| v["status"] == 200);
    let fallbacks = count(&|v| v["fallback"] == true);
    // 20 users, one request a second each, for 10 s.
    assert!((150..=230).contains(&requests), "{requests} requests");
    assert!(
        fallbacks > 10,
        "the breaker's fallback was seen: {fallbacks}"
    );
    let stock = route(&ran.report, "stock");
    assert_eq!(stock["requests"].as_u64(), Some(requests), "{stock:#}");
    let pct = |n: u64| (n as f64 * 100.0 / requests as f64 * 10.0).round() / 10.0;
    let near = |key: &str, want: f64| {
        let got = stock[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key}: {stock:#}"));
        assert!(
            (got - want).abs() < 0.051,
            "{key}: {got} vs Locust's {want}"
        );
    };
    near("success_pct", pct(ok));
    near("fallback_pct", pct(fallbacks));
}

#[test]
fn a_service_without_its_breaker_under_locust_s_load_fails_the_drill_under_every_seed() {
    for (seed, ran) in runs(&[("NO_BREAKER", "1")]) {
        assert_eq!(invalid_path(&ran.report, "inventory"), None, "seed {seed}");
        without_its_breaker_it_fails(&ran);
    }
}

/// A breaker that sends every 5th call while open to the dependency anyway,
/// under Locust's load: the counter proof fails naming a leaked call,
/// under every seed.
#[test]
fn a_breaker_leaking_while_open_under_locust_s_load_fails_the_counter_proof_under_every_seed() {
    for (seed, ran) in runs(&[("LEAK_EVERY", "5")]) {
        assert_eq!(invalid_path(&ran.report, "inventory"), None, "seed {seed}");
        let proof = "calls to /inventory/* while inventory is open == 0";
        services::fails_naming_a_leak(&format!("seed {seed}"), &ran, &ran.leaks, proof);
    }
}

/// The breaker's verdicts fail; success holds.
fn without_its_breaker_it_fails(ran: &Ran) {
    assert_eq!(ran.exit, Some(1), "{}", ran.output);
    let verdicts = ran.report["verdicts"].as_array().unwrap();
    let failed = |text: &str| {
        verdicts
            .iter()
            .find(|v| v["expectation"] == text)
            .is_some_and(|v| v["passed"] == false)
    };
    assert!(failed(
        "breaker inventory goes closed -> open -> half_open -> closed"
    ));
    assert!(failed(
        "route stock fallback service while inventory is open >= 95%"
    ));
    // Its failures still get the cached answer: success holds, as it should.
    assert!(!failed("route stock success >= 99%"));
}

#[test]
fn requests_locust_names_apart_from_the_routes_are_not_counted_and_the_report_says_so() {
    let ran = run(
        &[],
        &[
            (
                "{ name: stock, success: [200]",
                "{ name: basket, success: [200]",
            ),
            ("route stock", "route basket"),
            ("routes: [stock]", "routes: [basket]"),
        ],
    );
    assert_eq!(ran.exit, Some(1), "{}", ran.output);
    assert_eq!(route(&ran.report, "basket")["requests"], 0);
    let warnings = ran.report["warnings"].to_string();
    assert!(
        warnings.contains("requests named `stock`, which is none of load.locust.routes"),
        "{warnings}"
    );
}

#[test]
fn a_locust_command_that_cannot_start_is_exit_3_at_load_locust() {
    let ran = run(
        &[],
        &[("program: ${LOCUST:-locust}", "program: /nonexistent/locust")],
    );
    assert_eq!(ran.exit, Some(3), "{}", ran.output);
    assert!(ran.output.contains("load.locust"), "{}", ran.output);
    assert!(
        ran.output.contains("cannot start `/nonexistent/locust`"),
        "{}",
        ran.output
    );
}
