//! The `consecutive` model: N failures in a row open the breaker; in
//! half-open one probe at a time, and `success_threshold` good probes in a
//! row close it.

use super::config::ConsecutiveConfig;
use super::journal::Reason;
use super::model::{Call, Model, Verdict};
use crate::clock::{Duration, Instant};

/// State of the consecutive model.
#[derive(Debug)]
pub(crate) struct ConsecutiveModel {
    /// Parameters.
    config: ConsecutiveConfig,
    /// Failures since the last success (closed).
    failures_in_a_row: u32,
    /// Whether the single probe slot is taken (half-open).
    probe_in_flight: bool,
    /// Successful probes in this half-open episode.
    probes_ok: u32,
}

impl ConsecutiveModel {
    pub(crate) fn new(config: ConsecutiveConfig) -> Self {
        ConsecutiveModel {
            config,
            failures_in_a_row: 0,
            probe_in_flight: false,
            probes_ok: 0,
        }
    }
}

impl Model for ConsecutiveModel {
    fn wait_key(&self) -> &'static str {
        "wait_in_open"
    }

    fn open_wait(&self, _opens_in_a_row: u32) -> Duration {
        self.config.wait_in_open
    }

    fn enter_closed(&mut self) {
        self.failures_in_a_row = 0;
    }

    fn record_closed(&mut self, call: Call, _now: Instant) -> Option<Reason> {
        if !call.failed {
            self.failures_in_a_row = 0;
            return None;
        }
        self.failures_in_a_row += 1;
        (self.failures_in_a_row >= self.config.failure_threshold).then_some(
            Reason::ConsecutiveFailures {
                failures: self.failures_in_a_row,
                threshold: self.config.failure_threshold,
            },
        )
    }

    fn enter_half_open(&mut self, _now: Instant) {
        self.probe_in_flight = false;
        self.probes_ok = 0;
    }

    fn admit_half_open(&mut self) -> bool {
        !std::mem::replace(&mut self.probe_in_flight, true)
    }

    fn release_half_open(&mut self, trial: bool) {
        if trial {
            self.probe_in_flight = false;
        }
    }

    fn record_half_open(&mut self, call: Call, trial: bool, _now: Instant) -> Verdict {
        if trial {
            self.probe_in_flight = false;
        }
        let needed = self.config.success_threshold;
        if call.failed {
            return Verdict::Open(Reason::ProbeFailed {
                ok: self.probes_ok,
                needed,
            });
        }
        self.probes_ok += 1;
        if self.probes_ok >= needed {
            Verdict::Close(Reason::ProbesOk {
                ok: self.probes_ok,
                needed,
            })
        } else {
            Verdict::Pending
        }
    }

    fn half_open_deadline(&self) -> Option<Instant> {
        None
    }

    fn half_open_deadline_passed(&mut self, _at: Instant) -> Verdict {
        Verdict::Pending
    }
}
