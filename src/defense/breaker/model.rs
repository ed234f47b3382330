//! The seam between the common state machine and a decision model: the
//! machine owns states, episodes, timers and the journal; a model only
//! counts calls and says when to move.

use std::fmt;

use super::journal::Reason;
use crate::clock::{Duration, Instant};

/// One judged call (success or failure; ignored outcomes never reach a
/// model's statistics).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Call {
    /// Whether the outcome was a failure.
    pub(crate) failed: bool,
    /// How long the call took (feeds the slow-call rules).
    pub(crate) duration: Duration,
}

/// What a model decides after a half-open event.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict {
    /// Keep probing.
    Pending,
    /// Same state, next progressive stage: calls of the previous stage
    /// become stragglers.
    NextStage,
    /// Recovered.
    Close(Reason),
    /// Still broken.
    Open(Reason),
}

/// A decision model (`window`, `consecutive`, `ratio`, `opossum`).
pub(crate) trait Model: fmt::Debug + Send {
    /// The configuration key of the wait in open, for reasons.
    fn wait_key(&self) -> &'static str;

    /// How long to stay open after the `opens_in_a_row`-th open (1-based)
    /// since the breaker last closed.
    fn open_wait(&self, opens_in_a_row: u32) -> Duration;

    /// Whether open moves to half-open by timer instead of on the next call.
    fn automatic_half_open(&self) -> bool {
        false
    }

    /// The failure rate of the closed-state window in percent, once it holds
    /// enough calls to decide (`None` before, as resilience4j's -1).
    fn failure_rate(&self) -> Option<f64> {
        None
    }

    /// Forget the closed-state statistics (entering closed).
    fn enter_closed(&mut self);

    /// Counts a call made in closed; `Some` opens the breaker.
    fn record_closed(&mut self, call: Call, now: Instant) -> Option<Reason>;

    /// A call arrived at `now` while closed, open or half-open, before the
    /// breaker admits or rejects it (opossum counts every such "fire").
    fn fired(&mut self, _now: Instant) {}

    /// Counts a straggler that finished while open (it never moves the
    /// breaker; opossum still counts its failure in the window).
    fn record_open(&mut self, _call: Call, _now: Instant) {}

    /// Whether an ignored outcome (a 4xx by default) counts as a good call
    /// rather than not at all (Sentinel has no "ignored": a request whose
    /// exception is not traced is a normal request).
    fn ignored_is_a_good_call(&self) -> bool {
        false
    }

    /// When a wait in open of `wait` that starts at `at` ends (Sentinel
    /// reads a millisecond clock, so its wait starts at the millisecond).
    fn open_until(&self, at: Instant, wait: Duration) -> Instant {
        at + wait
    }

    /// Whether a call at exactly the end of the wait in open is admitted
    /// (Sentinel: at or after; resilience4j: strictly after).
    fn admits_at_end_of_wait(&self) -> bool {
        true
    }

    /// Starts a half-open episode at `now`.
    fn enter_half_open(&mut self, now: Instant);

    /// Whether one more trial call may pass now (takes its slot if so).
    fn admit_half_open(&mut self) -> bool;

    /// A call ended in half-open without a verdict (ignored or cancelled):
    /// a trial (`trial`) frees its slot so half-open cannot get stuck; a
    /// straggler's release counts where the library counts it.
    fn release_half_open(&mut self, trial: bool);

    /// Counts a call finished in half-open: a trial (`trial`: it holds one
    /// of this episode's slots, which it gives back) or a straggler.
    fn record_half_open(&mut self, call: Call, trial: bool, now: Instant) -> Verdict;

    /// When half-open must decide without further calls, if ever.
    fn half_open_deadline(&self) -> Option<Instant>;

    /// The half-open deadline passed at `at`.
    fn half_open_deadline_passed(&mut self, at: Instant) -> Verdict;
}
