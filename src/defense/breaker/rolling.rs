//! Rolling call statistics: a ring of the last N calls and per-second
//! buckets of the last N seconds. The `window` and `ratio` models share them.

use std::collections::VecDeque;

use crate::clock::Instant;

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

/// Calls of the last `seconds` whole seconds, counted from `base`: a call at
/// `base + 12.7s` lands in bucket 12, which expires once the current bucket
/// is 12 + `seconds` (resilience4j's epoch-second buckets).
#[derive(Debug, Clone)]
pub(crate) struct SecondBuckets {
    /// Width of the window in buckets (seconds).
    seconds: u64,
    /// Instant of bucket 0 (the run start), so buckets align across breakers.
    base: Instant,
    /// Non-empty buckets, oldest first: (second index, counts).
    buckets: VecDeque<(u64, Tally)>,
    /// Sum of `buckets`.
    total: Tally,
}

impl SecondBuckets {
    pub(crate) fn new(seconds: u64, base: Instant) -> Self {
        SecondBuckets {
            seconds,
            base,
            buckets: VecDeque::new(),
            total: Tally::default(),
        }
    }

    fn second(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.base).as_secs()
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
    use crate::clock::Duration;

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
        let mut w = SecondBuckets::new(2, base);
        w.record(Tally::one(true, false), at(900)); // bucket 0
        w.record(Tally::one(false, false), at(1_100)); // bucket 1
        assert_eq!(w.total(at(1_999)).calls, 2);
        assert_eq!(w.total(at(2_000)).calls, 1, "bucket 0 leaves at 2s");
        assert_eq!(w.total(at(3_000)).calls, 0, "bucket 1 leaves at 3s");
    }
}
