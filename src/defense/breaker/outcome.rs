//! What one call produced, and which of those results count as failures.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

use crate::schema::units::GrpcError;

/// Why a call failed, as the breaker sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The dependency answered with a status the classifier counts as a
    /// failure (every 5xx by default).
    Status(u16),
    /// A gRPC call ended with a status the classifier counts as a failure
    /// (UNKNOWN, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, INTERNAL,
    /// UNAVAILABLE and DATA_LOSS by default).
    Grpc(u8),
    /// No answer within the caller's timeout.
    Timeout,
    /// The connection could not be established (refused, unreachable).
    Connect,
    /// The connection was reset or closed before a complete answer.
    Reset,
    /// Any other transport or protocol error.
    Other,
    /// The caller gave up before an answer (with `count_cancelled`).
    Cancelled,
}

/// The verdict on one admitted call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The dependency did its job.
    Success,
    /// The dependency failed; counts against it.
    Failure(FailureKind),
    /// Neither success nor failure (4xx by default): the caller's fault, so
    /// it must not move the breaker either way.
    Ignored,
}

/// An HTTP status or a whole class of them, as written in `failure_statuses`
/// and `ignore_statuses`: `429`, `"503"`, `"5xx"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusPattern {
    /// One status code (100 to 599).
    Exact(u16),
    /// Every status of a class: `4` for `4xx`.
    Class(u8),
}

crate::value_schema!(
    StatusPattern,
    "StatusPattern",
    crate::schema::json::string_or_number(
        "An HTTP status (100 to 599) or a class such as `5xx`.",
        r"^\s*([1-5]\d\d|[1-5](xx|XX))\s*$",
        serde_json::json!({ "type": "integer", "minimum": 100, "maximum": 599 }),
        &["5xx".into(), 429.into()],
    )
);

impl StatusPattern {
    /// Whether `status` matches.
    pub fn matches(self, status: u16) -> bool {
        match self {
            StatusPattern::Exact(code) => code == status,
            StatusPattern::Class(class) => status / 100 == u16::from(class),
        }
    }
}

impl FromStr for StatusPattern {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let s = text.trim();
        let bad = || {
            format!(
                "invalid status `{text}`: expected a code from 100 to 599 or a class such as `5xx`"
            )
        };
        if let Some(class) = s.strip_suffix("xx").or_else(|| s.strip_suffix("XX")) {
            return match class.parse::<u8>() {
                Ok(c @ 1..=5) => Ok(StatusPattern::Class(c)),
                _ => Err(bad()),
            };
        }
        match s.parse::<u16>() {
            Ok(code @ 100..=599) => Ok(StatusPattern::Exact(code)),
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for StatusPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StatusPattern::Exact(code) => write!(f, "{code}"),
            StatusPattern::Class(class) => write!(f, "{class}xx"),
        }
    }
}

impl<'de> Deserialize<'de> for StatusPattern {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct PatternVisitor;
        impl Visitor<'_> for PatternVisitor {
            type Value = StatusPattern;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an HTTP status such as 429 or a class such as \"5xx\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<StatusPattern, E> {
                v.parse().map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<StatusPattern, E> {
                self.visit_str(&v.to_string())
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<StatusPattern, E> {
                self.visit_str(&v.to_string())
            }
        }
        d.deserialize_any(PatternVisitor)
    }
}

/// A call that ended without an answer, as `ignore_errors` and
/// `success_errors` name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// No answer within the route's timeout.
    Timeout,
    /// A refused, reset or broken connection (any other transport error).
    Connection,
}

impl ErrorClass {
    /// The class of a failure without an answer; `None` for an answer or
    /// a cancelled call.
    pub fn of(kind: FailureKind) -> Option<ErrorClass> {
        match kind {
            FailureKind::Timeout => Some(ErrorClass::Timeout),
            FailureKind::Connect | FailureKind::Reset | FailureKind::Other => {
                Some(ErrorClass::Connection)
            }
            FailureKind::Status(_) | FailureKind::Grpc(_) | FailureKind::Cancelled => None,
        }
    }
}

