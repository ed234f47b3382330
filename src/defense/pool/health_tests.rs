//! One server's health: passive ejection and return, the active check
//! counts, a new checked server starting out, and when slow start begins.

use super::*;

const LIMITS: Limits = Limits {
    max_fails: 3,
    fail_timeout: Duration::from_secs(10),
    fails: 2,
    passes: 3,
};

fn at(start: Instant, ms: u64) -> Instant {
    start + Duration::from_millis(ms)
}

#[tokio::test(start_paused = true)]
async fn max_fails_failures_within_fail_timeout_take_the_server_out_for_fail_timeout() {
    let t0 = crate::clock::now();
    let mut h = ServerHealth::new(false);
    assert_eq!(h.on_attempt(true, at(t0, 0), &LIMITS), None);
    assert_eq!(h.on_attempt(true, at(t0, 1_000), &LIMITS), None);
    assert_eq!(h.settle(at(t0, 1_000)), None);
    let by = h.on_attempt(true, at(t0, 9_999), &LIMITS);
    assert_eq!(by.as_deref(), Some("passive: 3 failures within 10s"));
    assert_eq!(h.settle(at(t0, 9_999)), Some(false));
    assert!(!h.is_up(at(t0, 19_998)));
    assert_eq!(h.passive_return(at(t0, 19_998)), Some(at(t0, 19_999)));
    assert!(h.is_up(at(t0, 19_999)));
    assert_eq!(h.passive_return(at(t0, 19_999)), None);
    assert_eq!(h.settle(at(t0, 19_999)), Some(true));
}

#[tokio::test(start_paused = true)]
async fn failures_further_apart_than_fail_timeout_never_add_up() {
    let t0 = crate::clock::now();
    let mut h = ServerHealth::new(false);
    for i in 0..10 {
        // Two failures per window, the window opening with the first.
        assert_eq!(h.on_attempt(true, at(t0, i * 10_000), &LIMITS), None);
        assert_eq!(
            h.on_attempt(true, at(t0, i * 10_000 + 9_999), &LIMITS),
            None
        );
    }
    assert!(h.is_up(at(t0, 100_000)));
}

#[tokio::test(start_paused = true)]
async fn successes_do_not_reset_the_count_within_the_window() {
    let t0 = crate::clock::now();
    let mut h = ServerHealth::new(false);
    h.on_attempt(true, at(t0, 0), &LIMITS);
    h.on_attempt(false, at(t0, 1), &LIMITS);
    h.on_attempt(true, at(t0, 2), &LIMITS);
    h.on_attempt(false, at(t0, 3), &LIMITS);
    assert!(h.on_attempt(true, at(t0, 4), &LIMITS).is_some());
}

#[tokio::test(start_paused = true)]
async fn a_returned_server_that_fails_once_more_is_out_again_at_once() {
    let t0 = crate::clock::now();
    let mut h = ServerHealth::new(false);
    for ms in 0..3 {
        h.on_attempt(true, at(t0, ms), &LIMITS);
    }
    h.settle(at(t0, 2));
    assert!(h.is_up(at(t0, 10_002)));
    h.settle(at(t0, 10_002));
    let by = h.on_attempt(true, at(t0, 10_003), &LIMITS);
    assert_eq!(by.as_deref(), Some("passive: failed again after 10s out"));
    assert!(!h.is_up(at(t0, 10_003)));
    assert!(h.is_up(at(t0, 20_003)));
}

#[tokio::test(start_paused = true)]
async fn a_returned_server_that_succeeds_needs_max_fails_failures_again() {
    let t0 = crate::clock::now();
    let mut h = ServerHealth::new(false);
    for ms in 0..3 {
        h.on_attempt(true, at(t0, ms), &LIMITS);
    }
    assert_eq!(h.on_attempt(false, at(t0, 10_002), &LIMITS), None);
    assert_eq!(h.on_attempt(true, at(t0, 10_003), &LIMITS), None);
    assert_eq!(h.on_attempt(true, at(t0, 10_004), &LIMITS), None);
    assert!(h.on_attempt(true, at(t0, 10_005), &LIMITS).is_some());
}

#[tokio::test(start_paused = true)]
async fn attempts_ending_while_out_do_not_extend_the_ejection() {
    let t0 = crate::clock::now();
    let mut h = ServerHealth::new(false);
    for ms in 0..3 {
        h.on_attempt(true, at(t0, ms), &LIMITS);
    }
    assert_eq!(h.on_attempt(true, at(t0, 5_000), &LIMITS), None);
    assert_eq!(h.passive_return(at(t0, 5_000)), Some(at(t0, 10_002)));
}

#[tokio::test(start_paused = true)]
async fn max_fails_zero_turns_passive_tracking_off() {
    let t0 = crate::clock::now();
    let off = Limits {
        max_fails: 0,
        ..LIMITS
    };
    let mut h = ServerHealth::new(false);
    for ms in 0..100 {
        assert_eq!(h.on_attempt(true, at(t0, ms), &off), None);
    }
    assert!(h.is_up(at(t0, 100)));
}

