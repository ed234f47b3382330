//! The regression sentences: a figure, then `no later than`, `no earlier
//! than`, `no worse than`, `no more than` or `no less than`, then a
//! baseline from the history and an optional margin:
//! `... the last passing run [+ 20%]`, `... the median of the last 10
//! passing runs + 500ms`.

use super::cursor::Parser;
use super::error::ParseError;
use crate::experiment::expect::ast::{
    Baseline, Direction, Margin, Measure, Metric, Regress, Rule, Stat, ValueKind,
};
use crate::schema::units::Dur;

/// Whether a regression comparison starts here.
pub(crate) fn starts(p: &Parser) -> bool {
    p.peek_word() == Some("no")
}

/// After the figure: `no WORD than BASELINE [+ MARGIN]`.
pub(crate) fn regress(p: &mut Parser, measure: Measure) -> Result<Rule, ParseError> {
    let key = p.text_so_far();
    p.keyword("no")?;
    let kind = measure.kind();
    let direction = direction(p, &measure)?;
    p.keyword("than")?;
    let baseline = baseline(p)?;
    let margin = margin(p, kind)?;
    Ok(Rule::Regress(Regress {
        measure,
        direction,
        baseline,
        margin,
        key,
        past: None,
    }))
}

/// `later`, `earlier`, `worse`, `more` or `less`, as the figure allows
/// (of a query's figure, only `more` or `less`: firedrill cannot tell
/// which side of a query is worse).
fn direction(p: &mut Parser, measure: &Measure) -> Result<Direction, ParseError> {
    let words: &[&str] = match measure {
        Measure::Transition { .. } => &["later", "earlier", "worse"],
        Measure::Route { .. } => &["worse", "more", "less"],
        Measure::Query(_) => &["more", "less"],
    };
    let word = p.peek_word().unwrap_or_default().to_string();
    let direction = match word.as_str() {
        "later" | "more" | "worse" if words.contains(&word.as_str()) => {
            if word == "worse"
                && let Measure::Route { metric, .. } = measure
            {
                worse(*metric).ok_or_else(|| {
                    p.error(
                        &format!("'more' or 'less' (more {metric} is neither better nor worse)"),
                        &["more", "less"],
                    )
                })?
            } else {
                Direction::AtMost
            }
        }
        "earlier" | "less" if words.contains(&word.as_str()) => Direction::AtLeast,
        _ => {
            let what = match measure {
                Measure::Transition { .. } => "'later', 'earlier' or 'worse' (after 'no')",
                Measure::Route { .. } => "'worse', 'more' or 'less' (after 'no')",
                Measure::Query(_) => {
                    "'more' or 'less' (which side of a query is worse is for you to say)"
                }
            };
            return Err(p.error(what, words));
        }
    };
    p.advance();
    Ok(direction)
}

/// Which side is worse for a route figure; `None` when neither is.
fn worse(metric: Metric) -> Option<Direction> {
    match metric {
        Metric::Success | Metric::Grpc(0) => Some(Direction::AtLeast),
        Metric::Requests => None,
        _ => Some(Direction::AtMost),
    }
}

/// `the last passing run` or `the STAT of the last N passing runs`.
fn baseline(p: &mut Parser) -> Result<Baseline, ParseError> {
    p.keyword("the")?;
    if p.eat("last") {
        p.keyword("passing")?;
        p.keyword("run")?;
        return Ok(Baseline::Last);
    }
    let stat = match p.peek_word() {
        Some("median") => Stat::Median,
        Some("mean") => Stat::Mean,
        Some("min") => Stat::Min,
        Some("max") => Stat::Max,
        _ => {
            return Err(p.error(
                "'last passing run', or 'median', 'mean', 'min' or 'max' of the last N passing runs",
                &["last", "median", "mean", "min", "max"],
            ));
        }
    };
    p.advance();
    p.keyword("of")?;
    p.keyword("the")?;
    p.keyword("last")?;
    let runs = match p.peek_word().and_then(|w| w.parse::<usize>().ok()) {
        Some(n) if (1..=1000).contains(&n) => n,
        _ => return Err(p.error("a number of runs from 1 to 1000, such as \"10\"", &[])),
    };
    p.advance();
    p.keyword("passing")?;
    p.keyword("runs")?;
    Ok(Baseline::Of { stat, runs })
}

/// `+ 20%` (of the baseline) or `+ VALUE` in the figure's unit; `None`
/// at the end of the sentence.
fn margin(p: &mut Parser, kind: ValueKind) -> Result<Option<Margin>, ParseError> {
    let Some(word) = p.peek_word().map(str::to_string) else {
        return Ok(None);
    };
    let value = if word == "+" {
        p.advance();
        p.peek_word().unwrap_or_default().to_string()
    } else if let Some(rest) = word.strip_prefix('+') {
        rest.to_string()
    } else {
        return Err(p.error(
            "a margin such as \"+ 20%\", or the end of the sentence",
            &["+"],
        ));
    };
    let margin = if let Some(percent) = value.strip_suffix('%') {
        percent
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .map(Margin::Relative)
    } else {
        match kind {
            ValueKind::Duration => value
                .parse::<Dur>()
                .ok()
                .map(|d| Margin::Absolute(d.get().as_secs_f64() * 1000.0)),
            ValueKind::Count | ValueKind::Ratio => number(&value).map(Margin::Absolute),
            // On Prometheus's scale: a duration in seconds.
            ValueKind::Quantity => number(&value)
                .or_else(|| value.parse::<Dur>().ok().map(|d| d.get().as_secs_f64()))
                .map(Margin::Absolute),
            ValueKind::Share => None,
        }
    };
    let what = match kind {
        ValueKind::Duration => "a margin such as \"20%\" (of the baseline) or \"500ms\"",
        ValueKind::Share => "a margin such as \"2%\" (of the baseline)",
        ValueKind::Count | ValueKind::Ratio => {
            "a margin such as \"20%\" (of the baseline) or a number such as \"3\""
        }
        ValueKind::Quantity => {
            "a margin such as \"20%\" (of the baseline), a number on Prometheus's scale such as \"0.05\", or a duration such as \"50ms\""
        }
    };
    match margin {
        Some(m) => {
            p.advance();
            Ok(Some(m))
        }
        None => Err(p.error(what, &[])),
    }
}

/// A non-negative finite number.
fn number(word: &str) -> Option<f64> {
    word.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0)
}
