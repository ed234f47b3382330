//! Halt conditions: `route NAME METRIC OP VALUE for DURATION`, checked every
//! second over the requests sent in the last DURATION that have finished.
//! When one holds the drill is aborted: faults removed, load stopped.

use std::sync::Arc;

use super::load::Load;
use super::timeline::RequestRecord;
use crate::clock::{self, Duration, Instant};
use crate::schema::units::{Dur, Percent};

/// A parsed halt condition.
#[derive(Debug, Clone, PartialEq)]
pub struct HaltCondition {
    /// As written.
    pub text: String,
    /// The load route it watches.
    pub route: String,
    /// What it measures.
    pub metric: HaltMetric,
    /// Halt when below (`<`) or above (`>`).
    pub below: bool,
    /// The threshold share.
    pub threshold: Percent,
    /// The sliding window.
    pub window: Duration,
}

/// What a halt condition measures, as a share of finished requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HaltMetric {
    /// 2xx/3xx answers.
    Success,
    /// Anything else.
    Errors,
}

impl std::str::FromStr for HaltCondition {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let expected = "expected `route NAME success|errors <|> PERCENT for DURATION`, e.g. `route B success < 50% for 5s`";
        let [route_kw, route, metric, op, value, for_kw, window] = words.as_slice() else {
            return Err(format!("{expected}, found `{text}`"));
        };
        if *route_kw != "route" || *for_kw != "for" {
            return Err(format!("{expected}, found `{text}`"));
        }
        let metric = match *metric {
            "success" => HaltMetric::Success,
            "errors" => HaltMetric::Errors,
            other => return Err(format!("unknown metric `{other}`: {expected}")),
        };
        let below = match *op {
            "<" => true,
            ">" => false,
            other => return Err(format!("unknown operator `{other}`: use < or >")),
        };
        let threshold: Percent = value.parse()?;
        let window: Dur = window.parse()?;
        if window.get().is_zero() {
            return Err("the window after `for` must be longer than 0s".to_string());
        }
        Ok(HaltCondition {
            text: text.to_string(),
            route: route.to_string(),
            metric,
            below,
            threshold,
            window: window.get(),
        })
    }
}

impl HaltCondition {
    /// The share now, over finished requests of the route sent within the
    /// window ending at `now`; `None` when there are none.
    fn share(&self, records: &[RequestRecord], now: Duration) -> Option<(f64, usize)> {
        let from = now.saturating_sub(self.window);
        let finished: Vec<&RequestRecord> = records
            .iter()
            .filter(|r| {
                r.route == self.route
                    && r.sent >= from
                    && r.sent < now
                    && (r.status.is_some() || r.client_error.is_some())
            })
            .collect();
        if finished.is_empty() {
            return None;
        }
        let hits = finished
            .iter()
            .filter(|r| r.succeeded() == (self.metric == HaltMetric::Success))
            .count();
        Some((hits as f64 * 100.0 / finished.len() as f64, finished.len()))
    }
}

/// Resolves with (condition, what it saw) when a halt condition holds;
/// never resolves when there are none.
pub async fn watch(halts: &[HaltCondition], load: &Arc<Load>, start: Instant) -> (String, String) {
    if halts.is_empty() {
        return std::future::pending().await;
    }
    let mut tick = Duration::from_secs(1);
    loop {
        clock::sleep_until(start + tick).await;
        let records = load.records();
        for h in halts {
            if tick < h.window {
                continue;
            }
            if let Some((share, n)) = h.share(&records, tick) {
                let holds = if h.below {
                    share < h.threshold.percent()
                } else {
                    share > h.threshold.percent()
                };
                if holds {
                    let seen = format!(
                        "route {} {:.1}% over {} requests in the {} before {}",
                        h.route,
                        share,
                        n,
                        Dur(h.window),
                        Dur(tick)
                    );
                    return (h.text.clone(), seen);
                }
            }
        }
        tick += Duration::from_secs(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halt_condition_parses_and_bad_ones_say_what_was_expected() {
        let h: HaltCondition = "route B success < 50% for 5s".parse().unwrap();
        assert_eq!(
            (h.route.as_str(), h.metric, h.below),
            ("B", HaltMetric::Success, true)
        );
        assert_eq!(h.window, Duration::from_secs(5));
        assert!(
            "route B success < 50%"
                .parse::<HaltCondition>()
                .unwrap_err()
                .contains("expected `route NAME")
        );
        assert!(
            "route B latency < 50% for 5s"
                .parse::<HaltCondition>()
                .unwrap_err()
                .contains("unknown metric `latency`")
        );
        assert!(
            "route B success < 150% for 5s"
                .parse::<HaltCondition>()
                .is_err()
        );
    }
}
