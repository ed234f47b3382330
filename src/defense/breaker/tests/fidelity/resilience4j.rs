//! A reference model of resilience4j's circuit breaker, written in Rust from
//! the published Java source (resilience4j/resilience4j, module
//! `resilience4j-circuitbreaker` and `resilience4j-core`); nothing here is
//! copied, each rule is restated and its origin named.
//!
//! * States and permits — `CircuitBreakerStateMachine.java`:
//!   * `ClosedState.tryAcquirePermission` always admits;
//!     `ClosedState.onError/onSuccess` record into the closed metrics and
//!     `checkIfThresholdsExceeded` opens on any "exceeded" result.
//!   * `OpenState.tryAcquirePermission`: `clock.instant().isAfter(
//!     retryAfterWaitDuration)` — strictly after the wait — moves to
//!     half-open and asks the new state for the permit; otherwise rejects.
//!     With `automaticTransitionFromOpenToHalfOpenEnabled` a scheduler runs
//!     `toHalfOpenState` after exactly `waitDuration`.
//!     `OpenState.onError/onSuccess` record a late call into the metrics it
//!     carries but never transition; `releasePermission` does nothing.
//!   * `HalfOpenState`: an `AtomicInteger` of `permittedNumberOfCalls`,
//!     decremented (not below zero) per admitted call; `releasePermission`
//!     increments it again (no cap); metrics are
//!     `CircuitBreakerMetrics.forHalfOpen(permitted)`; on every recorded
//!     call `checkIfThresholdsExceeded` opens on "exceeded" and closes on
//!     `BELOW_THRESHOLDS` (nothing while below the minimum). With
//!     `maxWaitDurationInHalfOpenState` >= 1 ms a scheduler moves it to
//!     open after that long.
//!   * `handleThrowable`: an ignored exception only calls
//!     `releasePermission()` on the *current* state and records nothing;
//!     every recorded outcome goes to `stateReference.get()`, the state
//!     current when the call finishes (stragglers included).
//!   * Every transition builds a fresh state: closed gets
//!     `forClosed` metrics, half-open `forHalfOpen` metrics.
//! * Thresholds — `CircuitBreakerMetrics.java`: a count-based window uses
//!   `minimumNumberOfCalls = min(minimumNumberOfCalls, slidingWindowSize)`,
//!   a time-based one `minimumNumberOfCalls` as configured; `forHalfOpen`
//!   builds a COUNT_BASED window of `permittedNumberOfCallsInHalfOpenState`
//!   (so its minimum is min(minimum, permitted)); below the minimum the rate
//!   is -1 (`BELOW_MINIMUM_CALLS_THRESHOLD`); otherwise failure rate >=
//!   threshold or slow rate >= threshold is exceeded; a call is slow when
//!   its duration is strictly greater than `slowCallDurationThreshold`.
//! * Windows — `FixedSizeSlidingWindowMetrics.java` (a ring of the last N
//!   outcomes) and `SlidingTimeWindowMetrics.java` (N partial aggregations
//!   keyed by epoch second; `moveWindowToCurrentEpochSecond` resets the
//!   buckets whose second left the window, so the window holds the seconds
//!   `current - N + 1 ..= current`). Here seconds count from time zero.
//!
//! Times are integer microseconds since time zero. The schedulers are modelled
//! as firing at their exact instant: every entry point first applies the
//! timed transitions due by its time.

use std::collections::VecDeque;

use super::{End, Reference, St};

/// Count-based or time-based sliding window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// `COUNT_BASED`: the last `size` calls.
    Count,
    /// `TIME_BASED`: the last `size` seconds.
    Time,
}

/// The configuration subset the differential test varies.
#[derive(Debug, Clone)]
pub(super) struct R4jConfig {
    pub(super) kind: Kind,
    pub(super) size: u32,
    pub(super) minimum_calls: u32,
    pub(super) permitted: u32,
    /// Percent (integer).
    pub(super) failure_threshold: u32,
    /// Percent (integer).
    pub(super) slow_threshold: u32,
    pub(super) slow_us: u64,
    pub(super) wait_us: u64,
    /// `waitIntervalFunctionInOpenState` as an exponential backoff:
    /// multiplier and maximum, milliseconds.
    pub(super) backoff: Option<(f64, u64)>,
    pub(super) automatic: bool,
    pub(super) max_wait_half_open_us: Option<u64>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    calls: u32,
    failures: u32,
    slow: u32,
}

impl Tally {
    fn add(&mut self, o: Tally) {
        self.calls += o.calls;
        self.failures += o.failures;
        self.slow += o.slow;
    }
}

#[derive(Debug, Clone)]
enum Phase {
    Closed,
    Open {
        until: u64,
    },
    HalfOpen {
        /// `permittedNumberOfCalls` (may grow past `permitted` by releases).
        permits: i64,
        since: u64,
        tally: Tally,
    },
}

/// resilience4j's `CircuitBreakerStateMachine` restricted to closed, open
/// and half-open.
#[derive(Debug, Clone)]
pub(super) struct Resilience4j {
    c: R4jConfig,
    phase: Phase,
    /// Count window: one tally per call, oldest first.
    ring: VecDeque<Tally>,
    /// Time window: (second since time zero, tally), oldest first.
    buckets: VecDeque<(u64, Tally)>,
    /// `attempts()` of the state: opens since the breaker last closed.
    attempts: u64,
}

impl Resilience4j {
    pub(super) fn new(c: R4jConfig) -> Self {
        Resilience4j {
            c,
            phase: Phase::Closed,
            ring: VecDeque::new(),
            buckets: VecDeque::new(),
            attempts: 0,
        }
    }

