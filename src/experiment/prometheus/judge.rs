//! Judging `query` sentences once the run is over: each window's
//! intervals sent to `query_range` as wall-clock times (the drill's start
//! plus each offset) at the query's step, after waiting until the window's
//! end plus the source's scrape lag; the samples of each series summed up
//! (max, min, avg, last) or each held (`at every step`), every series
//! against the bound. An empty answer or an error never passes: the
//! verdict names the query, its source and Prometheus's own message.

use std::collections::BTreeMap;

use crate::clock::{Duration, Instant};
use crate::experiment::config::Experiment;
use crate::experiment::config::prometheus::{PromQuery, PrometheusSource};
use crate::experiment::expect::ast::{Bound, Rule};
use crate::experiment::expect::query::{Aggregate, QueryRule};
use crate::experiment::expect::{Expectation, Verdict, evaluate};
use crate::experiment::timeline::Timeline;

use super::client::{PromClient, Series};
use super::series::QuerySeries;

/// What Prometheus said of a run's `query` sentences.
#[derive(Debug, Default)]
pub struct Queried {
    /// The verdict of each sentence of the expectations, by index: the
    /// judge stage puts them in place of the "not queried" ones.
    pub verdicts: BTreeMap<usize, Verdict>,
    /// The same for the steady state's sentences (before, then after).
    pub steady: BTreeMap<usize, Verdict>,
    /// The series of every query judged, over the run, for the page.
    pub drawn: Vec<QuerySeries>,
}

/// Judges the `query` sentences of `expectations` and of `steady` (the
/// steady state's, windowed) once the run is over, and draws their
/// queries; `start` is the drill's start (offset 0), `started_at_unix_ms`
/// the same instant on the wall clock (none: a virtual run, nothing
/// asked).
pub async fn judge_queries(
    experiment: &Experiment,
    expectations: &[Expectation],
    steady: &[Expectation],
    timeline: &Timeline,
    start: Instant,
    started_at_unix_ms: Option<u64>,
) -> Queried {
    let Some(t0) = started_at_unix_ms else {
        return Queried::default();
    };
    let mut queried = Queried::default();
    for (list, into) in [
        (expectations, &mut queried.verdicts),
        (steady, &mut queried.steady),
    ] {
        for (i, e) in list.iter().enumerate() {
            if let Rule::Query(rule) = &e.rule {
                let at = At {
                    start,
                    t0_ms: t0,
                    settle: true,
                };
                into.insert(i, judge_query(experiment, e, rule, timeline, at).await);
            }
        }
    }
    let rules: Vec<&QueryRule> = expectations
        .iter()
        .chain(steady)
        .filter_map(|e| match &e.rule {
            Rule::Query(rule) => Some(rule),
            _ => None,
        })
        .collect();
    queried.drawn = super::series::draw(experiment, &rules, timeline, start, t0).await;
    queried
}

/// When a sentence is judged on the wall clock.
#[derive(Debug, Clone, Copy)]
pub struct At {
    /// The drill's start (offset 0).
    pub start: Instant,
    /// The same instant on the wall clock, Unix milliseconds.
    pub t0_ms: u64,
    /// Wait until the window's end plus the scrape lag before asking
    /// (after the run); `false` asks at once (the warm-up's check, which
    /// must not hold back the first fault).
    pub settle: bool,
}

/// The verdict of one `query` sentence (`rule`, of `e`).
pub async fn judge_query(
    experiment: &Experiment,
    e: &Expectation,
    rule: &QueryRule,
    timeline: &Timeline,
    at: At,
) -> Verdict {
    let mut verdict = evaluate(e, timeline);
    let (passed, seen, figure) = one(experiment, rule, timeline, at).await;
    verdict.passed = passed;
    verdict.seen = seen;
    verdict.figure = figure;
    // The history keeps the figure under the sentence up to its bound, as
    // it keeps a regression sentence's.
    let key = rule.figure_key();
    verdict.expected = format!("{key} {}", rule.bound_text());
    verdict.figure_key = Some(key);
    let (limit, unit) = rule.limit();
    verdict.limit = Some(limit);
    verdict.unit = unit;
    verdict
}

