//! Latencies kept as counts, in bounded memory: exact while they take few
//! distinct values (a virtual clock moves in whole milliseconds, so a
//! virtual-time run's figures are exact), coarsened once there are more
//! than `LIMIT` of them (a real clock gives every request its own
//! nanosecond latency: kept exactly, a long run would keep one entry per
//! request).
//!
//! Coarsening keeps fewer significant bits of each latency in nanoseconds,
//! one bit less each time the distinct values exceed `LIMIT`, so the
//! precision is as fine as `LIMIT` entries allow (relative error below
//! 2^-(bits-1)). A coarsened latency stands for the highest value of its
//! bucket, so a figure is never stated below what was measured: an upper
//! bound that failed exactly still fails. The result depends on the set
//! of latencies only, not on the order they came in.

use std::collections::BTreeMap;

use crate::clock::Duration;

/// A multiset of latencies with at most `LIMIT` distinct values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Latencies<const LIMIT: usize> {
    /// Each latency (its bucket's highest value once coarsened) with how
    /// many had it.
    counts: BTreeMap<Duration, u64>,
    /// Significant bits kept of each latency in nanoseconds; 64: exact.
    bits: u32,
}

impl<const LIMIT: usize> Default for Latencies<LIMIT> {
    fn default() -> Self {
        Latencies {
            counts: BTreeMap::new(),
            bits: u64::BITS,
        }
    }
}

impl<const LIMIT: usize> Latencies<LIMIT> {
    /// Counts one latency.
    pub fn add(&mut self, latency: Duration) {
        self.add_times(latency, 1);
    }

    /// Counts every latency of `other` as well.
    pub fn merge(&mut self, other: &Self) {
        for (latency, n) in &other.counts {
            self.add_times(*latency, *n);
        }
    }

    /// Counts `latency` `n` times.
    fn add_times(&mut self, latency: Duration, n: u64) {
        *self.counts.entry(coarse(latency, self.bits)).or_default() += n;
        while self.counts.len() > LIMIT && self.bits > 1 {
            self.bits -= 1;
            let bits = self.bits;
            let mut merged = BTreeMap::new();
            for (latency, n) in std::mem::take(&mut self.counts) {
                *merged.entry(coarse(latency, bits)).or_default() += n;
            }
            self.counts = merged;
        }
    }

    /// How many latencies were counted.
    pub fn count(&self) -> u64 {
        self.counts.values().sum()
    }

    /// Distinct values kept (at most `LIMIT`).
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    /// Whether none was counted.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// Whether every latency is kept exactly.
    pub fn exact(&self) -> bool {
        self.bits == u64::BITS
    }

    /// The `rank`-th smallest latency (1-based), if there are that many.
    pub fn at_rank(&self, rank: u64) -> Option<Duration> {
        let mut seen = 0;
        self.counts.iter().find_map(|(latency, n)| {
            seen += n;
            (seen >= rank).then_some(*latency)
        })
    }

    /// The nearest-rank percentile `p` (0..=100): the smallest latency at
    /// or above which `p`% of them lie.
    pub fn percentile(&self, p: f64) -> Option<Duration> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = ((p / 100.0 * n as f64).ceil() as u64).clamp(1, n);
        self.at_rank(rank)
    }

    /// The largest latency.
    pub fn max(&self) -> Option<Duration> {
        self.counts.keys().next_back().copied()
    }
}

/// `latency` with `bits` significant bits of its nanoseconds kept, the
/// rest set: the highest value of its bucket.
fn coarse(latency: Duration, bits: u32) -> Duration {
    let nanos = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX);
    let dropped = (u64::BITS - nanos.leading_zeros()).saturating_sub(bits);
    if dropped == 0 {
        return latency;
    }
    Duration::from_nanos(nanos | ((1u64 << dropped) - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_distinct_latencies_are_kept_exactly() {
        let mut l = Latencies::<8>::default();
        for ms in [5, 1, 5, 3, 2, 8, 13, 21] {
            l.add(Duration::from_millis(ms));
        }
        assert!(l.exact());
        assert_eq!(l.count(), 8);
        assert_eq!(l.percentile(50.0), Some(Duration::from_millis(5)));
        assert_eq!(l.max(), Some(Duration::from_millis(21)));
    }

    #[test]
    fn a_latency_per_request_keeps_at_most_limit_values_whatever_the_count() {
        let mut l = Latencies::<64>::default();
        for i in 0..100_000u64 {
            l.add(Duration::from_nanos(1_000_000 + i * 7_919));
        }
        assert!(l.len() <= 64, "{} values kept", l.len());
        assert_eq!(l.count(), 100_000);
    }

    #[test]
    fn coarsened_figures_are_never_below_the_exact_ones_and_close_to_them() {
        let values: Vec<Duration> = (0..10_000u64)
            .map(|i| Duration::from_nanos(2_000_000 + (i * 104_729) % 3_000_000))
            .collect();
        let mut coarse = Latencies::<256>::default();
        let mut exact = Latencies::<{ usize::MAX }>::default();
        for v in &values {
            coarse.add(*v);
            exact.add(*v);
        }
        assert!(!coarse.exact() && exact.exact());
        for p in [1.0, 50.0, 90.0, 99.0, 100.0] {
            let (c, e) = (coarse.percentile(p).unwrap(), exact.percentile(p).unwrap());
            assert!(c >= e, "p{p}: {c:?} < {e:?}");
            // 256 values over less than one octave: 8 bits kept at least.
            assert!(c - e <= e / 128, "p{p}: {c:?} far from {e:?}");
        }
    }

    #[test]
    fn the_result_does_not_depend_on_the_order_latencies_came_in() {
        let values: Vec<Duration> = (0..5_000u64)
            .map(|i| Duration::from_nanos((i * 2_654_435_761) % 50_000_000))
            .collect();
        let (mut forward, mut backward) =
            (Latencies::<100>::default(), Latencies::<100>::default());
        values.iter().for_each(|v| forward.add(*v));
        values.iter().rev().for_each(|v| backward.add(*v));
        assert_eq!(forward, backward);
    }
}
