//! Table-driven replays of the `ratio` model (Sentinel / MSE).

use super::Op::{Fail, Ok, Reject, Timer};
use super::*;
use crate::schema::units::Percent;

fn progressive(phases: u32, min_passes_per_phase: u32, phase_secs: u64) -> BreakerConfig {
    ratio(|c| {
        c.minimum_requests = 1;
        c.recovery = Recovery::Progressive {
            phases,
            min_passes_per_phase,
            phase_duration: Duration::from_secs(phase_secs),
        };
    })
}

#[test]
fn error_ratio_must_exceed_the_threshold_not_just_reach_it() {
    // 2/5 = 40 %, then 3/6 = 50 % (not above), then 4/7 = 57.1 %.
    let ops = [Ok(1), Fail(1), Ok(1), Fail(1), Ok(1), Fail(1), Fail(1)];
    let steps: Vec<Step> = ops
        .iter()
        .enumerate()
        .map(|(i, &op)| (i as u64 * 500, op))
        .collect();
    let b = replay(&ratio(|_| {}), &steps[..6]);
    assert_journal(&b, &[]); // 3/6 = 50 % is not above 50 %
    let b = replay(&ratio(|_| {}), &steps);
    assert_journal(
        &b,
        &[(
            3000,
            "closed",
            "open",
            "error_ratio 57.1% > 50% over 7 requests",
        )],
    );
}

#[test]
fn a_100_percent_slow_ratio_opens_at_exactly_100_percent() {
    let config = ratio(|c| {
        c.threshold = Percent::ALL;
        c.threshold_type = ThresholdType::SlowRatio {
            max_rt: Duration::from_millis(10),
        };
        c.minimum_requests = 3;
    });
    let b = replay(&config, &repeat(0, 100, 3, Ok(50)));
    assert_journal(
        &b,
        &[(
            200,
            "closed",
            "open",
            "slow_ratio 100% >= 100% over 3 requests",
        )],
    );
}

/// Sentinel's exception-ratio breaker opens only when the ratio is
/// strictly above the threshold: at 100 % nothing is above.
#[test]
fn a_100_percent_error_ratio_never_opens_even_when_every_request_fails() {
    let config = ratio(|c| {
        c.threshold = Percent::ALL;
        c.minimum_requests = 3;
    });
    let b = replay(&config, &repeat(0, 100, 30, Fail(1)));
    assert_journal(&b, &[]);
}

#[test]
fn slow_ratio_counts_only_responses_strictly_above_max_rt_and_ignores_errors() {
    let config = ratio(|c| {
        c.threshold_type = ThresholdType::SlowRatio {
            max_rt: Duration::from_secs(1),
        };
        c.minimum_requests = 4;
    });
    let mut steps = repeat(0, 500, 4, Ok(1000));
    steps.extend(repeat(2000, 500, 4, Fail(5)));
    steps.extend(repeat(4000, 500, 9, Ok(1001)));
    let b = replay(&config, &steps[..16]);
    assert_journal(&b, &[]); // 8 slow of 16 = 50 %
    let b = replay(&config, &steps);
    assert_journal(
        &b,
        &[(
            8000,
            "closed",
            "open",
            "slow_ratio 52.9% > 50% over 17 requests",
        )],
    );
}

#[test]
fn sliding_stat_window_drops_a_second_once_it_leaves_the_window() {
    let config = ratio(|c| {
        c.stat_window = Duration::from_secs(2);
        c.stat_window_shape = WindowShape::Sliding;
        c.minimum_requests = 3;
    });
    let steps = [
        (0, Fail(1)),
        (1000, Fail(1)),
        (2000, Fail(1)),
        (2500, Fail(1)),
    ];
    let b = replay(&config, &steps);
    assert_journal(
        &b,
        &[(
            2500,
            "closed",
            "open",
            "error_ratio 100% > 50% over 3 requests",
        )],
    );
}

