//! Judging figures: the counter proof (calls while open), route shares,
//! counts, latency percentiles, amplification, windows and empty windows;
//! the verdict's JSON and console forms.

use super::fixture::{hit, judge, outage, req, run, s, with_steps};
use crate::defense::breaker::State;
use crate::defense::fallback::FallbackKind;
use crate::defense::report::{CallError, Rejection};
use crate::experiment::timeline::{ClientError, Timeline};

const PROOF: &str = "calls to /inventory/* while inventory is open == 0";

#[test]
fn counter_proof_fails_on_calls_while_open_and_names_the_first() {
    let mut t = outage(); // open 10.4 s – 15.4 s
    t.target_hits = vec![
        hit(5.0, "/inventory/sku-1", Some(1)),
        hit(12.1, "/inventory/sku-1", Some(7)),
        hit(13.0, "/local/ping", Some(8)),
        hit(14.0, "/inventory/sku-2", Some(9)),
    ];
    let v = judge(PROOF, &t);
    assert!(!v.passed);
    assert_eq!(
        v.seen,
        "2 calls to /inventory/* while inventory is open: 12.1s /inventory/sku-1 (request 7), 14s /inventory/sku-2 (request 9)"
    );
    assert_eq!(v.at, Some(s(12.1)));
}

#[test]
fn counter_proof_counts_the_open_instant_but_not_the_half_open_instant() {
    let mut t = outage();
    t.target_hits = vec![
        hit(10.4, "/inventory/a", None),
        hit(15.4, "/inventory/b", None),
    ];
    let v = judge("calls to /inventory/* while inventory is open == 1", &t);
    assert!(v.passed, "{v}");
    assert!(
        judge(
            "calls to /inventory/* while inventory is half_open == 1",
            &t
        )
        .passed
    );
}

#[test]
fn counter_proof_passes_with_the_time_spent_open() {
    let mut t = outage();
    t.target_hits = vec![hit(5.0, "/inventory/a", None)];
    let v = judge(PROOF, &t);
    assert!(v.passed);
    assert_eq!(
        v.seen,
        "0 calls to /inventory/* while inventory is open (5s in 1 interval)"
    );
    assert_eq!(v.at, Some(s(10.4)));
}

#[test]
fn an_open_interval_is_clipped_at_the_run_end() {
    let t = with_steps(&[(55.0, State::Open)]);
    let v = judge(PROOF, &t);
    assert_eq!(
        v.seen,
        "0 calls to /inventory/* while inventory is open (5s in 1 interval)"
    );
    let v = judge("route A success between 50s and 90s >= 99%", &t);
    assert!(!v.passed);
    assert_eq!(
        v.seen,
        "no requests from route A between 50s and 90s (10s in 1 interval): success cannot be \
         computed"
    );
}

/// 100 requests of route B during the fault, `ok` of them answered 200.
fn route_b(ok: u64) -> Timeline {
    let mut t = run();
    t.requests = (0..100)
        .map(|i| {
            let status = if i < ok { 200 } else { 503 };
            req(i, "B", 10.0 + i as f64 * 0.1, status, 5)
        })
        .collect();
    t
}

#[test]
fn a_share_exactly_at_the_threshold_passes_with_ge_and_fails_with_gt() {
    let v = judge("route B success during inventory-down >= 99%", &route_b(99));
    assert!(v.passed, "{v}");
    assert_eq!(
        v.seen,
        "route B success exactly 99.0% (99 of 100) during inventory-down"
    );
    assert_eq!(v.at, Some(s(10.0)));
    assert!(!judge("route B success during inventory-down > 99%", &route_b(99)).passed);
    assert!(!judge("route B success during inventory-down >= 99%", &route_b(98)).passed);
}

#[test]
fn errors_are_the_complement_of_success_including_no_response() {
    let mut t = route_b(98);
    t.requests[0].status = None;
    t.requests[0].latency = None;
    t.requests[0].client_error = Some(ClientError::Broken);
    let v = judge("route B errors <= 3%", &t);
    assert!(v.passed, "{v}");
    assert_eq!(
        v.seen,
        "route B errors exactly 3.0% (3 of 100) over the run"
    );
}

#[test]
fn requests_belong_to_a_window_by_send_time() {
    let mut t = run();
    t.requests = vec![
        req(1, "A", 9.999, 200, 5),
        req(2, "A", 39.9, 200, 5000), // answered after the fault ended
        req(3, "A", 40.0, 200, 5),
    ];
    let v = judge("route A requests during inventory-down == 1", &t);
    assert!(v.passed, "{v}");
    assert_eq!(
        v.seen,
        "route A requests 1 (of 1 request) during inventory-down"
    );
}

