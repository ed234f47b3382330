use proptest::prelude::*;

use super::*;
use crate::clock::Duration;

fn bucket(per_second: f64, burst: u32, start: Instant) -> RateLimit {
    RateLimit::new(
        RateLimitConfig {
            per_second,
            model: RateModel::TokenBucket { burst },
        },
        start,
    )
}

#[test]
fn burst_passes_then_the_rate_refills() {
    let t0 = Instant::now();
    let b = bucket(10.0, 3, t0);
    assert!((0..3).all(|_| b.try_take(t0)));
    assert!(!b.try_take(t0), "the burst is spent");
    assert!(!b.try_take(t0 + Duration::from_millis(50)), "half a token");
    assert!(
        b.try_take(t0 + Duration::from_millis(100)),
        "one token after 1/10 s"
    );
    assert!(!b.try_take(t0 + Duration::from_millis(100)));
    let later = t0 + Duration::from_secs(60);
    assert_eq!(
        (0..10).filter(|_| b.try_take(later)).count(),
        3,
        "never more than the burst saved"
    );
}

/// Sentinel's QPS flow rule as its source has it, line by line:
/// `LeapArray.currentWindow` (a ring of `sampleCount` windows of
/// `intervalInMs / sampleCount` ms, each starting at a multiple of its
/// length; a window found at the slot with an older start is reset),
/// `LeapArray.values` (a window is deprecated when `time - windowStart >
/// intervalInMs`), `StatisticNode.passQps` (the passes of the valid
/// windows over the interval in seconds, a double),
/// `DefaultController.avgUsedTokens` (`(int)` of it) and `canPass`
/// (`curCount + acquireCount > count` blocks); `StatisticSlot` adds the
/// pass to the current window after the check.
struct SentinelQps {
    interval_ms: u64,
    window_ms: u64,
    /// Per slot: (windowStart, pass).
    array: Vec<Option<(u64, u64)>>,
    count: f64,
}

impl SentinelQps {
    fn new(sample_count: u64, count: f64) -> SentinelQps {
        SentinelQps {
            interval_ms: 1000,
            window_ms: 1000 / sample_count,
            array: vec![None; sample_count as usize],
            count,
        }
    }

    /// `currentWindow(time)`: the slot index of the window now.
    fn current_window(&mut self, time: u64) -> usize {
        let idx = ((time / self.window_ms) % self.array.len() as u64) as usize;
        let window_start = time - time % self.window_ms;
        match self.array[idx] {
            None => self.array[idx] = Some((window_start, 0)),
            Some((start, _)) if window_start == start => {}
            Some((start, _)) if window_start > start => self.array[idx] = Some((window_start, 0)),
            Some(_) => unreachable!("the clock never goes back here"),
        }
        idx
    }

    fn pass_qps(&mut self, time: u64) -> f64 {
        self.current_window(time);
        let pass: u64 = self
            .array
            .iter()
            .flatten()
            .filter(|(start, _)| time - start <= self.interval_ms)
            .map(|&(_, pass)| pass)
            .sum();
        pass as f64 / (self.interval_ms as f64 / 1000.0)
    }

    fn entry(&mut self, time: u64) -> bool {
        let cur_count = self.pass_qps(time) as i32;
        if f64::from(cur_count + 1) > self.count {
            return false;
        }
        let idx = self.current_window(time);
        if let Some((_, pass)) = &mut self.array[idx] {
            *pass += 1;
        }
        true
    }
}

fn buckets(per_second: f64, len: u32, start: Instant) -> RateLimit {
    RateLimit::new(
        RateLimitConfig {
            per_second,
            model: RateModel::Buckets { buckets: len },
        },
        start,
    )
}

