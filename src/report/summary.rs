//! Figures per load route, computed once from the timeline for every
//! report format.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::experiment::timeline::{ClientError, Timeline};

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

/// Figures for every load route: the routes of `load:` in their order
/// (one that sent nothing included), then any other route the timeline
/// holds, in the order it first appears.
pub fn routes<'a>(
    timeline: &'a Timeline,
    load: impl IntoIterator<Item = &'a str>,
) -> Vec<RouteSummary> {
    let mut order: Vec<&str> = load.into_iter().collect();
    for r in &timeline.requests {
        if !order.contains(&r.route.as_str()) {
            order.push(&r.route);
        }
    }
    let route_of: BTreeMap<u64, &str> = timeline
        .requests
        .iter()
        .map(|r| (r.id, r.route.as_str()))
        .collect();
    let mut hits: BTreeMap<&str, usize> = BTreeMap::new();
    for h in &timeline.target_hits {
        if let Some(route) = h.request_id.and_then(|id| route_of.get(&id)) {
            *hits.entry(route).or_default() += 1;
        }
    }
    order
        .into_iter()
        .map(|route| {
            let rs: Vec<_> = timeline
                .requests
                .iter()
                .filter(|r| r.route == route)
                .collect();
            let n = rs.len();
            let mut latencies: Vec<f64> = rs.iter().filter_map(|r| r.latency).map(ms).collect();
            latencies.sort_by(f64::total_cmp);
            RouteSummary {
                route: route.to_string(),
                requests: n,
                success_pct: pct(rs.iter().filter(|r| r.succeeded()).count(), n),
                fallback_pct: pct(rs.iter().filter(|r| r.fallback.is_some()).count(), n),
                rejected_pct: pct(rs.iter().filter(|r| r.rejected_by.is_some()).count(), n),
                timeouts: rs.iter().filter(|r| r.timed_out()).count(),
                cancelled: rs
                    .iter()
                    .filter(|r| {
                        r.defense_error == Some(crate::defense::report::CallError::Cancelled)
                    })
                    .count(),
                shed: rs
                    .iter()
                    .filter(|r| r.client_error == Some(ClientError::Shed))
                    .count(),
                latency_ms: Percentiles {
                    p50: percentile(&latencies, 50.0),
                    p90: percentile(&latencies, 90.0),
                    p99: percentile(&latencies, 99.0),
                    max: latencies.last().copied().unwrap_or(0.0),
                },
                amplification: if n == 0 {
                    0.0
                } else {
                    (hits.get(route).copied().unwrap_or(0) as f64 * 1000.0 / n as f64).round()
                        / 1000.0
                },
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