#[test]
fn a_fallback_answer_is_a_success_and_counts_by_kind() {
    let mut t = run();
    t.requests = (0..4).map(|i| req(i, "A", 12.0, 200, 1)).collect();
    t.requests[0].fallback = Some(FallbackKind::Stale);
    t.requests[1].fallback = Some(FallbackKind::Stale);
    t.requests[2].fallback = Some(FallbackKind::Static);
    assert!(judge("route A success >= 100%", &t).passed);
    let v = judge("route A fallback == 75%", &t);
    assert!(v.passed, "{v}");
    assert_eq!(v.seen, "route A fallback 75.0% (3 of 4) over the run");
    let v = judge("route A fallback stale == 50%", &t);
    assert!(v.passed, "{v}");
    assert_eq!(v.seen, "route A fallback stale 50.0% (2 of 4) over the run");
    assert!(judge("route A fallback backup == 0%", &t).passed);
}

#[test]
fn a_grpc_share_counts_the_calls_answered_with_that_status_and_a_grpc_failure_is_no_success() {
    let mut t = run();
    t.requests = (0..4).map(|i| req(i, "A", 12.0, 200, 1)).collect();
    for (r, code) in t.requests.iter_mut().zip([0, 14, 14, 5]) {
        r.grpc_status = Some(code);
    }
    let v = judge("route A grpc UNAVAILABLE == 50%", &t);
    assert!(v.passed, "{v}");
    assert_eq!(
        v.seen,
        "route A grpc UNAVAILABLE 50.0% (2 of 4) over the run"
    );
    let v = judge("route A grpc ok >= 50%", &t);
    assert!(!v.passed, "{v}");
    assert_eq!(v.seen, "route A grpc OK 25.0% (1 of 4) over the run");
    assert!(judge("route A grpc 5 == 25%", &t).passed);
    assert!(judge("route A grpc INTERNAL == 0%", &t).passed);
    let v = judge("route A success >= 50%", &t);
    assert!(!v.passed, "every answer an HTTP 200, one gRPC OK: {v}");
}

#[test]
fn rejected_is_the_share_turned_away_by_the_defense() {
    let mut t = run();
    t.requests = (0..3).map(|i| req(i, "A", 1.0, 503, 1)).collect();
    t.requests[0].rejected_by = Some(Rejection::Bulkhead);
    let v = judge("route A rejected <= 33.3%", &t);
    assert!(!v.passed);
    // 33.33%, not 33.3%: a failing figure never reads as its bound.
    assert_eq!(v.seen, "route A rejected 33.33% (1 of 3) over the run");
    assert!(judge("route A rejected <= 33.4%", &t).passed);
}

#[test]
fn timeouts_count_client_and_defense_timeouts_with_relative_tolerance() {
    let mut t = run();
    t.requests = (0..600).map(|i| req(i, "A", 11.0, 200, 1)).collect();
    for r in &mut t.requests[..285] {
        r.client_error = Some(ClientError::Timeout);
    }
    for r in &mut t.requests[285..570] {
        r.defense_error = Some(CallError::Deadline);
    }
    t.requests[599].defense_error = Some(CallError::Status); // not a timeout
    let v = judge("route A timeouts within 5% of 600", &t);
    assert!(v.passed, "{v}");
    assert_eq!(
        v.seen,
        "route A timeouts 570 (of 600 requests) over the run"
    );
    assert_eq!(v.expected, "route A timeouts over the run within 5% of 600");
    t.requests[569].defense_error = None;
    assert!(!judge("route A timeouts within 5% of 600", &t).passed);
}

#[test]
fn latency_percentiles_are_nearest_rank_over_responses_only() {
    let mut t = run();
    t.requests = (1..=100).map(|i| req(i, "A", 12.0, 200, i)).collect();
    let mut lost = req(101, "A", 12.0, 200, 0);
    lost.latency = None;
    lost.status = None;
    t.requests.push(lost);
    let v = judge("route A p99 latency <= 99ms", &t);
    assert!(v.passed, "{v}");
    assert_eq!(
        v.seen,
        "route A p99 latency exactly 99ms (of 100 responses) over the run"
    );
    assert!(!judge("route A p99 < 99ms", &t).passed);
    assert!(judge("route A p50 == 50ms", &t).passed);
    assert!(judge("route A p90 == 90ms", &t).passed);
    assert!(judge("route A max latency == 100ms", &t).passed);
    assert!(judge("route A p1 == 1ms", &t).passed);
}

