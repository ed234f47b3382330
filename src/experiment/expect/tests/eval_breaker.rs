//! Judging breaker sentences: sequences, timing (boundaries included),
//! the wait in open, counts, absence in a window, staying in a state.

use super::fixture::{judge, outage, run, s, with_steps};
use crate::defense::breaker::{Reason, State, Transition};
use crate::experiment::timeline::FaultWindows;

use State::{Closed, HalfOpen, Open};

const FULL_CYCLE: &str = "breaker inventory goes closed -> open -> half_open -> closed";

#[test]
fn exact_sequence_passes_on_a_clean_outage_and_points_at_the_last_step() {
    let v = judge(FULL_CYCLE, &outage());
    assert!(v.passed, "{v}");
    assert_eq!(v.seen, "closed -> open -> half_open -> closed");
    assert_eq!(v.at, Some(s(15.6)));
}

#[test]
fn exact_sequence_fails_on_a_flap_at_the_diverging_transition() {
    let t = with_steps(&[
        (10.4, Open),
        (15.4, HalfOpen),
        (15.6, Open),
        (20.6, HalfOpen),
        (21.0, Closed),
    ]);
    let v = judge(FULL_CYCLE, &t);
    assert!(!v.passed);
    assert_eq!(
        v.seen,
        "closed -> open -> half_open -> open -> half_open -> closed; went open at 15.6s \
         where closed was expected"
    );
    assert_eq!(v.at, Some(s(15.6)));
}

#[test]
fn exact_sequence_fails_when_the_run_ends_early_in_the_sequence() {
    let v = judge(FULL_CYCLE, &with_steps(&[(10.4, Open)]));
    assert!(!v.passed);
    assert_eq!(
        v.seen,
        "closed -> open; stayed open to the end (60s) without reaching half_open"
    );
    assert_eq!(v.at, Some(s(10.4)));
}

#[test]
fn exact_sequence_fails_when_the_breaker_goes_on_beyond_it() {
    let v = judge("breaker inventory goes closed -> open", &outage());
    assert!(!v.passed);
    assert_eq!(
        v.seen,
        "closed -> open -> half_open -> closed; went half_open at 15.4s where no further \
         transition was expected"
    );
}

#[test]
fn other_breakers_transitions_are_not_part_of_the_sequence() {
    let mut t = outage();
    t.transitions.insert(
        1,
        Transition {
            at: s(12.0),
            breaker: "payments".into(),
            from: Closed,
            to: Open,
            reason: Reason::Manual { action: "test" },
        },
    );
    assert!(judge(FULL_CYCLE, &t).passed);
}

#[test]
fn goes_through_accepts_states_in_between_but_not_a_missing_state() {
    let flapping = with_steps(&[
        (10.4, Open),
        (15.4, HalfOpen),
        (15.6, Open),
        (20.6, HalfOpen),
        (21.0, Closed),
    ]);
    let v = judge("breaker inventory goes through open -> closed", &flapping);
    assert!(v.passed, "{v}");
    assert_eq!(v.at, Some(s(21.0)));
    let stuck = with_steps(&[(10.4, Open), (15.4, HalfOpen), (15.6, Open)]);
    let v = judge("breaker inventory goes through open -> closed", &stuck);
    assert!(!v.passed);
    assert_eq!(
        v.seen,
        "closed -> open -> half_open -> open; never reached closed after open"
    );
}

#[test]
fn opens_within_of_fault_start_reports_the_delay() {
    let v = judge(
        "breaker inventory opens within 3s of inventory-down.start",
        &outage(),
    );
    assert!(v.passed, "{v}");
    assert_eq!(v.seen, "open at 10.4s, 400ms after inventory-down.start");
    assert_eq!(v.expected, "open within 3s of inventory-down.start");
    assert_eq!(v.at, Some(s(10.4)));
}