/// Whether one sentence held, what was seen, and its figure (in the
/// bound's unit: milliseconds, percent or the number).
async fn one(
    experiment: &Experiment,
    rule: &QueryRule,
    timeline: &Timeline,
    at: At,
) -> (bool, String, Option<f64>) {
    let Some(query) = experiment
        .queries
        .iter()
        .find(|q| q.name == rule.query.text)
    else {
        return (false, format!("no query named \"{}\"", rule.query), None);
    };
    let Some(source) = experiment
        .prometheus
        .iter()
        .find(|s| s.name == query.source)
    else {
        return (false, format!("no source named \"{}\"", query.source), None);
    };
    let name = format!(
        "query {} (`{}`) on {}",
        query.name, query.promql, source.name
    );
    let intervals = match rule.window.resolve(timeline) {
        Ok(i) if i.is_empty() => {
            return (
                false,
                format!(
                    "{name}: the window {} never happened: nothing to judge",
                    rule.window.describe()
                ),
                None,
            );
        }
        // Asked at once: the window as far as it has gone (Prometheus would
        // fill later steps with its last value).
        Ok(i) if !at.settle => {
            let now = crate::clock::now().saturating_duration_since(at.start);
            i.into_iter()
                .map(|(a, b)| (a, b.min(now)))
                .filter(|(a, b)| a < b)
                .collect()
        }
        Ok(i) => i,
        Err(e) => return (false, e, None),
    };
    let last_end = intervals.iter().map(|(_, b)| *b).max().unwrap_or_default();
    if at.settle {
        // The window's last samples are stored one scrape lag after it ends.
        crate::clock::sleep_until(at.start + last_end + source.scrape_lag()).await;
    }
    let series = match fetch(source, query, &intervals, at.t0_ms).await {
        Ok(s) => s,
        Err(e) => return (false, format!("{name}: {e}"), None),
    };
    // NaN (a quantile of no traffic, 0/0) is no value: it never passes,
    // nor hides behind a max; the verdict counts the steps without one.
    let steps: usize = series.iter().map(|s| s.samples.len()).sum();
    let series: Vec<Series> = series
        .into_iter()
        .map(|s| Series {
            labels: s.labels,
            samples: s.samples.into_iter().filter(|(_, x)| !x.is_nan()).collect(),
        })
        .collect();
    let nan = steps - series.iter().map(|s| s.samples.len()).sum::<usize>();
    if series.iter().all(|s| s.samples.is_empty()) {
        return (
            false,
            format!(
                "{name} returned no samples {} (an empty or NaN answer never passes: is the metric scraped, the selector right, any traffic?)",
                rule.window.describe()
            ),
            None,
        );
    }
    let (passed, mut seen, figure) = verdict(rule, query, &series);
    if nan > 0 {
        seen.push_str(&format!("; {nan} of {steps} steps had no value (NaN)"));
    }
    (passed, seen, figure)
}

/// Every series over every interval, merged by labels.
async fn fetch(
    source: &PrometheusSource,
    query: &PromQuery,
    intervals: &[(Duration, Duration)],
    t0_ms: u64,
) -> Result<Vec<Series>, String> {
    let client = PromClient::new(source).await?;
    let at = |d: Duration| t0_ms as f64 / 1000.0 + d.as_secs_f64();
    let mut merged: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for (a, b) in intervals {
        let step = query.step.as_secs_f64();
        for s in client
            .query_range(&query.promql, at(*a), at(*b), step)
            .await?
        {
            merged.entry(s.labels).or_default().extend(s.samples);
        }
    }
    Ok(merged
        .into_iter()
        .map(|(labels, samples)| Series { labels, samples })
        .collect())
}

/// The verdict over the series: each summed up and bound-checked; the
/// figure shown is the first failing series', else the one nearest the
/// bound's wrong side.
fn verdict(rule: &QueryRule, query: &PromQuery, series: &[Series]) -> (bool, String, Option<f64>) {
    let bound = rule.prometheus_bound();
    let figures: Vec<(&Series, f64)> = series
        .iter()
        .filter(|s| !s.samples.is_empty())
        .map(|s| (s, worst(rule.aggregate, &s.samples, bound)))
        .collect();
    let failing = figures.iter().find(|(_, x)| !bound.holds(*x));
    let shown = failing.copied().or_else(|| {
        figures
            .iter()
            .copied()
            .min_by(|a, b| margin(bound, a.1).total_cmp(&margin(bound, b.1)))
    });
    let Some((s, x)) = shown else {
        return (false, "no samples".to_string(), None);
    };
    let steps = s.samples.len();
    let seen = format!(
        "{} {} of {} ({} series, {steps} step(s) of {})",
        rule.aggregate.words(),
        show(rule.bound, x),
        s.labels,
        figures.len(),
        crate::schema::units::Dur(query.step)
    );
    (failing.is_none(), seen, Some(in_unit(rule.bound, x)))
}

/// A series' figure: its summary, or for `at every step` the sample that
/// fails the bound (else the one nearest failing).
fn worst(aggregate: Aggregate, samples: &[(f64, f64)], bound: Bound) -> f64 {
    let values = samples.iter().map(|(_, x)| *x);
    match aggregate {
        Aggregate::Max => values.fold(f64::NEG_INFINITY, f64::max),
        Aggregate::Min => values.fold(f64::INFINITY, f64::min),
        Aggregate::Avg => values.sum::<f64>() / samples.len() as f64,
        Aggregate::Last => samples
            .iter()
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map_or(f64::NAN, |(_, x)| *x),
        Aggregate::EveryStep => values
            .clone()
            .find(|x| !bound.holds(*x))
            .or_else(|| values.min_by(|a, b| margin(bound, *a).total_cmp(&margin(bound, *b))))
            .unwrap_or(f64::NAN),
    }
}

/// How far `x` is inside the bound (smaller: nearer failing).
fn margin(bound: Bound, x: f64) -> f64 {
    use crate::experiment::expect::ast::Op;
    match bound {
        Bound::Cmp(Op::Le | Op::Lt, v) => v.scalar() - x,
        Bound::Cmp(Op::Ge | Op::Gt, v) => x - v.scalar(),
        Bound::Cmp(Op::Eq, v) | Bound::Within { of: v, .. } => -(x - v.scalar()).abs(),
    }
}

/// A Prometheus value in the bound's unit: milliseconds for a duration,
/// percent for a percentage, else the number.
fn in_unit(bound: Bound, x: f64) -> f64 {
    x * super::series::unit_of(bound).1
}

/// A Prometheus value as the bound is written: `412ms`, `99.1%`, `2.5`.
fn show(bound: Bound, x: f64) -> String {
    let ratio = crate::experiment::expect::verdict::ratio;
    match super::series::unit_of(bound) {
        ("", _) => ratio(x),
        (unit, _) => format!("{}{unit}", ratio(in_unit(bound, x))),
    }
}