/// Which HTTP statuses count as failures for one breaker.
///
/// Order of the rules: `ignore_statuses` first, then `failure_statuses`, then
/// `success_statuses`, then other 4xx (ignored unless `count_4xx`), then
/// everything else is a success (a 5xx left out of `failure_statuses` is a
/// deliberate "this is fine"). Transport errors (timeout, connect, reset)
/// are failures unless `ignore_errors` or `success_errors` names their
/// class (a library that records only some exceptions: resilience4j's
/// `recordExceptions`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classifier {
    /// Statuses that count against the dependency (default `["5xx"]`).
    pub failure_statuses: Vec<StatusPattern>,
    /// Statuses that are neither success nor failure, whatever else says.
    pub ignore_statuses: Vec<StatusPattern>,
    /// Count 4xx not listed elsewhere as failures (off by default: a 400 for
    /// one bad product must not open the breaker for every product).
    pub count_4xx: bool,
    /// Statuses that count as successes, 4xx included (resilience4j counts
    /// an exception its `recordExceptions` leaves out as a success).
    pub success_statuses: Vec<StatusPattern>,
    /// Calls without an answer that are neither success nor failure
    /// (resilience4j's `ignoreExceptions` naming `TimeoutException`).
    pub ignore_errors: Vec<ErrorClass>,
    /// Calls without an answer that count as successes (a `recordExceptions`
    /// that leaves their exception out).
    pub success_errors: Vec<ErrorClass>,
    /// Count a call its caller abandoned before an answer as a failure (off
    /// by default: it is neither, and the breaker frees its slot).
    pub count_cancelled: bool,
    /// gRPC statuses that count against the dependency (default
    /// [`Classifier::GRPC_FAILURES`]); OK is a success and every other
    /// status the caller's error (INVALID_ARGUMENT, NOT_FOUND, ...), which
    /// moves the breaker neither way, as a 4xx.
    pub grpc_failure_statuses: Vec<GrpcError>,
}

impl Default for Classifier {
    fn default() -> Self {
        Classifier {
            failure_statuses: vec![StatusPattern::Class(5)],
            ignore_statuses: Vec::new(),
            count_4xx: false,
            success_statuses: Vec::new(),
            ignore_errors: Vec::new(),
            success_errors: Vec::new(),
            count_cancelled: false,
            grpc_failure_statuses: Classifier::GRPC_FAILURES
                .iter()
                .map(|name| name.parse().expect("a gRPC status name"))
                .collect(),
        }
    }
}

/// The classifier of a route without a breaker of its own.
static STANDARD: std::sync::LazyLock<Classifier> = std::sync::LazyLock::new(Classifier::default);

