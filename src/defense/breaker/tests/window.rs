//! Table-driven replays of the `window` model (resilience4j semantics).

use super::Op::{Fail, Ignore, Ok, Reject, Timer};
use super::*;
use crate::schema::units::Percent;

fn five_failures() -> Vec<Step> {
    repeat(0, 1000, 5, Fail(10))
}

#[test]
fn failure_rate_exactly_at_threshold_opens_and_just_below_does_not() {
    let steps = [
        (1000, Ok(10)),
        (2000, Fail(10)),
        (3000, Ok(10)),
        (4000, Fail(10)),
        (5000, Ok(10)),   // 2/5 = 40 %: minimum reached, below threshold
        (6000, Fail(10)), // 3/6 = 50 %: opens
    ];
    let b = replay(&window(|_| {}), &steps);
    assert_journal(
        &b,
        &[(
            6000,
            "closed",
            "open",
            "failure_rate 50% >= 50% over 6 calls",
        )],
    );
}

#[test]
fn below_minimum_calls_there_is_no_decision_even_at_100_percent() {
    let b = replay(&window(|_| {}), &repeat(0, 1000, 4, Fail(10)));
    assert_journal(&b, &[]);
    let b = replay(&window(|_| {}), &five_failures());
    assert_journal(
        &b,
        &[(
            4000,
            "closed",
            "open",
            "failure_rate 100% >= 50% over 5 calls",
        )],
    );
}

#[test]
fn ignored_4xx_count_neither_way_not_even_towards_minimum_calls() {
    let mut steps = repeat(0, 100, 10, Ignore);
    steps.extend(repeat(1000, 1000, 4, Fail(10)));
    let b = replay(&window(|_| {}), &steps);
    assert_journal(&b, &[]);
    steps.push((5000, Fail(10)));
    let b = replay(&window(|_| {}), &steps);
    assert_journal(
        &b,
        &[(
            5000,
            "closed",
            "open",
            "failure_rate 100% >= 50% over 5 calls",
        )],
    );
}

#[test]
fn a_call_exactly_at_slow_call_duration_is_not_slow() {
    let config = window(|c| c.slow_call_rate_threshold = Percent::new(50.0).unwrap());
    let b = replay(&config, &repeat(0, 1000, 10, Ok(3000)));
    assert_journal(&b, &[]);
    let mut steps = repeat(0, 1000, 5, Ok(3000));
    steps.extend(repeat(5000, 1000, 5, Ok(3001)));
    let b = replay(&config, &steps);
    assert_journal(
        &b,
        &[(
            9000,
            "closed",
            "open",
            "slow_call_rate 50% >= 50% over 10 calls",
        )],
    );
}

#[test]
fn count_window_minimum_is_capped_at_the_window_size() {
    let config = window(|c| {
        c.sliding_window = SlidingWindow::Count(3);
        c.minimum_calls = 100;
    });
    let b = replay(&config, &repeat(0, 1000, 3, Fail(10)));
    assert_journal(
        &b,
        &[(
            2000,
            "closed",
            "open",
            "failure_rate 100% >= 50% over 3 calls",
        )],
    );
}

#[test]
fn count_window_judges_only_the_last_n_calls() {
    let config = window(|c| {
        c.sliding_window = SlidingWindow::Count(4);
        c.minimum_calls = 4;
        c.failure_rate_threshold = Percent::new(75.0).unwrap();
    });
    // Ring after each call: FFSS 50%, FSSS, SSSS, SSSF, SSFF 50%, SFFF 75%.
    let ops = [
        Fail(1),
        Fail(1),
        Ok(1),
        Ok(1),
        Ok(1),
        Ok(1),
        Fail(1),
        Fail(1),
        Fail(1),
    ];
    let steps: Vec<Step> = ops
        .iter()
        .enumerate()
        .map(|(i, &op)| (i as u64 * 1000, op))
        .collect();
    let b = replay(&config, &steps);
    assert_journal(
        &b,
        &[(
            8000,
            "closed",
            "open",
            "failure_rate 75% >= 75% over 4 calls",
        )],
    );
}

