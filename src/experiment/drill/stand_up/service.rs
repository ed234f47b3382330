//! Standing up the parts around a user's own service: one fault proxy per
//! dependency on its declared address (in front of a real upstream or the
//! fixture server), and the client that sends the load to the service.
//! Real sockets and the wall clock only: the service is a real process.

use std::sync::{Arc, Mutex};

use crate::clock::{Duration, Instant};
use crate::defense::breaker::State;
use crate::defense::breaker::journal::{Reason, Transition};
use crate::experiment::blackbox::infer::{InferParams, infer};
use crate::experiment::blackbox::reported::{Change, ReportedSource, read_events};
use crate::experiment::config::{
    DependencySpec, Experiment, Service, SystemSpec, Upstream as DependencyUpstream,
};
use crate::experiment::error::RunError;
use crate::experiment::timeline::{BreakerInfo, RequestRecord};
use crate::fault::FaultPlan;
use crate::http::ShutdownSignal;
use crate::http::client::{HttpUpstream, Upstream, authority};
use crate::net::{self, Connector, TcpAcceptor, TcpConnector};
use crate::proxy::record::{Collected, Recorder as ProxyRecorder};
use crate::proxy::{Forward, ProxyMode, Telemetry, serve_forward};
use crate::target::TargetStats;
use crate::tls::{ServiceConnector, TlsClient, TlsKeys};

/// A dependency proxy that is running.
#[derive(Debug)]
pub struct RunningDependency {
    /// Its name.
    pub name: String,
    /// The built-in target's instance it stands in front of, when the
    /// target runs several (`target.builtin.instances`).
    pub instance: Option<String>,
    /// Its fault plan, which records every arrival.
    pub plan: Arc<FaultPlan>,
    /// Every request through it, as `firedrill proxy --record` writes them
    /// (a user's service's dependencies only).
    pub records: Option<Arc<Collected>>,
}

/// Binds every dependency proxy, starts the fixture servers behind the
/// builtin ones, checks the real upstreams answer a connection, and
/// returns the client towards the service.
pub async fn stand_up(
    experiment: &Experiment,
    system: &SystemSpec,
    start: Instant,
    servers: &ShutdownSignal,
    grace: Duration,
    recorder: &Arc<dyn crate::defense::report::Observer>,
    dialed: &mut Dialed,
) -> Result<(Arc<dyn Upstream>, Vec<RunningDependency>), RunError> {
    let mut running = Vec::new();
    for dependency in &experiment.dependencies {
        let faults = experiment
            .faults
            .iter()
            .filter(|f| f.dependency.as_deref() == Some(dependency.name.as_str()) && !f.manual)
            .cloned()
            .collect();
        let plan = Arc::new(FaultPlan::new(faults, experiment.seed, start).recording_arrivals());
        let acceptor = bind(dependency).await?;
        let forward = upstream(dependency, servers, dialed).await?;
        let proxy_acceptor = match &dependency.defense {
            None => acceptor,
            Some(config) => {
                // The defense line takes the declared address; the fault
                // proxy moves behind it to a free loopback port.
                let behind = TcpAcceptor::bind("127.0.0.1:0".parse().expect("literal address"))
                    .await
                    .map_err(RunError::Listen)?;
                let proxy = behind.local_addr();
                let to_proxy: Arc<dyn Upstream> = Arc::new(HttpUpstream::new(
                    Arc::new(TcpConnector { addr: proxy }),
                    &proxy.to_string(),
                ));
                crate::defense::serve::start(
                    config,
                    to_proxy,
                    &|_| None,
                    acceptor,
                    experiment.seed,
                    start,
                    recorder,
                    servers,
                    grace,
                )
                .map_err(|e| {
                    RunError::PoolServer(format!("dependencies.{}.{e}", dependency.name))
                })?;
                behind
            }
        };
        let records = Arc::new(Collected::default());
        let telemetry = Telemetry {
            traffic: Arc::default(),
            recorder: ProxyRecorder::new(
                &dependency.name,
                start,
                Some(records.clone() as Arc<dyn crate::proxy::record::RecordSink>),
            ),
        };
        tokio::spawn(serve_forward(
            proxy_acceptor,
            forward,
            plan.clone(),
            ProxyMode::Http,
            servers.clone(),
            grace,
            telemetry,
        ));
        running.push(RunningDependency {
            name: dependency.name.clone(),
            instance: None,
            plan,
            records: Some(records),
        });
    }
    // The service is not probed: it may take its first call late.
    let service = &system.service;
    let connector = connector(service)
        .await
        .map_err(|(step, source)| RunError::Topology {
            key: "system.url".to_string(),
            message: format!("{}: {step}", service.endpoint.url()),
            source,
        })?;
    let client = HttpUpstream::new(Arc::new(connector), &service.endpoint.authority)
        .rewriting(service.endpoint.rewrite());
    Ok((Arc::new(client), running))
}

