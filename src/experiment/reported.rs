//! What a user's service says of its own breaker, as a second source beside
//! the inferred one: a JSON-lines events file the service writes, or its
//! Prometheus endpoint scraped during the drill. Shown side by side with
//! the inferred transitions in the report; never judged.

use std::sync::{Arc, Mutex};

use serde::Deserialize;

use crate::clock::{self, Duration, Instant};
use crate::defense::breaker::State;
use crate::http::ShutdownSignal;
use crate::http::client::Upstream;

/// Where the service reports its breaker's state.
#[derive(Debug, Clone, PartialEq)]
pub enum ReportedSource {
    /// A JSON-lines file the service appends to, one line per change:
    /// `{"at_ms": <Unix epoch ms>, "from": "closed", "to": "open"}`
    /// (state names `closed`, `open`, `half_open`; `halfOpen` and
    /// `half-open` too). Read after the drill.
    Events(String),
    /// The service's Prometheus endpoint, scraped during the drill.
    Prometheus(PrometheusSource),
}

/// `reported:` as written: exactly one of `events`, `prometheus`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("minProperties" = 1, "maxProperties" = 1))]
struct RawReported {
    /// A JSON-lines file the service appends to, one line per change:
    /// `{"at_ms": <Unix epoch ms>, "from": "closed", "to": "open"}`.
    #[serde(default)]
    events: Option<String>,
    /// The service's Prometheus endpoint, scraped during the drill.
    #[serde(default)]
    prometheus: Option<PrometheusSource>,
}

impl TryFrom<RawReported> for ReportedSource {
    type Error = String;

