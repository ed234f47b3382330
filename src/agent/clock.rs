//! An agent's clock against the drill's: every call to the agent is a
//! sample (when the drill sent it, when the answer came, what the agent's
//! wall clock said when it answered). The sample with the shortest round
//! trip bounds the agent's time best, as NTP chooses: the agent answered
//! within that round trip, taken at its middle.

use serde::Serialize;

use crate::clock::Duration;

/// One call to an agent, timed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClockSample {
    /// When it was sent, from the drill's start (the tokio clock).
    pub sent: Duration,
    /// When its answer came, from the drill's start.
    pub received: Duration,
    /// The agent's wall clock when it answered, microseconds since the
    /// Unix epoch: firedrill's `x-firedrill-time-us` (exact), else the
    /// HTTP `Date` header (to the second); none without either.
    pub agent_us: Option<u64>,
    /// Whether `agent_us` is to the second only (a `Date` header).
    pub coarse: bool,
    /// The drill's wall clock at the middle of the call, microseconds
    /// since the Unix epoch.
    pub local_us: u64,
}

impl ClockSample {
    /// The round trip.
    pub fn round_trip(&self) -> Duration {
        self.received.saturating_sub(self.sent)
    }

    /// The middle of the call, from the drill's start.
    pub fn middle(&self) -> Duration {
        self.sent + self.round_trip() / 2
    }
}

/// Every sample of one agent.
#[derive(Debug, Clone, Default)]
pub struct Clocks {
    samples: Vec<ClockSample>,
}

/// What the report shows of an agent's clock.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClockSummary {
    /// The agent's wall clock minus the drill's, milliseconds, from the
    /// best sample; none when the agent gave no time.
    pub offset_ms: Option<f64>,
    /// That sample's round trip, milliseconds: the offset is known to
    /// within half of it (and to the second from a `Date` header).
    pub round_trip_ms: f64,
    /// The offset is to the second only (the agent sent only `Date`).
    pub coarse: bool,
    /// How many calls were timed.
    pub samples: usize,
    /// The largest and smallest offset seen across the run, milliseconds
    /// (a drift or a clock step shows as their difference).
    pub offset_range_ms: Option<(f64, f64)>,
}

fn ms(us: f64) -> f64 {
    us.round() / 1000.0
}

impl Clocks {
    /// Adds a sample.
    pub fn push(&mut self, sample: ClockSample) {
        self.samples.push(sample);
    }

    /// The sample with the shortest round trip among those that carry a
    /// time, exact ones first.
    fn best(&self) -> Option<&ClockSample> {
        self.samples
            .iter()
            .filter(|s| s.agent_us.is_some())
            .min_by_key(|s| (s.coarse, s.round_trip()))
    }

    /// Where `agent_us` (the agent's wall clock) falls on the drill's clock,
    /// from its start; none before a sample with a time.
    pub fn to_drill(&self, agent_us: f64) -> Option<Duration> {
        let best = self.best()?;
        let at_us = best.agent_us? as f64;
        let middle_us = best.middle().as_secs_f64() * 1e6;
        let drill_us = agent_us - at_us + middle_us;
        Some(Duration::from_secs_f64((drill_us / 1e6).max(0.0)))
    }

    /// The offset of one sample, microseconds.
    fn offset_us(sample: &ClockSample) -> Option<f64> {
        Some(sample.agent_us? as f64 - sample.local_us as f64)
    }

    /// What the report shows.
    pub fn summary(&self) -> ClockSummary {
        let best = self.best();
        let offsets: Vec<f64> = self
            .samples
            .iter()
            .filter(|s| !s.coarse)
            .filter_map(Self::offset_us)
            .collect();
        let range = offsets.iter().fold(None, |range: Option<(f64, f64)>, &o| {
            Some(range.map_or((o, o), |(lo, hi)| (lo.min(o), hi.max(o))))
        });
        ClockSummary {
            offset_ms: best.and_then(Self::offset_us).map(ms),
            round_trip_ms: best.map_or(0.0, |s| ms(s.round_trip().as_secs_f64() * 1e6)),
            coarse: best.is_some_and(|s| s.coarse),
            samples: self.samples.len(),
            offset_range_ms: range.map(|(lo, hi)| (ms(lo), ms(hi))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(sent_ms: u64, rtt_ms: u64, agent_ms: u64, local_ms: u64) -> ClockSample {
        ClockSample {
            sent: Duration::from_millis(sent_ms),
            received: Duration::from_millis(sent_ms + rtt_ms),
            agent_us: Some(agent_ms * 1000),
            coarse: false,
            local_us: local_ms * 1000,
        }
    }

    #[test]
    fn the_shortest_round_trip_sets_the_mapping_and_the_offset() {
        let mut clocks = Clocks::default();
        // The agent runs 250 ms ahead; the slow call's time is off by its
        // long round trip.
        clocks.push(sample(0, 400, 1_000_450, 1_000_200));
        clocks.push(sample(1000, 2, 1_001_251, 1_001_001));
        let summary = clocks.summary();
        assert_eq!(summary.offset_ms, Some(250.0));
        assert_eq!(summary.round_trip_ms, 2.0);
        assert_eq!(summary.samples, 2);
        assert_eq!(summary.offset_range_ms, Some((250.0, 250.0)));
        // The agent's 1_001_251 ms is the fast call's middle, 1001 ms in.
        let at = clocks.to_drill(1_001_251_000.0 + 500_000.0).unwrap();
        assert_eq!(at, Duration::from_millis(1501));
    }

    #[test]
    fn a_date_header_counts_only_when_no_exact_time_came_and_is_marked_coarse() {
        let mut clocks = Clocks::default();
        assert_eq!(clocks.to_drill(5.0), None);
        assert_eq!(clocks.summary().offset_ms, None);
        clocks.push(ClockSample {
            coarse: true,
            ..sample(0, 1, 1_000_000, 1_000_000)
        });
        assert!(clocks.summary().coarse);
        clocks.push(sample(10, 50, 1_000_035, 1_000_030));
        let summary = clocks.summary();
        assert!(
            !summary.coarse,
            "the exact sample wins despite its round trip"
        );
        assert_eq!(summary.offset_ms, Some(5.0));
    }
}
