//! The `ratio` model (Sentinel / Alibaba MSE): an error or slow ratio over
//! one tumbling window of `stat_window` (Sentinel's circuit breakers) or,
//! as an option, one-second buckets sliding over it; recovery by one probe
//! or by progressive stages that admit k/phases of the traffic.

use super::config::{RatioConfig, Recovery, ThresholdType, WindowShape};
use super::journal::Reason;
use super::model::{Call, Model, Verdict};
use super::rolling::{Edges, SecondBuckets, Tally, TumblingWindow};
use crate::clock::{Duration, Instant};

/// State of the ratio model.
#[derive(Debug)]
pub(crate) struct RatioModel {
    /// Parameters.
    config: RatioConfig,
    /// Requests of the statistics window (closed); a bad request is
    /// counted in `failures`.
    stats: Stats,
    /// Where window and millisecond edges fall.
    edges: Edges,
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

/// The closed-state statistics, by window shape.
#[derive(Debug)]
enum Stats {
    Tumbling(TumblingWindow),
    Sliding(SecondBuckets),
}

impl RatioModel {
    pub(crate) fn new(config: RatioConfig, base: Instant) -> Self {
        let edges = Edges {
            base,
            offset: config.window_offset,
        };
        let stats = match config.stat_window_shape {
            WindowShape::Tumbling => {
                Stats::Tumbling(TumblingWindow::new(config.stat_window, edges))
            }
            WindowShape::Sliding => {
                Stats::Sliding(SecondBuckets::new(config.stat_window.as_secs(), edges))
            }
        };
        RatioModel {
            config,
            stats,
            edges,
            probe_in_flight: false,
            stage: 1,
            stage_since: base,
            stage_offered: 0,
            stage_tally: Tally::default(),
        }
    }

    /// Whether the call that ended at `now` counts as bad for the
    /// configured threshold type. Slow means a response time above
    /// `max_rt` rounded to whole milliseconds, measured as Sentinel does:
    /// the millisecond clock at the end minus the one at the start.
    fn bad(&self, call: Call, now: Instant) -> bool {
        match self.config.threshold_type {
            ThresholdType::ErrorRatio => call.failed,
            ThresholdType::SlowRatio { max_rt } => {
                let edges = self.edges;
                let end = (now.saturating_duration_since(edges.base) + edges.offset).as_nanos();
                let start = end as i128 - call.duration.as_nanos() as i128;
                let ms = 1_000_000;
                let rt = (end as i128).div_euclid(ms) - start.div_euclid(ms);
                // Sentinel's `maxAllowedRt = Math.round(rule.getCount())`:
                // a fractional `max_rt` rounds half up to whole milliseconds.
                let max_ms = (max_rt.as_nanos() + 500_000) / 1_000_000;
                rt > max_ms as i128
            }
        }
    }

    /// Sentinel's rule: the ratio must exceed the threshold; a slow-ratio
    /// threshold of 100 % also opens at 100 % (an error ratio of 100 %
    /// never opens: no ratio exceeds it).
    fn exceeded(&self, t: Tally) -> Option<Reason> {
        let threshold = self.config.threshold.percent();
        let ratio = t.failure_rate();
        let slow = matches!(self.config.threshold_type, ThresholdType::SlowRatio { .. });
        let over = ratio > threshold || (slow && threshold >= 100.0 && ratio >= 100.0);
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

    fn ignored_is_a_good_call(&self) -> bool {
        true
    }

    /// Sentinel's retry time is the millisecond clock at the open plus the
    /// duration: the wait starts at the start of that millisecond.
    fn open_until(&self, at: Instant, wait: Duration) -> Instant {
        let since = at.saturating_duration_since(self.edges.base) + self.edges.offset;
        let into_ms = Duration::from_nanos((since.as_nanos() % 1_000_000) as u64);
        at.checked_sub(into_ms).unwrap_or(at) + wait
    }

    fn enter_closed(&mut self) {
        match &mut self.stats {
            Stats::Tumbling(w) => w.clear(),
            Stats::Sliding(w) => w.clear(),
        }
    }

    fn record_closed(&mut self, call: Call, now: Instant) -> Option<Reason> {
        let one = Tally::one(self.bad(call, now), false);
        let total = match &mut self.stats {
            Stats::Tumbling(w) => w.record(one, now),
            Stats::Sliding(w) => w.record(one, now),
        };
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

    fn release_half_open(&mut self, trial: bool) {
        if trial {
            self.probe_in_flight = false;
        }
    }

    /// Sentinel: any request that completes in half-open decides, the
    /// probe or a straggler.
    fn record_half_open(&mut self, call: Call, trial: bool, now: Instant) -> Verdict {
        let bad = self.bad(call, now);
        match self.config.recovery {
            Recovery::SingleProbe => {
                if trial {
                    self.probe_in_flight = false;
                }
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