#[test]
fn time_window_drops_a_bucket_once_it_leaves_the_window() {
    let config = window(|c| {
        c.sliding_window = SlidingWindow::Time(10);
        c.minimum_calls = 3;
    });
    // Buckets 0 and 1, then at 10.0 s bucket 0 has left: 2 calls < 3.
    let steps = [
        (500, Fail(1)),
        (1500, Fail(1)),
        (10_000, Fail(1)),
        (10_500, Fail(1)),
    ];
    let b = replay(&config, &steps);
    assert_journal(
        &b,
        &[(
            10_500,
            "closed",
            "open",
            "failure_rate 100% >= 50% over 3 calls",
        )],
    );
}

#[test]
fn open_rejects_through_the_end_of_wait_in_open_then_the_next_call_is_a_trial() {
    // resilience4j admits once the clock is strictly after the wait.
    let mut steps = five_failures();
    steps.extend([(4000, Reject), (34_000, Reject), (34_001, Ok(10))]);
    let b = replay(&window(|_| {}), &steps);
    assert_journal(
        &b,
        &[
            (
                4000,
                "closed",
                "open",
                "failure_rate 100% >= 50% over 5 calls",
            ),
            (34_001, "open", "half_open", "wait_in_open 30s elapsed"),
        ],
    );
    assert_eq!(b.counters().rejected.open, 2);
    assert_eq!(b.counters().admitted.open, 0);
    assert_eq!(b.counters().admitted.half_open, 1);
}

#[test]
fn half_open_closes_after_the_permitted_calls_when_rates_stay_below() {
    let mut steps = five_failures();
    steps.extend([(34_001, Ok(10)), (35_000, Ok(10)), (36_000, Fail(10))]);
    let b = replay(&window(|_| {}), &steps);
    assert_eq!(b.journal().len(), 3);
    assert_journal(
        &b,
        &[
            (
                4000,
                "closed",
                "open",
                "failure_rate 100% >= 50% over 5 calls",
            ),
            (34_001, "open", "half_open", "wait_in_open 30s elapsed"),
            (
                36_000,
                "half_open",
                "closed",
                "failure_rate 33.3% and slow_call_rate 0% below thresholds over 3 calls",
            ),
        ],
    );
}

#[test]
fn half_open_reopens_for_a_full_wait_when_the_trials_fail() {
    let mut steps = five_failures();
    steps.extend([(34_001, Ok(10)), (35_000, Fail(10)), (36_000, Fail(10))]);
    steps.extend([(66_000, Reject), (66_001, Ok(10))]);
    let b = replay(&window(|_| {}), &steps);
    let got = seen(&b);
    assert_eq!(
        got[2],
        (
            36_000,
            "half_open",
            "open",
            "failure_rate 66.7% >= 50% over 3 calls".into()
        )
    );
    assert_eq!(
        got[3],
        (
            66_001,
            "open",
            "half_open",
            "wait_in_open 30s elapsed".into()
        )
    );
}

#[test]
fn ignored_trial_calls_free_their_half_open_slot() {
    let mut steps = five_failures();
    steps.extend([
        (34_001, Ignore),
        (34_100, Ignore),
        (34_200, Ok(1)),
        (34_300, Ok(1)),
    ]);
    let b = replay(&window(|_| {}), &steps);
    assert_eq!(
        b.state(),
        State::HalfOpen,
        "two trials so far, three permitted"
    );
    let mut steps = steps.clone();
    steps.push((34_400, Ok(1)));
    let b = replay(&window(|_| {}), &steps);
    assert_eq!(seen(&b)[2].0, 34_400);
    assert_eq!(seen(&b)[2].2, "closed");
}

