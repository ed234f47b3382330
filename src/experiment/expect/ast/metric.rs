//! The figures of a load route a sentence compares (`success`, `p99
//! latency`, `grpc UNAVAILABLE`, ...) and the kind of value each is
//! compared with.

use crate::defense::fallback::FallbackKind;
use std::fmt;

/// A figure of a load route.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric {
    /// Share of requests answered 2xx/3xx (fallback answers included).
    Success,
    /// Share served by a fallback: any (`None`) or one kind.
    Fallback(Option<FallbackKind>),
    /// Share turned away by the defense line (`rejected_by` set).
    Rejected,
    /// Share not answered 2xx/3xx.
    Errors,
    /// Number of requests that timed out (client or defense line).
    Timeouts,
    /// Number of requests sent.
    Requests,
    /// A latency statistic of the requests that got a response.
    Latency(LatencyStat),
    /// Target hits carrying the route's request ids, per request.
    Amplification,
    /// Share of requests whose gRPC answer had this status (`grpc
    /// UNAVAILABLE`; `grpc OK`).
    Grpc(u8),
}

/// Which latency statistic.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LatencyStat {
    /// `p50`, `p99`, `p99.9`: nearest-rank percentile (0 < p <= 100).
    Percentile(f64),
    /// `max`.
    Max,
}

/// What kind of value a metric is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// A share, written `99%`.
    Share,
    /// A duration, written `5ms`.
    Duration,
    /// A whole number of things.
    Count,
    /// A ratio, any non-negative number.
    Ratio,
    /// What a PromQL query returns: a duration (`300ms`, in seconds), a
    /// percentage (`99.5%`, a ratio) or any number (`2`, `-1.5`).
    Quantity,
}

impl ValueKind {
    /// The unit its figures are kept in: `ms` for a duration, `%` for a
    /// share, none for a number.
    pub fn unit(self) -> Option<&'static str> {
        match self {
            ValueKind::Duration => Some("ms"),
            ValueKind::Share => Some("%"),
            ValueKind::Count | ValueKind::Ratio | ValueKind::Quantity => None,
        }
    }
}

impl Metric {
    /// The kind of value the metric is compared with.
    pub fn kind(self) -> ValueKind {
        match self {
            Metric::Success
            | Metric::Fallback(_)
            | Metric::Rejected
            | Metric::Errors
            | Metric::Grpc(_) => ValueKind::Share,
            Metric::Timeouts | Metric::Requests => ValueKind::Count,
            Metric::Latency(_) => ValueKind::Duration,
            Metric::Amplification => ValueKind::Ratio,
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Metric::Success => f.write_str("success"),
            Metric::Fallback(None) => f.write_str("fallback"),
            Metric::Fallback(Some(kind)) => write!(f, "fallback {}", kind.as_str()),
            Metric::Rejected => f.write_str("rejected"),
            Metric::Errors => f.write_str("errors"),
            Metric::Timeouts => f.write_str("timeouts"),
            Metric::Requests => f.write_str("requests"),
            Metric::Latency(LatencyStat::Percentile(p)) => write!(f, "p{p} latency"),
            Metric::Latency(LatencyStat::Max) => f.write_str("max latency"),
            Metric::Amplification => f.write_str("amplification"),
            Metric::Grpc(code) => {
                write!(f, "grpc {}", crate::schema::units::grpc_status_name(*code))
            }
        }
    }
}
