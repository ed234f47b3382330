//! The game day's stop button: `halt:` sentences read from Prometheus
//! while the drill runs. `alert NAME firing [on SOURCE]` halts once
//! Prometheus's `ALERTS` series has the alert firing; `query Q OP VALUE`
//! halts once any series of the named query crosses the bound (`query
//! checkout_p99 > 500ms`). Each is polled at its source's scrape interval;
//! the first that holds ends the drill as a route halt does (faults
//! removed at once, partial report, exit 1).

use crate::clock::{self, Duration, Instant};
use crate::experiment::config::Experiment;
use crate::experiment::config::prometheus::PrometheusSource;
use crate::experiment::expect::ast::Bound;
use crate::experiment::expect::query::{Aggregate, QueryMeasure, QueryRule, QueryWindow};

use super::client::PromClient;

/// A halt sentence read from Prometheus.
#[derive(Debug, Clone, PartialEq)]
pub struct PromHalt {
    /// As written.
    pub text: String,
    /// The source polled.
    pub source: PrometheusSource,
    /// What is asked, and when it holds.
    pub kind: PromHaltKind,
}

/// What a Prometheus halt asks.
#[derive(Debug, Clone, PartialEq)]
pub enum PromHaltKind {
    /// `alert NAME firing`: the alert's name in `ALERTS`.
    Alert(String),
    /// `query Q OP VALUE`: the query's PromQL, and the bound that halts
    /// (and how it is written).
    Query {
        /// The PromQL.
        promql: String,
        /// Its name, for the report.
        name: String,
        /// The bound; holding it halts.
        rule: Box<QueryRule>,
    },
}

/// Whether `text` is a halt sentence read from Prometheus (it starts with
/// `alert` or `query`).
pub fn is_prometheus_halt(text: &str) -> bool {
    matches!(text.split_whitespace().next(), Some("alert" | "query"))
}

/// Parses a Prometheus halt sentence against `experiment`'s sources and
/// queries; errors start with `column N:`.
pub fn parse(text: &str, experiment: &Experiment) -> Result<PromHalt, String> {
    let text = text.trim();
    let words: Vec<&str> = text.split_whitespace().collect();
    let source_named = |name: Option<&str>, column: usize| -> Result<PrometheusSource, String> {
        let found = match (name, experiment.prometheus.as_slice()) {
            (None, [only]) => Some(only),
            (None, []) => None,
            (None, _) => {
                return Err(format!(
                    "column {column}: several Prometheus sources: write `on SOURCE`"
                ));
            }
            (Some(n), all) => all.iter().find(|s| s.name == n),
        };
        found.cloned().ok_or_else(|| {
            format!(
                "column {column}: no `prometheus:` source{} to read it from",
                name.map(|n| format!(" named `{n}`")).unwrap_or_default()
            )
        })
    };
    if words.first() == Some(&"alert") {
        let form = "`alert NAME firing [on SOURCE]`";
        let (name, rest) = match words.as_slice() {
            [_, name, "firing", rest @ ..] => (*name, rest),
            _ => return Err(format!("column 1: expected {form}")),
        };
        let column = text.find(" on ").map_or(text.len() + 1, |i| i + 5);
        let source = match rest {
            [] => source_named(None, column)?,
            ["on", s] => source_named(Some(s), column)?,
            _ => return Err(format!("column {column}: expected {form}")),
        };
        return Ok(PromHalt {
            text: text.to_string(),
            source,
            kind: PromHaltKind::Alert(name.to_string()),
        });
    }
    // `query Q OP VALUE` is a query sentence's grammar with `last` and no
    // window: the value now.
    let sentence = text.replacen("query ", "", 1);
    let (name, bound) = sentence.split_once(' ').unwrap_or((&sentence, ""));
    let parsed =
        crate::experiment::expect::parse(&format!("query {name} last {bound}")).map_err(|e| {
            format!(
                "column {}: {} (form: `query Q OP VALUE`)",
                e.column.saturating_sub(5).max(1),
                e.message
            )
        })?;
    let crate::experiment::expect::ast::Rule::Query(rule) = parsed.rule else {
        return Err("column 1: expected `query Q OP VALUE`".to_string());
    };
    let Some(query) = experiment
        .queries
        .iter()
        .find(|q| q.name == rule.measure.query.text)
    else {
        return Err(format!(
            "column 7: unknown query `{name}` (give it under `queries:`)"
        ));
    };
    Ok(PromHalt {
        text: text.to_string(),
        source: source_named(Some(&query.source), 7)?,
        kind: PromHaltKind::Query {
            promql: query.promql.clone(),
            name: query.name.clone(),
            rule: Box::new(QueryRule {
                measure: QueryMeasure {
                    aggregate: Aggregate::Last,
                    window: QueryWindow::Drill(crate::experiment::expect::ast::Window::Run),
                    ..rule.measure
                },
                ..rule
            }),
        },
    })
}

