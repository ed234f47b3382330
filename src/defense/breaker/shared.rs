//! A breaker shared across tasks, and the guard that makes every admitted
//! call report exactly one outcome on every path.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::journal::{Counters, Transition};
use super::machine::Breaker;
use super::outcome::Outcome;
use super::state::{Permit, Rejected, State};
use crate::clock::{self, Duration, Instant};

/// A [`Breaker`] behind `Arc<Mutex<_>>`; clones share one breaker. The lock
/// is held only for the few microseconds of a state-machine step, never
/// across an await.
#[derive(Debug, Clone)]
pub struct SharedBreaker {
    /// The machine; a poisoned lock is recovered (the machine keeps no
    /// invariant a panicking caller could have broken half-way).
    inner: Arc<Mutex<Breaker>>,
}

impl SharedBreaker {
    /// Shares `breaker`.
    pub fn new(breaker: Breaker) -> Self {
        SharedBreaker {
            inner: Arc::new(Mutex::new(breaker)),
        }
    }

    /// Locks the machine for direct use (tests, reports, operators).
    pub fn lock(&self) -> MutexGuard<'_, Breaker> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Admits or rejects a call; the guard reports its outcome.
    pub fn try_acquire(&self, now: Instant) -> Result<CallGuard, Rejected> {
        let permit = self.lock().try_acquire(now)?;
        Ok(CallGuard {
            breaker: self.clone(),
            permit: Some(permit),
        })
    }

    /// The current state.
    pub fn state(&self) -> State {
        self.lock().state()
    }

    /// A copy of the counters.
    pub fn counters(&self) -> Counters {
        self.lock().counters().clone()
    }

    /// Takes the transitions recorded since the last call.
    pub fn take_journal(&self) -> Vec<Transition> {
        self.lock().take_journal()
    }
}

/// One admitted call. Report its outcome with [`CallGuard::record`]; if the
/// guard is dropped first (cancelled future, client disconnect, panic), the
/// call is released as a cancellation at the tokio clock's current instant.
#[derive(Debug)]
#[must_use = "dropping the guard at once records a cancellation"]
pub struct CallGuard {
    /// The breaker that admitted the call.
    breaker: SharedBreaker,
    /// `Some` until an outcome is reported.
    permit: Option<Permit>,
}

impl CallGuard {
    /// The state that admitted the call.
    pub fn admitted_in(&self) -> Option<State> {
        self.permit.as_ref().map(Permit::state)
    }

    /// Reports the outcome; consumes the guard.
    pub fn record(mut self, outcome: Outcome, duration: Duration, now: Instant) {
        if let Some(permit) = self.permit.take() {
            self.breaker.lock().record(permit, outcome, duration, now);
        }
    }

    /// Reports that the call ended without an outcome; consumes the guard.
    pub fn cancel(mut self, now: Instant) {
        if let Some(permit) = self.permit.take() {
            self.breaker.lock().release_without_outcome(permit, now);
        }
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        if let Some(permit) = self.permit.take() {
            self.breaker
                .lock()
                .release_without_outcome(permit, clock::now());
        }
    }
}
