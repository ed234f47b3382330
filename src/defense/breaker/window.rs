//! The `window` model (resilience4j semantics): failure and slow-call rates
//! over a count or time sliding window; a fixed number of half-open trial
//! calls decide on the same rates.

use super::config::{SlidingWindow, WindowConfig};
use super::journal::Reason;
use super::model::{Call, Model, Verdict};
use super::rolling::{CountWindow, Edges, SecondBuckets, Tally};
use crate::clock::{Duration, Instant};

/// The closed-state statistics.
#[derive(Debug, Clone)]
enum Rolling {
    Count(CountWindow),
    Time(SecondBuckets),
}

/// State of the window model.
#[derive(Debug)]
pub(crate) struct WindowModel {
    /// Parameters.
    config: WindowConfig,
    /// Calls of the sliding window (closed only).
    rolling: Rolling,
    /// Calls needed before a verdict: `min(minimum_calls, size)` for a count
    /// window (a ring of 10 can never hold 100 calls), `minimum_calls` for
    /// a time window.
    minimum_calls: u32,
    /// Half-open slots left this episode (resilience4j's
    /// `permittedNumberOfCalls`): taken by each admitted trial; given back
    /// by a call that ends without an outcome — a straggler's too, so it
    /// can exceed the permitted number, as in resilience4j.
    remaining: i64,
    /// Calls recorded in this half-open episode (trials and stragglers).
    trials: Tally,
    /// When this half-open episode started.
    half_open_since: Option<Instant>,
    /// The window's totals after the last call, once it held
    /// `minimum_calls` (for the failure-rate metric).
    last_decision: Option<Tally>,
}

impl WindowModel {
    pub(crate) fn new(config: WindowConfig, base: Instant) -> Self {
        let (rolling, minimum_calls) = match config.sliding_window {
            SlidingWindow::Count(size) => (
                Rolling::Count(CountWindow::new(size)),
                config.minimum_calls.min(size),
            ),
            SlidingWindow::Time(seconds) => (
                Rolling::Time(SecondBuckets::new(
                    u64::from(seconds),
                    Edges {
                        base,
                        offset: config.window_offset,
                    },
                )),
                config.minimum_calls,
            ),
        };
        WindowModel {
            config,
            rolling,
            minimum_calls,
            remaining: 0,
            trials: Tally::default(),
            half_open_since: None,
            last_decision: None,
        }
    }

    fn tally(&self, call: Call) -> Tally {
        // Slow means strictly longer than slow_call_duration.
        Tally::one(call.failed, call.duration > self.config.slow_call_duration)
    }

    /// Why the rates of `t` open the breaker (>= either threshold), if so.
    fn over_threshold(&self, t: Tally) -> Option<Reason> {
        let failure = self.config.failure_rate_threshold.percent();
        let slow = self.config.slow_call_rate_threshold.percent();
        if t.failure_rate() >= failure {
            Some(Reason::FailureRate {
                rate: t.failure_rate(),
                threshold: failure,
                calls: t.calls,
            })
        } else if t.slow_rate() >= slow {
            Some(Reason::SlowCallRate {
                rate: t.slow_rate(),
                threshold: slow,
                calls: t.calls,
            })
        } else {
            None
        }
    }
}

impl Model for WindowModel {
    fn wait_key(&self) -> &'static str {
        "wait_in_open"
    }

    /// With a backoff, resilience4j's `IntervalFunction.ofExponentialBackoff`:
    /// whole milliseconds (the base's `toMillis`), each step truncated as
    /// Java's `(long) (n * multiplier)` truncates, capped at `max`.
    fn open_wait(&self, opens_in_a_row: u32) -> Duration {
        let base = self.config.wait_in_open;
        let Some(backoff) = self.config.wait_in_open_backoff else {
            return base;
        };
        let max = millis(backoff.max);
        let mut wait = millis(base);
        for _ in 1..opens_in_a_row {
            if wait >= max {
                break;
            }
            // `as` saturates and truncates towards zero, as Java's cast.
            wait = (wait as f64 * backoff.multiplier) as u64;
        }
        Duration::from_millis(wait.min(max))
    }

    fn automatic_half_open(&self) -> bool {
        self.config.automatic_half_open
    }

    /// resilience4j's open state admits once the clock `isAfter` the wait.
    fn admits_at_end_of_wait(&self) -> bool {
        false
    }

    fn failure_rate(&self) -> Option<f64> {
        self.last_decision.map(Tally::failure_rate)
    }

    fn enter_closed(&mut self) {
        self.last_decision = None;
        match &mut self.rolling {
            Rolling::Count(w) => w.clear(),
            Rolling::Time(w) => w.clear(),
        }
    }

    fn record_closed(&mut self, call: Call, now: Instant) -> Option<Reason> {
        let one = self.tally(call);
        let total = match &mut self.rolling {
            Rolling::Count(w) => w.record(one),
            Rolling::Time(w) => w.record(one, now),
        };
        if total.calls < self.minimum_calls {
            return None;
        }
        self.last_decision = Some(total);
        self.over_threshold(total)
    }

    fn enter_half_open(&mut self, now: Instant) {
        self.remaining = i64::from(self.config.permitted_calls_in_half_open);
        self.trials = Tally::default();
        self.half_open_since = Some(now);
    }

    fn admit_half_open(&mut self) -> bool {
        let free = self.remaining > 0;
        if free {
            self.remaining -= 1;
        }
        free
    }

    fn release_half_open(&mut self, _trial: bool) {
        self.remaining += 1;
    }

    /// resilience4j's half-open window holds `permitted` calls and decides
    /// once `min(minimum_calls, permitted)` results are in; a straggler's
    /// result counts like a trial's.
    fn record_half_open(&mut self, call: Call, _trial: bool, _now: Instant) -> Verdict {
        self.trials.add(self.tally(call));
        let t = self.trials;
        let needed = self
            .config
            .minimum_calls
            .min(self.config.permitted_calls_in_half_open);
        if t.calls < needed {
            return Verdict::Pending;
        }
        match self.over_threshold(t) {
            Some(reason) => Verdict::Open(reason),
            None => Verdict::Close(Reason::RatesBelow {
                failure_rate: t.failure_rate(),
                slow_call_rate: t.slow_rate(),
                calls: t.calls,
            }),
        }
    }

    fn half_open_deadline(&self) -> Option<Instant> {
        Some(self.half_open_since? + self.config.max_wait_in_half_open?)
    }

    fn half_open_deadline_passed(&mut self, _at: Instant) -> Verdict {
        let wait = self.config.max_wait_in_half_open.unwrap_or_default();
        Verdict::Open(Reason::MaxWaitInHalfOpen { wait })
    }
}

/// A duration in whole milliseconds, truncated (Java's `Duration.toMillis`).
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
