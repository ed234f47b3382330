//! Rolling call statistics: a ring of the last N calls and fixed-width
//! buckets of the last N widths (one second for `window` and `ratio`, the
//! configured bucket for `opossum`). The models share them.

use std::collections::VecDeque;

use crate::clock::{Duration, Instant};

/// Counts of judged calls (ignored outcomes never get here).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    /// Calls counted.
    pub(crate) calls: u32,
    /// Of which failed.
    pub(crate) failures: u32,
    /// Of which were slow (failed or not).
    pub(crate) slow: u32,
}

impl Tally {
    /// One call.
    pub(crate) fn one(failed: bool, slow: bool) -> Tally {
        Tally {
            calls: 1,
            failures: u32::from(failed),
            slow: u32::from(slow),
        }
    }

    pub(crate) fn add(&mut self, other: Tally) {
        self.calls += other.calls;
        self.failures += other.failures;
        self.slow += other.slow;
    }

    fn sub(&mut self, other: Tally) {
        self.calls -= other.calls;
        self.failures -= other.failures;
        self.slow -= other.slow;
    }

    /// Failure rate in percent (0 when empty).
    pub(crate) fn failure_rate(self) -> f64 {
        rate(self.failures, self.calls)
    }

    /// Slow-call rate in percent (0 when empty).
    pub(crate) fn slow_rate(self) -> f64 {
        rate(self.slow, self.calls)
    }
}

fn rate(part: u32, whole: u32) -> f64 {
    if whole == 0 {
        0.0
    } else {
        f64::from(part) * 100.0 / f64::from(whole)
    }
}

/// The last `size` calls, oldest first; the running total avoids a rescan.
#[derive(Debug, Clone)]
pub(crate) struct CountWindow {
    /// Capacity of the ring.
    size: usize,
    /// One entry per call.
    ring: VecDeque<Tally>,
    /// Sum of `ring`.
    total: Tally,
}

impl CountWindow {
    pub(crate) fn new(size: u32) -> Self {
        CountWindow {
            size: size as usize,
            ring: VecDeque::with_capacity(size as usize),
            total: Tally::default(),
        }
    }

    /// Adds a call, evicting the oldest when full; returns the new total.
    pub(crate) fn record(&mut self, call: Tally) -> Tally {
        if self.ring.len() == self.size
            && let Some(old) = self.ring.pop_front()
        {
            self.total.sub(old);
        }
        self.ring.push_back(call);
        self.total.add(call);
        self.total
    }

    pub(crate) fn clear(&mut self) {
        self.ring.clear();
        self.total = Tally::default();
    }
}

/// Where time-window edges fall: every `interval` from `base` (the run's
/// start), shifted so that `base` lies `offset` into a window (the start's
/// wall-clock phase, to line up with a library's epoch-aligned windows).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Edges {
    /// The run's start.
    pub(crate) base: Instant,
    /// How far into a window the run starts.
    pub(crate) offset: Duration,
}

impl Edges {
    /// The index of the window of width `interval` that holds `now`.
    pub(crate) fn index(self, now: Instant, interval: Duration) -> u64 {
        let since = now.saturating_duration_since(self.base) + self.offset;
        (since.as_nanos() / interval.as_nanos().max(1)) as u64
    }
}

/// One tumbling window of `interval` (Sentinel's circuit-breaker statistic:
/// a leap array of one bucket of `statIntervalMs`): a call is counted in
/// the window it falls in; a call in a later window starts it afresh.
#[derive(Debug, Clone)]
pub(crate) struct TumblingWindow {
    /// Its width.
    interval: Duration,
    /// Where its edges fall.
    edges: Edges,
    /// The window the counts belong to, and the counts.
    current: Option<(u64, Tally)>,
}

impl TumblingWindow {
    pub(crate) fn new(interval: Duration, edges: Edges) -> Self {
        TumblingWindow {
            interval,
            edges,
            current: None,
        }
    }

    /// Adds a call at `now`; returns the counts of its window.
    pub(crate) fn record(&mut self, call: Tally, now: Instant) -> Tally {
        let index = self.edges.index(now, self.interval);
        let tally = match &mut self.current {
            Some((i, tally)) if *i == index => tally,
            current => &mut current.insert((index, Tally::default())).1,
        };
        tally.add(call);
        *tally
    }

    /// Empties the window (Sentinel resets its current bucket on close).
    pub(crate) fn clear(&mut self) {
        self.current = None;
    }
}

