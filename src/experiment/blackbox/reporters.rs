//! What a user's service says of its own breakers during a drill: the
//! scrapers of its Prometheus endpoints, started with the run, and the
//! events file it writes, read after it; both put on the drill's clock.

use std::sync::{Arc, Mutex};

use super::reported::{Change, ReportedSource};
use crate::clock::Instant;
use crate::defense::breaker::journal::{Reason, Transition};
use crate::experiment::config::SystemSpec;
use crate::http::ShutdownSignal;
use crate::http::client::{HttpUpstream, Upstream, authority};
use crate::net::{self, Connector, TcpConnector};

/// Scrapers of the services' Prometheus endpoints, running during the drill.
#[derive(Debug, Default)]
pub struct Reporters {
    /// Per breaker name: the changes its scraper saw.
    scraped: Vec<(String, Arc<Mutex<Vec<Change>>>)>,
}

impl Reporters {
    /// Starts one scraper per breaker reported through Prometheus; they stop
    /// with the servers.
    pub fn start(system: &SystemSpec, start: Instant, servers: &ShutdownSignal) -> Reporters {
        let mut reporters = Reporters::default();
        for (name, breaker) in &system.breakers {
            let Some(ReportedSource::Prometheus(source)) = &breaker.reported else {
                continue;
            };
            let changes = Arc::new(Mutex::new(Vec::new()));
            let authority = authority(
                source
                    .url
                    .split('/')
                    .take(3)
                    .collect::<Vec<_>>()
                    .join("/")
                    .as_str(),
            )
            .to_string();
            let client: Arc<dyn Upstream> = Arc::new(HttpUpstream::new(
                Arc::new(LazyConnector(authority.clone())),
                &authority,
            ));
            tokio::spawn(crate::experiment::blackbox::reported::scrape(
                client,
                source.clone(),
                start,
                servers.clone(),
                changes.clone(),
            ));
            reporters.scraped.push((name.clone(), changes));
        }
        reporters
    }

    /// What the services reported of their breakers, on the drill's clock, and
    /// a warning for each source that could not be read.
    pub fn reported(
        &self,
        system: &SystemSpec,
        started_at_unix_ms: Option<u64>,
    ) -> (Vec<Transition>, Vec<String>) {
        let mut transitions = Vec::new();
        let mut warnings = Vec::new();
        for (name, breaker) in &system.breakers {
            let (changes, source) = match &breaker.reported {
                None => continue,
                Some(ReportedSource::Events(log)) => {
                    match log.read(started_at_unix_ms.unwrap_or_default()) {
                        Ok(read) => {
                            let nothing = read.nothing().map(|why| format!("{}: {why}", log.file));
                            warnings.extend(nothing.map(|w| format!("{at}: {w}", at = at(name))));
                            (read.changes, "events")
                        }
                        Err(e) => {
                            warnings.push(format!("{}: {e}", at(name)));
                            continue;
                        }
                    }
                }
                Some(ReportedSource::Prometheus(source)) => {
                    let scraped = self
                        .scraped
                        .iter()
                        .find(|(n, _)| n == name)
                        .map(|(_, c)| c.lock().unwrap_or_else(|e| e.into_inner()).clone())
                        .unwrap_or_default();
                    if scraped.is_empty() {
                        warnings.push(format!(
                            "{}: {}: no state change of `{}` was scraped during the run: the service reported nothing",
                            at(name),
                            source.url,
                            source.name
                        ));
                    }
                    (scraped, "prometheus")
                }
            };
            transitions.extend(changes.into_iter().map(|(at, from, to)| Transition {
                at,
                breaker: name.clone(),
                from,
                to,
                reason: Reason::Reported { source },
            }));
        }
        transitions.sort_by_key(|t| t.at);
        (transitions, warnings)
    }
}

/// The key a breaker's reported source sits under.
fn at(breaker: &str) -> String {
    format!("system.breakers.{breaker}.reported")
}

/// Dials `host:port`, resolving it at each connection (a service that
/// restarts may move).
#[derive(Debug, Clone)]
struct LazyConnector(String);

impl Connector for LazyConnector {
    type Stream = <TcpConnector as Connector>::Stream;

    fn connect(&self) -> impl std::future::Future<Output = std::io::Result<Self::Stream>> + Send {
        let authority = self.0.clone();
        async move {
            let addr = net::resolve(&authority).await?;
            TcpConnector { addr }.connect().await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Duration;
    use crate::defense::breaker::State;

    /// The system of an experiment whose breaker `inventory` is reported
    /// as `reported` (YAML).
    fn system(reported: &str) -> Result<SystemSpec, String> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("experiment.yaml");
        std::fs::write(
            &file,
            format!(
                "name: reported\nduration: 1s\nclock: real\n\
                 system:\n  url: http://127.0.0.1:9\n  breakers:\n    inventory:\n      dependency: inventory\n      reported: {reported}\n\
                 dependencies:\n  inventory: {{ listen: 127.0.0.1:19001, builtin: {{ routes: [] }} }}\n\
                 load: external\n"
            ),
        )
        .unwrap();
        crate::experiment::file::load(&file)
            .map(|l| l.experiment.system.expect("a system"))
            .map_err(|e| e.to_string())
    }

    fn fixture(name: &str) -> String {
        format!("{}/fixtures/blackbox/{name}", env!("CARGO_MANIFEST_DIR"))
    }

    #[test]
    fn a_librarys_own_log_reads_as_is_through_the_events_mapping() {
        let system = system(&format!(
            "{{ events: {{ file: {}, time: {{ field: t_ms, unit: ms, epoch: unix }}, state: {{ field: state, words: {{ OPEN: open, HALF_OPEN: half_open, CLOSED: closed }} }}, skip: {{ field: event, unless: [state_change] }} }} }}",
            fixture("library-log.jsonl")
        ))
        .unwrap();
        let (transitions, warnings) = Reporters::default().reported(&system, Some(1_000_000));
        assert_eq!(warnings, Vec::<String>::new());
        let seen: Vec<(Duration, State, State)> =
            transitions.iter().map(|t| (t.at, t.from, t.to)).collect();
        assert_eq!(
            seen,
            [
                (Duration::from_millis(500), State::Closed, State::Open),
                (Duration::from_millis(2500), State::Open, State::HalfOpen),
                (Duration::from_millis(2700), State::HalfOpen, State::Closed),
            ]
        );
    }

    #[test]
    fn a_bad_key_of_the_events_mapping_is_located_at_its_key() {
        let err = system("{ events: { file: log.jsonl, time: { unit: minutes } } }").unwrap_err();
        assert!(
            err.contains("experiment.yaml:9:60: ")
                && err.contains("system.breakers.inventory.reported.events.time.unit")
                && err.contains(
                    "unknown value `minutes`, expected one of `ms`, `s`, `us`, `rfc3339`"
                ),
            "{err}"
        );
    }

    #[test]
    fn an_events_file_that_yields_nothing_is_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("events.jsonl");
        std::fs::write(&empty, "").unwrap();
        let system = system(&format!("{{ events: {} }}", empty.display())).unwrap();
        let (transitions, warnings) = Reporters::default().reported(&system, Some(0));
        assert!(transitions.is_empty());
        assert_eq!(
            warnings,
            [format!(
                "system.breakers.inventory.reported: {}: no state change in it (the file is empty): the service reported nothing",
                empty.display()
            )]
        );
    }
}