#[test]
fn a_transition_exactly_at_the_within_limit_passes_and_just_after_fails() {
    let at_limit = with_steps(&[(13.0, Open)]);
    assert!(
        judge(
            "breaker inventory opens within 3s of fault inventory-down",
            &at_limit
        )
        .passed
    );
    let late = with_steps(&[(13.001, Open)]);
    let v = judge(
        "breaker inventory opens within 3s of fault inventory-down",
        &late,
    );
    assert!(!v.passed);
    assert_eq!(v.seen, "open at 13.001s, 3.001s after inventory-down.start");
}

#[test]
fn an_opening_before_the_anchor_does_not_count() {
    let t = with_steps(&[(9.0, Open), (14.0, HalfOpen), (14.5, Open)]);
    let v = judge(
        "breaker inventory opens within 3s of inventory-down.start",
        &t,
    );
    assert!(!v.passed);
    assert_eq!(v.seen, "open at 14.5s, 4.5s after inventory-down.start");
}

#[test]
fn closes_within_of_fault_end_fails_when_no_close_follows() {
    let closes = with_steps(&[(10.4, Open), (40.5, HalfOpen), (41.0, Closed)]);
    assert!(
        judge(
            "breaker inventory closes within 5s of inventory-down.end",
            &closes
        )
        .passed
    );
    let v = judge(
        "breaker inventory closes within 5s of inventory-down.end",
        &with_steps(&[(10.4, Open)]),
    );
    assert!(!v.passed);
    assert_eq!(
        v.seen,
        "no transition to closed at or after inventory-down.end (40s); the breaker was open \
         then and the run ended at 60s"
    );
    assert_eq!(v.at, Some(s(40.0)));
}

#[test]
fn an_absolute_anchor_is_a_time_since_the_start() {
    let v = judge("breaker inventory half_opens within 6s of 10s", &outage());
    assert!(v.passed, "{v}");
    assert_eq!(v.seen, "half_open at 15.4s, 5.4s after 10s");
}

/// A pattern fault active 10–15 s and 30–35 s.
fn pattern(t: &mut crate::experiment::timeline::Timeline) {
    t.faults.push(FaultWindows {
        name: "flaky".into(),
        kind: "status".into(),
        windows: vec![(s(10.0), s(15.0)), (s(30.0), s(35.0))],
    });
}

#[test]
fn a_pattern_fault_ends_at_its_last_window_and_spans_its_gaps() {
    let mut t = with_steps(&[
        (11.0, Open),
        (16.0, Closed),
        (20.0, Open),
        (25.0, Closed),
        (31.0, Open),
        (37.0, Closed),
    ]);
    pattern(&mut t);
    // `.end` is the last window's end (35 s), not the first's (15 s).
    let v = judge("breaker inventory closes within 1s of flaky.end", &t);
    assert!(!v.passed);
    assert_eq!(v.seen, "closed at 37s, 2s after flaky.end");
    // `during` is the whole span: the opening at 20 s, between windows, counts.
    let v = judge("breaker inventory opens exactly 3 times during flaky", &t);
    assert!(v.passed, "{v}");
    assert_eq!(v.seen, "opened 3 times during flaky: at 11s, 20s, 31s");
}

#[test]
fn an_unknown_or_inactive_fault_fails_with_a_reason() {
    let v = judge("breaker inventory opens within 3s of nope.start", &outage());
    assert!(!v.passed);
    assert_eq!(v.seen, "the run has no fault named \"nope\"");
    let mut t = outage();
    t.faults.push(FaultWindows {
        name: "later".into(),
        kind: "latency".into(),
        windows: vec![],
    });
    let v = judge("breaker inventory opens within 3s of later.start", &t);
    assert_eq!(v.seen, "fault later was never active");
}

const WAIT: &str = "breaker inventory half_opens within wait_in_open ± 500ms after opening";