impl Classifier {
    /// The default classifier, shared: a route without a breaker, and the
    /// black-box inference of what failed at a dependency.
    pub fn standard() -> &'static Classifier {
        &STANDARD
    }

    /// The gRPC statuses that say the server failed, not the caller: the
    /// ones gRPC's own guide has a server return for its own trouble
    /// (UNKNOWN is what a handler that throws answers).
    pub const GRPC_FAILURES: [&'static str; 6] = [
        "UNKNOWN",
        "DEADLINE_EXCEEDED",
        "RESOURCE_EXHAUSTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
    ];

    /// The outcome of a gRPC call that ended with status `code`: OK is a
    /// success, a listed status a failure, any other the caller's error.
    pub fn classify_grpc(&self, code: u8) -> Outcome {
        if code == 0 {
            Outcome::Success
        } else if self.grpc_failure_statuses.iter().any(|s| s.code() == code) {
            Outcome::Failure(FailureKind::Grpc(code))
        } else {
            Outcome::Ignored
        }
    }

    /// The outcome of a call that got an HTTP answer with `status`.
    pub fn classify_status(&self, status: u16) -> Outcome {
        let any = |list: &[StatusPattern]| list.iter().any(|p| p.matches(status));
        if any(&self.ignore_statuses) {
            Outcome::Ignored
        } else if any(&self.failure_statuses) || (self.count_4xx && status / 100 == 4) {
            Outcome::Failure(FailureKind::Status(status))
        } else if any(&self.success_statuses) {
            Outcome::Success
        } else if status / 100 == 4 {
            Outcome::Ignored
        } else {
            Outcome::Success
        }
    }

    /// The outcome of a call that got no HTTP answer: a failure unless
    /// `ignore_errors` or `success_errors` names its class.
    pub fn classify_error(&self, kind: FailureKind) -> Outcome {
        match ErrorClass::of(kind) {
            Some(class) if self.ignore_errors.contains(&class) => Outcome::Ignored,
            Some(class) if self.success_errors.contains(&class) => Outcome::Success,
            _ => Outcome::Failure(kind),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_classifier_fails_5xx_ignores_4xx_and_passes_2xx_3xx() {
        let c = Classifier::default();
        assert_eq!(
            c.classify_status(503),
            Outcome::Failure(FailureKind::Status(503))
        );
        assert_eq!(c.classify_status(400), Outcome::Ignored);
        assert_eq!(c.classify_status(429), Outcome::Ignored);
        assert_eq!(c.classify_status(200), Outcome::Success);
        assert_eq!(c.classify_status(302), Outcome::Success);
        assert_eq!(
            c.classify_error(FailureKind::Timeout),
            Outcome::Failure(FailureKind::Timeout)
        );
    }

    #[test]
    fn ignore_list_beats_failure_list_and_count_4xx() {
        let c = Classifier {
            failure_statuses: vec![StatusPattern::Class(5), StatusPattern::Exact(429)],
            ignore_statuses: vec![StatusPattern::Exact(503), StatusPattern::Exact(404)],
            count_4xx: true,
            count_cancelled: false,
            ..Classifier::default()
        };
        assert_eq!(c.classify_status(503), Outcome::Ignored);
        assert_eq!(c.classify_status(404), Outcome::Ignored);
        assert_eq!(
            c.classify_status(429),
            Outcome::Failure(FailureKind::Status(429))
        );
        assert_eq!(
            c.classify_status(400),
            Outcome::Failure(FailureKind::Status(400))
        );
    }

    #[test]
    fn success_statuses_and_error_lists_follow_a_library_that_records_only_some_outcomes() {
        let c = Classifier {
            success_statuses: vec![StatusPattern::Class(4)],
            ignore_errors: vec![ErrorClass::Timeout],
            success_errors: vec![ErrorClass::Connection],
            ..Classifier::default()
        };
        assert_eq!(c.classify_status(404), Outcome::Success);
        assert_eq!(
            c.classify_status(503),
            Outcome::Failure(FailureKind::Status(503))
        );
        assert_eq!(c.classify_error(FailureKind::Timeout), Outcome::Ignored);
        for kind in [FailureKind::Connect, FailureKind::Reset, FailureKind::Other] {
            assert_eq!(c.classify_error(kind), Outcome::Success, "{kind:?}");
        }
        assert_eq!(
            c.classify_error(FailureKind::Cancelled),
            Outcome::Failure(FailureKind::Cancelled)
        );
    }

    #[test]
    fn default_classifier_fails_the_server_s_grpc_statuses_and_ignores_the_caller_s() {
        let c = Classifier::default();
        assert_eq!(c.classify_grpc(0), Outcome::Success);
        for failure in [2, 4, 8, 13, 14, 15] {
            assert_eq!(
                c.classify_grpc(failure),
                Outcome::Failure(FailureKind::Grpc(failure)),
                "{failure}"
            );
        }
        for caller in [1, 3, 5, 6, 7, 9, 10, 11, 12, 16, 17] {
            assert_eq!(c.classify_grpc(caller), Outcome::Ignored, "{caller}");
        }
        let only_unavailable = Classifier {
            grpc_failure_statuses: vec!["UNAVAILABLE".parse().unwrap()],
            ..Classifier::default()
        };
        assert_eq!(only_unavailable.classify_grpc(13), Outcome::Ignored);
        assert_eq!(
            only_unavailable.classify_grpc(14),
            Outcome::Failure(FailureKind::Grpc(14))
        );
    }

    #[test]
    fn status_patterns_parse_codes_and_classes_and_reject_the_rest() {
        assert_eq!("5xx".parse(), Ok(StatusPattern::Class(5)));
        assert_eq!("429".parse(), Ok(StatusPattern::Exact(429)));
        for bad in ["6xx", "0xx", "99", "600", "five"] {
            assert!(bad.parse::<StatusPattern>().is_err(), "{bad}");
        }
    }
}