/// Resolves with (condition, what it saw) when a Prometheus halt holds;
/// never when there are none. A poll Prometheus does not answer is tried
/// again at the next interval, and said on the console: one warning line
/// when a source stops answering, one when it answers again (not one per
/// poll); each line is kept in `said` too, for the report.
pub async fn watch(
    halts: &[PromHalt],
    start: Instant,
    said: &std::sync::Mutex<Vec<String>>,
) -> (String, String) {
    if halts.is_empty() {
        return std::future::pending().await;
    }
    let mut clients = Vec::new();
    for h in halts {
        clients.push(PromClient::new(&h.source).await.ok());
    }
    let every = halts
        .iter()
        .map(|h| h.source.scrape_interval)
        .min()
        .unwrap_or(Duration::from_secs(1));
    let mut tick = every;
    // The sources that did not answer their last poll.
    let mut silent: Vec<String> = Vec::new();
    loop {
        clock::sleep_until(start + tick).await;
        for (h, client) in halts.iter().zip(&clients) {
            let at = || clock::now().saturating_duration_since(start).as_secs_f64();
            let answer = match client {
                Some(client) => holds(h, client).await,
                None => Err(format!("{}: cannot resolve", h.source.url)),
            };
            let was_silent = silent.contains(&h.source.name);
            match answer {
                Ok(Some(seen)) => return (h.text.clone(), format!("{seen} at {:.1}s", at())),
                Ok(None) if was_silent => {
                    silent.retain(|s| *s != h.source.name);
                    say(
                        said,
                        &format!(
                            "Prometheus {} answers again at {:.1}s: `{}` is watched again",
                            h.source.name,
                            at(),
                            h.text
                        ),
                    );
                }
                Ok(None) => {}
                Err(e) if !was_silent => {
                    silent.push(h.source.name.clone());
                    say(
                        said,
                        &format!(
                            "Prometheus {} stopped answering at {:.1}s ({e}): `{}` cannot halt the drill until it answers again",
                            h.source.name,
                            at(),
                            h.text
                        ),
                    );
                }
                Err(_) => {}
            }
        }
        tick += every;
    }
}

/// A warning line on the console, secrets masked, and kept in `said`.
fn say(said: &std::sync::Mutex<Vec<String>>, line: &str) {
    let line = crate::schema::vars::mask(&format!("halt: {line}")).into_owned();
    eprintln!("warning: {line}");
    said.lock().unwrap_or_else(|e| e.into_inner()).push(line);
}

/// What was seen when `halt` holds now; `None` when it does not; why
/// not when Prometheus did not answer.
async fn holds(halt: &PromHalt, client: &PromClient) -> Result<Option<String>, String> {
    Ok(match &halt.kind {
        PromHaltKind::Alert(name) => {
            let promql = format!("ALERTS{{alertname=\"{name}\",alertstate=\"firing\"}}");
            let firing = client.query(&promql).await?;
            firing.first().map(|(labels, _)| {
                format!(
                    "alert {name} firing in Prometheus {} ({labels})",
                    halt.source.name
                )
            })
        }
        PromHaltKind::Query { promql, name, rule } => {
            let bound: Bound = rule.prometheus_bound();
            let values = client.query(promql).await?;
            values
                .into_iter()
                .find(|(_, x)| bound.holds(*x))
                .map(|(labels, x)| format!("query {name} at {x} {} ({labels})", rule.bound_text()))
        }
    })
}