#[test]
fn wait_in_open_holds_at_the_tolerance_edge_and_fails_past_it() {
    let edge = with_steps(&[(10.0, Open), (15.5, HalfOpen), (16.0, Closed)]);
    let v = judge(WAIT, &edge);
    assert!(v.passed, "{v}");
    assert_eq!(v.seen, "1 time from open to half_open, gaps 5.5s to 5.5s");
    let past = with_steps(&[(10.0, Open), (15.501, HalfOpen)]);
    let v = judge(WAIT, &past);
    assert!(!v.passed);
    assert_eq!(v.seen, "half_open at 15.501s, 5.501s after opening at 10s");
    assert_eq!(
        v.expected,
        "every open -> half_open after wait_in_open 5s ± 500ms"
    );
}

#[test]
fn wait_in_open_checks_every_reopening_not_just_the_first() {
    let t = with_steps(&[
        (10.0, Open),
        (15.0, HalfOpen),
        (15.2, Open),
        (22.2, HalfOpen),
    ]);
    let v = judge(WAIT, &t);
    assert!(!v.passed);
    assert_eq!(v.at, Some(s(22.2)));
    assert!(
        judge(
            "breaker inventory half_opens within 6s +- 1s after opening",
            &t
        )
        .passed
    );
}

#[test]
fn wait_in_open_fails_when_the_breaker_never_half_opens() {
    let v = judge(WAIT, &with_steps(&[(10.0, Open)]));
    assert!(!v.passed);
    assert_eq!(
        v.seen,
        "opened at 10s and never half-opened before the run ended at 60s"
    );
    let v = judge(WAIT, &run());
    assert_eq!(v.seen, "never opened, so never half-opened");
}

fn flapping() -> crate::experiment::timeline::Timeline {
    with_steps(&[
        (10.4, Open),
        (15.4, HalfOpen),
        (15.6, Open),
        (20.6, HalfOpen),
        (20.8, Open),
    ])
}

#[test]
fn at_most_fails_at_the_first_opening_beyond_the_bound() {
    let v = judge("breaker inventory opens at most 2 times", &flapping());
    assert!(!v.passed);
    assert_eq!(
        v.seen,
        "opened 3 times over the run: at 10.4s, 15.6s, 20.8s"
    );
    assert_eq!(v.at, Some(s(20.8)));
    assert!(judge("breaker inventory opens at most 3 times", &flapping()).passed);
}

#[test]
fn at_least_and_exactly_count_openings() {
    assert!(judge("breaker inventory opens at least 1 time", &outage()).passed);
    assert!(!judge("breaker inventory opens at least 1 time", &run()).passed);
    assert!(judge("breaker inventory opens exactly 1 time", &outage()).passed);
    assert!(!judge("breaker inventory opens exactly 1 time", &flapping()).passed);
    assert!(judge("breaker inventory half_opens exactly 2 times", &flapping()).passed);
}

#[test]
fn never_opens_during_a_fault_excludes_the_fault_end_instant() {
    let at_end = with_steps(&[(40.0, Open)]);
    assert!(
        judge(
            "breaker inventory never opens during inventory-down",
            &at_end
        )
        .passed
    );
    let inside = with_steps(&[(39.9, Open)]);
    let v = judge(
        "breaker inventory never opens during inventory-down",
        &inside,
    );
    assert!(!v.passed);
    assert_eq!(v.seen, "opened 1 time during inventory-down: at 39.9s");
    assert_eq!(v.expected, "never opens during inventory-down");
    assert_eq!(v.at, Some(s(39.9)));
}

#[test]
fn stays_closed_fails_at_the_first_transition() {
    assert!(judge("breaker inventory stays closed", &run()).passed);
    let v = judge("breaker inventory stays closed", &outage());
    assert!(!v.passed);
    assert_eq!(v.seen, "left closed at 10.4s (to open) over the run");
    assert_eq!(v.at, Some(s(10.4)));
}

#[test]
fn stays_in_a_window_checks_the_state_at_its_start_and_inside() {
    assert!(
        judge(
            "breaker inventory stays open between 11s and 15.4s",
            &outage()
        )
        .passed
    );
    let v = judge(
        "breaker inventory stays open between 11s and 16s",
        &outage(),
    );
    assert_eq!(
        v.seen,
        "left open at 15.4s (to half_open) between 11s and 16s"
    );
    let v = judge("breaker inventory stays open between 5s and 12s", &outage());
    assert_eq!(v.seen, "closed at 5s between 5s and 12s");
    assert!(
        judge(
            "breaker inventory stays closed in phase recovery",
            &outage()
        )
        .passed
    );
}

