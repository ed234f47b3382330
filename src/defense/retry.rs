//! Retry: which requests may be retried, and the wait before each retry
//! (exponential backoff with seeded jitter).

use super::config::RetryConfig;
use crate::clock::Duration;

/// The wait before attempt `attempt` (2 = the first retry), given a uniform
/// draw `draw` in `[0, 1)` from the run's RNG.
pub fn backoff(config: &RetryConfig, attempt: u32, draw: f64) -> Duration {
    let doublings = attempt.saturating_sub(2).min(30);
    let base = config
        .backoff
        .saturating_mul(1 << doublings)
        .min(config.max_backoff);
    let jitter = config.jitter.fraction() * draw.clamp(0.0, 1.0);
    base.mul_f64(1.0 - jitter)
}

/// Whether `method` may be retried under `config`.
pub fn may_retry(config: &RetryConfig, method: &http::Method) -> bool {
    config.attempts > 1 && config.methods.contains(method)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::units::Percent;

    fn config(jitter: f64) -> RetryConfig {
        RetryConfig {
            attempts: 5,
            backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(300),
            jitter: Percent::new(jitter).unwrap(),
            methods: vec![http::Method::GET],
        }
    }

    #[test]
    fn backoff_doubles_up_to_its_ceiling_without_jitter() {
        let c = config(0.0);
        let waits: Vec<u128> = (2..=5).map(|a| backoff(&c, a, 0.7).as_millis()).collect();
        assert_eq!(waits, [100, 200, 300, 300]);
    }

    #[test]
    fn jitter_shortens_the_wait_by_at_most_its_share() {
        let c = config(50.0);
        assert_eq!(backoff(&c, 2, 0.0), Duration::from_millis(100));
        assert_eq!(backoff(&c, 2, 1.0), Duration::from_millis(50));
    }

    #[test]
    fn only_listed_methods_are_retried() {
        let c = config(0.0);
        assert!(may_retry(&c, &http::Method::GET));
        assert!(!may_retry(&c, &http::Method::POST));
    }
}