#[test]
fn extra_half_open_calls_are_rejected_including_concurrent_ones() {
    let start = base();
    let mut b = replay(&window(|_| {}), &five_failures());
    let t = ms(start, 34_001);
    let held: Vec<Permit> = (0..3).map(|_| b.try_acquire(t).unwrap()).collect();
    assert!(b.try_acquire(t).is_err(), "a fourth concurrent call");
    let mut held = held.into_iter();
    b.record(held.next().unwrap(), Outcome::Success, Duration::ZERO, t);
    assert!(
        b.try_acquire(t).is_err(),
        "a finished trial still uses its slot"
    );
    b.release_without_outcome(held.next().unwrap(), t);
    let replacement = b.try_acquire(t).expect("a cancelled trial frees its slot");
    assert_eq!(b.counters().admitted.half_open, 4);
    assert_eq!(b.counters().rejected.half_open, 2);
    b.record(held.next().unwrap(), Outcome::Success, Duration::ZERO, t);
    assert_eq!(b.state(), State::HalfOpen);
    b.record(replacement, Outcome::Success, Duration::ZERO, t);
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn max_wait_in_half_open_reopens_at_its_deadline_even_when_noticed_late() {
    let start = base();
    let config = window(|c| c.max_wait_in_half_open = Some(Duration::from_secs(10)));
    let mut b = replay(&config, &five_failures());
    let stuck = b.try_acquire(ms(start, 34_001)).unwrap();
    assert_eq!(b.next_timer(), Some(ms(start, 44_001)));
    b.on_timer(ms(start, 50_000));
    assert_eq!(
        seen(&b)[2],
        (
            44_001,
            "half_open",
            "open",
            "max_wait_in_half_open 10s elapsed".into()
        )
    );
    assert!(b.try_acquire(ms(start, 74_001)).is_err());
    b.record(stuck, Outcome::Success, Duration::ZERO, ms(start, 74_001));
    assert_eq!(b.counters().stragglers, 1);
    assert_eq!(
        b.state(),
        State::Open,
        "a straggler decides nothing in open"
    );
    assert!(b.try_acquire(ms(start, 74_002)).is_ok());
}

#[test]
fn automatic_half_open_fires_by_timer_at_the_end_of_the_wait() {
    let config = window(|c| c.automatic_half_open = true);
    let open = replay(&config, &five_failures());
    assert_eq!(
        open.next_timer(),
        Some(ms(base(), 34_000)),
        "the driver is told when the wait ends"
    );
    let mut steps = five_failures();
    steps.extend([(33_999, Timer), (34_500, Timer)]);
    let b = replay(&config, &steps);
    assert_journal(
        &b,
        &[
            (
                4000,
                "closed",
                "open",
                "failure_rate 100% >= 50% over 5 calls",
            ),
            (34_000, "open", "half_open", "wait_in_open 30s elapsed"),
        ],
    );
    let manual = replay(
        &window(|_| {}),
        &[five_failures(), vec![(34_500, Timer)]].concat(),
    );
    assert_eq!(
        manual.state(),
        State::Open,
        "without automatic_half_open only a call moves it"
    );
    assert_eq!(manual.next_timer(), None);
}

/// When the breaker went half-open, and why, after each wait.
fn half_open_reasons(b: &Breaker) -> Vec<(u64, String)> {
    seen(b)
        .into_iter()
        .filter(|s| s.2 == "half_open")
        .map(|s| (s.0, s.3))
        .collect()
}

#[test]
fn wait_in_open_grows_by_the_multiplier_up_to_max_and_resets_on_close() {
    let config = window(|c| {
        c.sliding_window = SlidingWindow::Count(1);
        c.permitted_calls_in_half_open = 1;
        c.wait_in_open = Duration::from_secs(10);
        c.wait_in_open_backoff = Some(Backoff {
            multiplier: 2.0,
            max: Duration::from_secs(30),
        });
    });
    let steps = [
        (0, Fail(1)),
        (10_000, Reject),
        (10_001, Fail(1)), // trial fails: wait 20 s
        (30_001, Reject),
        (30_002, Fail(1)), // wait 40 s capped to 30 s
        (60_002, Reject),
        (60_003, Ok(1)),   // closes
        (61_000, Fail(1)), // back to 10 s
        (71_000, Reject),
        (71_001, Ok(1)),
    ];
    let b = replay(&config, &steps);
    assert_eq!(
        half_open_reasons(&b),
        [
            (10_001, "wait_in_open 10s elapsed".to_string()),
            (30_002, "wait_in_open 20s elapsed".to_string()),
            (60_003, "wait_in_open 30s elapsed".to_string()),
            (71_001, "wait_in_open 10s elapsed".to_string()),
        ]
    );
    assert_eq!(b.state(), State::Closed);
}

/// resilience4j's IntervalFunction keeps whole milliseconds and truncates
/// each step: 333 ms, then 499 (not 499.5), then 748 (not 749.25), so a
/// call 749 ms into the third open is the trial.
#[test]
fn a_grown_wait_is_truncated_to_whole_milliseconds_at_each_step_as_resilience4j_does() {
    let config = window(|c| {
        c.sliding_window = SlidingWindow::Count(1);
        c.permitted_calls_in_half_open = 1;
        c.wait_in_open = Duration::from_millis(333);
        c.wait_in_open_backoff = Some(Backoff {
            multiplier: 1.5,
            max: Duration::from_secs(30),
        });
    });
    let steps = [
        (0, Fail(1)),
        (334, Fail(1)),  // trial fails: wait 499 ms
        (834, Fail(1)),  // trial fails: wait 748 ms
        (1_582, Reject), // exactly at the end of the wait
        (1_583, Ok(1)),  // after it: the trial, which closes
    ];
    let b = replay(&config, &steps);
    assert_eq!(
        half_open_reasons(&b),
        [
            (334, "wait_in_open 333ms elapsed".to_string()),
            (834, "wait_in_open 499ms elapsed".to_string()),
            (1_583, "wait_in_open 748ms elapsed".to_string()),
        ]
    );
    assert_eq!(b.state(), State::Closed);
}

/// A call admitted while closed that fails during half-open: with
/// `stragglers: count` (resilience4j) it is one of the half-open results;
/// with `drop` it is kept out and three trials decide.
fn straggler_in_half_open(stragglers: Stragglers) -> Breaker {
    let start = base();
    let mut config = window(|_| {});
    config.stragglers = stragglers;
    let mut b = Breaker::new(&config, start);
    let straggler = b.try_acquire(start).unwrap();
    for i in 1..=5 {
        let p = b.try_acquire(ms(start, i * 1000)).unwrap();
        b.record(
            p,
            Outcome::Failure(FailureKind::Timeout),
            Duration::ZERO,
            ms(start, i * 1000),
        );
    }
    let trial = b.try_acquire(ms(start, 35_001)).unwrap();
    b.record(trial, Outcome::Success, Duration::ZERO, ms(start, 35_001));
    let late = Outcome::Failure(FailureKind::Reset);
    b.record(straggler, late, Duration::ZERO, ms(start, 35_500));
    assert_eq!(b.counters().stragglers, 1);
    for t in [36_000, 37_000] {
        if let Result::Ok(p) = b.try_acquire(ms(start, t)) {
            b.record(p, Outcome::Success, Duration::ZERO, ms(start, t));
        }
    }
    b
}

#[test]
fn a_straggler_is_recorded_in_the_state_current_when_it_finishes() {
    let b = straggler_in_half_open(Stragglers::Count);
    assert_eq!(
        seen(&b)[2],
        (
            36_000,
            "half_open",
            "closed",
            "failure_rate 33.3% and slow_call_rate 0% below thresholds over 3 calls".into()
        ),
        "trial, straggler, trial"
    );
}

#[test]
fn with_stragglers_drop_a_straggler_is_kept_out_of_half_open() {
    let b = straggler_in_half_open(Stragglers::Drop);
    assert_eq!(
        seen(&b)[2],
        (
            37_000,
            "half_open",
            "closed",
            "failure_rate 0% and slow_call_rate 0% below thresholds over 3 calls".into()
        ),
        "three trials, the straggler left out"
    );
}

/// resilience4j's half-open window has the permitted size and decides
/// once min(minimum_calls, permitted) results are in (its issue 1523).
#[test]
fn half_open_decides_once_min_of_minimum_calls_and_permitted_results_are_in() {
    let config = window(|c| {
        c.sliding_window = SlidingWindow::Count(10);
        c.minimum_calls = 2;
        c.permitted_calls_in_half_open = 4;
        c.wait_in_open = Duration::from_secs(5);
    });
    let steps = [
        (0, Fail(1)),
        (100, Fail(1)), // 2 of 2 failed: opens
        (5_101, Fail(1)),
        (5_200, Fail(1)), // the second trial decides: reopens
        (5_300, Reject),
    ];
    let b = replay(&config, &steps);
    assert_journal(
        &b,
        &[
            (
                100,
                "closed",
                "open",
                "failure_rate 100% >= 50% over 2 calls",
            ),
            (5_101, "open", "half_open", "wait_in_open 5s elapsed"),
            (
                5_200,
                "half_open",
                "open",
                "failure_rate 100% >= 50% over 2 calls",
            ),
        ],
    );
}

#[test]
fn forced_open_rejects_past_any_wait_and_disabled_admits_without_counting() {
    let start = base();
    let mut b = Breaker::new(&window(|_| {}), start);
    b.force_open(ms(start, 1000));
    assert!(b.try_acquire(ms(start, 1000)).is_err());
    assert!(b.try_acquire(ms(start, 100_000)).is_err());
    b.disable(ms(start, 100_000));
    for i in 0..20 {
        let p = b
            .try_acquire(ms(start, 100_000 + i))
            .expect("disabled admits");
        b.record(
            p,
            Outcome::Failure(FailureKind::Connect),
            Duration::ZERO,
            ms(start, 100_000 + i),
        );
    }
    assert_eq!(b.state(), State::Disabled);
    b.reset(ms(start, 200_000));
    for i in 0..4 {
        let p = b.try_acquire(ms(start, 200_000 + i)).unwrap();
        b.record(
            p,
            Outcome::Failure(FailureKind::Connect),
            Duration::ZERO,
            ms(start, 200_000 + i),
        );
    }
    assert_eq!(
        b.state(),
        State::Closed,
        "failures while disabled were not counted"
    );
    assert_journal(
        &b,
        &[
            (1000, "closed", "forced_open", "force_open"),
            (100_000, "forced_open", "disabled", "disable"),
            (200_000, "disabled", "closed", "reset"),
        ],
    );
    assert_eq!(b.counters().rejected.forced_open, 2);
    assert_eq!(b.counters().admitted.forced_open, 0);
    assert_eq!(b.counters().admitted.disabled, 20);
}

#[test]
fn reset_while_closed_clears_the_window_and_orphans_older_permits() {
    let start = base();
    let mut steps = repeat(0, 1000, 4, Fail(1));
    let mut b = replay(&window(|_| {}), &steps);
    let old = b.try_acquire(ms(start, 4000)).unwrap();
    b.reset(ms(start, 4000));
    b.record(
        old,
        Outcome::Failure(FailureKind::Other),
        Duration::ZERO,
        ms(start, 4000),
    );
    steps = repeat(5000, 1000, 4, Fail(1));
    for (at, _) in steps {
        let p = b.try_acquire(ms(start, at)).unwrap();
        b.record(
            p,
            Outcome::Failure(FailureKind::Other),
            Duration::ZERO,
            ms(start, at),
        );
    }
    assert_eq!(b.state(), State::Closed, "4 calls since reset < minimum 5");
    assert_eq!(b.counters().stragglers, 1);
    assert!(
        b.journal().is_empty(),
        "reset from closed is not a transition"
    );
}
