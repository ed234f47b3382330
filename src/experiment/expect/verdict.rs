//! The verdict on one expectation (expected, seen, where), and the number
//! formats every verdict uses: times in seconds, percentages with one
//! decimal.

use std::fmt;

use serde::{Serialize, Serializer};

use crate::clock::Duration;

/// What an expectation concluded about a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// The sentence as written.
    pub expectation: String,
    /// Whether it held.
    pub passed: bool,
    /// What it required, restated with its numbers.
    pub expected: String,
    /// What the run showed, with figures and times.
    pub seen: String,
    /// Where in the timeline to look: the offending transition or call, or
    /// the start of the window; `None` when there is no such place.
    #[serde(rename = "at_ms", serialize_with = "as_at_ms")]
    pub at: Option<Duration>,
    /// The `[start, end)` intervals it judged, in milliseconds.
    #[serde(rename = "judged_ms", serialize_with = "as_ms")]
    pub judged: Vec<(Duration, Duration)>,
}

fn as_ms<S: Serializer>(spans: &[(Duration, Duration)], s: S) -> Result<S::Ok, S::Error> {
    let ms = |d: &Duration| d.as_micros() as f64 / 1000.0;
    s.collect_seq(spans.iter().map(|(a, b)| (ms(a), ms(b))))
}

fn as_at_ms<S: Serializer>(at: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    at.map(crate::defense::breaker::millis).serialize(s)
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mark = if self.passed { "ok" } else { "FAILED" };
        write!(f, "{mark}: {}", self.expectation)?;
        if !self.passed {
            write!(f, "\n  expected: {}\n  seen: {}", self.expected, self.seen)?;
            if let Some(at) = self.at {
                write!(f, "\n  at: {}", secs(at))?;
            }
        }
        Ok(())
    }
}

/// A time on the timeline in seconds, up to millisecond precision without
/// What a judge returns: passed, expected, seen, where.
pub(crate) type Judgement = (bool, String, String, Option<Duration>);

/// trailing zeros: `10s`, `10.4s`, `0.125s`.
pub(crate) fn secs(d: Duration) -> String {
    let text = format!("{:.3}", d.as_secs_f64());
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}s")
}

/// A latency: `850us`, `3.2ms`, `1.5s` (up to three decimals, trimmed).
pub(crate) fn latency(d: Duration) -> String {
    let (value, unit) = if d < Duration::from_millis(1) {
        (d.as_secs_f64() * 1e6, "us")
    } else if d < Duration::from_secs(1) {
        (d.as_secs_f64() * 1e3, "ms")
    } else {
        (d.as_secs_f64(), "s")
    };
    let text = format!("{value:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}{unit}")
}

/// A share in percent with one decimal: `61.3%`, `100.0%`.
pub(crate) fn percent(value: f64) -> String {
    format!("{value:.1}%")
}

/// A ratio with up to two decimals: `3`, `1.25`.
pub(crate) fn ratio(value: f64) -> String {
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `1 time`, `3 times`.
pub(crate) fn times(n: usize) -> String {
    if n == 1 {
        "1 time".to_string()
    } else {
        format!("{n} times")
    }
}

/// Up to `limit` times as `at 10.4s, 25s, ...` (`, ... N more` beyond).
pub(crate) fn list_times(times: &[Duration], limit: usize) -> String {
    let mut text = times
        .iter()
        .take(limit)
        .map(|t| secs(*t))
        .collect::<Vec<_>>()
        .join(", ");
    if times.len() > limit {
        text.push_str(&format!(", ... {} more", times.len() - limit));
    }
    text
}
