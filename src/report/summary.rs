//! Figures per load route, computed once from what the run counted for
//! every report format.

use serde::Serialize;

use crate::experiment::expect::tally::RouteTally;

/// One load route's figures over the whole run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RouteSummary {
    /// The load route.
    pub route: String,
    /// Requests sent (shed ones included).
    pub requests: usize,
    /// Share answered 2xx/3xx, fallbacks included, in percent.
    pub success_pct: f64,
    /// Share answered by a fallback, in percent.
    pub fallback_pct: f64,
    /// Of it, the share each kind of fallback answered (`stale`, `static`,
    /// `backup`, `service`), in percent; kinds that answered none are left
    /// out.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub fallback_by_kind_pct: std::collections::BTreeMap<&'static str, f64>,
    /// Share the caller got no success for (`100 - success_pct` before
    /// rounding), in percent.
    pub errors_pct: f64,
    /// Share turned away by the defense line, in percent.
    pub rejected_pct: f64,
    /// Requests that timed out (client or defense line).
    pub timeouts: usize,
    /// Requests the caller gave up on while the defense line still waited
    /// (recorded as cancelled there).
    pub cancelled: usize,
    /// Requests shed by the in-flight cap.
    pub shed: usize,
    /// Latency percentiles of answered requests, in milliseconds.
    pub latency_ms: Percentiles,
    /// Requests that reached the target per request sent.
    pub amplification: f64,
    /// gRPC answers per status, by name (none for a route without gRPC
    /// answers).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub grpc_statuses: std::collections::BTreeMap<&'static str, usize>,
}

/// p50, p90, p99 and max.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct Percentiles {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

/// The nearest-rank percentile `p` (0..=100) of sorted `values`.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Rounds to microsecond precision in milliseconds, so reports print the
/// same digits on every machine.
fn ms(d: crate::clock::Duration) -> f64 {
    (d.as_micros() as f64) / 1000.0
}

fn pct(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        (part as f64 * 1000.0 / whole as f64).round() / 10.0
    }
}

/// Figures for every load route, from what the run counted of each (the
/// routes of `load:` in their order, then any other in the order it first
/// sent).
pub fn routes(counted: &[(String, RouteTally)]) -> Vec<RouteSummary> {
    counted
        .iter()
        .map(|(route, t)| {
            let n = t.requests as usize;
            let latency = |p: f64| t.latency_percentile(p).map_or(0.0, ms);
            RouteSummary {
                route: route.clone(),
                requests: n,
                success_pct: pct(t.succeeded as usize, n),
                fallback_pct: pct(t.fallback() as usize, n),
                fallback_by_kind_pct: t
                    .fallbacks
                    .iter()
                    .filter(|(_, k)| **k > 0)
                    .map(|(kind, k)| (kind.as_str(), pct(*k as usize, n)))
                    .collect(),
                errors_pct: pct(n.saturating_sub(t.succeeded as usize), n),
                rejected_pct: pct(t.rejected as usize, n),
                timeouts: t.timeouts as usize,
                cancelled: t.cancelled as usize,
                shed: t.shed as usize,
                latency_ms: Percentiles {
                    p50: latency(50.0),
                    p90: latency(90.0),
                    p99: latency(99.0),
                    max: t.latency_max().map_or(0.0, ms),
                },
                amplification: if n == 0 {
                    0.0
                } else {
                    (t.reached as f64 * 1000.0 / n as f64).round() / 1000.0
                },
                grpc_statuses: t
                    .grpc
                    .iter()
                    .map(|(code, n)| (crate::schema::units::grpc_status_name(*code), *n as usize))
                    .collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&v, 100.0), 100.0);
        assert_eq!(percentile(&[7.0], 50.0), 7.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }
}
