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

pub use super::events::EventsLog;

/// Where the service reports its breaker's state.
#[derive(Debug, Clone, PartialEq)]
pub enum ReportedSource {
    /// A JSON-lines file the service appends to, one line per change:
    /// `{"at_ms": <Unix epoch ms>, "from": "closed", "to": "open"}`
    /// (state names `closed`, `open`, `half_open`; `halfOpen` and
    /// `half-open` too), or a library's own log read through a mapping
    /// ([`EventsLog`]). Read after the drill.
    Events(EventsLog),
    /// The service's Prometheus endpoint, scraped during the drill.
    Prometheus(PrometheusSource),
}

/// `reported:` as written: exactly one of `events`, `prometheus`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("minProperties" = 1, "maxProperties" = 1))]
struct RawReported {
    /// A JSON-lines file the service appends to, one line per change:
    /// its path (lines `{"at_ms": <Unix epoch ms>, "from": "closed",
    /// "to": "open"}`), or `{ file, time: { field, unit, epoch }, state:
    /// { field, words }, skip: { field, unless } }` to read a library's own
    /// log as it is.
    #[serde(default, deserialize_with = "crate::schema::file_or_mapping")]
    #[schemars(schema_with = "crate::schema::json::events_or::<EventsLog>")]
    events: Option<EventsLog>,
    /// The service's Prometheus endpoint, scraped during the drill.
    #[serde(default)]
    prometheus: Option<PrometheusSource>,
}

impl TryFrom<RawReported> for ReportedSource {
    type Error = String;

    fn try_from(raw: RawReported) -> Result<Self, String> {
        match (raw.events, raw.prometheus) {
            (Some(log), None) => Ok(ReportedSource::Events(log)),
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

/// A Prometheus endpoint: resilience4j / micrometer's
/// `resilience4j_circuitbreaker_state` gauge, or opossum-prometheus's
/// `circuit{name, event}` counter (any prefix).
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PrometheusSource {
    /// `http://host:port/path`, e.g. `http://127.0.0.1:8080/actuator/prometheus`.
    pub url: String,
    /// The breaker's `name` label.
    pub name: String,
    /// How often to scrape (default `250ms`).
    #[serde(default)]
    pub interval: Option<crate::schema::units::Dur>,
}

/// One reported change: when (since the drill's start), from, to.
pub type Change = (Duration, State, State);

/// A state name as services write it.
pub(super) fn state(name: &str) -> Option<State> {
    match name.trim() {
        "closed" | "CLOSED" => Some(State::Closed),
        "open" | "OPEN" | "forced_open" | "FORCED_OPEN" => Some(State::Open),
        "half_open" | "halfOpen" | "half-open" | "HALF_OPEN" => Some(State::HalfOpen),
        _ => None,
    }
}

/// A sample's labels: name and (unescaped) value.
type Labels<'a> = Vec<(&'a str, String)>;

/// One sample line of a Prometheus text page: metric name, labels, value.
/// Comments, blank lines and lines that do not parse give `None`.
fn sample(line: &str) -> Option<(&str, Labels<'_>, f64)> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let name_end = line.find(|c: char| c == '{' || c.is_whitespace())?;
    let (name, mut rest) = line.split_at(name_end);
    let mut labels = Vec::new();
    if let Some(inner) = rest.strip_prefix('{') {
        rest = inner;
        loop {
            rest = rest.trim_start_matches([',', ' ']);
            if let Some(after) = rest.strip_prefix('}') {
                rest = after;
                break;
            }
            let (key, after) = rest.split_once('=')?;
            let mut chars = after.strip_prefix('"')?.char_indices();
            let mut value = String::new();
            let end = loop {
                match chars.next()? {
                    (i, '"') => break i,
                    (_, '\\') => match chars.next()?.1 {
                        'n' => value.push('\n'),
                        c => value.push(c),
                    },
                    (_, c) => value.push(c),
                }
            };
            labels.push((key.trim(), value));
            rest = &after[end + 2..];
        }
    }
    let value = rest.split_whitespace().next()?.parse().ok()?;
    Some((name, labels, value))
}

fn label<'a>(labels: &'a [(&str, String)], key: &str) -> Option<&'a str> {
    labels
        .iter()
        .find_map(|(k, v)| (*k == key).then_some(v.as_str()))
}

/// How many times a breaker has changed into each state, as event
/// counters report it (opossum-prometheus).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct EventCounts {
    /// `open` events.
    pub open: u64,
    /// `halfOpen` events.
    pub half_open: u64,
    /// `close` events.
    pub close: u64,
}