/// The dependency's listener on its declared address.
async fn bind(dependency: &DependencySpec) -> Result<TcpAcceptor, RunError> {
    let error = |source| RunError::Topology {
        key: format!("dependencies.{}.listen", dependency.name),
        message: format!("{}: cannot listen", dependency.listen),
        source,
    };
    let addr = net::resolve(&dependency.listen).await.map_err(error)?;
    TcpAcceptor::bind(addr).await.map_err(error)
}

/// What the dependency's proxy forwards to: a real upstream, reachable now,
/// or a fixture server started on a free loopback port.
async fn upstream(
    dependency: &DependencySpec,
    servers: &ShutdownSignal,
    dialed: &mut Dialed,
) -> Result<Forward<ServiceConnector>, RunError> {
    match &dependency.upstream {
        DependencyUpstream::Builtin(routes) => {
            let acceptor = TcpAcceptor::bind("127.0.0.1:0".parse().expect("literal address"))
                .await
                .map_err(RunError::Listen)?;
            let addr = acceptor.local_addr();
            let stats = Arc::new(TargetStats::with_routes(routes.clone()));
            tokio::spawn(crate::target::serve(acceptor, stats, servers.clone()));
            Ok(Forward {
                connector: Arc::new(ServiceConnector::plain(TcpConnector { addr })),
                rewrite: Default::default(),
                client_fin: Default::default(),
            })
        }
        DependencyUpstream::Url(service) => take(dialed, service).await,
    }
}

/// How to forward to each real service of an experiment (`target.url`,
/// the dependencies' upstreams), by [`Service::at`].
pub type Dialed = std::collections::BTreeMap<String, Forward<ServiceConnector>>;

/// Connects once to every real service before the drill's clock starts
/// (for `https://`, a handshake and a short wait for the alert of a server
/// that rejects the client certificate), so a service that cannot be
/// reached stops the run before it begins (exit 3).
pub async fn dial_all(experiment: &Experiment) -> Result<Dialed, RunError> {
    let mut dialed = Dialed::new();
    for service in experiment.services().filter(|s| s.at != "system") {
        dialed.insert(service.at.clone(), dial_one(service).await?);
    }
    Ok(dialed)
}

/// How to forward to `service`: dialled before the start, or now.
pub(crate) async fn take(
    dialed: &mut Dialed,
    service: &Service,
) -> Result<Forward<ServiceConnector>, RunError> {
    match dialed.remove(&service.at) {
        Some(forward) => Ok(forward),
        None => dial_one(service).await,
    }
}

/// [`dial`], its error naming the key at fault.
async fn dial_one(service: &Service) -> Result<Forward<ServiceConnector>, RunError> {
    dial(service).await.map_err(|(step, source)| {
        let url = service.endpoint.url();
        match (service.at.as_str(), step) {
            ("target", Step::Resolve) => RunError::TargetResolve { url, source },
            ("target", Step::Connect) => RunError::TargetUnreachable { url, source },
            (at, step) => RunError::Topology {
                key: format!("{at}.upstream"),
                message: format!("{url}: {step}"),
                source,
            },
        }
    })
}

/// Where dialling a real service failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Its host does not resolve.
    Resolve,
    /// Its TLS settings, the connection or the handshake.
    Connect,
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Step::Resolve => "cannot resolve",
            Step::Connect => "unreachable at start",
        })
    }
}

/// Resolves a real service, connects once (for `https://`, a whole
/// handshake) and returns how to forward to it; an error says at which
/// step it failed.
async fn dial(service: &Service) -> Result<Forward<ServiceConnector>, (Step, std::io::Error)> {
    let connector = connector(service).await?;
    connector.probe().await.map_err(|e| (Step::Connect, e))?;
    Ok(Forward {
        connector: Arc::new(connector),
        rewrite: service.endpoint.rewrite(),
        client_fin: Default::default(),
    })
}

