//! Retry: which requests may be retried, and the wait before each retry
//! (exponential backoff with seeded jitter).

use super::breaker::FailureKind;
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

/// Whether a call with `method` (a gRPC call when `grpc`) may be retried
/// under `config`: a gRPC call whatever its method (always POST) when
/// gRPC statuses are listed, any other by its method.
pub fn may_retry(config: &RetryConfig, method: &http::Method, grpc: bool) -> bool {
    config.attempts > 1
        && if grpc {
            !config.grpc_statuses.is_empty()
        } else {
            config.methods.contains(method)
        }
}

/// Whether a gRPC call that failed so is retried under `config`: its
/// status is listed, or the failure is one a gRPC client sees as that
/// status (a connection error, a reset or a 502/503/504 as UNAVAILABLE,
/// a timeout as DEADLINE_EXCEEDED).
pub fn retries_grpc(config: &RetryConfig, failure: FailureKind) -> bool {
    let code = match failure {
        FailureKind::Grpc(code) => code,
        FailureKind::Connect | FailureKind::Reset | FailureKind::Status(502..=504) => 14,
        FailureKind::Timeout => 4,
        _ => return false,
    };
    config.grpc_statuses.iter().any(|s| s.code() == code)
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
            grpc_statuses: vec!["UNAVAILABLE".parse().unwrap()],
        }
    }

    #[test]
    fn a_grpc_call_is_retried_whatever_its_method_while_grpc_statuses_are_listed() {
        let mut c = config(0.0);
        assert!(!may_retry(&c, &http::Method::POST, false), "POST over HTTP");
        assert!(may_retry(&c, &http::Method::POST, true), "a gRPC call");
        assert!(may_retry(&c, &http::Method::GET, false));
        c.grpc_statuses.clear();
        assert!(!may_retry(&c, &http::Method::POST, true), "none listed");
        c.grpc_statuses = vec!["UNAVAILABLE".parse().unwrap()];
        c.attempts = 1;
        assert!(!may_retry(&c, &http::Method::POST, true), "one attempt");
    }

    #[test]
    fn a_failed_grpc_call_is_retried_on_a_listed_status_or_a_failure_a_client_sees_as_one() {
        let mut c = config(0.0);
        for retried in [
            FailureKind::Grpc(14),
            FailureKind::Connect,
            FailureKind::Reset,
            FailureKind::Status(502),
            FailureKind::Status(503),
            FailureKind::Status(504),
        ] {
            assert!(retries_grpc(&c, retried), "{retried:?}");
        }
        for not in [
            FailureKind::Grpc(13),
            FailureKind::Grpc(4),
            FailureKind::Timeout,
            FailureKind::Status(500),
            FailureKind::Status(501),
            FailureKind::Status(505),
            FailureKind::Other,
            FailureKind::Cancelled,
        ] {
            assert!(!retries_grpc(&c, not), "{not:?}");
        }
        c.grpc_statuses = vec!["DEADLINE_EXCEEDED".parse().unwrap()];
        assert!(retries_grpc(&c, FailureKind::Timeout));
        assert!(retries_grpc(&c, FailureKind::Grpc(4)));
        assert!(!retries_grpc(&c, FailureKind::Connect));
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
        assert!(may_retry(&c, &http::Method::GET, false));
        assert!(!may_retry(&c, &http::Method::POST, false));
    }
}
