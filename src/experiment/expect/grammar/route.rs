//! The two sentences about figures: `route NAME METRIC [WINDOW] BOUND`
//! and `calls to GLOB [WINDOW] BOUND`.

use super::cursor::Parser;
use super::error::{ParseError, closest};
use super::terms::{WINDOW_WORDS, bound, window};
use crate::defense::fallback::FallbackKind;
use crate::experiment::expect::ast::{
    LatencyStat, Measure, Metric, PathGlob, Rule, ValueKind, Window,
};

/// After `route`: `NAME METRIC [WINDOW] BOUND`.
pub(crate) fn route(p: &mut Parser) -> Result<Rule, ParseError> {
    let route = p.name("a route name")?;
    let metric = metric(p)?;
    let window = window(p)?;
    if super::regress::starts(p) {
        let measure = Measure::Route {
            route,
            metric,
            window,
        };
        return super::regress::regress(p, measure);
    }
    let bound = bound(p, metric.kind(), window == Window::Run)?;
    Ok(Rule::Route {
        route,
        metric,
        window,
        bound,
    })
}

/// The metric words, for suggestions.
const METRICS: [&str; 12] = [
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
    "grpc",
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
        "grpc" => Metric::Grpc(0),
        "max" => Metric::Latency(LatencyStat::Max),
        w => match percentile(w) {
            Some(pc) => Metric::Latency(LatencyStat::Percentile(pc)),
            None => {
                return Err(p.error(
                    "a metric (success, fallback, rejected, errors, timeouts, requests, \
                     p50, p90, p99, max, amplification, grpc STATUS)",
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
        Metric::Grpc(_) => {
            let word = p.peek_word().unwrap_or_default();
            let Some(code) = crate::schema::units::grpc_status_code(word) else {
                return Err(p.error(
                    "a gRPC status (OK, CANCELLED, UNKNOWN, ..., UNAVAILABLE, or 0 to 16)",
                    &crate::schema::units::GRPC_STATUS_NAMES,
                ));
            };
            p.advance();
            Metric::Grpc(code)
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
