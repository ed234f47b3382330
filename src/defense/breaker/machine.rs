//! The circuit breaker as a pure state machine: no I/O, no clock of its
//! own; every entry point takes `now`, so virtual time drives it exactly.

use super::config::{BreakerConfig, Stragglers};
use super::journal::{Counters, Reason, Transition};
use super::model::{Call, Model, Verdict};
use super::outcome::{Classifier, Outcome};
use super::state::{Permit, Rejected, State};
use crate::clock::{Duration, Instant};

/// The state with the data only that state needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Closed,
    Open {
        /// When the wait ends.
        until: Instant,
        /// The wait, after any backoff growth (for the reason).
        wait: Duration,
    },
    HalfOpen,
    ForcedOpen,
    Disabled,
}

/// One circuit breaker.
///
/// Cancellation policy: [`Breaker::release_without_outcome`] counts the call
/// as neither success nor failure (like an ignored 4xx) — a client that
/// hangs up says nothing about the dependency — and frees its half-open
/// slot, so another trial call can take it and half-open never gets stuck.
#[derive(Debug)]
pub struct Breaker {
    /// Name written into every transition.
    name: String,
    /// The instant journal times are measured from.
    run_start: Instant,
    /// What counts as failure; kept here so the middleware asks the breaker.
    classifier: Classifier,
    /// The decision model.
    model: Box<dyn Model>,
    /// Current state.
    phase: Phase,
    /// Bumped on every transition and progressive stage; permits carry it.
    episode: u64,
    /// Transitions so far; permits carry it.
    transitions: u64,
    /// What a straggler's outcome does.
    stragglers: Stragglers,
    /// Opens since the breaker last closed (drives wait backoff).
    opens_in_a_row: u32,
    /// Every transition so far, oldest first.
    journal: Vec<Transition>,
    /// Admissions, rejections and outcomes.
    counters: Counters,
}

impl Breaker {
    /// A closed breaker; journal times count from `run_start`.
    pub fn new(config: &BreakerConfig, run_start: Instant) -> Self {
        let model = config.model.start(run_start);
        Breaker {
            name: config.name.clone(),
            run_start,
            classifier: config.classifier.clone(),
            model,
            phase: Phase::Closed,
            episode: 0,
            transitions: 0,
            stragglers: config.stragglers,
            opens_in_a_row: 0,
            journal: Vec::new(),
            counters: Counters::default(),
        }
    }

    /// The breaker's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The closed-state failure rate in percent once the window can decide
    /// (window model); `None` otherwise.
    pub fn failure_rate(&self) -> Option<f64> {
        self.model.failure_rate()
    }

    /// The current state (as of the last call into the machine).
    pub fn state(&self) -> State {
        match self.phase {
            Phase::Closed => State::Closed,
            Phase::Open { .. } => State::Open,
            Phase::HalfOpen => State::HalfOpen,
            Phase::ForcedOpen => State::ForcedOpen,
            Phase::Disabled => State::Disabled,
        }
    }

    /// The current episode: bumped by every transition and progressive
    /// stage; a [`Permit`] from another episode is a straggler.
    pub fn episode(&self) -> u64 {
        self.episode
    }

    /// The classifier configured for this breaker.
    pub fn classifier(&self) -> &Classifier {
        &self.classifier
    }

    /// Every transition so far, oldest first.
    pub fn journal(&self) -> &[Transition] {
        &self.journal
    }

    /// Takes the transitions recorded since the last call (for writing them
    /// out as they happen).
    pub fn take_journal(&mut self) -> Vec<Transition> {
        std::mem::take(&mut self.journal)
    }

