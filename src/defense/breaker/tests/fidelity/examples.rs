//! The concrete examples of issue 16, one test each: the reference model
//! must show the library's behaviour (checked on the model alone), and
//! firedrill must then agree with it event by event.

use super::resilience4j::{Kind, R4jConfig, Resilience4j};
use super::sentinel::{Sentinel, SentinelConfig};
use super::*;

use End::{Failure as F, Success as S};
use Ev::{Acquire, Finish};

/// Steps at absolute times (µs since time zero).
pub(super) fn at(steps: &[(u64, Ev)]) -> Vec<Step> {
    let mut now = 0;
    steps
        .iter()
        .map(|&(t, ev)| {
            let gap = Gap::Us(t - now);
            now = t;
            (gap, ev)
        })
        .collect()
}

/// The model alone: (state, admission) after each step.
pub(super) fn model_only(model: &mut dyn Reference, steps: &[Step]) -> Vec<(St, Option<bool>)> {
    let mut now = 0;
    let mut outstanding = Vec::new();
    let mut out = Vec::new();
    for &(gap, ev) in steps {
        let Gap::Us(d) = gap else {
            panic!("examples use plain gaps")
        };
        now += d;
        let admitted = match ev {
            Ev::Acquire => {
                let ok = model.acquire(now);
                if ok {
                    outstanding.push(now);
                }
                Some(ok)
            }
            Ev::Finish(i, end) => {
                let since = outstanding.remove(i);
                model.finish(end, since, now);
                None
            }
            Ev::Cancel(i) => {
                outstanding.remove(i);
                model.cancel(now);
                None
            }
            Ev::Timer => {
                model.timer(now);
                None
            }
        };
        out.push((model.state(), admitted));
    }
    out
}

pub(super) fn agree(seen: &[Seen], steps: usize) {
    assert!(
        seen.len() == steps && seen.iter().all(Seen::agrees),
        "firedrill and the reference model disagree:\n{}",
        render(seen)
    );
}

fn r4j(size: u32, min: u32, permitted: u32) -> R4jConfig {
    R4jConfig {
        kind: Kind::Count,
        size,
        minimum_calls: min,
        permitted,
        failure_threshold: 50,
        slow_threshold: 100,
        slow_us: 60 * SECOND,
        wait_us: SECOND,
        backoff: None,
        automatic: false,
        max_wait_half_open_us: None,
    }
}

fn check_window(c: R4jConfig, steps: &[Step], expect: &[(usize, St, Option<bool>)]) {
    let model = model_only(&mut Resilience4j::new(c.clone()), steps);
    for &(i, state, admitted) in expect {
        assert_eq!(model[i], (state, admitted), "model after step {i}");
    }
    let seen = drive(&window_config(&c), &mut Resilience4j::new(c), SECOND, steps);
    agree(&seen, steps.len());
}

fn sentinel(max_rt_ms: Option<u64>, threshold: u32, interval_ms: u64, min: u64) -> SentinelConfig {
    SentinelConfig {
        max_rt_us: max_rt_ms.map(|ms| ms * 1000),
        threshold,
        interval_ms,
        min_requests: min,
        wait_ms: 1000,
    }
}

fn check_ratio(c: SentinelConfig, steps: &[Step], expect: &[(usize, St, Option<bool>)]) {
    let model = model_only(&mut Sentinel::new(c.clone()), steps);
    for &(i, state, admitted) in expect {
        assert_eq!(model[i], (state, admitted), "model after step {i}");
    }
    let edge = c.interval_ms * 1000;
    let seen = drive(&ratio_config(&c), &mut Sentinel::new(c), edge, steps);
    agree(&seen, steps.len());
}

/// Issue 16 (1): count 10, min 2, permitted 4, 50 %.
#[test]
fn window_half_open_decides_once_min_of_minimum_and_permitted_results_are_in() {
    let steps = at(&[
        (0, Acquire),
        (0, Acquire),
        (1_000, Finish(0, F)),
        (2_000, Finish(0, F)), // 2 calls, 100 %: open until 1.002 s
        (1_002_001, Acquire),
        (1_002_001, Acquire),
        (1_003_000, Finish(0, F)),
        (1_004_000, Finish(0, F)), // second trial result: min(2, 4) reached
        (1_004_000, Acquire),
    ]);
    check_window(
        r4j(10, 2, 4),
        &steps,
        &[
            (3, St::Open, None),
            (4, St::HalfOpen, Some(true)),
            (6, St::HalfOpen, None),
            (7, St::Open, None),
            (8, St::Open, Some(false)),
        ],
    );
}

/// Issue 16 (6): resilience4j admits only strictly after the wait.
#[test]
fn window_acquire_at_exactly_the_end_of_the_wait_is_rejected() {
    let steps = at(&[
        (0, Acquire),
        (0, Acquire),
        (1_000, Finish(0, F)),
        (1_000, Finish(0, F)), // open until 1.001 s
        (1_001_000, Acquire),
        (1_001_001, Acquire),
    ]);
    check_window(
        r4j(2, 2, 3),
        &steps,
        &[
            (3, St::Open, None),
            (4, St::Open, Some(false)),
            (5, St::HalfOpen, Some(true)),
        ],
    );
}

