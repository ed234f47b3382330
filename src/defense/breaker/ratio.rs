//! The `ratio` model (Sentinel / Alibaba MSE): an error or slow ratio over
//! per-second buckets of `stat_window`; recovery by one probe or by
//! progressive stages that admit k/phases of the traffic.

use super::config::{RatioConfig, Recovery, ThresholdType};
use super::journal::Reason;
use super::model::{Call, Model, Verdict};
use super::rolling::{SecondBuckets, Tally};
use crate::clock::{Duration, Instant};

/// State of the ratio model.
#[derive(Debug)]
pub(crate) struct RatioModel {
    /// Parameters.
    config: RatioConfig,
    /// Requests of the last `stat_window` (closed); a bad request is
    /// counted in `failures`.
    stats: SecondBuckets,
    /// Single probe: whether the probe slot is taken.
    probe_in_flight: bool,
    /// Progressive: current stage, 1-based.
    stage: u32,
    /// Progressive: when the current stage started.
    stage_since: Instant,
    /// Progressive: requests offered to this stage (admitted or not), which
    /// makes the admitted share exactly k/phases.
    stage_offered: u64,
    /// Progressive: finished requests of this stage.
    stage_tally: Tally,
}

impl RatioModel {
    pub(crate) fn new(config: RatioConfig, base: Instant) -> Self {
        let stats = SecondBuckets::new(config.stat_window.as_secs(), base);
        RatioModel {
            config,
            stats,
            probe_in_flight: false,
            stage: 1,
            stage_since: base,
            stage_offered: 0,
            stage_tally: Tally::default(),
        }
    }

    /// Whether the call counts as bad for the configured threshold type
    /// (slow means strictly above `max_rt`).
    fn bad(&self, call: Call) -> bool {
        match self.config.threshold_type {
            ThresholdType::ErrorRatio => call.failed,
            ThresholdType::SlowRatio { max_rt } => call.duration > max_rt,
        }
    }

    /// Sentinel's rule: the ratio must exceed the threshold, or equal it
    /// when the threshold is 100 %.
    fn exceeded(&self, t: Tally) -> Option<Reason> {
        let threshold = self.config.threshold.percent();
        let ratio = t.failure_rate();
        let over = ratio > threshold || (threshold >= 100.0 && ratio >= 100.0);
        over.then_some(Reason::Ratio {
            metric: match self.config.threshold_type {
                ThresholdType::ErrorRatio => "error_ratio",
                ThresholdType::SlowRatio { .. } => "slow_ratio",
            },
            ratio,
            threshold,
            requests: t.calls,
        })
    }

    fn start_stage(&mut self, stage: u32, now: Instant) {
        self.stage = stage;
        self.stage_since = now;
        self.stage_offered = 0;
        self.stage_tally = Tally::default();
    }

    /// Moves past the current stage: the next one, or closed after the last.
    fn next_stage(&mut self, phases: u32, now: Instant) -> Verdict {
        if self.stage >= phases {
            Verdict::Close(Reason::PhasesPassed { phases })
        } else {
            self.start_stage(self.stage + 1, now);
            Verdict::NextStage
        }
    }
}

/// Whether the `offered`-th request (0-based) of stage `k` of `n` passes:
/// the admitted count after j requests is ceil(j·k/n), so exactly k/n of
/// the traffic passes, evenly spread, the first request included.
fn stage_admits(offered: u64, k: u32, n: u32) -> bool {
    let (k, n) = (u64::from(k), u64::from(n));
    ((offered + 1) * k).div_ceil(n) > (offered * k).div_ceil(n)
}

impl Model for RatioModel {
    fn wait_key(&self) -> &'static str {
        "breaker_duration"
    }

    fn open_wait(&self, _opens_in_a_row: u32) -> Duration {
        self.config.breaker_duration
    }

    fn enter_closed(&mut self) {
        self.stats.clear();
    }

    fn record_closed(&mut self, call: Call, now: Instant) -> Option<Reason> {
        let total = self.stats.record(Tally::one(self.bad(call), false), now);
        if total.calls < self.config.minimum_requests {
            return None;
        }
        self.exceeded(total)
    }

    fn enter_half_open(&mut self, now: Instant) {
        self.probe_in_flight = false;
        self.start_stage(1, now);
    }

    fn admit_half_open(&mut self) -> bool {
        match self.config.recovery {
            Recovery::SingleProbe => !std::mem::replace(&mut self.probe_in_flight, true),
            Recovery::Progressive { phases, .. } => {
                let offered = self.stage_offered;
                self.stage_offered += 1;
                stage_admits(offered, self.stage, phases)
            }
        }
    }

    fn release_half_open(&mut self) {
        self.probe_in_flight = false;
    }

    fn record_half_open(&mut self, call: Call, now: Instant) -> Verdict {
        let bad = self.bad(call);
        match self.config.recovery {
            Recovery::SingleProbe => {
                self.probe_in_flight = false;
                if bad {
                    Verdict::Open(Reason::ProbeFailed { ok: 0, needed: 1 })
                } else {
                    Verdict::Close(Reason::ProbesOk { ok: 1, needed: 1 })
                }
            }
            Recovery::Progressive {
                phases,
                min_passes_per_phase,
                ..
            } => {
                self.stage_tally.add(Tally::one(bad, false));
                if self.stage_tally.calls < min_passes_per_phase {
                    return Verdict::Pending;
                }
                match self.exceeded(self.stage_tally) {
                    Some(reason) => Verdict::Open(reason),
                    None => self.next_stage(phases, now),
                }
            }
        }
    }

    fn half_open_deadline(&self) -> Option<Instant> {
        match self.config.recovery {
            Recovery::SingleProbe => None,
            Recovery::Progressive { phase_duration, .. } => Some(self.stage_since + phase_duration),
        }
    }

    fn half_open_deadline_passed(&mut self, at: Instant) -> Verdict {
        match self.config.recovery {
            Recovery::SingleProbe => Verdict::Pending,
            // Judged stages never reach their deadline, so this stage saw
            // fewer requests than the minimum: it moves on.
            Recovery::Progressive { phases, .. } => self.next_stage(phases, at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::stage_admits;

    #[test]
    fn stage_k_of_n_admits_exactly_k_nths_starting_with_the_first_request() {
        for (k, expected) in [(1, 100), (2, 200), (3, 300)] {
            let admitted = (0..300).filter(|&j| stage_admits(j, k, 3)).count();
            assert_eq!(admitted, expected, "stage {k}/3");
            assert!(stage_admits(0, k, 3));
        }
    }
}