    /// `IntervalFunction.apply(attempts)`, microseconds: the wait in whole
    /// milliseconds (`Duration.toMillis`); with a backoff,
    /// `LongStream.iterate(wait, n -> (long) (n * multiplier))` skipped
    /// `attempts - 1` times, then `Math.min` with the maximum.
    fn wait_us(&self) -> u64 {
        let wait_ms = self.c.wait_us / 1000;
        let Some((multiplier, max_ms)) = self.c.backoff else {
            return self.c.wait_us;
        };
        let grown = (1..self.attempts).fold(wait_ms, |n, _| (n as f64 * multiplier) as u64);
        grown.min(max_ms) * 1000
    }

    fn exceeded(&self, t: Tally) -> bool {
        let calls = u64::from(t.calls);
        u64::from(t.failures) * 100 >= u64::from(self.c.failure_threshold) * calls
            || u64::from(t.slow) * 100 >= u64::from(self.c.slow_threshold) * calls
    }

    fn enter_open(&mut self, at: u64) {
        // `new OpenState(currentState.attempts() + 1, ...)`.
        self.attempts += 1;
        self.phase = Phase::Open {
            until: at + self.wait_us(),
        };
    }

    fn enter_half_open(&mut self, at: u64) {
        self.phase = Phase::HalfOpen {
            permits: i64::from(self.c.permitted),
            since: at,
            tally: Tally::default(),
        };
    }

    fn enter_closed(&mut self) {
        // A closed state's `attempts()` is 0.
        self.attempts = 0;
        self.phase = Phase::Closed;
        self.ring.clear();
        self.buckets.clear();
    }

    /// The schedulers: automatic half-open and max wait in half-open.
    fn timers(&mut self, t: u64) {
        loop {
            match self.phase {
                Phase::Open { until } if self.c.automatic && t >= until => {
                    self.enter_half_open(until)
                }
                Phase::HalfOpen { since, .. } => match self.c.max_wait_half_open_us {
                    Some(w) if t >= since + w => self.enter_open(since + w),
                    _ => return,
                },
                _ => return,
            }
        }
    }

    /// `FixedSizeSlidingWindowMetrics` / `SlidingTimeWindowMetrics.record`.
    fn record_closed(&mut self, one: Tally, t: u64) -> Tally {
        let mut total = Tally::default();
        match self.c.kind {
            Kind::Count => {
                self.ring.push_back(one);
                while self.ring.len() > self.c.size as usize {
                    self.ring.pop_front();
                }
                self.ring.iter().for_each(|x| total.add(*x));
            }
            Kind::Time => {
                let second = t / 1_000_000;
                let size = u64::from(self.c.size);
                self.buckets.retain(|&(s, _)| s + size > second);
                match self.buckets.back_mut() {
                    Some((s, tally)) if *s == second => tally.add(one),
                    _ => self.buckets.push_back((second, one)),
                }
                self.buckets.iter().for_each(|(_, x)| total.add(*x));
            }
        }
        total
    }

    fn closed_minimum(&self) -> u32 {
        match self.c.kind {
            Kind::Count => self.c.minimum_calls.min(self.c.size),
            Kind::Time => self.c.minimum_calls,
        }
    }

    /// `releasePermission` on the current state.
    fn release(&mut self) {
        if let Phase::HalfOpen { permits, .. } = &mut self.phase {
            *permits += 1;
        }
    }
}

impl Reference for Resilience4j {
    fn acquire(&mut self, t: u64) -> bool {
        self.timers(t);
        if let Phase::Open { until } = self.phase {
            if t <= until {
                return false; // not isAfter
            }
            self.enter_half_open(t);
        }
        match &mut self.phase {
            Phase::Closed => true,
            Phase::HalfOpen { permits, .. } if *permits > 0 => {
                *permits -= 1;
                true
            }
            _ => false,
        }
    }

    fn finish(&mut self, end: End, start: u64, t: u64) {
        self.timers(t);
        let failed = match end {
            End::Ignored => return self.release(),
            End::Success => false,
            End::Failure => true,
        };
        let one = Tally {
            calls: 1,
            failures: u32::from(failed),
            slow: u32::from(t - start > self.c.slow_us),
        };
        match &mut self.phase {
            Phase::Closed => {
                let total = self.record_closed(one, t);
                if total.calls >= self.closed_minimum() && self.exceeded(total) {
                    self.enter_open(t);
                }
            }
            // Recorded into the metrics the open state carries; those are
            // dropped on the way to half-open, so nothing observable.
            Phase::Open { .. } => {}
            Phase::HalfOpen { tally, .. } => {
                tally.add(one);
                let tally = *tally;
                if tally.calls >= self.c.minimum_calls.min(self.c.permitted) {
                    if self.exceeded(tally) {
                        self.enter_open(t);
                    } else {
                        self.enter_closed();
                    }
                }
            }
        }
    }

    fn cancel(&mut self, t: u64) {
        self.timers(t);
        self.release();
    }

    fn timer(&mut self, t: u64) {
        self.timers(t);
    }

    fn state(&self) -> St {
        match self.phase {
            Phase::Closed => St::Closed,
            Phase::Open { .. } => St::Open,
            Phase::HalfOpen { .. } => St::HalfOpen,
        }
    }

    fn deadline(&self) -> Option<u64> {
        match self.phase {
            Phase::Closed => None,
            Phase::Open { until } => Some(until),
            Phase::HalfOpen { since, .. } => Some(since + self.c.max_wait_half_open_us?),
        }
    }
}