#[tokio::test(start_paused = true)]
async fn max_fails_one_ejects_on_the_first_failure() {
    let t0 = crate::clock::now();
    let one = Limits {
        max_fails: 1,
        ..LIMITS
    };
    let mut h = ServerHealth::new(false);
    let by = h.on_attempt(true, t0, &one);
    assert_eq!(by.as_deref(), Some("passive: 1 failure within 10s"));
}

#[test]
fn a_checked_server_starts_out_until_it_passes_passes_checks() {
    let t0 = crate::clock::now();
    let mut h = ServerHealth::new(true);
    assert!(!h.is_up(t0));
    assert!(!h.reported_up());
    assert_eq!(h.on_check("GET /health", None, &LIMITS), None);
    assert_eq!(h.on_check("GET /health", None, &LIMITS), None);
    assert!(!h.is_up(t0));
    let by = h.on_check("GET /health", None, &LIMITS);
    assert_eq!(
        by.as_deref(),
        Some("active check GET /health passed 3 times")
    );
    assert!(h.is_up(t0));
    assert_eq!(h.settle(t0), Some(true));
    // The first pass of a new server is not a comeback: no slow start.
    assert_eq!(h.back_since(), None);
}

#[test]
fn an_unchecked_server_starts_in_rotation() {
    let t0 = crate::clock::now();
    let mut h = ServerHealth::new(false);
    assert!(h.is_up(t0));
    assert!(h.reported_up());
    assert_eq!(h.settle(t0), None);
}

#[test]
fn fails_consecutive_failed_checks_take_it_out_and_a_pass_between_resets_the_count() {
    let t0 = crate::clock::now();
    let mut h = ServerHealth::new(false);
    assert_eq!(h.on_check("GET /health", Some("status 500"), &LIMITS), None);
    assert_eq!(h.on_check("GET /health", None, &LIMITS), None);
    assert_eq!(h.on_check("GET /health", Some("status 500"), &LIMITS), None);
    assert!(h.is_up(t0));
    let by = h.on_check("GET /health", Some("status 500"), &LIMITS);
    assert_eq!(
        by.as_deref(),
        Some("active check GET /health: status 500 (2nd failure in a row)")
    );
    assert!(!h.is_up(t0));
    // Further failures change nothing more.
    assert_eq!(h.on_check("GET /health", Some("status 500"), &LIMITS), None);
}

#[test]
fn passes_consecutive_passed_checks_bring_it_back_and_a_failure_between_resets_the_count() {
    let t0 = crate::clock::now();
    let mut h = ServerHealth::new(false);
    h.on_check("GET /health", Some("x"), &LIMITS);
    h.on_check("GET /health", Some("x"), &LIMITS);
    h.settle(t0);
    h.on_check("GET /health", None, &LIMITS);
    h.on_check("GET /health", None, &LIMITS);
    h.on_check("GET /health", Some("x"), &LIMITS);
    h.on_check("GET /health", None, &LIMITS);
    h.on_check("GET /health", None, &LIMITS);
    assert!(!h.is_up(t0));
    assert!(h.on_check("GET /health", None, &LIMITS).is_some());
    assert!(h.is_up(t0));
}

#[tokio::test(start_paused = true)]
async fn a_server_that_comes_back_starts_its_slow_start_then() {
    let t0 = crate::clock::now();
    let mut h = ServerHealth::new(false);
    h.on_check("GET /health", Some("x"), &LIMITS);
    h.on_check("GET /health", Some("x"), &LIMITS);
    assert_eq!(h.settle(at(t0, 0)), Some(false));
    for _ in 0..3 {
        h.on_check("GET /health", None, &LIMITS);
    }
    assert_eq!(h.settle(at(t0, 7_000)), Some(true));
    assert_eq!(h.back_since(), Some(at(t0, 7_000)));
}

#[tokio::test(start_paused = true)]
async fn a_server_out_both_ways_is_back_only_when_both_let_it() {
    let t0 = crate::clock::now();
    let mut h = ServerHealth::new(false);
    for ms in 0..3 {
        h.on_attempt(true, at(t0, ms), &LIMITS);
    }
    h.on_check("GET /health", Some("x"), &LIMITS);
    h.on_check("GET /health", Some("x"), &LIMITS);
    assert_eq!(h.settle(at(t0, 2)), Some(false));
    assert_eq!(h.settle(at(t0, 20_000)), None, "the checks still fail");
    for _ in 0..3 {
        h.on_check("GET /health", None, &LIMITS);
    }
    assert_eq!(h.settle(at(t0, 20_000)), Some(true));
}

#[test]
fn ordinals_read_as_english() {
    let words: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111]
        .into_iter()
        .map(ordinal)
        .collect();
    assert_eq!(
        words,
        [
            "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd", "101st",
            "111th"
        ]
    );
}