/// Sentinel counts in one tumbling window of `statIntervalMs`: failures at
/// 1.5 s, 1.6 s and 2.06 s fall in two windows of 2 s and never make the
/// minimum of 3 together; sliding one-second buckets would open.
#[test]
fn tumbling_stat_window_starts_afresh_at_each_edge() {
    let steps = [(1500, Fail(1)), (1600, Fail(1)), (2060, Fail(1))];
    let tumbling = replay(
        &ratio(|c| {
            c.stat_window = Duration::from_secs(2);
            c.minimum_requests = 3;
        }),
        &steps,
    );
    assert_journal(&tumbling, &[]);
    let sliding = replay(
        &ratio(|c| {
            c.stat_window = Duration::from_secs(2);
            c.stat_window_shape = WindowShape::Sliding;
            c.minimum_requests = 3;
        }),
        &steps,
    );
    assert_eq!(sliding.state(), State::Open);
    // Any number of milliseconds, and an offset that moves the edges.
    let shifted = replay(
        &ratio(|c| {
            c.stat_window = Duration::from_millis(700);
            c.window_offset = Duration::from_millis(400);
            c.minimum_requests = 3;
        }),
        &[(1000, Fail(1)), (1200, Fail(1)), (1299, Fail(1))],
    );
    assert_journal(
        &shifted,
        &[(
            1299,
            "closed",
            "open",
            "error_ratio 100% > 50% over 3 requests",
        )],
    );
}

/// Sentinel's response time is the millisecond clock at the end minus the
/// one at the start: 0.6 ms across a millisecond edge is 1 ms.
#[test]
fn slow_ratio_measures_response_time_in_whole_milliseconds_of_the_clock() {
    let start = base();
    let config = ratio(|c| {
        c.threshold_type = ThresholdType::SlowRatio {
            max_rt: Duration::ZERO,
        };
        c.minimum_requests = 1;
        c.threshold = Percent::new(40.0).unwrap();
    });
    let mut b = Breaker::new(&config, start);
    let p = b.try_acquire(start).unwrap();
    let end = start + Duration::from_micros(1900);
    b.record(p, Outcome::Success, Duration::from_micros(800), end);
    assert_eq!(b.state(), State::Closed, "1.1 ms to 1.9 ms: 0 whole ms");
    let p = b.try_acquire(end).unwrap();
    let end = start + Duration::from_micros(2300);
    b.record(p, Outcome::Success, Duration::from_micros(600), end);
    assert_eq!(
        b.state(),
        State::Open,
        "1.7 ms to 2.3 ms: 1 whole ms, 1 of 2"
    );
}

#[test]
fn single_probe_failure_reopens_for_a_full_duration_and_success_closes() {
    let start = base();
    let config = ratio(|c| c.minimum_requests = 1);
    let mut b = replay(&config, &[(0, Fail(1)), (29_999, Reject)]);
    let probe = b.try_acquire(ms(start, 30_000)).unwrap();
    assert!(b.try_acquire(ms(start, 30_000)).is_err(), "one probe only");
    let bad = Outcome::Failure(FailureKind::Status(500));
    b.record(probe, bad, Duration::ZERO, ms(start, 30_000));
    assert!(b.try_acquire(ms(start, 59_999)).is_err());
    let probe = b.try_acquire(ms(start, 60_000)).unwrap();
    b.record(probe, Outcome::Success, Duration::ZERO, ms(start, 60_000));
    assert_journal(
        &b,
        &[
            (0, "closed", "open", "error_ratio 100% > 50% over 1 request"),
            (30_000, "open", "half_open", "breaker_duration 30s elapsed"),
            (30_000, "half_open", "open", "probe failed after 0/1 ok"),
            (60_000, "open", "half_open", "breaker_duration 30s elapsed"),
            (60_000, "half_open", "closed", "probes 1/1 ok"),
        ],
    );
}

#[test]
fn progressive_stages_admit_exactly_33_67_and_100_percent_of_offered_traffic() {
    let start = base();
    let mut b = replay(&progressive(3, 100, 3600), &[(0, Fail(1))]);
    // (episode, offered, admitted) per half-open stage.
    let mut stages: Vec<(u64, u32, u32)> = Vec::new();
    let mut t = 30_000;
    while b.state() != State::Closed && t < 40_000 {
        let now = ms(start, t);
        let admitted = b.try_acquire(now);
        let episode = b.episode();
        match stages.last_mut() {
            Some(s) if s.0 == episode => s.1 += 1,
            _ => stages.push((episode, 1, 0)),
        }
        if let Result::Ok(permit) = admitted {
            stages.last_mut().unwrap().2 += 1;
            b.record(permit, Outcome::Success, Duration::ZERO, now);
        }
        t += 1;
    }
    let shares: Vec<(u32, u32)> = stages.iter().map(|s| (s.1, s.2)).collect();
    // The call that ends a stage is counted in it (the episode changes on
    // its record), so offered ends on an admitted call.
    assert_eq!(shares, [(298, 100), (149, 100), (100, 100)]);
    assert_eq!(
        seen(&b).last().unwrap(),
        &(30_546, "half_open", "closed", "phases 3/3 passed".into())
    );
    assert_eq!(b.counters().admitted.half_open, 300);
}

