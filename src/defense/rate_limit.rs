//! Rate limit: a token bucket (rate + burst); excess is answered 503.

use std::sync::Mutex;

use super::config::RateLimitConfig;
use crate::clock::Instant;

/// A token bucket refilled at `per_second`, holding at most `burst`.
#[derive(Debug)]
pub struct TokenBucket {
    /// The configuration.
    config: RateLimitConfig,
    /// Tokens now and when they were counted.
    state: Mutex<(f64, Instant)>,
}

impl TokenBucket {
    /// A full bucket at `now`.
    pub fn new(config: RateLimitConfig, now: Instant) -> TokenBucket {
        TokenBucket {
            config,
            state: Mutex::new((f64::from(config.burst), now)),
        }
    }

    /// Takes one token at `now`; `false` when the bucket is empty.
    pub fn try_take(&self, now: Instant) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (tokens, last) = *state;
        let refill = now.saturating_duration_since(last).as_secs_f64() * self.config.per_second;
        let tokens = (tokens + refill).min(f64::from(self.config.burst));
        if tokens >= 1.0 {
            *state = (tokens - 1.0, now);
            true
        } else {
            *state = (tokens, now);
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Duration;

    #[test]
    fn burst_passes_then_the_rate_refills() {
        let t0 = Instant::now();
        let b = TokenBucket::new(
            RateLimitConfig {
                per_second: 10.0,
                burst: 3,
            },
            t0,
        );
        assert!((0..3).all(|_| b.try_take(t0)));
        assert!(!b.try_take(t0), "the burst is spent");
        assert!(!b.try_take(t0 + Duration::from_millis(50)), "half a token");
        assert!(
            b.try_take(t0 + Duration::from_millis(100)),
            "one token after 1/10 s"
        );
        assert!(!b.try_take(t0 + Duration::from_millis(100)));
        let later = t0 + Duration::from_secs(60);
        assert_eq!(
            (0..10).filter(|_| b.try_take(later)).count(),
            3,
            "never more than the burst saved"
        );
    }
}