/// The decisions of a `buckets` limit started at 0 for requests at these
/// times (µs).
fn run(per_second: f64, len: u32, at_us: &[u64]) -> Vec<bool> {
    let t0 = Instant::now();
    let limit = buckets(per_second, len, t0);
    at_us
        .iter()
        .map(|&us| limit.try_take(t0 + Duration::from_micros(us)))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn buckets_pass_up_to_the_rate_within_the_last_second_and_free_a_bucket_as_it_leaves() {
    // Two buckets of 500 ms, 4 per second: 3 pass in the first bucket, 1
    // in the second, then nothing until the first bucket leaves the
    // second at 1000 ms, when its 3 are free again (the one of 500 ms
    // still counts, so the fourth at 1000 ms does not pass).
    let ms = |v: &[u64]| v.iter().map(|m| m * 1000).collect::<Vec<_>>();
    let got = run(
        4.0,
        2,
        &ms(&[0, 10, 20, 500, 700, 999, 1000, 1001, 1002, 1003]),
    );
    assert_eq!(
        got,
        [
            true, true, true, true, false, false, true, true, true, false
        ],
        "3 + 1 of 4 in the first second, then the first bucket's 3 again"
    );
}

#[tokio::test(start_paused = true)]
async fn buckets_read_the_clock_in_whole_milliseconds() {
    // One bucket of a whole second, rate 1: a request at 999.9 ms is still
    // in the first second (Sentinel's clock shows 999), at 1000.0 ms it
    // is not.
    assert_eq!(run(1.0, 1, &[0, 999_900, 1_000_000]), [true, false, true]);
}

#[tokio::test(start_paused = true)]
async fn a_fractional_rate_passes_its_whole_part_and_below_one_passes_none() {
    assert_eq!(run(2.5, 2, &[0, 1, 2]), [true, true, false], "2 of 2.5");
    assert_eq!(run(0.5, 2, &[0, 1_000_000]), [false, false]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// firedrill's buckets decide every request as Sentinel's QPS rule
    /// (the reference above, from its source) does: a random rate (whole
    /// or not), bucket count and arrival times, gaps from a microsecond
    /// to beyond the second.
    #[test]
    fn buckets_decide_every_request_as_sentinels_qps_rule(
        count in prop_oneof![1u32..12, (1u32..40).prop_map(|c| c * 10)],
        half in any::<bool>(),
        len in prop::sample::select(vec![1u32, 2, 4, 5, 10, 20]),
        gaps in prop::collection::vec(
            prop_oneof![0u64..2_000, 0u64..600_000, 400_000u64..2_500_000],
            1..200,
        ),
    ) {
        let rate = f64::from(count) + if half { 0.5 } else { 0.0 };
        let t0 = Instant::now();
        let limit = buckets(rate, len, t0);
        let mut reference = SentinelQps::new(u64::from(len), rate);
        let mut us = 0;
        for (i, gap) in gaps.into_iter().enumerate() {
            us += gap;
            let ours = limit.try_take(t0 + Duration::from_micros(us));
            let theirs = reference.entry(us / 1000);
            prop_assert_eq!(ours, theirs, "request {} at {} µs", i, us);
        }
    }
}

fn parsed(yaml: &str) -> Result<RateLimitConfig, String> {
    serde_yaml_ng::from_str::<RateLimitConfig>(yaml).map_err(|e| e.to_string())
}

#[test]
fn the_buckets_model_reads_its_rate_and_bucket_count_and_defaults_to_sentinels_two() {
    assert_eq!(
        parsed("{ rate: 12.5/s, model: buckets }"),
        Ok(RateLimitConfig {
            per_second: 12.5,
            model: RateModel::Buckets { buckets: 2 }
        })
    );
    assert_eq!(
        parsed("{ rate: 10/s, model: buckets, buckets: 4 }").map(|c| c.model),
        Ok(RateModel::Buckets { buckets: 4 })
    );
    assert_eq!(
        parsed("{ rate: 10/s }").map(|c| c.model),
        Ok(RateModel::TokenBucket { burst: 10 }),
        "a token bucket by default, a second's worth saved"
    );
}

#[test]
fn a_rate_limit_refuses_keys_of_the_other_model_and_buckets_that_do_not_divide_a_second() {
    for (yaml, message) in [
        (
            "{ rate: 10/s, model: buckets, burst: 3 }",
            "burst: the `buckets` model saves nothing up",
        ),
        (
            "{ rate: 10/s, buckets: 2 }",
            "buckets: only the `buckets` model counts in buckets",
        ),
        (
            "{ rate: 10/s, model: buckets, buckets: 3 }",
            "buckets: 3 does not divide a second into whole milliseconds",
        ),
        (
            "{ rate: 10/s, model: buckets, buckets: 0 }",
            "buckets: 0 does not divide",
        ),
        ("{ rate: 10/s, model: leaky }", "unknown variant `leaky`"),
    ] {
        let err = parsed(yaml).expect_err(yaml);
        assert!(err.contains(message), "{yaml}: {err}");
    }
}