#[test]
fn progressive_stage_above_threshold_reopens() {
    let steps = [
        (0, Fail(1)),
        (30_000, Ok(1)), // stage 1 admits one in three, the first included
        (30_001, Reject),
        (30_002, Reject),
        (30_003, Fail(1)),
        (30_004, Reject),
        (30_005, Reject),
        (30_006, Fail(1)),
    ];
    let b = replay(&progressive(3, 3, 3600), &steps);
    assert_eq!(
        seen(&b)[2],
        (
            30_006,
            "half_open",
            "open",
            "error_ratio 66.7% > 50% over 3 requests".into()
        )
    );
}

#[test]
fn progressive_stage_with_too_few_requests_moves_on_at_its_deadline() {
    let steps = [(0, Fail(1)), (30_000, Ok(1)), (35_000, Timer)];
    let mut b = replay(&progressive(3, 3, 5), &steps);
    assert_eq!(b.state(), State::HalfOpen);
    assert_eq!(
        b.next_timer(),
        Some(ms(base(), 40_000)),
        "stage 2 started at 35 s"
    );
    b.on_timer(ms(base(), 50_000));
    assert_journal(
        &b,
        &[
            (0, "closed", "open", "error_ratio 100% > 50% over 1 request"),
            (30_000, "open", "half_open", "breaker_duration 30s elapsed"),
            (45_000, "half_open", "closed", "phases 3/3 passed"),
        ],
    );
}

/// `window_offset` moves the millisecond edges too: a call from 0.6 ms to
/// 0.8 ms stays inside one millisecond, but 0.3 ms later on the clock
/// (0.9 ms to 1.1 ms) it crosses an edge and takes 1 ms.
#[test]
fn window_offset_shifts_the_millisecond_clock_of_response_times() {
    let start = base();
    let slow_call = |offset_us: u64| {
        let config = ratio(|c| {
            c.threshold_type = ThresholdType::SlowRatio {
                max_rt: Duration::ZERO,
            };
            c.minimum_requests = 1;
            c.threshold = Percent::new(40.0).unwrap();
            c.window_offset = Duration::from_micros(offset_us);
        });
        let mut b = Breaker::new(&config, start);
        let p = b.try_acquire(start).unwrap();
        let end = start + Duration::from_micros(800);
        b.record(p, Outcome::Success, Duration::from_micros(200), end);
        b.state()
    };
    assert_eq!(slow_call(0), State::Closed);
    assert_eq!(slow_call(300), State::Open);
}

/// Sentinel's retry time counts from the millisecond the breaker opened
/// in; `window_offset` moves that millisecond's start. Opened 0.5 ms into
/// the run: with no offset the wait counts from 0 ms, with 0.3 ms of
/// offset from -0.3 ms (the millisecond began at 0.7 ms on the shifted
/// clock), so a request at 5 s - 0.2 ms is the probe only then.
#[test]
fn the_wait_in_open_counts_from_the_millisecond_of_the_open_with_the_offset() {
    let start = base();
    let probe_admitted = |offset_us: u64| {
        let config = ratio(|c| {
            c.minimum_requests = 1;
            c.breaker_duration = Duration::from_secs(5);
            c.window_offset = Duration::from_micros(offset_us);
        });
        let mut b = Breaker::new(&config, start);
        let p = b.try_acquire(start).unwrap();
        let opened = start + Duration::from_micros(500);
        b.record(
            p,
            Outcome::Failure(FailureKind::Timeout),
            Duration::ZERO,
            opened,
        );
        assert_eq!(b.state(), State::Open);
        b.try_acquire(start + Duration::from_secs(5) - Duration::from_micros(200))
            .is_ok()
    };
    assert!(!probe_admitted(0));
    assert!(probe_admitted(300));
}
