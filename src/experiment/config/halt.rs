//! Halt conditions: `route NAME METRIC OP VALUE for DURATION`, checked every
//! second over the requests sent in the last DURATION that have finished.
//! When one holds the drill is aborted: faults removed, load stopped.

use crate::clock::Duration;
use crate::experiment::timeline::RequestRecord;
use crate::schema::units::{Dur, Percent};

/// A parsed halt condition.
#[derive(Debug, Clone, PartialEq)]
pub struct HaltCondition {
    /// As written.
    pub text: String,
    /// The load route it watches.
    pub route: String,
    /// 1-based column of the route's name in `text`, so an unknown route can
    /// be pointed at.
    pub route_column: usize,
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

/// The form of a halt condition, quoted by every parse error.
const FORM: &str =
    "`route NAME success|errors <|> PERCENT for DURATION`, e.g. `route B success < 50% for 5s`";

/// The words of `text` with their 1-based columns (in characters).
fn words(text: &str) -> Vec<(usize, &str)> {
    let mut words = Vec::new();
    let mut start = None;
    for (column, (at, c)) in text.char_indices().enumerate() {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some((column + 1, at)),
            (true, Some((col, from))) => {
                words.push((col, &text[from..at]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some((col, from)) = start {
        words.push((col, &text[from..]));
    }
    words
}

/// Parses a halt condition; errors start with `column N:`, the column of
/// the word at fault in the sentence.
impl std::str::FromStr for HaltCondition {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let words = words(text);
        let end = text.chars().count() + 1;
        let word = |i: usize| words.get(i).copied().unwrap_or((end, ""));
        let at =
            |(column, _): (usize, &str), message: String| format!("column {column}: {message}");
        let keyword = |i: usize, want: &str| -> Result<(), String> {
            match word(i) {
                (_, w) if w == want => Ok(()),
                (column, "") => Err(at(
                    (column, ""),
                    format!("expected `{want}`, found the end: {FORM}"),
                )),
                found => Err(at(
                    found,
                    format!("expected `{want}`, found `{}`: {FORM}", found.1),
                )),
            }
        };
        let present = |i: usize, what: &str| -> Result<(usize, &str), String> {
            match word(i) {
                (column, "") => Err(at(
                    (column, ""),
                    format!("expected {what}, found the end: {FORM}"),
                )),
                found => Ok(found),
            }
        };
        keyword(0, "route")?;
        let (route_column, route) = present(1, "a load route's name")?;
        let metric = match present(2, "success or errors")? {
            (_, "success") => HaltMetric::Success,
            (_, "errors") => HaltMetric::Errors,
            found => {
                return Err(at(
                    found,
                    format!("unknown metric `{}`: expected success or errors", found.1),
                ));
            }
        };
        let below = match present(3, "< or >")? {
            (_, "<") => true,
            (_, ">") => false,
            found => {
                return Err(at(
                    found,
                    format!("unknown operator `{}`: use < or >", found.1),
                ));
            }
        };
        let value = present(4, "a percentage such as 50%")?;
        let threshold: Percent = value.1.parse().map_err(|e| at(value, e))?;
        keyword(5, "for")?;
        let window = present(6, "a duration such as 5s")?;
        let duration: Dur = window.1.parse().map_err(|e| at(window, e))?;
        if duration.get().is_zero() {
            return Err(at(
                window,
                "the window after `for` must be longer than 0s".to_string(),
            ));
        }
        if let Some(extra) = words.get(7) {
            return Err(at(
                *extra,
                format!("unexpected `{}` after the window: {FORM}", extra.1),
            ));
        }
        Ok(HaltCondition {
            text: text.to_string(),
            route: route.to_string(),
            route_column,
            metric,
            below,
            threshold,
            window: duration.get(),
        })
    }
}

impl HaltCondition {
    /// The share now, over finished requests of the route sent within the
    /// window ending at `now`; `None` when there are none.
    pub fn share<'a>(
        &self,
        records: impl IntoIterator<Item = &'a RequestRecord>,
        now: Duration,
    ) -> Option<(f64, usize)> {
        let from = now.saturating_sub(self.window);
        let finished: Vec<&RequestRecord> = records
            .into_iter()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halt_condition_parses_with_the_route_column() {
        let h: HaltCondition = "route  B success < 50% for 5s".parse().unwrap();
        assert_eq!(
            (h.route.as_str(), h.route_column, h.metric, h.below),
            ("B", 8, HaltMetric::Success, true)
        );
        assert_eq!(h.window, Duration::from_secs(5));
        assert_eq!(h.threshold.percent(), 50.0);
    }

    #[test]
    fn bad_halt_conditions_name_the_column_of_the_word_at_fault() {
        let error = |text: &str| text.parse::<HaltCondition>().unwrap_err();
        let cases = [
            (
                "rout B success < 50% for 5s",
                "column 1: expected `route`, found `rout`",
            ),
            (
                "route B success < 50%",
                "column 22: expected `for`, found the end",
            ),
            (
                "route B latency < 50% for 5s",
                "column 9: unknown metric `latency`",
            ),
            (
                "route B success = 50% for 5s",
                "column 17: unknown operator `=`",
            ),
            (
                "route B success < 150% for 5s",
                "column 19: invalid percentage `150%`",
            ),
            (
                "route B success < 50% for 0s",
                "column 27: the window after `for`",
            ),
            (
                "route B success < 50% for 5s now",
                "column 30: unexpected `now`",
            ),
            (
                "route",
                "column 6: expected a load route's name, found the end",
            ),
        ];
        for (text, start) in cases {
            let message = error(text);
            assert!(message.starts_with(start), "{text:?}: {message}");
        }
    }
}