    /// Admissions, rejections and outcomes so far.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Admits or rejects a call at `now`. Open moves to half-open here once
    /// the wait has passed (the call that finds it so is the first trial).
    pub fn try_acquire(&mut self, now: Instant) -> Result<Permit, Rejected> {
        self.advance(now);
        if !matches!(self.phase, Phase::ForcedOpen | Phase::Disabled) {
            self.model.fired(now);
        }
        if let Phase::Open { until, wait } = self.phase {
            if now < until || (now == until && !self.model.admits_at_end_of_wait()) {
                return Err(self.reject(State::Open, Some(until - now)));
            }
            let key = self.model.wait_key();
            self.transition(State::HalfOpen, now, Reason::WaitElapsed { key, wait });
        }
        match self.phase {
            Phase::Closed | Phase::Disabled => Ok(self.admit()),
            Phase::HalfOpen if self.model.admit_half_open() => Ok(self.admit()),
            Phase::HalfOpen => Err(self.reject(State::HalfOpen, None)),
            Phase::ForcedOpen | Phase::Open { .. } => Err(self.reject(self.state(), None)),
        }
    }

    /// Records the outcome of an admitted call that took `duration`.
    /// An outcome from an earlier episode is a straggler: with
    /// [`Stragglers::Count`] it is recorded in the current state (unless
    /// it is only a progressive stage old), with [`Stragglers::Drop`] it is
    /// kept out of the current statistics.
    pub fn record(&mut self, permit: Permit, outcome: Outcome, duration: Duration, now: Instant) {
        self.advance(now);
        let seconds = duration.as_secs_f64();
        match outcome {
            Outcome::Success => {
                self.counters.successes += 1;
                self.counters.success_seconds += seconds;
            }
            Outcome::Failure(_) => {
                self.counters.failures += 1;
                self.counters.failure_seconds += seconds;
            }
            Outcome::Ignored => {
                self.counters.ignored += 1;
                self.counters.ignored_seconds += seconds;
            }
        }
        let straggler = permit.episode != self.episode;
        if straggler {
            self.counters.stragglers += 1;
        }
        let Some(straggler) = self.counted(permit) else {
            return;
        };
        let call = Call {
            failed: matches!(outcome, Outcome::Failure(_)),
            duration,
        };
        let judged = match outcome {
            Outcome::Success | Outcome::Failure(_) => true,
            Outcome::Ignored => self.model.ignored_is_a_good_call(),
        };
        match (self.phase, judged) {
            (Phase::HalfOpen, false) => self.model.release_half_open(!straggler),
            (Phase::HalfOpen, true) => {
                let verdict = self.model.record_half_open(call, !straggler, now);
                self.apply(verdict, now);
            }
            (Phase::Closed, true) => {
                if let Some(reason) = self.model.record_closed(call, now) {
                    self.transition(State::Open, now, reason);
                }
            }
            (Phase::Open { .. }, true) => self.model.record_open(call, now),
            _ => {}
        }
    }

    /// Releases an admitted call that ended without an outcome (cancelled,
    /// client gone): neither success nor failure, and frees a half-open
    /// slot; with `count_cancelled`, a failure (not a slow call: how long
    /// it would have taken is unknown).
    pub fn release_without_outcome(&mut self, permit: Permit, now: Instant) {
        self.counters.cancelled += 1;
        if self.classifier.count_cancelled {
            let failure = Outcome::Failure(super::outcome::FailureKind::Cancelled);
            return self.record(permit, failure, Duration::ZERO, now);
        }
        self.advance(now);
        if let (Some(straggler), Phase::HalfOpen) = (self.counted(permit), self.phase) {
            self.model.release_half_open(!straggler);
        }
    }

    /// Whether a call that ends now counts in the current state, and if so
    /// whether it is a straggler (admitted in an earlier episode). A
    /// straggler counts only with [`Stragglers::Count`] and only when a
    /// transition came between (not just a progressive stage).
    fn counted(&self, permit: Permit) -> Option<bool> {
        let straggler = permit.episode != self.episode;
        let kept = self.stragglers == Stragglers::Count && permit.transitions != self.transitions;
        (!straggler || kept).then_some(straggler)
    }

    /// Operator override: reject everything until [`Breaker::reset`].
    pub fn force_open(&mut self, now: Instant) {
        self.manual(State::ForcedOpen, "force_open", now);
    }