/// Calls of the last `seconds` whole seconds (resilience4j's epoch-second
/// buckets): a call 12.7 s past the first edge lands in bucket 12, which
/// expires once the current bucket is 12 + `seconds`. With another width
/// ([`SecondBuckets::of_width`]) the same holds of buckets of that width.
#[derive(Debug, Clone)]
pub(crate) struct SecondBuckets {
    /// Width of the window in buckets.
    seconds: u64,
    /// Width of one bucket (one second unless built `of_width`).
    width: Duration,
    /// Where the edges fall.
    edges: Edges,
    /// Non-empty buckets, oldest first: (bucket index, counts).
    buckets: VecDeque<(u64, Tally)>,
    /// Sum of `buckets`.
    total: Tally,
}

impl SecondBuckets {
    pub(crate) fn new(seconds: u64, edges: Edges) -> Self {
        Self::of_width(seconds, Duration::from_secs(1), edges)
    }

    /// `count` buckets of `width` each.
    pub(crate) fn of_width(count: u64, width: Duration, edges: Edges) -> Self {
        SecondBuckets {
            seconds: count,
            width,
            edges,
            buckets: VecDeque::new(),
            total: Tally::default(),
        }
    }

    fn second(&self, now: Instant) -> u64 {
        self.edges.index(now, self.width)
    }

    /// Drops buckets that left the window at `now`; returns what remains.
    pub(crate) fn total(&mut self, now: Instant) -> Tally {
        let current = self.second(now);
        while let Some(&(second, tally)) = self.buckets.front() {
            if second + self.seconds > current {
                break;
            }
            self.total.sub(tally);
            self.buckets.pop_front();
        }
        self.total
    }

    /// Adds a call at `now`; returns the total of the window.
    pub(crate) fn record(&mut self, call: Tally, now: Instant) -> Tally {
        let current = self.second(now);
        match self.buckets.back_mut() {
            Some((second, tally)) if *second >= current => tally.add(call),
            _ => self.buckets.push_back((current, call)),
        }
        self.total.add(call);
        self.total(now)
    }

    pub(crate) fn clear(&mut self) {
        self.buckets.clear();
        self.total = Tally::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_window_keeps_only_the_last_n_calls() {
        let mut w = CountWindow::new(3);
        w.record(Tally::one(true, false));
        w.record(Tally::one(true, true));
        w.record(Tally::one(false, false));
        let t = w.record(Tally::one(false, false));
        assert_eq!(
            t,
            Tally {
                calls: 3,
                failures: 1,
                slow: 1
            }
        );
    }

    #[test]
    fn second_buckets_expire_a_bucket_exactly_n_seconds_after_its_second() {
        let base = Instant::now();
        let at = |ms: u64| base + Duration::from_millis(ms);
        let mut w = SecondBuckets::new(
            2,
            Edges {
                base,
                offset: Duration::ZERO,
            },
        );
        w.record(Tally::one(true, false), at(900)); // bucket 0
        w.record(Tally::one(false, false), at(1_100)); // bucket 1
        assert_eq!(w.total(at(1_999)).calls, 2);
        assert_eq!(w.total(at(2_000)).calls, 1, "bucket 0 leaves at 2s");
        assert_eq!(w.total(at(3_000)).calls, 0, "bucket 1 leaves at 3s");
    }

    #[test]
    fn an_offset_moves_the_edges_as_if_the_run_started_that_far_into_a_window() {
        let base = Instant::now();
        let edges = Edges {
            base,
            offset: Duration::from_millis(300),
        };
        let second = Duration::from_secs(1);
        assert_eq!(edges.index(base + Duration::from_millis(699), second), 0);
        assert_eq!(edges.index(base + Duration::from_millis(700), second), 1);
    }

    #[test]
    fn a_tumbling_window_counts_only_the_calls_of_its_own_interval() {
        let base = Instant::now();
        let at = |ms: u64| base + Duration::from_millis(ms);
        let edges = Edges {
            base,
            offset: Duration::ZERO,
        };
        let mut w = TumblingWindow::new(Duration::from_millis(2000), edges);
        w.record(Tally::one(true, false), at(1500));
        assert_eq!(w.record(Tally::one(true, false), at(1999)).calls, 2);
        let fresh = w.record(Tally::one(true, false), at(2060));
        assert_eq!((fresh.calls, fresh.failures), (1, 1), "a new window at 2s");
        w.clear();
        assert_eq!(w.record(Tally::one(false, false), at(2100)).calls, 1);
    }
}
