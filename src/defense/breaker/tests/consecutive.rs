//! Table-driven replays of the `consecutive` model.

use super::Op::{Fail, Ignore, Ok, Reject};
use super::*;

fn three_then_ten_seconds() -> BreakerConfig {
    consecutive(|c| {
        c.failure_threshold = 3;
        c.wait_in_open = Duration::from_secs(10);
    })
}

#[test]
fn opens_after_exactly_failure_threshold_failures_in_a_row_and_a_success_resets() {
    let ops = [Fail(1), Fail(1), Ok(1), Fail(1), Ignore, Fail(1), Fail(1)];
    let steps: Vec<Step> = ops
        .iter()
        .enumerate()
        .map(|(i, &op)| (i as u64 * 1000, op))
        .collect();
    let b = replay(&three_then_ten_seconds(), &steps);
    assert_journal(
        &b,
        &[(6000, "closed", "open", "consecutive_failures 3 >= 3")],
    );
}

#[test]
fn success_threshold_good_probes_in_a_row_close_it() {
    let mut steps = repeat(0, 1000, 3, Fail(1));
    steps.extend([(11_999, Reject), (12_000, Ok(1)), (13_000, Ok(1))]);
    let b = replay(&three_then_ten_seconds(), &steps);
    assert_eq!(b.state(), State::HalfOpen, "2 of 3 probes");
    steps.push((14_000, Ok(1)));
    let b = replay(&three_then_ten_seconds(), &steps);
    assert_journal(
        &b,
        &[
            (2000, "closed", "open", "consecutive_failures 3 >= 3"),
            (12_000, "open", "half_open", "wait_in_open 10s elapsed"),
            (14_000, "half_open", "closed", "probes 3/3 ok"),
        ],
    );
}

#[test]
fn a_failed_probe_reopens_for_a_full_wait() {
    let mut steps = repeat(0, 1000, 3, Fail(1));
    steps.extend([
        (12_000, Ok(1)),
        (13_000, Fail(1)),
        (22_999, Reject),
        (23_000, Ok(1)),
    ]);
    let b = replay(&three_then_ten_seconds(), &steps);
    let got = seen(&b);
    assert_eq!(
        got[2],
        (
            13_000,
            "half_open",
            "open",
            "probe failed after 1/3 ok".into()
        )
    );
    assert_eq!(
        got[3],
        (
            23_000,
            "open",
            "half_open",
            "wait_in_open 10s elapsed".into()
        )
    );
}

#[test]
fn half_open_lets_one_probe_through_at_a_time() {
    let start = base();
    let mut b = replay(&three_then_ten_seconds(), &repeat(0, 1000, 3, Fail(1)));
    let t = ms(start, 12_000);
    let probe = b.try_acquire(t).unwrap();
    assert_eq!(b.try_acquire(t).unwrap_err().state, State::HalfOpen);
    b.record(probe, Outcome::Success, Duration::ZERO, t);
    let probe = b
        .try_acquire(t)
        .expect("the next probe after the first finished");
    assert!(b.try_acquire(t).is_err());
    b.record(probe, Outcome::Ignored, Duration::ZERO, t);
    let probe = b.try_acquire(t).expect("an ignored probe frees the slot");
    b.release_without_outcome(probe, t);
    assert!(b.try_acquire(t).is_ok(), "a cancelled probe frees the slot");
    assert_eq!(b.counters().rejected.half_open, 2);
}

#[test]
fn a_cancelled_call_counts_as_a_failure_only_with_count_cancelled() {
    let start = base();
    for (count, opens) in [(false, false), (true, true)] {
        let mut config = three_then_ten_seconds();
        config.classifier.count_cancelled = count;
        let mut b = Breaker::new(&config, start);
        for i in 0..3 {
            let t = ms(start, i * 100);
            let call = b.try_acquire(t).unwrap();
            b.release_without_outcome(call, t);
        }
        assert_eq!(b.state() == State::Open, opens, "count_cancelled: {count}");
        assert_eq!(b.counters().cancelled, 3);
        assert_eq!(b.counters().failures, if count { 3 } else { 0 });
    }
}

#[test]
fn a_new_half_open_episode_counts_its_good_probes_from_zero() {
    let mut steps = repeat(0, 1000, 3, Fail(1));
    // One good probe, then a failed one: back to open.
    steps.extend([(12_000, Ok(1)), (13_000, Fail(1))]);
    // The next episode: two good probes are 2 of 3, not 3 of 3.
    steps.extend([(23_000, Ok(1)), (24_000, Ok(1))]);
    let b = replay(&three_then_ten_seconds(), &steps);
    assert_eq!(b.state(), State::HalfOpen, "{:?}", seen(&b));
}

#[test]
fn closing_starts_the_failure_streak_again_from_zero() {
    let mut steps = repeat(0, 1000, 3, Fail(1));
    steps.extend([(12_000, Ok(1)), (13_000, Ok(1)), (14_000, Ok(1))]);
    // Closed again: one failure is 1 in a row, not the 4th.
    steps.extend([(15_000, Fail(1)), (16_000, Fail(1))]);
    let b = replay(&three_then_ten_seconds(), &steps);
    assert_eq!(b.state(), State::Closed, "{:?}", seen(&b));
    let b = replay(
        &three_then_ten_seconds(),
        &[steps, vec![(17_000, Fail(1))]].concat(),
    );
    assert_eq!(b.state(), State::Open, "the third failure in a row opens");
}