#[test]
fn amplification_counts_target_hits_of_the_routes_own_requests() {
    let mut t = run();
    t.requests = vec![
        req(1, "A", 1.0, 503, 1),
        req(2, "A", 2.0, 503, 1),
        req(3, "B", 2.0, 200, 1),
    ];
    t.target_hits = [1, 1, 1, 2, 2, 2, 3]
        .into_iter()
        .map(|id| hit(1.0, "/a/x", Some(id)))
        .chain([hit(1.0, "/a/x", None)])
        .collect();
    let v = judge("route A amplification == 3", &t);
    assert!(v.passed, "{v}");
    assert_eq!(
        v.seen,
        "route A amplification 3 (6 target hits for 2 requests) over the run"
    );
    assert!(judge("route B amplification == 1", &t).passed);
}

#[test]
fn an_empty_window_fails_a_share_but_holds_an_upper_bound_vacuously() {
    let t = route_b(100);
    let v = judge("route B success while inventory is open >= 99%", &t);
    assert!(!v.passed);
    assert_eq!(
        v.seen,
        "no requests from route B while inventory is open (0s in 0 intervals): success cannot \
         be computed"
    );
    assert_eq!(v.at, None);
    let v = judge("route B errors while inventory is open <= 1%", &t);
    assert!(v.passed);
    assert!(
        v.seen.ends_with("(holds vacuously for <= 1.0%)"),
        "{}",
        v.seen
    );
    assert!(!judge("route B p99 while inventory is open within 10% of 5ms", &t).passed);
    assert!(judge("route B requests while inventory is open == 0", &t).passed);
}

#[test]
fn a_while_window_gathers_every_interval_in_the_state() {
    let mut t = with_steps(&[
        (10.0, State::Open),
        (15.0, State::HalfOpen),
        (15.5, State::Open),
        (20.5, State::HalfOpen),
    ]);
    t.requests = vec![
        req(1, "A", 12.0, 200, 1),
        req(2, "A", 15.2, 503, 1), // half_open: outside the window
        req(3, "A", 18.0, 200, 1),
    ];
    t.requests[0].fallback = Some(FallbackKind::Stale);
    t.requests[2].fallback = Some(FallbackKind::Stale);
    let v = judge("route A fallback while inventory is open >= 99%", &t);
    assert!(v.passed, "{v}");
    assert_eq!(
        v.seen,
        "route A fallback 100.0% (2 of 2) while inventory is open"
    );
}

#[test]
fn phase_and_between_windows_select_by_send_time() {
    let mut t = run();
    t.requests = vec![req(1, "A", 20.0, 503, 1), req(2, "A", 45.0, 200, 1)];
    assert!(judge("route A success in phase recovery == 100%", &t).passed);
    assert!(judge("route A success between 0s and 40s == 0%", &t).passed);
    let v = judge("route A success in phase nope >= 1%", &t);
    assert!(!v.passed);
    assert_eq!(v.seen, "the run has no phase named \"nope\"");
}

#[test]
fn a_verdict_serializes_with_its_time_in_milliseconds() {
    let mut t = outage();
    t.target_hits = vec![hit(12.1, "/inventory/a", Some(7))];
    let v = judge(PROOF, &t);
    let json = serde_json::to_value(&v).unwrap();
    assert_eq!(json["expectation"], PROOF);
    assert_eq!(json["passed"], false);
    assert_eq!(json["at_ms"], 12100.0);
    assert_eq!(
        v.to_string(),
        "FAILED: calls to /inventory/* while inventory is open == 0\n  expected: calls to \
         /inventory/* while inventory is open == 0\n  seen: 1 call to /inventory/* while \
         inventory is open: 12.1s /inventory/a (request 7)\n  at: 12.1s"
    );
}

#[test]
fn a_routes_own_success_statuses_override_the_default() {
    let mut t = outage();
    let mut created = req(1, "A", 1.0, 201, 5);
    created.success = Some(false); // the route counts only 200 as success
    let mut redirect = req(2, "A", 2.0, 302, 5);
    redirect.success = Some(true);
    t.requests = vec![created, redirect, req(3, "A", 3.0, 200, 5)];
    let v = judge("route A success >= 66%", &t);
    assert!(v.passed, "{v}");
    assert!(!judge("route A success >= 67%", &t).passed);
}