    fn try_from(raw: RawReported) -> Result<Self, String> {
        match (raw.events, raw.prometheus) {
            (Some(path), None) => Ok(ReportedSource::Events(path)),
            (None, Some(p)) => {
                if !p.url.starts_with("http://") {
                    return Err(format!(
                        "prometheus.url: `{}`: expected http://host:port/path",
                        p.url
                    ));
                }
                Ok(ReportedSource::Prometheus(p))
            }
            _ => Err("give exactly one of events, prometheus".to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for ReportedSource {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::schema::deserialize_checked::<D, RawReported, ReportedSource>(d)
    }
}

crate::schema_via!(ReportedSource, RawReported, "ReportedSource");

/// A Prometheus endpoint with resilience4j / micrometer names.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PrometheusSource {
    /// `http://host:port/path`, e.g. `http://127.0.0.1:8080/actuator/prometheus`.
    pub url: String,
    /// The breaker's `name` label in `resilience4j_circuitbreaker_state`.
    pub name: String,
    /// How often to scrape (default `250ms`).
    #[serde(default)]
    pub interval: Option<crate::schema::units::Dur>,
}

/// One reported change: when (since the drill's start), from, to.
pub type Change = (Duration, State, State);

/// A state name as services write it.
fn state(name: &str) -> Option<State> {
    match name.trim() {
        "closed" | "CLOSED" => Some(State::Closed),
        "open" | "OPEN" | "forced_open" | "FORCED_OPEN" => Some(State::Open),
        "half_open" | "halfOpen" | "half-open" | "HALF_OPEN" => Some(State::HalfOpen),
        _ => None,
    }
}

/// Reads an events file; times are put on the drill's clock with
/// `started_at_unix_ms`. An unreadable file or line is an error that says
/// which.
pub fn read_events(path: &str, started_at_unix_ms: u64) -> Result<Vec<Change>, String> {
    #[derive(Deserialize)]
    struct Line {
        at_ms: f64,
        from: String,
        to: String,
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: cannot read: {e}"))?;
    let mut changes = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let bad = |what: &str| format!("{path}:{}: {what}", i + 1);
        let l: Line = serde_json::from_str(line)
            .map_err(|e| bad(&format!("expected {{\"at_ms\", \"from\", \"to\"}}: {e}")))?;
        let (Some(from), Some(to)) = (state(&l.from), state(&l.to)) else {
            return Err(bad("from/to: expected closed, open or half_open"));
        };
        let since = (l.at_ms - started_at_unix_ms as f64).max(0.0);
        changes.push((Duration::from_secs_f64(since / 1000.0), from, to));
    }
    Ok(changes)
}

/// The state `name` is in according to a Prometheus text page: the
/// `resilience4j_circuitbreaker_state{name=..,state=..}` sample at 1.
pub fn state_in_page(page: &str, name: &str) -> Option<State> {
    page.lines()
        .filter(|l| l.starts_with("resilience4j_circuitbreaker_state{"))
        .find_map(|l| {
            let (labels, value) = l.split_once('}')?;
            let labels = labels.strip_prefix("resilience4j_circuitbreaker_state{")?;
            let label = |key: &str| {
                labels.split(',').find_map(|kv| {
                    let (k, v) = kv.split_once('=')?;
                    (k.trim() == key).then(|| v.trim().trim_matches('"').to_string())
                })
            };
            let on = value.trim().parse::<f64>().ok()? >= 1.0;
            (on && label("name")? == name).then(|| state(&label("state")?))?
        })
}

/// Scrapes `source` every interval until `stop`, recording each change of
/// state (the first sample sets the starting state, not a change).
pub async fn scrape(
    client: Arc<dyn Upstream>,
    source: PrometheusSource,
    start: Instant,
    mut stop: ShutdownSignal,
    changes: Arc<Mutex<Vec<Change>>>,
) {
    let interval = source
        .interval
        .map_or(Duration::from_millis(250), |d| d.get());
    let path = source
        .url
        .strip_prefix("http://")
        .and_then(|rest| rest.find('/').map(|i| rest[i..].to_string()))
        .unwrap_or_else(|| "/".to_string());
    let mut last: Option<State> = None;
    loop {
        let sampled = async {
            let req = http::Request::get(path.as_str())
                .body(crate::http::full(""))
                .ok()?;
            let resp = client.send(req).await.ok()?;
            let body = http_body_util::BodyExt::collect(resp.into_body())
                .await
                .ok()?;
            state_in_page(&String::from_utf8_lossy(&body.to_bytes()), &source.name)
        };
        let at = clock::now().saturating_duration_since(start);
        if let Some(now) = sampled.await {
            if let Some(before) = last.filter(|b| *b != now) {
                changes
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((at, before, now));
            }
            last = Some(now);
        }
        tokio::select! {
            biased;
            _ = stop.wait() => return,
            _ = clock::sleep(interval) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prometheus_page_gives_the_state_whose_sample_is_one_for_that_name() {
        let page = "# HELP x\n\
            resilience4j_circuitbreaker_state{name=\"inventory\",state=\"closed\",} 0.0\n\
            resilience4j_circuitbreaker_state{name=\"inventory\",state=\"open\",} 1.0\n\
            resilience4j_circuitbreaker_state{name=\"payments\",state=\"closed\",} 1.0\n";
        assert_eq!(state_in_page(page, "inventory"), Some(State::Open));
        assert_eq!(state_in_page(page, "payments"), Some(State::Closed));
        assert_eq!(state_in_page(page, "search"), None);
    }

    #[test]
    fn events_are_put_on_the_drills_clock_and_library_state_names_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("events.jsonl");
        std::fs::write(
            &file,
            "{\"at_ms\": 1000500, \"from\": \"closed\", \"to\": \"open\"}\n\
             {\"at_ms\": 1002500, \"from\": \"open\", \"to\": \"halfOpen\"}\n",
        )
        .unwrap();
        let changes = read_events(file.to_str().unwrap(), 1_000_000).unwrap();
        assert_eq!(
            changes,
            [
                (Duration::from_millis(500), State::Closed, State::Open),
                (Duration::from_millis(2500), State::Open, State::HalfOpen),
            ]
        );
    }

    #[test]
    fn a_bad_events_line_names_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("events.jsonl");
        std::fs::write(
            &file,
            "{\"at_ms\": 1, \"from\": \"closed\", \"to\": \"ajar\"}\n",
        )
        .unwrap();
        let err = read_events(file.to_str().unwrap(), 0).unwrap_err();
        assert!(
            err.ends_with("events.jsonl:1: from/to: expected closed, open or half_open"),
            "{err}"
        );
    }
}
