//! The parts sentences share — the optional window, the bound and its typed
//! value — and the two sentences about figures built from them: `calls to`
//! and `route`.

use super::lex::Kind;
use super::parse::Parser;
use super::{ParseError, closest};
use crate::defense::fallback::FallbackKind;
use crate::experiment::expect::ast::{
    Bound, LatencyStat, Metric, PathGlob, Rule, Value, ValueKind, Window,
};
use crate::schema::units::{Dur, Percent};

/// The words that start a window.
pub(crate) const WINDOW_WORDS: [&str; 4] = ["during", "while", "between", "in"];

/// An optional window: `during FAULT`, `while BREAKER is STATE`, `while
/// instance I [of P] is ejected`, `between T and T`, `in phase NAME`;
/// [`Window::Run`] when none is written.
pub(crate) fn window(p: &mut Parser) -> Result<Window, ParseError> {
    if p.eat("during") {
        return p.name("a fault name").map(Window::During);
    }
    if p.eat("while") {
        if p.eat("instance") {
            let server = super::pool::server(p)?;
            p.keyword("is")?;
            p.keyword("ejected")?;
            return Ok(Window::Ejected(server));
        }
        let breaker = p.name("a breaker name")?;
        p.keyword("is")?;
        let state = p.state()?;
        return Ok(Window::While { breaker, state });
    }
    if p.eat("between") {
        let from = p.duration()?;
        p.keyword("and")?;
        let to = p.duration()?;
        if to <= from {
            return Err(p.error_at_previous(format!(
                "the window ends at {} but starts at {}: write the earlier time first",
                Dur(to),
                Dur(from)
            )));
        }
        return Ok(Window::Between(from, to));
    }
    if p.eat("in") {
        p.keyword("phase")?;
        return p.name("a phase name").map(Window::Phase);
    }
    Ok(Window::Run)
}

/// A bound: `OP VALUE` or `within P% of VALUE`, the value of `kind`.
/// `window_allowed`: no window was written, so one could still come here
/// (the error then offers both).
pub(crate) fn bound(
    p: &mut Parser,
    kind: ValueKind,
    window_allowed: bool,
) -> Result<Bound, ParseError> {
    if let Some(op) = p.peek().and_then(|t| match t.kind {
        Kind::Op(op) => Some(op),
        _ => None,
    }) {
        p.advance();
        return value(p, kind).map(|v| Bound::Cmp(op, v));
    }
    if p.eat("within") {
        let tolerance = match p
            .peek_word()
            .map(|w| (w.ends_with('%'), w.parse::<Percent>()))
        {
            Some((true, Ok(t))) => t.percent(),
            _ => return Err(p.error("a tolerance such as \"5%\"", &[])),
        };
        p.advance();
        p.keyword("of")?;
        let of = value(p, kind)?;
        return Ok(Bound::Within { tolerance, of });
    }
    let comparison = "a comparison (>=, <=, ==, >, <, within)";
    if window_allowed {
        let mut candidates = vec!["==", ">=", "<=", "within"];
        candidates.extend(WINDOW_WORDS);
        Err(p.error(
            &format!("a window (during, while, between, in phase) or {comparison}"),
            &candidates,
        ))
    } else {
        Err(p.error(comparison, &["==", ">=", "<=", "within"]))
    }
}

/// A value of `kind`.
fn value(p: &mut Parser, kind: ValueKind) -> Result<Value, ParseError> {
    let word = p.peek_word().unwrap_or_default();
    let (parsed, what) = match kind {
        ValueKind::Share => (
            word.strip_suffix('%')
                .and_then(|_| word.parse::<Percent>().ok())
                .map(|pc| Value::Percent(pc.percent())),
            "a percentage from 0% to 100% such as \"99%\"",
        ),
        ValueKind::Duration => (
            word.parse::<Dur>().ok().map(|d| Value::Duration(d.get())),
            "a duration such as \"5ms\"",
        ),
        ValueKind::Count => (
            word.parse::<u64>().ok().map(Value::Count),
            "a whole number such as \"0\"",
        ),
        ValueKind::Ratio => (
            word.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .map(Value::Number),
            "a number such as \"3\"",
        ),
    };
    match parsed {
        Some(v) => {
            p.advance();
            Ok(v)
        }
        None => Err(p.error(what, &[])),
    }
}