#[test]
fn stays_holds_vacuously_over_an_empty_window() {
    let mut t = run();
    t.faults.push(FaultWindows {
        name: "later".into(),
        kind: "latency".into(),
        windows: vec![],
    });
    let v = judge("breaker inventory stays open during later", &t);
    assert!(v.passed);
    assert_eq!(
        v.seen,
        "nothing to judge: no time during later (holds vacuously)"
    );
}

#[test]
fn a_transition_after_the_end_of_the_run_is_not_judged() {
    // The run ends at 20s; the close at 21s came from a call still in
    // flight then.
    let mut t = with_steps(&[(10.4, Open), (15.4, HalfOpen), (21.0, Closed)]);
    t.duration = s(20.0);
    let v = judge(FULL_CYCLE, &t);
    assert!(!v.passed, "{v}");
    assert_eq!(
        v.seen,
        "closed -> open -> half_open; stayed half_open to the end (20s) without reaching closed"
    );
    let v = judge("breaker inventory goes through open -> half_open", &t);
    assert!(v.passed, "{v}");
}

/// An inferred open at 10.4s (the end of the tripping failure) that the
/// service proved at 10.45s (its first short-circuit answered), closed
/// again at 15.6s; requests of route A every 10ms from 10.0s to 10.6s.
fn inferred_open_proven_later() -> crate::experiment::timeline::Timeline {
    use super::fixture::{hit, req};
    let mut t = run();
    let inferred = |proven: Option<f64>| Reason::Inferred {
        evidence: String::new(),
        arrivals: 0,
        sends: 0,
        confidence: "high",
        proven: proven.map(s),
    };
    for (at, from, to, proven) in [
        (10.4, Closed, Open, Some(10.45)),
        (15.4, Open, HalfOpen, None),
        (15.6, HalfOpen, Closed, None),
    ] {
        t.transitions.push(Transition {
            at: s(at),
            breaker: "inventory".into(),
            from,
            to,
            reason: inferred(proven),
        });
    }
    for i in 0..60u32 {
        let sent = 10.0 + f64::from(i) * 0.01;
        let mut r = req(u64::from(i), "A", sent, 200, 5);
        if sent >= 10.45 {
            r.fallback = Some(crate::defense::fallback::FallbackKind::Static);
        }
        t.requests.push(r);
    }
    // Requests 41..43 (sent 10.41s..10.43s) ran beside the tripping failure
    // in the service and reached the dependency at 10.432s..10.435s, after
    // the estimated open, before the service proved it open.
    for (id, at) in [(41, 10.432), (42, 10.434), (43, 10.435)] {
        t.target_hits.push(hit(at, "/inventory/1", Some(id)));
    }
    t
}

#[test]
fn calls_sent_before_an_inferred_open_was_proven_are_not_counted_as_let_through_while_open() {
    let t = inferred_open_proven_later();
    let v = judge("calls to /inventory/* while inventory is open == 0", &t);
    assert!(v.passed, "{}", v.seen);
}

#[test]
fn a_call_sent_after_an_inferred_open_was_proven_is_a_leak() {
    use super::fixture::hit;
    let mut t = inferred_open_proven_later();
    t.target_hits.push(hit(10.5, "/inventory/1", Some(50)));
    let v = judge("calls to /inventory/* while inventory is open == 0", &t);
    assert!(!v.passed, "{}", v.seen);
    assert!(v.seen.starts_with("1 call"), "{}", v.seen);
}

#[test]
fn a_routes_fallback_share_while_an_inferred_breaker_is_open_counts_from_when_it_was_proven() {
    let t = inferred_open_proven_later();
    let v = judge("route A fallback while inventory is open >= 100%", &t);
    assert!(v.passed, "{}", v.seen);
}