/// Issue 16 (2): a call admitted while closed and failing in half-open is
/// recorded in the half-open window, and decides it.
#[test]
fn window_straggler_from_closed_is_recorded_in_half_open_and_decides() {
    let steps = at(&[
        (0, Acquire), // the straggler
        (0, Acquire),
        (0, Acquire),
        (1_000, Finish(1, F)),
        (2_000, Finish(1, F)), // open until 1.002 s
        (1_002_001, Acquire),  // the one trial
        (1_003_000, Finish(0, F)),
    ]);
    check_window(
        r4j(2, 2, 1),
        &steps,
        &[
            (4, St::Open, None),
            (5, St::HalfOpen, Some(true)),
            (6, St::Open, None),
        ],
    );
}

/// Issue 16 (2): a call admitted before the breaker opened, finishing after
/// it closed again, counts in the new closed window and can open it.
#[test]
fn window_straggler_from_an_earlier_closed_period_counts_in_closed_and_can_open() {
    let steps = at(&[
        (0, Acquire), // the straggler
        (0, Acquire),
        (1_000, Finish(1, F)),     // min(1, 2) = 1 call at 100 %: open
        (1_001_001, Acquire),      // the one trial
        (1_002_000, Finish(1, S)), // min(1, 1) results, 0 %: closed
        (1_003_000, Finish(0, F)), // the straggler, now in closed
    ]);
    check_window(
        r4j(2, 1, 1),
        &steps,
        &[
            (2, St::Open, None),
            (4, St::Closed, None),
            (5, St::Open, None),
        ],
    );
}

/// Issue 16 (3): window 2 s, min 3, failures at 1.5 s, 1.6 s, 2.06 s: the
/// 2.06 s failure lands in the bucket [2 s, 4 s), alone.
#[test]
fn ratio_uses_one_tumbling_bucket_of_the_stat_interval_aligned_to_time_zero() {
    let steps = at(&[
        (1_500_000, Acquire),
        (1_500_000, Finish(0, F)),
        (1_600_000, Acquire),
        (1_600_000, Finish(0, F)),
        (2_060_000, Acquire),
        (2_060_000, Finish(0, F)),
    ]);
    check_ratio(
        sentinel(None, 50, 2000, 3),
        &steps,
        &[(5, St::Closed, None)],
    );
}

/// Issue 16 (4): errors / total > 1.0 is impossible.
#[test]
fn ratio_error_threshold_of_100_percent_never_opens_even_on_all_failures() {
    let mut script = Vec::new();
    for i in 0..10u64 {
        script.push((i * 1_000, Acquire));
        script.push((i * 1_000 + 500, Finish(0, F)));
    }
    let steps = at(&script);
    check_ratio(
        sentinel(None, 100, 10_000, 3),
        &steps,
        &[(19, St::Closed, None)],
    );
}

/// Issue 16 (5): a request admitted while closed that fails during
/// half-open reopens Sentinel's breaker.
#[test]
fn ratio_straggler_admitted_while_closed_failing_in_half_open_reopens() {
    let steps = at(&[
        (0, Acquire), // the straggler
        (0, Acquire),
        (1_000, Finish(1, F)),     // 1/1 > 50 %: open, retry at 1.001 s
        (1_001_000, Acquire),      // the probe
        (1_002_000, Finish(0, F)), // the straggler fails
    ]);
    check_ratio(
        sentinel(None, 50, 10_000, 1),
        &steps,
        &[
            (2, St::Open, None),
            (3, St::HalfOpen, Some(true)),
            (4, St::Open, None),
        ],
    );
}

/// Issue 16 (5): a late failure after a close counts in the (reset) bucket.
#[test]
fn ratio_late_failure_after_close_counts_in_the_new_bucket() {
    let steps = at(&[
        (0, Acquire), // the straggler
        (0, Acquire),
        (1_000, Finish(1, F)),     // open, retry at 1.001 s
        (1_001_000, Acquire),      // the probe
        (1_002_000, Finish(1, S)), // probe ok: closed, bucket reset
        (1_003_000, Finish(0, F)), // late failure: 1/1 > 50 %
    ]);
    check_ratio(
        sentinel(None, 50, 10_000, 1),
        &steps,
        &[(4, St::Closed, None), (5, St::Open, None)],
    );
}

/// Issue 16 (6): Sentinel's response time is whole milliseconds
/// (1.000 ms → 2.500 ms is 1 ms, not above a max RT of 1 ms).
#[test]
fn ratio_slow_counts_response_time_in_whole_milliseconds() {
    let steps = at(&[(1_000, Acquire), (2_500, Finish(0, S))]);
    check_ratio(
        sentinel(Some(1), 50, 10_000, 1),
        &steps,
        &[(1, St::Closed, None)],
    );
}
