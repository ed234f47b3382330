//! `prometheus:` and `queries:` — the team's own monitoring as a judge:
//! named Prometheus servers (a URL, headers or a bearer token, a timeout,
//! the scrape interval the judge waits for) and named PromQL queries that
//! expectation sentences refer to (`query checkout_p99 max during
//! inventory-slow <= 300ms`). The PromQL is sent as written, never parsed
//! here.

use indexmap::IndexMap;
use serde::Deserialize;

use crate::clock::Duration;
use crate::schema::units::Dur;

/// The default wait for one answer of Prometheus.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Prometheus's own default `scrape_interval`.
const DEFAULT_SCRAPE_INTERVAL: Duration = Duration::from_secs(15);

/// A Prometheus server as written.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSource {
    /// `http://host:port`, optionally with a path prefix
    /// (`http://host:9090/prometheus`).
    #[schemars(regex(pattern = r"^http://[^/:?#]+(:[0-9]+)?(/[^?#]*)?$"))]
    url: String,
    /// Headers sent with every query (a tenant header, say); write a
    /// secret as `${VAR}` with a secret's name (it is masked everywhere).
    #[serde(default)]
    headers: IndexMap<String, String>,
    /// Sent as `Authorization: Bearer ...`; write it as
    /// `${PROMETHEUS_TOKEN}` so it comes from a variable and is masked.
    #[serde(default)]
    bearer_token: Option<String>,
    /// The longest wait for one answer (default 10s).
    #[serde(default)]
    timeout: Option<Dur>,
    /// How often Prometheus scrapes the service (default 15s, its own
    /// default): the judge waits twice this after a window ends before
    /// querying it, and it is a query's default step.
    #[serde(default)]
    scrape_interval: Option<Dur>,
}

/// A named PromQL query as written: the PromQL alone (the only source), or
/// with its source and step.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub(super) enum RawQuery {
    /// The PromQL, sent to the only source at its scrape interval.
    Promql(String),
    /// The PromQL with its source and step.
    Full(RawFullQuery),
}

/// A named query with its source and step.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFullQuery {
    /// The PromQL, sent as written.
    promql: String,
    /// The `prometheus:` source it is sent to (may be left out when there
    /// is only one).
    #[serde(default)]
    source: Option<String>,
    /// The resolution of `query_range` (default: the source's scrape
    /// interval).
    #[serde(default)]
    step: Option<Dur>,
}

/// A Prometheus server the drill queries.
#[derive(Debug, Clone, PartialEq)]
pub struct PrometheusSource {
    /// Its name under `prometheus:` (errors and verdicts name it).
    pub name: String,
    /// `http://host:port[/prefix]` as written, without a trailing `/`.
    pub url: String,
    /// Headers sent with every request, in the order written.
    pub headers: Vec<(String, String)>,
    /// `Authorization: Bearer` value, if any.
    pub bearer_token: Option<String>,
    /// The longest wait for one answer.
    pub timeout: Duration,
    /// How often it scrapes: the scrape lag the judge waits for is twice
    /// this, and it is a query's default step.
    pub scrape_interval: Duration,
}

impl PrometheusSource {
    /// How long after a window ends its last samples are surely stored: one
    /// scrape interval for the scrape that sees the window's end, one more
    /// for a scrape that started late or rules evaluated after it.
    pub fn scrape_lag(&self) -> Duration {
        self.scrape_interval * 2
    }
}

/// A named PromQL query.
#[derive(Debug, Clone, PartialEq)]
pub struct PromQuery {
    /// Its name under `queries:` (sentences name it).
    pub name: String,
    /// The PromQL, as written.
    pub promql: String,
    /// The source's name under `prometheus:`.
    pub source: String,
    /// The resolution of `query_range`.
    pub step: Duration,
}

/// The sources and queries, checked: a source's URL is `http://`, every
/// query names a known source (or there is only one), the real clock.
pub(super) fn read(
    sources: IndexMap<String, RawSource>,
    queries: IndexMap<String, RawQuery>,
    clock: super::ClockKind,
) -> Result<(Vec<PrometheusSource>, Vec<PromQuery>), String> {
    if !sources.is_empty() && clock == super::ClockKind::Virtual {
        return Err("prometheus: querying a real Prometheus needs `clock: real` (this experiment's clock is virtual: its times are not the wall clock's)".to_string());
    }
    let sources: Vec<PrometheusSource> = sources
        .into_iter()
        .map(|(name, raw)| source(name, raw))
        .collect::<Result<_, _>>()?;
    let names: Vec<&str> = sources.iter().map(|s| s.name.as_str()).collect();
    let mut out = Vec::new();
    for (name, raw) in queries {
        let (promql, source, step) = match raw {
            RawQuery::Promql(p) => (p, None, None),
            RawQuery::Full(f) => (f.promql, f.source, f.step),
        };
        if promql.trim().is_empty() {
            return Err(format!("queries.{name}: the PromQL is empty"));
        }
        let source = match (source, names.as_slice()) {
            (Some(s), _) if names.contains(&s.as_str()) => s,
            (Some(s), _) => {
                return Err(format!(
                    "queries.{name}.source: unknown source `{s}`: expected one of {}",
                    super::system::one_of(&names)
                ));
            }
            (None, [only]) => only.to_string(),
            (None, []) => {
                return Err(format!(
                    "queries.{name}: needs a `prometheus:` source to send it to"
                ));
            }
            (None, _) => {
                return Err(format!(
                    "queries.{name}: name its source: one of {}",
                    super::system::one_of(&names)
                ));
            }
        };
        let interval = sources
            .iter()
            .find(|s| s.name == source)
            .map_or(DEFAULT_SCRAPE_INTERVAL, |s| s.scrape_interval);
        out.push(PromQuery {
            name,
            promql,
            source,
            step: step.map_or(interval, Dur::get),
        });
    }
    Ok((sources, out))
}

/// One source, checked.
fn source(name: String, raw: RawSource) -> Result<PrometheusSource, String> {
    let url = raw.url.trim_end_matches('/').to_string();
    if !url.starts_with("http://") {
        return Err(format!(
            "prometheus.{name}.url: expected `http://host:port[/prefix]`, found `{}`",
            raw.url
        ));
    }
    for header in raw.headers.keys() {
        if http::HeaderName::from_bytes(header.as_bytes()).is_err() {
            return Err(format!(
                "prometheus.{name}.headers.{header}: not a valid header name"
            ));
        }
    }
    let positive = |d: Option<Dur>, key: &str, default: Duration| match d.map(Dur::get) {
        Some(d) if d.is_zero() => Err(format!("prometheus.{name}.{key}: must be more than 0s")),
        Some(d) => Ok(d),
        None => Ok(default),
    };
    Ok(PrometheusSource {
        timeout: positive(raw.timeout, "timeout", DEFAULT_TIMEOUT)?,
        scrape_interval: positive(
            raw.scrape_interval,
            "scrape_interval",
            DEFAULT_SCRAPE_INTERVAL,
        )?,
        headers: raw.headers.into_iter().collect(),
        bearer_token: raw.bearer_token.filter(|t| !t.is_empty()),
        name,
        url,
    })
}