/// After `route`: `NAME METRIC [WINDOW] BOUND`.
pub(crate) fn route(p: &mut Parser) -> Result<Rule, ParseError> {
    let route = p.name("a route name")?;
    let metric = metric(p)?;
    let window = window(p)?;
    let bound = bound(p, metric.kind(), window == Window::Run)?;
    Ok(Rule::Route {
        route,
        metric,
        window,
        bound,
    })
}

/// The metric words, for suggestions.
const METRICS: [&str; 11] = [
    "success",
    "fallback",
    "rejected",
    "errors",
    "timeouts",
    "requests",
    "p50",
    "p90",
    "p99",
    "max",
    "amplification",
];

/// A percentile word: `p50`, `p99.9`.
fn percentile(word: &str) -> Option<f64> {
    let p: f64 = word.strip_prefix('p')?.parse().ok()?;
    (p > 0.0 && p <= 100.0).then_some(p)
}

/// A route metric.
fn metric(p: &mut Parser) -> Result<Metric, ParseError> {
    let word = p.peek_word().unwrap_or_default();
    let metric = match word {
        "success" => Metric::Success,
        "fallback" => Metric::Fallback(None),
        "rejected" => Metric::Rejected,
        "errors" => Metric::Errors,
        "timeouts" => Metric::Timeouts,
        "requests" => Metric::Requests,
        "amplification" => Metric::Amplification,
        "max" => Metric::Latency(LatencyStat::Max),
        w => match percentile(w) {
            Some(pc) => Metric::Latency(LatencyStat::Percentile(pc)),
            None => {
                return Err(p.error(
                    "a metric (success, fallback, rejected, errors, timeouts, requests, \
                     p50, p90, p99, max, amplification)",
                    &METRICS,
                ));
            }
        },
    };
    p.advance();
    Ok(match metric {
        Metric::Fallback(_) => {
            const KINDS: [FallbackKind; 4] = FallbackKind::ALL;
            let kind = KINDS.into_iter().find(|k| p.eat(k.as_str()));
            let misspelt = p.peek_word().is_some_and(|w| {
                !WINDOW_WORDS.contains(&w) && closest(w, KINDS.map(FallbackKind::as_str)).is_some()
            });
            if kind.is_none() && misspelt {
                return Err(p.error(
                    "a fallback kind (stale, static, backup, service), a window or a comparison",
                    &KINDS.map(FallbackKind::as_str),
                ));
            }
            Metric::Fallback(kind)
        }
        Metric::Latency(_) => {
            p.eat("latency");
            metric
        }
        other => other,
    })
}

/// After `calls`: `to GLOB [on instance I] [WINDOW] BOUND` or `to instance
/// I [WINDOW] BOUND` (every path).
pub(crate) fn calls(p: &mut Parser) -> Result<Rule, ParseError> {
    p.keyword("to")?;
    if p.eat("instance") {
        let instance = p.name("an instance name")?;
        let window = window(p)?;
        let bound = bound(p, ValueKind::Count, window == Window::Run)?;
        return Ok(Rule::Calls {
            glob: PathGlob::new("*").expect("a valid glob"),
            instance: Some(instance),
            window,
            bound,
        });
    }
    let glob = match p.peek_word() {
        Some(word) => PathGlob::new(word).map_err(|message| ParseError {
            column: p.peek().map_or(1, |t| t.column),
            message,
        })?,
        None => return Err(p.error("a path glob such as \"/inventory/*\"", &[])),
    };
    p.advance();
    let instance = if p.eat("on") {
        p.keyword("instance")?;
        Some(p.name("an instance name")?)
    } else {
        None
    };
    let window = window(p)?;
    let bound = bound(p, ValueKind::Count, window == Window::Run)?;
    Ok(Rule::Calls {
        glob,
        instance,
        window,
        bound,
    })
}
