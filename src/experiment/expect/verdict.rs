//! The verdict on one expectation (expected, seen, where), and the number
//! formats every verdict uses: times in seconds, percentages with one
//! decimal.
//!
//! A figure judged against a bound is shown with the digits that decide
//! ([`percent_against`], [`ratio_against`], [`latency_against`]): one
//! decimal (two for a ratio, three for a latency), or as many more as it
//! takes for the text, read back, to be judged as the figure was. A failing
//! 98.97% against `>= 99%` reads `98.97%`, never `99.0%`; a passing figure
//! exactly on a `>=` or `<=` bound says so (`exactly 99.0%`).

use std::fmt;

use serde::{Serialize, Serializer};

use super::ast::{Bound, Op};
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
    /// Why the run could not judge it (a run not healthy before injection
    /// never exercised what the expectation is about); `None` for a
    /// verdict that was judged. A verdict not judged never passes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_judged: Option<String>,
    /// The figure the sentence measured, where it has one (a route
    /// figure, a count of calls, the delay to a transition, a regression
    /// sentence's figure): milliseconds for a time, percent for a share,
    /// Prometheus's own scale (seconds, ratios) for a query.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub figure: Option<f64>,
    /// A regression sentence: the name its figure is kept under, the
    /// sentence up to its comparison (`breaker inventory opens`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub figure_key: Option<String>,
    /// Not judged because the history holds too few fit past runs yet:
    /// says so, and does not fail the run (the runs that fill the history
    /// could never pass otherwise).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub awaits_history: bool,
    /// A judged regression sentence: the past runs its limit was made of
    /// and from them (`median of runs #6, #7 and seeds #3, #4, #5: 750ms +
    /// 500ms`), so a reader sees which runs are the norm, not only a value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// The numbers in the history of those runs, oldest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub baseline_runs: Vec<i64>,
    /// Not judged for too little history, and this run's figure seeds the
    /// sentence's baseline (the first run, or one that held against the
    /// seeds before it): the history keeps it as a seed, and never takes
    /// any other run whose sentence was not judged.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub seeds_baseline: bool,
    /// The evidence gate found that the run's evidence cannot carry this
    /// verdict (why, naming the evidence): neither a pass nor a fail.
    /// `expected` and `seen` still say what the judgement would have been.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inconclusive: Option<String>,
    /// The limit a figure was judged against, in the figure's unit: a
    /// regression sentence's (its baseline and margin), a query
    /// sentence's bound; the trend page draws it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<f64>,
    /// The figure's unit: `ms`, `%`, `s` (a query's duration), or none
    /// for a count or a number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<&'static str>,
}

fn as_ms<S: Serializer>(spans: &[(Duration, Duration)], s: S) -> Result<S::Ok, S::Error> {
    let ms = |d: &Duration| d.as_micros() as f64 / 1000.0;
    s.collect_seq(spans.iter().map(|(a, b)| (ms(a), ms(b))))
}

fn as_at_ms<S: Serializer>(at: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    at.map(crate::defense::breaker::millis).serialize(s)
}

impl Verdict {
    /// Marks it inconclusive, for `why`: the evidence cannot carry it, so
    /// it neither passed nor failed.
    pub fn set_inconclusive(&mut self, why: &str) {
        self.passed = false;
        self.inconclusive = Some(why.to_string());
        self.awaits_history = false;
        self.seeds_baseline = false;
    }