impl EventCounts {
    /// The events counted since `before` (a counter that went down, as
    /// after a restart, counts from zero).
    fn since(self, before: EventCounts) -> EventCounts {
        let step = |now: u64, then: u64| if now >= then { now - then } else { now };
        EventCounts {
            open: step(self.open, before.open),
            half_open: step(self.half_open, before.half_open),
            close: step(self.close, before.close),
        }
    }
}

/// What one scrape says of the breaker named `name`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sample {
    /// resilience4j / micrometer: `resilience4j_circuitbreaker_state{name,state}`,
    /// the state whose sample is 1.
    State(State),
    /// opossum-prometheus: the `circuit{name,event}` counter (any metric
    /// prefix) for the events `open`, `halfOpen` and `close`.
    Counts(EventCounts),
}

/// The breaker `name` in a Prometheus text page, in whichever of the two
/// name sets the page uses.
pub fn sample_in_page(page: &str, name: &str) -> Option<Sample> {
    let mut counts: Option<EventCounts> = None;
    for (metric, labels, value) in page.lines().filter_map(sample) {
        if label(&labels, "name") != Some(name) {
            continue;
        }
        if metric == "resilience4j_circuitbreaker_state" {
            if let Some(s) = label(&labels, "state").and_then(state)
                && value >= 1.0
            {
                return Some(Sample::State(s));
            }
        } else if metric.trim_end_matches("_total").ends_with("circuit") {
            let c = counts.get_or_insert_with(EventCounts::default);
            let n = value.max(0.0) as u64;
            match label(&labels, "event") {
                Some("open") => c.open = n,
                Some("halfOpen") => c.half_open = n,
                Some("close") => c.close = n,
                _ => {}
            }
        }
    }
    counts.map(Sample::Counts)
}

