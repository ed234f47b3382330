//! A route's `next_upstream` (NGINX's `proxy_next_upstream`) in virtual
//! time: a listed status is passed on at once to a server not tried yet
//! and counts against its server, so the caller never sees it and the
//! server is ejected; left out of the list, the status is the caller's
//! answer and the server is never ejected for it.

use firedrill::experiment::config::ClockKind;
use firedrill::experiment::drill::Live;

/// The experiment with `next_upstream.on` set to `on`.
fn run(on: &str, expect: &str) -> bool {
    run_with(on, 0, expect)
}

/// As [`run`], with `tries`.
fn run_with(on: &str, tries: u32, expect: &str) -> bool {
    let text = format!(
        "name: next upstream
seed: 3
duration: 20s
target:
  builtin:
    routes: [{{ path: /stock/*, latency: 10ms }}]
    instances: {{ a: {{}}, b: {{}}, c: {{}} }}
defense:
  pools:
    stock:
      servers: [{{ instance: a }}, {{ instance: b }}, {{ instance: c }}]
      max_fails: 2
      fail_timeout: 30s
  routes:
    stock:
      match: /stock/*
      pool: stock
      next_upstream: {{ on: {on}, tries: {tries} }}
load:
  - {{ name: shop, request: GET /stock/1, rate: 20/s }}
faults:
  - {{ name: b-down, instance: b, match: /stock/*, status: {{ code: 503 }}, at: 5s, for: 10s }}
expect:
{expect}
"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("next.yaml");
    std::fs::write(&file, text).unwrap();
    let loaded = firedrill::experiment::file::load(&file).unwrap();
    let (_, report) = firedrill::report::execute(
        &loaded,
        ClockKind::Virtual,
        std::future::pending(),
        Live::default(),
    )
    .unwrap();
    if !report.passed {
        eprintln!("{}", firedrill::report::console::render(&report));
    }
    report.passed
}

#[test]
fn a_listed_status_is_passed_on_and_ejects_its_server() {
    assert!(run(
        "[error, timeout, http_503]",
        "  - route shop success >= 100%\n  - instance b of stock is ejected within 1s of b-down.start\n  - calls to instance b while instance b is ejected == 0"
    ));
}

#[test]
fn a_status_left_out_is_the_answer_and_never_ejects_its_server() {
    assert!(run(
        "[error, timeout]",
        "  - route shop success during b-down within 5% of 66.7%\n  - instance b is never ejected"
    ));
}

#[test]
fn a_wrong_expectation_about_next_upstream_fails() {
    // The contrast: with 503 passed on, the shop never sees a failure, so
    // a success rate of two thirds during the outage does not hold.
    assert!(!run(
        "[error, timeout, http_503]",
        "  - route shop success during b-down within 5% of 66.7%"
    ));
}

#[test]
fn a_listed_status_on_the_last_try_is_the_answer_and_counts_as_a_success() {
    // One try: nothing is passed on, and NGINX frees the server as having
    // answered, so b is never ejected for its 503s.
    assert!(run_with(
        "[error, timeout, http_503]",
        1,
        "  - route shop success during b-down within 5% of 66.7%\n  - instance b is never ejected"
    ));
}
