//! What the page draws of each query a sentence judged: its series over
//! the whole run (one `query_range` from the drill's start to its end,
//! after the scrape lag), in the unit of the first sentence's bound, with
//! the windows its sentences were judged over. Written to `report.json`
//! as `queries` and read back by the page.

use serde::{Deserialize, Serialize};

use crate::clock::{Duration, Instant};
use crate::experiment::config::Experiment;
use crate::experiment::expect::ast::{Bound, Value};
use crate::experiment::expect::query::QueryMeasure;
use crate::experiment::timeline::Timeline;

use super::client::PromClient;

/// One query as the page draws it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuerySeries {
    /// Its name under `queries:`, as the row is labelled.
    pub name: String,
    /// The source it was asked of.
    pub source: String,
    /// The PromQL, shown on hover.
    pub promql: String,
    /// The unit of the values: `ms`, `%` or empty (a plain number), so
    /// the values read as the sentences' bounds are written.
    pub unit: String,
    /// The windows its sentences were judged over, `[start, end)` in
    /// milliseconds from the drill's start: marked on its row.
    pub judged_ms: Vec<(f64, f64)>,
    /// Each series over the run: its labels and `(ms, value)` points (NaN
    /// steps left out: they are no value).
    pub series: Vec<DrawnSeries>,
    /// Why the run's series could not be read (Prometheus's message),
    /// when they could not: the row says so instead of a line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One series of a query over the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DrawnSeries {
    /// Its labels as Prometheus wrote them.
    pub labels: String,
    /// `(milliseconds from the drill's start, value in the unit)`.
    pub points: Vec<(f64, f64)>,
}

/// The unit a bound's value is written in, and the factor from
/// Prometheus's scale to it.
pub fn unit_of(bound: Bound) -> (&'static str, f64) {
    let value = match bound {
        Bound::Cmp(_, v) | Bound::Within { of: v, .. } => v,
    };
    match value {
        Value::Duration(_) => ("ms", 1000.0),
        Value::Percent(_) => ("%", 100.0),
        _ => ("", 1.0),
    }
}

/// The series of every query the sentences judged, each once, over the
/// run (`start` is offset 0, `t0_ms` the same instant on the wall clock):
/// `judged` is each sentence's query and window with the unit its values
/// are drawn in (the first sentence of a query sets it).
pub async fn draw(
    experiment: &Experiment,
    judged: &[(&QueryMeasure, (&'static str, f64))],
    timeline: &Timeline,
    start: Instant,
    t0_ms: u64,
) -> Vec<QuerySeries> {
    let mut out: Vec<QuerySeries> = Vec::new();
    for (rule, (unit, scale)) in judged {
        let judged: Vec<(f64, f64)> = rule
            .window
            .resolve(timeline)
            .unwrap_or_default()
            .iter()
            .map(|(a, b)| (ms(*a), ms(*b)))
            .collect();
        if let Some(drawn) = out.iter_mut().find(|q| q.name == rule.query.text) {
            drawn.judged_ms.extend(judged);
            continue;
        }
        let Some(query) = experiment
            .queries
            .iter()
            .find(|q| q.name == rule.query.text)
        else {
            continue;
        };
        let Some(source) = experiment
            .prometheus
            .iter()
            .find(|s| s.name == query.source)
        else {
            continue;
        };
        // The run's last samples are stored one scrape lag after it ends.
        crate::clock::sleep_until(start + timeline.duration + source.scrape_lag()).await;
        let at = |d: Duration| t0_ms as f64 / 1000.0 + d.as_secs_f64();
        let answer = match PromClient::new(source).await {
            Ok(client) => {
                client
                    .query_range(
                        &query.promql,
                        at(Duration::ZERO),
                        at(timeline.duration),
                        query.step.as_secs_f64(),
                    )
                    .await
            }
            Err(e) => Err(e),
        };
        let (series, error) = match answer {
            Ok(series) => (series, None),
            Err(e) => (Vec::new(), Some(e)),
        };
        out.push(QuerySeries {
            name: query.name.clone(),
            source: source.name.clone(),
            promql: query.promql.clone(),
            unit: unit.to_string(),
            judged_ms: judged,
            series: series
                .into_iter()
                .map(|s| DrawnSeries {
                    labels: s.labels,
                    points: s
                        .samples
                        .into_iter()
                        .filter(|(_, x)| x.is_finite())
                        .map(|(t, x)| (t * 1000.0 - t0_ms as f64, x * scale))
                        .collect(),
                })
                .collect(),
            error,
        });
    }
    out
}

/// A duration in milliseconds.
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