/// The changes that explain `delta` more events starting `from`, in the
/// order a breaker's state machine allows them (closed -> open ->
/// half_open -> closed or open). When a half-open breaker could go either
/// way, it closes if closes remain at least as many as opens. Events the
/// machine cannot place (a close while closed) are dropped.
pub fn replay(from: State, delta: EventCounts) -> Vec<(State, State)> {
    let mut left = delta;
    let mut at = from;
    let mut changes = Vec::new();
    loop {
        let (next, count) = match at {
            State::Closed if left.open > 0 => (State::Open, &mut left.open),
            State::Open if left.half_open > 0 => (State::HalfOpen, &mut left.half_open),
            State::HalfOpen if left.close > 0 && left.close >= left.open => {
                (State::Closed, &mut left.close)
            }
            State::HalfOpen if left.open > 0 => (State::Open, &mut left.open),
            _ => return changes,
        };
        *count -= 1;
        changes.push((at, next));
        at = next;
    }
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
    let mut counted: Option<EventCounts> = None;
    loop {
        let sampled = async {
            let req = http::Request::get(path.as_str())
                .body(crate::http::full(""))
                .ok()?;
            let resp = client.send(req).await.ok()?;
            let body = http_body_util::BodyExt::collect(resp.into_body())
                .await
                .ok()?;
            sample_in_page(&String::from_utf8_lossy(&body.to_bytes()), &source.name)
        };
        let at = clock::now().saturating_duration_since(start);
        let steps = match sampled.await {
            Some(Sample::State(now)) => {
                let step = last.filter(|before| *before != now).map(|b| (b, now));
                last = Some(now);
                step.into_iter().collect()
            }
            Some(Sample::Counts(now)) => {
                // The first page is the baseline: the events before the
                // drill, replayed from closed to find where it stands.
                let from = last.unwrap_or(State::Closed);
                let steps = replay(from, now.since(counted.unwrap_or_default()));
                last = Some(steps.last().map_or(from, |s| s.1));
                let baseline = counted.replace(now).is_none();
                if baseline { Vec::new() } else { steps }
            }
            None => Vec::new(),
        };
        if !steps.is_empty() {
            changes
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend(steps.into_iter().map(|(from, to)| (at, from, to)));
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
    fn a_resilience4j_page_gives_the_state_whose_sample_is_one_for_that_name() {
        let page = "# HELP x\n\
            resilience4j_circuitbreaker_state{name=\"inventory\",state=\"closed\",} 0.0\n\
            resilience4j_circuitbreaker_state{name=\"inventory\",state=\"open\",} 1.0\n\
            resilience4j_circuitbreaker_state{name=\"payments\",state=\"closed\",} 1.0\n";
        assert_eq!(
            sample_in_page(page, "inventory"),
            Some(Sample::State(State::Open))
        );
        assert_eq!(
            sample_in_page(page, "payments"),
            Some(Sample::State(State::Closed))
        );
        assert_eq!(sample_in_page(page, "search"), None);
    }

    #[test]
    fn an_opossum_prometheus_page_gives_the_event_counts_of_that_name_with_any_prefix() {
        let page = "# TYPE shop_circuit counter\n\
            shop_circuit{name=\"inventory, eu\",event=\"open\"} 3\n\
            shop_circuit{name=\"inventory, eu\",event=\"halfOpen\"} 2\n\
            shop_circuit{name=\"inventory, eu\",event=\"close\"} 1\n\
            shop_circuit{name=\"inventory, eu\",event=\"fire\"} 90\n\
            shop_circuit{name=\"say \\\"hi\\\"\",event=\"open\"} 7\n\
            shop_circuit_perf_count{name=\"inventory, eu\",event=\"success\"} 40\n";
        assert_eq!(
            sample_in_page(page, "inventory, eu"),
            Some(Sample::Counts(EventCounts {
                open: 3,
                half_open: 2,
                close: 1
            }))
        );
        let quoted = sample_in_page(page, "say \"hi\"");
        assert_eq!(
            quoted,
            Some(Sample::Counts(EventCounts {
                open: 7,
                ..EventCounts::default()
            }))
        );
    }

    #[test]
    fn a_line_that_is_not_a_sample_is_skipped() {
        assert_eq!(sample("# HELP circuit events"), None);
        assert_eq!(sample("circuit{name=\"a\" 1"), None);
        assert_eq!(sample("circuit{name=\"a\"} x"), None);
        assert_eq!(sample("circuit 2").map(|s| s.2), Some(2.0));
    }

    fn counts(open: u64, half_open: u64, close: u64) -> EventCounts {
        EventCounts {
            open,
            half_open,
            close,
        }
    }

    #[test]
    fn counted_events_are_replayed_in_the_order_the_state_machine_allows() {
        use State::*;
        assert_eq!(replay(Closed, counts(1, 0, 0)), [(Closed, Open)]);
        assert_eq!(
            replay(Closed, counts(1, 1, 1)),
            [(Closed, Open), (Open, HalfOpen), (HalfOpen, Closed)]
        );
        // A failed probe: half-open goes back to open, then tries again.
        assert_eq!(
            replay(HalfOpen, counts(1, 1, 1)),
            [(HalfOpen, Closed), (Closed, Open), (Open, HalfOpen)]
        );
        assert_eq!(
            replay(HalfOpen, counts(2, 1, 0)),
            [(HalfOpen, Open), (Open, HalfOpen), (HalfOpen, Open)]
        );
        assert_eq!(replay(Closed, counts(0, 0, 1)), []);
        assert_eq!(replay(Open, counts(1, 0, 0)), []);
    }

    #[test]
    fn a_counter_that_went_down_counts_from_zero() {
        assert_eq!(counts(5, 3, 2).since(counts(4, 3, 1)), counts(1, 0, 1));
        assert_eq!(counts(1, 0, 0).since(counts(4, 3, 1)), counts(1, 0, 0));
    }

    /// The plain form, `events: FILE`.
    fn plain(file: &std::path::Path) -> EventsLog {
        <EventsLog as crate::schema::FromFile>::from_file(file.to_str().unwrap()).unwrap()
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
        let changes = plain(&file).read(1_000_000).unwrap().changes;
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
        let err = plain(&file).read(0).unwrap_err();
        assert!(
            err.ends_with("events.jsonl:1: to: `ajar`: expected closed, open or half_open"),
            "{err}"
        );
    }
}