/// Resolves a real service and returns how to dial it, over TLS for
/// `https://`.
async fn connector(service: &Service) -> Result<ServiceConnector, (Step, std::io::Error)> {
    let endpoint = &service.endpoint;
    let addr = net::resolve(&endpoint.authority)
        .await
        .map_err(|e| (Step::Resolve, e))?;
    let tls = match (&service.client, endpoint.https) {
        (_, false) => None,
        (Some(client), true) => Some(client.clone()),
        // Not read with the file (a library caller): the files are
        // relative to the working directory.
        (None, true) => Some(
            TlsClient::load(
                &service.tls,
                std::path::Path::new(""),
                TlsKeys::yaml(&format!("{}.tls", service.at)),
            )
            .map_err(|e| {
                (
                    Step::Connect,
                    std::io::Error::new(std::io::ErrorKind::InvalidInput, e),
                )
            })?,
        ),
    };
    ServiceConnector::new(
        TcpConnector { addr },
        tls.map(|c| (c, endpoint.host.as_str())),
    )
    .map_err(|e| (Step::Connect, e))
}

/// The service's breakers as inferred from the run: their transitions, in
/// the journal's form (reason `inferred`, with the evidence), and what
/// expectations need to know of each.
pub fn inferred(
    experiment: &Experiment,
    system: &SystemSpec,
    requests: &[RequestRecord],
    dependencies: &[RunningDependency],
    duration: Duration,
) -> (Vec<Transition>, Vec<BreakerInfo>) {
    let mut transitions = Vec::new();
    let mut infos = Vec::new();
    for (name, breaker) in &system.breakers {
        let uses =
            |route: &str| breaker.routes.is_empty() || breaker.routes.iter().any(|r| r == route);
        let mut sends: Vec<Duration> = requests
            .iter()
            .filter(|r| uses(&r.route))
            .map(|r| r.sent)
            .collect();
        sends.sort();
        let mut arrivals: Vec<Duration> = dependencies
            .iter()
            .filter(|d| d.name == breaker.dependency)
            .flat_map(|d| d.plan.arrivals())
            .filter(|a| {
                breaker
                    .path
                    .as_ref()
                    .is_none_or(|m| m.matches(&http::Method::GET, &a.path, &http::HeaderMap::new()))
            })
            .map(|a| a.at)
            .filter(|at| *at <= duration)
            .collect();
        arrivals.sort();
        let rate: f64 = experiment
            .load
            .iter()
            .filter(|l| uses(&l.name))
            .map(|l| l.rate)
            .sum();
        let mut params = InferParams::for_rate(if rate > 0.0 {
            rate
        } else {
            observed_rate(&arrivals, duration)
        });
        if let Some(gap) = breaker.gap {
            params.gap = gap;
        }
        params.probes = breaker.probes;
        for t in infer(&sends, &arrivals, &params) {
            // A breaker opens once the call that tripped it has come back:
            // just after its arrival, so that call is not one let through
            // while open.
            let at = if t.to == State::Open {
                t.at + OPENED_AFTER_ARRIVAL
            } else {
                t.at
            };
            transitions.push(Transition {
                at,
                breaker: name.clone(),
                from: t.from,
                to: t.to,
                reason: Reason::Inferred {
                    evidence: t.reason,
                    arrivals: t.arrivals,
                    sends: t.sends,
                },
            });
        }
        infos.push(BreakerInfo {
            name: name.clone(),
            wait_in_open: breaker.wait_in_open.unwrap_or_default(),
            path_glob: breaker
                .path
                .as_ref()
                .and_then(|m| m.path_glob())
                .map(str::to_string),
        });
    }
    (transitions, infos)
}

/// How long after the arrival of the call that tripped it an inferred
/// breaker counts as open.
const OPENED_AFTER_ARRIVAL: Duration = Duration::from_millis(1);

/// Arrivals per second over the run, for external load (no rate known).
fn observed_rate(arrivals: &[Duration], duration: Duration) -> f64 {
    let seconds = duration.as_secs_f64().max(1.0);
    (arrivals.len() as f64 / seconds).max(1.0)
}

/// Scrapers of the services' Prometheus endpoints, running during the drill.
#[derive(Debug, Default)]
pub struct Reporters {
    /// Per breaker name: the changes its scraper saw.
    scraped: Vec<(String, Arc<Mutex<Vec<Change>>>)>,
}

/// Starts one scraper per breaker reported through Prometheus; they stop
/// with the servers.
pub fn start_reporters(system: &SystemSpec, start: Instant, servers: &ShutdownSignal) -> Reporters {
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
    system: &SystemSpec,
    reporters: &Reporters,
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
                let scraped = reporters
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
