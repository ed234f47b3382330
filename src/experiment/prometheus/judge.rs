//! Judging `query` sentences once the run is over: each window's
//! intervals sent to `query_range` as wall-clock times (the drill's start
//! plus each offset) at the query's step, after waiting until the window's
//! end plus the source's scrape lag; the samples of each series summed up
//! (max, min, avg, last) or each held (`at every step`), every series
//! against the bound. A regression sentence on a query takes the worst
//! series' figure (the largest for `no more than`, the smallest for `no
//! less than`) on Prometheus's scale, against its baseline. An empty
//! answer or an error never passes: the verdict names the query, its
//! source and Prometheus's own message.

use std::collections::BTreeMap;

use crate::clock::{Duration, Instant};
use crate::experiment::config::Experiment;
use crate::experiment::config::prometheus::{PromQuery, PrometheusSource};
use crate::experiment::expect::ast::{Bound, Direction, Measure, Regress, Rule};
use crate::experiment::expect::query::{Aggregate, QueryMeasure, QueryRule};
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
            let at = At {
                start,
                t0_ms: t0,
                settle: true,
            };
            let verdict = match &e.rule {
                Rule::Query(rule) => judge_query(experiment, e, rule, timeline, at).await,
                Rule::Regress(
                    regress @ Regress {
                        measure: Measure::Query(measure),
                        ..
                    },
                ) => judge_regress(experiment, e, regress, measure, timeline, at).await,
                _ => continue,
            };
            into.insert(i, verdict);
        }
    }
    // A query is drawn in the unit of its first bounded sentence, else on
    // Prometheus's scale.
    let mut judged: Vec<(&QueryMeasure, (&'static str, f64))> = Vec::new();
    for e in expectations.iter().chain(steady) {
        match &e.rule {
            Rule::Query(rule) => judged.push((&rule.measure, super::series::unit_of(rule.bound))),
            Rule::Regress(Regress {
                measure: Measure::Query(measure),
                ..
            }) => judged.push((measure, ("", 1.0))),
            _ => {}
        }
    }
    queried.drawn = super::series::draw(experiment, &judged, timeline, start, t0).await;
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
    let (passed, seen, figure) = match samples(experiment, &rule.measure, timeline, at).await {
        Ok(asked) => verdict_of(rule, &asked),
        Err(seen) => (false, seen, None),
    };
    verdict.passed = passed;
    verdict.seen = seen;
    verdict.figure = figure;
    // The history keeps the figure under the sentence up to its bound, as
    // it keeps a regression sentence's on the same query.
    let key = rule.measure.figure_key();
    verdict.expected = format!("{key} {}", rule.bound_text());
    verdict.figure_key = Some(key);
    let (limit, unit) = rule.limit();
    verdict.limit = Some(limit);
    verdict.unit = unit;
    verdict
}

/// The verdict of a regression sentence on a query (`regress`, the rule
/// of `e`, measuring `measure`): the worst series' figure against the
/// baseline the history gave before the run.
async fn judge_regress(
    experiment: &Experiment,
    e: &Expectation,
    regress: &Regress,
    measure: &QueryMeasure,
    timeline: &Timeline,
    at: At,
) -> Verdict {
    let measured = match samples(experiment, measure, timeline, at).await {
        Ok(asked) => {
            let figures = asked
                .series
                .iter()
                .map(|s| (s, summed(measure.aggregate, &s.samples)));
            let worst = match regress.direction {
                Direction::AtMost => figures.max_by(|a, b| a.1.total_cmp(&b.1)),
                Direction::AtLeast => figures.min_by(|a, b| a.1.total_cmp(&b.1)),
            };
            worst.map_or((None, "no samples".to_string(), None), |(s, x)| {
                let value = crate::experiment::expect::verdict::quantity(x);
                (Some(x), seen(measure.aggregate, &value, s, &asked), None)
            })
        }
        Err(seen) => (None, seen, None),
    };
    crate::experiment::expect::regress::judge_measured(e, regress, timeline, measured)
}

/// A query's answer over a sentence's window: its series with at least
/// one value (NaN steps left out), and how many steps had none.
struct Asked {
    series: Vec<Series>,
    steps: usize,
    nan: usize,
    step: Duration,
}

impl Asked {
    /// What the verdict adds when steps had no value.
    fn nan_note(&self) -> String {
        if self.nan == 0 {
            return String::new();
        }
        format!("; {} of {} steps had no value (NaN)", self.nan, self.steps)
    }
}

/// Asks Prometheus for `measure`'s query over its window (after the
/// window's end plus the scrape lag when `at.settle`). What was seen when
/// there is nothing to judge: the query, its source and why.
async fn samples(
    experiment: &Experiment,
    measure: &QueryMeasure,
    timeline: &Timeline,
    at: At,
) -> Result<Asked, String> {
    let Some(query) = experiment
        .queries
        .iter()
        .find(|q| q.name == measure.query.text)
    else {
        return Err(format!("no query named \"{}\"", measure.query));
    };
    let Some(source) = experiment
        .prometheus
        .iter()
        .find(|s| s.name == query.source)
    else {
        return Err(format!("no source named \"{}\"", query.source));
    };
    let name = format!(
        "query {} (`{}`) on {}",
        query.name, query.promql, source.name
    );
    let intervals = match measure.window.resolve(timeline)? {
        i if i.is_empty() => {
            return Err(format!(
                "{name}: the window {} never happened: nothing to judge",
                measure.window.describe()
            ));
        }
        // Asked at once: the window as far as it has gone (Prometheus would
        // fill later steps with its last value).
        i if !at.settle => {
            let now = crate::clock::now().saturating_duration_since(at.start);
            i.into_iter()
                .map(|(a, b)| (a, b.min(now)))
                .filter(|(a, b)| a < b)
                .collect()
        }
        i => i,
    };
    let last_end = intervals.iter().map(|(_, b)| *b).max().unwrap_or_default();
    if at.settle {
        // The window's last samples are stored one scrape lag after it ends.
        crate::clock::sleep_until(at.start + last_end + source.scrape_lag()).await;
    }
    let series = fetch(source, query, &intervals, at.t0_ms)
        .await
        .map_err(|e| format!("{name}: {e}"))?;
    // NaN (a quantile of no traffic, 0/0) is no value: it never passes,
    // nor hides behind a max; the verdict counts the steps without one.
    let steps: usize = series.iter().map(|s| s.samples.len()).sum();
    let series: Vec<Series> = series
        .into_iter()
        .map(|s| Series {
            labels: s.labels,
            samples: s.samples.into_iter().filter(|(_, x)| !x.is_nan()).collect(),
        })
        .filter(|s| !s.samples.is_empty())
        .collect();
    if series.is_empty() {
        return Err(format!(
            "{name} returned no samples {} (an empty or NaN answer never passes: is the metric scraped, the selector right, any traffic?)",
            measure.window.describe()
        ));
    }
    let nan = steps - series.iter().map(|s| s.samples.len()).sum::<usize>();
    Ok(Asked {
        series,
        steps,
        nan,
        step: query.step,
    })
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
fn verdict_of(rule: &QueryRule, asked: &Asked) -> (bool, String, Option<f64>) {
    let bound = rule.prometheus_bound();
    let figures: Vec<(&Series, f64)> = asked
        .series
        .iter()
        .map(|s| (s, worst(rule.measure.aggregate, &s.samples, bound)))
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
    let seen = seen(rule.measure.aggregate, &show(rule.bound, x), s, asked);
    // The figure on Prometheus's scale, as a regression sentence on the
    // same query keeps it.
    (failing.is_none(), seen, Some(x))
}

/// What was seen of series `s` of `asked`: `max 412ms of {job="a"} (2
/// series, 9 step(s) of 1s)`, and the steps without a value.
fn seen(aggregate: Aggregate, value: &str, s: &Series, asked: &Asked) -> String {
    format!(
        "{} {value} of {} ({} series, {} step(s) of {}){}",
        aggregate.words(),
        s.labels,
        asked.series.len(),
        s.samples.len(),
        crate::schema::units::Dur(asked.step),
        asked.nan_note()
    )
}

/// A series' figure: its summary, or for `at every step` the sample that
/// fails the bound (else the one nearest failing).
fn worst(aggregate: Aggregate, samples: &[(f64, f64)], bound: Bound) -> f64 {
    if aggregate != Aggregate::EveryStep {
        return summed(aggregate, samples);
    }
    let values = samples.iter().map(|(_, x)| *x);
    values
        .clone()
        .find(|x| !bound.holds(*x))
        .or_else(|| values.min_by(|a, b| margin(bound, *a).total_cmp(&margin(bound, *b))))
        .unwrap_or(f64::NAN)
}

/// A series' samples summed up (`at every step` is not a sum: the
/// smallest is given, as no sentence asks it of this).
fn summed(aggregate: Aggregate, samples: &[(f64, f64)]) -> f64 {
    let values = samples.iter().map(|(_, x)| *x);
    match aggregate {
        Aggregate::Max => values.fold(f64::NEG_INFINITY, f64::max),
        Aggregate::Min | Aggregate::EveryStep => values.fold(f64::INFINITY, f64::min),
        Aggregate::Avg => values.sum::<f64>() / samples.len() as f64,
        Aggregate::Last => samples
            .iter()
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map_or(f64::NAN, |(_, x)| *x),
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
