//! A reference model of Sentinel's (alibaba/Sentinel, `sentinel-core`)
//! error-ratio and slow-ratio circuit breakers, written in Rust from the
//! published Java source; nothing is copied, each rule is restated and its
//! origin named.
//!
//! * States and recovery — `slots/block/degrade/circuitbreaker/
//!   AbstractCircuitBreaker.java`: `tryPass` admits everything while
//!   CLOSED; while OPEN it admits one request once `retryTimeoutArrived()`
//!   (`currentTimeMillis() >= nextRetryTimestamp`) and moves to HALF_OPEN
//!   (`fromOpenToHalfOpen`); in HALF_OPEN it rejects. Every move to OPEN
//!   sets `nextRetryTimestamp = now + timeWindow * 1000`
//!   (`updateNextRetryTimestamp`); `fromHalfOpenToClose` calls
//!   `resetStat()`.
//! * Error ratio — `ExceptionCircuitBreaker.java`: `onRequestComplete` adds
//!   the request to the current bucket (total, and error when the entry
//!   carries an error) in every state, then: OPEN decides nothing;
//!   HALF_OPEN closes on no error and reopens on an error — whichever
//!   request completes, the probe or not; CLOSED sums the valid buckets,
//!   does nothing below `minRequestAmount`, and opens when
//!   `errors / total > threshold` (strictly, so a threshold of 1.0 never
//!   opens). `resetStat` zeroes the buckets.
//! * Slow ratio — `ResponseTimeCircuitBreaker.java`: rt = complete
//!   timestamp - create timestamp in milliseconds; slow when `rt >
//!   maxAllowedRt`; CLOSED opens when `slow / total > threshold`, or when
//!   it equals the threshold and the threshold is 1.0 (`Double.compare`
//!   with `SLOW_REQUEST_RATIO_MAX_VALUE`); HALF_OPEN reopens on a slow
//!   request, else closes. `resetStat` zeroes the current bucket.
//! * Statistics — both breakers build their `LeapArray` with
//!   `sampleCount = 1` and `intervalInMs = statIntervalMs`
//!   (`new SimpleErrorCounterLeapArray(1, rule.getStatIntervalMs())`,
//!   `new SlowRequestLeapArray(1, ...)`), so one bucket of
//!   `statIntervalMs`; `slots/statistic/base/LeapArray.java`:
//!   `calculateWindowStart(t) = t - t % windowLengthInMs` (tumbling,
//!   aligned to the clock) and `currentWindow` resets a bucket whose start
//!   is behind.
//! * Ignored exceptions (`Tracer`'s `exceptionsToIgnore`) are never set as
//!   the entry's error, so Sentinel completes such a request as a success:
//!   the `Ignored` outcome is modelled that way.
//!
//! Sentinel's clock is `TimeUtil.currentTimeMillis()`: every time here is
//! microseconds since time zero (the clock's zero) and Sentinel sees
//! `t / 1000`.

use super::{End, Reference, St};

/// The configuration subset the differential test varies.
#[derive(Debug, Clone)]
pub(super) struct SentinelConfig {
    /// `Some(max RT in µs)`: slow-ratio breaker (the rule's `count` is this
    /// in milliseconds, a double); `None`: error ratio.
    pub(super) max_rt_us: Option<u64>,
    /// Percent (integer); Sentinel's `count` / `slowRatioThreshold` is
    /// this divided by 100.
    pub(super) threshold: u32,
    pub(super) interval_ms: u64,
    pub(super) min_requests: u64,
    /// `timeWindow` in seconds, as milliseconds.
    pub(super) wait_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Closed,
    Open { retry_ms: u64 },
    HalfOpen,
}

/// One Sentinel circuit breaker (single-probe recovery).
#[derive(Debug, Clone)]
pub(super) struct Sentinel {
    c: SentinelConfig,
    phase: Phase,
    /// Start of the one bucket, in ms.
    bucket_start: u64,
    total: u64,
    bad: u64,
}

impl Sentinel {
    pub(super) fn new(c: SentinelConfig) -> Self {
        Sentinel {
            c,
            phase: Phase::Closed,
            bucket_start: 0,
            total: 0,
            bad: 0,
        }
    }

    /// `LeapArray.currentWindow(ms)` with one bucket.
    fn roll(&mut self, ms: u64) {
        let start = ms - ms % self.c.interval_ms;
        if start != self.bucket_start {
            self.bucket_start = start;
            self.total = 0;
            self.bad = 0;
        }
    }

    fn open(&mut self, ms: u64) {
        self.phase = Phase::Open {
            retry_ms: ms + self.c.wait_ms,
        };
    }

    fn over_threshold(&self) -> bool {
        let (bad, total) = (self.bad * 100, u64::from(self.c.threshold) * self.total);
        match self.c.max_rt_us {
            None => bad > total,
            Some(_) => bad > total || (self.c.threshold == 100 && bad == total),
        }
    }
}

impl Reference for Sentinel {
    fn acquire(&mut self, t: u64) -> bool {
        let ms = t / 1000;
        match self.phase {
            Phase::Closed => true,
            Phase::Open { retry_ms } if ms >= retry_ms => {
                self.phase = Phase::HalfOpen;
                true
            }
            _ => false,
        }
    }

    fn finish(&mut self, end: End, start: u64, t: u64) {
        let ms = t / 1000;
        let bad = match self.c.max_rt_us {
            None => end == End::Failure,
            // `maxAllowedRt = Math.round(rule.getCount())`.
            Some(us) => ms - start / 1000 > (us + 500) / 1000,
        };
        self.roll(ms);
        self.total += 1;
        self.bad += u64::from(bad);
        match self.phase {
            Phase::Open { .. } => {}
            Phase::HalfOpen if bad => self.open(ms),
            Phase::HalfOpen => {
                self.phase = Phase::Closed;
                self.total = 0;
                self.bad = 0;
            }
            Phase::Closed => {
                if self.total >= self.c.min_requests && self.over_threshold() {
                    self.open(ms);
                }
            }
        }
    }

    /// Sentinel has no cancellation outcome; the test never sends one.
    fn cancel(&mut self, _t: u64) {}

    /// Sentinel has no timers.
    fn timer(&mut self, _t: u64) {}

    fn state(&self) -> St {
        match self.phase {
            Phase::Closed => St::Closed,
            Phase::Open { .. } => St::Open,
            Phase::HalfOpen => St::HalfOpen,
        }
    }

    fn deadline(&self) -> Option<u64> {
        match self.phase {
            Phase::Open { retry_ms } => Some(retry_ms * 1000),
            _ => None,
        }
    }
}
