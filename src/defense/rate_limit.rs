//! Rate limit: a token bucket (rate + burst), or Sentinel's QPS flow rule
//! (the passes of the last second in equal buckets); excess is answered
//! 503.

use std::sync::Mutex;

use super::config::{RateLimitConfig, RateModel};
use crate::clock::Instant;

/// A rate limit in front of a line or a route.
#[derive(Debug)]
pub struct RateLimit {
    /// The configuration.
    config: RateLimitConfig,
    /// What the model has counted.
    state: Mutex<Counted>,
}

/// A model's count.
#[derive(Debug)]
enum Counted {
    /// Tokens now, when they were counted, and the most the bucket holds.
    Tokens(f64, Instant, u32),
    /// The buckets of the last second.
    Buckets(Buckets),
}

impl RateLimit {
    /// A full bucket (or empty buckets) at `now`.
    pub fn new(config: RateLimitConfig, now: Instant) -> RateLimit {
        let state = match config.model {
            RateModel::TokenBucket { burst } => Counted::Tokens(f64::from(burst), now, burst),
            RateModel::Buckets { buckets } => Counted::Buckets(Buckets::new(buckets, now)),
        };
        RateLimit {
            config,
            state: Mutex::new(state),
        }
    }

    /// Lets one request through at `now`, or `false` when the rate is
    /// spent.
    pub fn try_take(&self, now: Instant) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match &mut *state {
            Counted::Tokens(tokens, last, burst) => {
                let refill =
                    now.saturating_duration_since(*last).as_secs_f64() * self.config.per_second;
                let full = (*tokens + refill).min(f64::from(*burst));
                *last = now;
                if full >= 1.0 {
                    *tokens = full - 1.0;
                    true
                } else {
                    *tokens = full;
                    false
                }
            }
            Counted::Buckets(buckets) => buckets.try_pass(now, self.config.per_second),
        }
    }
}

/// Sentinel's `LeapArray` of one second as its `DefaultController` reads
/// it for a QPS rule (`StatisticNode.passQps`): the second is cut into
/// `len` buckets of `1000 / len` whole milliseconds of the clock (here
/// from the line's start, where Sentinel's are from the epoch); the
/// passes of the bucket `now` falls in and of the `len - 1` before it are
/// the second's, and a request passes while they, plus itself, stay
/// within the rate (`curCount + acquireCount > count` rejects).
#[derive(Debug)]
struct Buckets {
    /// Time zero of the buckets.
    start: Instant,
    /// Milliseconds per bucket.
    width_ms: u64,
    /// Per slot of the ring: the bucket's number and its passes.
    ring: Vec<(u64, u64)>,
}

impl Buckets {
    fn new(len: u32, start: Instant) -> Buckets {
        Buckets {
            start,
            width_ms: 1000 / u64::from(len),
            // No bucket yet: a number no bucket of the first second has.
            ring: vec![(u64::MAX, 0); len as usize],
        }
    }

    fn try_pass(&mut self, now: Instant, per_second: f64) -> bool {
        // Sentinel reads the clock in whole milliseconds.
        let ms = now.saturating_duration_since(self.start).as_millis() as u64;
        let current = ms / self.width_ms;
        let len = self.ring.len() as u64;
        let passes: u64 = self
            .ring
            .iter()
            .filter(|&&(number, _)| number <= current && current - number < len)
            .map(|&(_, passes)| passes)
            .sum();
        // The passes of the second over one second, as a whole number of
        // requests per second, plus this one.
        if (passes + 1) as f64 > per_second {
            return false;
        }
        let slot = &mut self.ring[(current % len) as usize];
        if slot.0 == current {
            slot.1 += 1;
        } else {
            *slot = (current, 1);
        }
        true
    }
}

#[cfg(test)]
#[path = "rate_limit_tests.rs"]
mod tests;
