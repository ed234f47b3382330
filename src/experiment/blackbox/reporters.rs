//! What a user's service says of its own breakers during a drill: the
//! scrapers of its Prometheus endpoints, started with the run, and the
//! events file it writes, read after it; both put on the drill's clock.

use std::sync::{Arc, Mutex};

use super::reported::{Change, ReportedSource, read_events};
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
                Some(ReportedSource::Events(path)) => {
                    match read_events(path, started_at_unix_ms.unwrap_or_default()) {
                        Ok(changes) => (changes, "events"),
                        Err(e) => {
                            warnings.push(format!("system.breakers.{name}.reported: {e}"));
                            continue;
                        }
                    }
                }
                Some(ReportedSource::Prometheus(_)) => {
                    let scraped = self
                        .scraped
                        .iter()
                        .find(|(n, _)| n == name)
                        .map(|(_, c)| c.lock().unwrap_or_else(|e| e.into_inner()).clone())
                        .unwrap_or_default();
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
