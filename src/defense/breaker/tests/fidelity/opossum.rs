//! A reference model of opossum's circuit breaker (nodeshift/opossum
//! 10.0.0), written in Rust from its JavaScript source; nothing is copied,
//! each rule is restated and its origin named.
//!
//! * Fires — `lib/circuit.js`, `CircuitBreaker.call`: `fire` is emitted
//!   first, before the state is looked at, and its listener increments
//!   `fires` in the current bucket; so a call rejected while open
//!   (`!closed && !pendingClose`, the `reject` event) is a fire too.
//! * Half-open — `_startTimer`, on every `open` event, sets a timeout of
//!   `resetTimeout` whose callback `_halfOpen` sets the state to HALF_OPEN
//!   and `PENDING_CLOSE` to true. `call` admits while closed or while
//!   `pendingClose`, and sets `PENDING_CLOSE` to false as it admits: one
//!   probe, every later call rejected until the circuit moves.
//! * Success — the `success` listener calls `close()` when the state is
//!   HALF_OPEN, whichever call succeeded; `close` leaves the statistics
//!   alone (`Status.close` only flags the current bucket).
//! * Failure — `handleError` -> `fail`: `failures` is incremented (the
//!   `failure` listener), then: nothing during the warm-up; nothing when
//!   `stats.fires < volumeThreshold` and not half-open; otherwise open when
//!   `failures / fires * 100 > errorThresholdPercentage`, or when
//!   half-open whatever the rate. `open()` does nothing when already open.
//!   An `errorFilter` that accepts the error emits `success` instead: the
//!   `Ignored` outcome is modelled that way.
//! * Warm-up — the constructor, with `allowWarmUp`, sets `WARMING_UP`
//!   and a timeout of `rollingCountTimeout` that clears it.
//! * Statistics — `lib/status.js`: `rollingCountBuckets` buckets, the
//!   current at index 0, `stats` sums all of them; a `setInterval` of
//!   `Math.floor(rollingCountTimeout / rollingCountBuckets)` ms from the
//!   constructor pops the oldest and puts an empty one in front. Nothing
//!   else ever empties them.
//!
//! Timers are exact here (virtual time); where a timer and a call fall on
//! the same instant, the timer runs first. Times are microseconds since
//! the breaker was built.

use super::{End, Reference, St};

/// The options the differential test varies (opossum's names, its units:
/// milliseconds).
#[derive(Debug, Clone)]
pub(super) struct OpossumOptions {
    pub(super) error_threshold_percentage: u32,
    pub(super) reset_timeout_ms: u64,
    pub(super) rolling_count_timeout_ms: u64,
    pub(super) rolling_count_buckets: u64,
    pub(super) volume_threshold: u64,
    pub(super) allow_warm_up: bool,
}

#[derive(Debug, Clone, Copy, Default)]
struct Bucket {
    fires: u64,
    failures: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Circuit {
    Closed,
    /// With the time (µs) the reset timer fires.
    Open {
        reset_at: u64,
    },
    HalfOpen,
}

/// One opossum circuit.
#[derive(Debug, Clone)]
pub(super) struct Opossum {
    o: OpossumOptions,
    circuit: Circuit,
    pending_close: bool,
    /// The window, index 0 current.
    window: Vec<Bucket>,
    /// Rotations done so far.
    rotations: u64,
}

impl Opossum {
    pub(super) fn new(o: OpossumOptions) -> Self {
        let window = vec![Bucket::default(); o.rolling_count_buckets as usize];
        Opossum {
            o,
            circuit: Circuit::Closed,
            pending_close: false,
            window,
            rotations: 0,
        }
    }

    /// The bucket interval in µs.
    fn interval_us(&self) -> u64 {
        (self.o.rolling_count_timeout_ms / self.o.rolling_count_buckets) * 1000
    }

    /// Every timer due by `t` fires: rotations, then the reset timer.
    fn timers(&mut self, t: u64) {
        let due = t / self.interval_us();
        while self.rotations < due {
            self.window.pop();
            self.window.insert(0, Bucket::default());
            self.rotations += 1;
        }
        if let Circuit::Open { reset_at } = self.circuit
            && t >= reset_at
        {
            self.circuit = Circuit::HalfOpen;
            self.pending_close = true;
        }
    }

    fn warming_up(&self, t: u64) -> bool {
        self.o.allow_warm_up && t < self.o.rolling_count_timeout_ms * 1000
    }

    fn open(&mut self, t: u64) {
        if !matches!(self.circuit, Circuit::Open { .. }) {
            self.circuit = Circuit::Open {
                reset_at: t + self.o.reset_timeout_ms * 1000,
            };
            self.pending_close = false;
        }
    }

    /// `fail(circuit, ...)`.
    fn fail(&mut self, t: u64) {
        self.window[0].failures += 1;
        if self.warming_up(t) {
            return;
        }
        let fires: u64 = self.window.iter().map(|b| b.fires).sum();
        let failures: u64 = self.window.iter().map(|b| b.failures).sum();
        let half_open = self.circuit == Circuit::HalfOpen;
        if fires < self.o.volume_threshold && !half_open {
            return;
        }
        let error_rate = failures as f64 / fires as f64 * 100.0;
        if error_rate > f64::from(self.o.error_threshold_percentage) || half_open {
            self.open(t);
        }
    }
}

impl Reference for Opossum {
    fn acquire(&mut self, t: u64) -> bool {
        self.timers(t);
        self.window[0].fires += 1;
        if self.circuit != Circuit::Closed && !self.pending_close {
            return false;
        }
        self.pending_close = false;
        true
    }

    fn finish(&mut self, end: End, _start: u64, t: u64) {
        self.timers(t);
        match end {
            End::Failure => self.fail(t),
            End::Success | End::Ignored => {
                if self.circuit == Circuit::HalfOpen {
                    self.circuit = Circuit::Closed;
                    self.pending_close = false;
                }
            }
        }
    }

    /// opossum has no cancellation; the tests never send one.
    fn cancel(&mut self, t: u64) {
        self.timers(t);
    }

    fn timer(&mut self, t: u64) {
        self.timers(t);
    }

    fn state(&self) -> St {
        match self.circuit {
            Circuit::Closed => St::Closed,
            Circuit::Open { .. } => St::Open,
            Circuit::HalfOpen => St::HalfOpen,
        }
    }

    fn deadline(&self) -> Option<u64> {
        match self.circuit {
            Circuit::Open { reset_at } => Some(reset_at),
            _ => None,
        }
    }
}