    /// Marks it not judged, for `why`: it neither passed nor failed.
    pub fn set_not_judged(&mut self, why: &str) {
        self.passed = false;
        self.not_judged = Some(why.to_string());
        self.awaits_history = false;
        self.seeds_baseline = false;
        self.at = None;
        self.judged.clear();
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(why) = &self.not_judged {
            return write!(f, "not judged: {} ({why})", self.expectation);
        }
        if let Some(why) = &self.inconclusive {
            return write!(f, "inconclusive: {} ({why})", self.expectation);
        }
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
    let (per_second, unit) = latency_unit(d);
    let value = d.as_secs_f64() * per_second;
    format!("{}{unit}", trim(format!("{value:.3}")))
}

/// The unit a latency is shown in (`us` below a millisecond, `ms` below a
/// second, else `s`), as how many of it make a second, and its name.
fn latency_unit(d: Duration) -> (f64, &'static str) {
    if d < Duration::from_millis(1) {
        (1e6, "us")
    } else if d < Duration::from_secs(1) {
        (1e3, "ms")
    } else {
        (1.0, "s")
    }
}

/// A number's text without trailing zeros after the point: `1.50` -> `1.5`,
/// `3.00` -> `3`.
fn trim(text: String) -> String {
    if !text.contains('.') {
        return text;
    }
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A figure in its unit: a time (kept in milliseconds), a share, a number.
pub(crate) fn show(value: f64, kind: super::ast::ValueKind) -> String {
    use super::ast::ValueKind;
    match kind {
        ValueKind::Duration => latency(Duration::from_secs_f64(value.max(0.0) / 1000.0)),
        ValueKind::Share => format!("{}%", ratio(value)),
        ValueKind::Count | ValueKind::Ratio => ratio(value),
        ValueKind::Quantity => quantity(value),
    }
}

/// A number as Prometheus gives it, with four significant digits after
/// its leading zeros: `0.2871`, `0.004213`, `1523.4`.
pub(crate) fn quantity(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return value.to_string();
    }
    let digits = (3 - value.abs().log10().floor() as i32).clamp(0, 12) as usize;
    trim(format!("{value:.digits$}"))
}

/// A share in percent with one decimal: `61.3%`, `100.0%`.
pub(crate) fn percent(value: f64) -> String {
    format!("{value:.1}%")
}

/// A ratio with up to two decimals: `3`, `1.25`.
pub(crate) fn ratio(value: f64) -> String {
    trim(format!("{value:.2}"))
}

/// A share in percent judged against `bound` (in percent): `61.3%`,
/// `98.97%` for a failing 96 of 97 against `>= 99%`, `exactly 99.0%`.
pub(crate) fn percent_against(value: f64, bound: Bound) -> String {
    let text = decisive(value, 1.0, 1, bound);
    format!("{}{text}%", exactly(value, bound))
}

/// A ratio judged against `bound`: `1.25`, `1.505` against `<= 1.5`.
pub(crate) fn ratio_against(value: f64, bound: Bound) -> String {
    let text = trim(decisive(value, 1.0, 2, bound));
    format!("{}{text}", exactly(value, bound))
}

/// A latency judged against `bound` (in seconds): `3.2ms`, `5.0004ms`
/// against `<= 5ms`.
pub(crate) fn latency_against(d: Duration, bound: Bound) -> String {
    let (per_second, unit) = latency_unit(d);
    let text = trim(decisive(d.as_secs_f64() * per_second, per_second, 3, bound));
    format!("{}{text}{unit}", exactly(d.as_secs_f64(), bound))
}

/// The most decimals [`decisive`] tries before it shows the shortest text
/// that reads back as the figure itself.
const MAX_DECIMALS: usize = 12;

/// `shown` (a figure in the unit it is shown in, `per_unit` of them to one
/// unit of the bound's scale) with `decimals` decimals, or with as many
/// more as it takes for the text, read back, to be judged by `bound` as
/// the figure itself is.
fn decisive(shown: f64, per_unit: f64, decimals: usize, bound: Bound) -> String {
    let held = bound.holds(shown / per_unit);
    (decimals..=MAX_DECIMALS)
        .map(|d| format!("{shown:.d$}"))
        .find(|text| {
            text.parse::<f64>()
                .is_ok_and(|back| bound.holds(back / per_unit) == held)
        })
        // Rust's shortest text of a float reads back as that very float.
        .unwrap_or_else(|| format!("{shown}"))
}

/// `exactly ` before a figure that holds by sitting exactly on its `>=` or
/// `<=` bound (one that holds `==` is on it by definition); else nothing.
fn exactly(value: f64, bound: Bound) -> &'static str {
    match bound {
        Bound::Cmp(Op::Ge | Op::Le, on) if value == on.scalar() => "exactly ",
        _ => "",
    }
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