    /// Operator override: admit everything and count nothing until
    /// [`Breaker::reset`].
    pub fn disable(&mut self, now: Instant) {
        self.manual(State::Disabled, "disable", now);
    }

    /// Back to closed with empty statistics, from any state (the `opossum`
    /// model keeps its window, as opossum's own `close()` does).
    pub fn reset(&mut self, now: Instant) {
        if self.phase == Phase::Closed {
            self.model.enter_closed();
            self.opens_in_a_row = 0;
            self.episode += 1;
        } else {
            self.manual(State::Closed, "reset", now);
        }
    }

    /// When the machine next changes state on its own (automatic half-open,
    /// half-open deadlines); the driver calls [`Breaker::on_timer`] then.
    pub fn next_timer(&self) -> Option<Instant> {
        match self.phase {
            Phase::Open { until, .. } if self.model.automatic_half_open() => Some(until),
            Phase::HalfOpen => self.model.half_open_deadline(),
            _ => None,
        }
    }

    /// Applies every timed transition due by `now`.
    pub fn on_timer(&mut self, now: Instant) {
        self.advance(now);
    }

    /// Applies due timed transitions, each stamped at its own deadline, so
    /// the journal is exact however late the machine is next called.
    fn advance(&mut self, now: Instant) {
        loop {
            match self.phase {
                Phase::Open { until, wait } if self.model.automatic_half_open() && now >= until => {
                    let key = self.model.wait_key();
                    self.transition(State::HalfOpen, until, Reason::WaitElapsed { key, wait });
                }
                Phase::HalfOpen => match self.model.half_open_deadline() {
                    Some(deadline) if now >= deadline => {
                        let verdict = self.model.half_open_deadline_passed(deadline);
                        self.apply(verdict, deadline);
                    }
                    _ => return,
                },
                _ => return,
            }
        }
    }

    fn apply(&mut self, verdict: Verdict, at: Instant) {
        match verdict {
            Verdict::Pending => {}
            Verdict::NextStage => self.episode += 1,
            Verdict::Close(reason) => self.transition(State::Closed, at, reason),
            Verdict::Open(reason) => self.transition(State::Open, at, reason),
        }
    }

    fn manual(&mut self, to: State, action: &'static str, now: Instant) {
        self.advance(now);
        if self.state() != to {
            self.transition(to, now, Reason::Manual { action });
        }
    }

    fn admit(&mut self) -> Permit {
        let state = self.state();
        self.counters.admitted.bump(state);
        tracing::trace!(breaker = %self.name, %state, "call admitted");
        Permit {
            episode: self.episode,
            transitions: self.transitions,
            state,
        }
    }

    fn reject(&mut self, state: State, retry_after: Option<Duration>) -> Rejected {
        self.counters.rejected.bump(state);
        tracing::trace!(breaker = %self.name, %state, "call rejected");
        Rejected { state, retry_after }
    }

    fn transition(&mut self, to: State, at: Instant, reason: Reason) {
        let from = self.state();
        tracing::info!(breaker = %self.name, %from, %to, %reason, "breaker transition");
        self.episode += 1;
        self.transitions += 1;
        self.phase = match to {
            State::Closed => {
                self.opens_in_a_row = 0;
                self.model.enter_closed();
                Phase::Closed
            }
            State::Open => {
                self.opens_in_a_row = self.opens_in_a_row.saturating_add(1);
                let wait = self.model.open_wait(self.opens_in_a_row);
                Phase::Open {
                    until: self.model.open_until(at, wait),
                    wait,
                }
            }
            State::HalfOpen => {
                self.model.enter_half_open(at);
                Phase::HalfOpen
            }
            State::ForcedOpen => Phase::ForcedOpen,
            State::Disabled => Phase::Disabled,
        };
        self.journal.push(Transition {
            at: at.saturating_duration_since(self.run_start),
            breaker: self.name.clone(),
            from,
            to,
            reason,
        });
    }
}
