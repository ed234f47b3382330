//! The `opossum` model: opossum's circuit (nodeshift/opossum 10,
//! `lib/circuit.js` and `lib/status.js`) restated in firedrill's machine.
//!
//! * Every call that reaches the breaker is a *fire*, counted when it
//!   arrives: the ones rejected while open or half-open included (`call`
//!   emits `fire` before it looks at the state).
//! * The statistics are `buckets` buckets of `rolling_window / buckets`
//!   whole milliseconds, rotated on a timer from the breaker's start
//!   (`Status`'s `setInterval`); a fire counts in the bucket it arrives in,
//!   a failure in the bucket it ends in, so a long call's failure can
//!   outlive its fire. Nothing resets them: opening and closing only mark
//!   the current bucket.
//! * Only a failure is judged (`fail`): during the warm-up (the first
//!   `rolling_window`, with `warm_up`) nothing; in closed, it opens when
//!   the window holds at least `volume_threshold` fires and
//!   `failures / fires * 100` is strictly above the threshold (a failure
//!   whose fire has left the window makes it infinite). A success never
//!   opens it.
//! * `wait_in_open` after opening a timer moves it to half-open
//!   (`_startTimer` on the `open` event); the next call is the one probe
//!   (`PENDING_CLOSE`), every other call is rejected until a result: any
//!   success closes (the `success` listener closes a half-open circuit,
//!   whichever call it came from), any failure reopens with a fresh wait
//!   (`fail` opens a half-open circuit whatever the counts).
//!
//! firedrill's own additions: a 4xx the classifier ignores counts as a
//! success (an error the `errorFilter` lets through is a success in
//! opossum); a probe cancelled by its caller gives the probe back (opossum
//! has no cancellation), so half-open cannot get stuck.

use super::config::OpossumConfig;
use super::journal::Reason;
use super::model::{Call, Model, Verdict};
use super::rolling::{Edges, SecondBuckets, Tally};
use crate::clock::{Duration, Instant};

/// State of the opossum model.
#[derive(Debug)]
pub(crate) struct OpossumModel {
    /// Parameters.
    config: OpossumConfig,
    /// Fires (`calls`) and failures per bucket, never reset.
    window: SecondBuckets,
    /// When the warm-up ends (`None` without one).
    warm_until: Option<Instant>,
    /// The half-open probe is still to be taken (opossum's
    /// `PENDING_CLOSE`).
    probe_free: bool,
}

impl OpossumModel {
    pub(crate) fn new(config: OpossumConfig, base: Instant) -> Self {
        let window = SecondBuckets::of_width(
            u64::from(config.buckets),
            config.bucket(),
            Edges {
                base,
                offset: Duration::ZERO,
            },
        );
        let warm_until = config.warm_up.then(|| base + config.rolling_window);
        OpossumModel {
            config,
            window,
            warm_until,
            probe_free: false,
        }
    }

    /// Counts a failure at `now`; whether the warm-up is over.
    fn count_failure(&mut self, now: Instant) -> bool {
        self.window.record(
            Tally {
                failures: 1,
                ..Tally::default()
            },
            now,
        );
        self.warm_until.is_none_or(|end| now >= end)
    }
}

impl Model for OpossumModel {
    fn wait_key(&self) -> &'static str {
        "wait_in_open"
    }

    fn open_wait(&self, _opens_in_a_row: u32) -> Duration {
        self.config.wait_in_open
    }

    /// opossum's reset timer moves the circuit on its own.
    fn automatic_half_open(&self) -> bool {
        true
    }

    fn enter_closed(&mut self) {}

    fn fired(&mut self, now: Instant) {
        self.window.record(Tally::one(false, false), now);
    }

    fn record_closed(&mut self, call: Call, now: Instant) -> Option<Reason> {
        if !call.failed || !self.count_failure(now) {
            return None;
        }
        let total = self.window.total(now);
        if total.calls < self.config.volume_threshold {
            return None;
        }
        // opossum's own expression, in f64 as JavaScript numbers are.
        let rate = f64::from(total.failures) / f64::from(total.calls) * 100.0;
        let threshold = self.config.failure_rate_threshold.percent();
        // opossum's `errorRate`, over fires (the journal's "requests").
        (rate > threshold).then_some(Reason::Ratio {
            metric: "error_rate",
            ratio: rate,
            threshold,
            requests: total.calls,
        })
    }

    fn record_open(&mut self, call: Call, now: Instant) {
        if call.failed {
            self.count_failure(now);
        }
    }

    fn ignored_is_a_good_call(&self) -> bool {
        true
    }

    fn enter_half_open(&mut self, _now: Instant) {
        self.probe_free = true;
    }

    fn admit_half_open(&mut self) -> bool {
        std::mem::take(&mut self.probe_free)
    }

    fn release_half_open(&mut self, trial: bool) {
        if trial {
            self.probe_free = true;
        }
    }

    fn record_half_open(&mut self, call: Call, _trial: bool, now: Instant) -> Verdict {
        if !call.failed {
            return Verdict::Close(Reason::ProbesOk { ok: 1, needed: 1 });
        }
        // The warm-up is over by now: nothing opens the breaker before it
        // ends, so half-open cannot come earlier.
        self.count_failure(now);
        Verdict::Open(Reason::ProbeFailed { ok: 0, needed: 1 })
    }

    fn half_open_deadline(&self) -> Option<Instant> {
        None
    }

    fn half_open_deadline_passed(&mut self, _at: Instant) -> Verdict {
        Verdict::Pending
    }
}
