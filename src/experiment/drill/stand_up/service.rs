//! Standing up the parts around a user's own service: one fault proxy per
//! dependency on its declared address (in front of a real upstream or the
//! fixture server, behind the dependency's own defense line if it has
//! one), and the client that sends the load to the service. Real sockets
//! and the wall clock only: the service is a real process.

use std::sync::Arc;

use super::dial::{self, Dialed};
use super::{Context, RunningDependency, Sides, spawn_fault_proxy};
use crate::clock::{Duration, Instant};
use crate::defense::breaker::journal::Transition;
use crate::experiment::blackbox::inferred::Seen;
use crate::experiment::blackbox::reporters::Reporters;
use crate::experiment::config::{
    DependencySpec, Experiment, SystemSpec, Upstream as DependencyUpstream,
};
use crate::experiment::error::RunError;
use crate::experiment::timeline::{BreakerInfo, RequestRecord};
use crate::fault::FaultPlan;
use crate::fault::plan::Arrival;
use crate::http::ShutdownSignal;
use crate::http::client::{HttpUpstream, Upstream};
use crate::net::{self, TcpAcceptor, TcpConnector};
use crate::proxy::record::{Collected, Record, Recorder as ProxyRecorder};
use crate::proxy::{Forward, Telemetry};
use crate::spill::Replay;
use crate::target::TargetStats;
use crate::tls::ServiceConnector;

/// The user's own service, as the experiment declares it, and what
/// watches it during the run.
#[derive(Debug)]
pub struct OwnService<'a> {
    /// The experiment: its dependencies, faults, load and seed.
    experiment: &'a Experiment,
    /// The service, its breakers and how they are reported.
    system: &'a SystemSpec,
    /// The scrapers of the breakers it reports through Prometheus (none
    /// before [`OwnService::start_watching`]).
    reporters: Reporters,
    /// The dependency proxies' tasks: awaited at the end, so that every
    /// call still held then is recorded with when it was let go.
    proxies: std::sync::Mutex<Vec<ProxyTask>>,
}

impl<'a> OwnService<'a> {
    /// The service of `experiment`.
    pub fn new(experiment: &'a Experiment, system: &'a SystemSpec) -> OwnService<'a> {
        OwnService {
            experiment,
            system,
            reporters: Reporters::default(),
            proxies: std::sync::Mutex::default(),
        }
    }

    /// Binds every dependency proxy, starts the fixture servers behind the
    /// builtin ones, checks the real upstreams answer a connection, and
    /// returns the client towards the service.
    pub(super) async fn stand_up<N>(
        &self,
        context: &Context<'_, N>,
        dialed: &mut Dialed,
    ) -> Result<Sides, RunError> {
        let mut dependencies = Vec::new();
        for dependency in &self.experiment.dependencies {
            let forward = match &dependency.upstream {
                DependencyUpstream::Agent(agent) => {
                    dependencies.push(stand_up_remote(context, dependency, agent).await?);
                    continue;
                }
                DependencyUpstream::Builtin(routes) => builtin(routes, context.servers).await?,
                DependencyUpstream::Url(service) => dial::take(dialed, service).await?,
            };
            let (running, proxy) = stand_up_dependency(context, dependency, forward).await?;
            dependencies.push(running);
            self.proxies
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(proxy);
        }
        // The service took a TCP connection before the clock started
        // (`dial::dial_all`); it is asked nothing more: it may take its
        // first call late.
        let service = &self.system.service;
        let connector =
            dial::connector(service)
                .await
                .map_err(|(step, source)| RunError::Topology {
                    key: "system.url".to_string(),
                    message: format!("{}: {step}", service.endpoint.url()),
                    source,
                })?;
        let client = HttpUpstream::new(Arc::new(connector), &service.endpoint.authority)
            .rewriting(service.endpoint.rewrite());
        Ok(Sides {
            entry: Arc::new(client),
            dependencies,
            instances: Default::default(),
        })
    }

    /// Waits (at most `grace` and a second) for every dependency proxy to
    /// stop once the servers were told to, so that the calls they still
    /// held are recorded.
    pub(super) async fn wind_down(&self, grace: Duration, dependencies: &[RunningDependency]) {
        let proxies = std::mem::take(&mut *self.proxies.lock().unwrap_or_else(|e| e.into_inner()));
        let all = futures_util::future::join_all(proxies);
        let remotes = dependencies.iter().filter_map(|d| d.remote.as_deref());
        let remotes = futures_util::future::join_all(remotes.map(|r| r.finish()));
        let _ = tokio::time::timeout(grace + Duration::from_secs(1), all).await;
        // Each call to an agent has its own timeout.
        remotes.await;
    }

    /// Starts one scraper per breaker reported through Prometheus; they
    /// stop with the servers.
    pub(super) fn start_watching(&mut self, start: Instant, servers: &ShutdownSignal) {
        self.reporters = Reporters::start(self.system, start, servers);
    }

    /// The service's breakers as inferred from the run (`records`: each
    /// dependency's, in the order of `dependencies`), and the first read
    /// of a list on disk that failed, if one did.
    pub(super) fn inferred(
        &self,
        requests: &dyn Replay<RequestRecord>,
        dependencies: &[RunningDependency],
        arrivals: &[&dyn Replay<Arrival>],
        records: &[&dyn Replay<Record>],
        duration: Duration,
    ) -> Inferred {
        let lost: Vec<Option<String>> = dependencies
            .iter()
            .map(|d| d.remote.as_ref()?.lost())
            .collect();
        let seen: Vec<Seen<'_>> = dependencies
            .iter()
            .zip(arrivals)
            .zip(records)
            .zip(&lost)
            .map(|(((d, arrivals), records), lost)| Seen {
                name: &d.name,
                arrivals: *arrivals,
                records: *records,
                lost: lost.as_deref(),
            })
            .collect();
        crate::experiment::blackbox::inferred::breakers(
            self.system,
            &self.experiment.load,
            requests,
            &seen,
            duration,
        )
    }

    /// What the service reported of its breakers, on the drill's clock,
    /// and a warning for each source that could not be read.
    pub(super) fn reported(
        &self,
        started_at_unix_ms: Option<u64>,
    ) -> (Vec<Transition>, Vec<String>) {
        self.reporters.reported(self.system, started_at_unix_ms)
    }
}

/// A service's breakers as inferred: their transitions, what expectations
/// need to know of each, and the first read of a list on disk that failed.
pub type Inferred = (Vec<Transition>, Vec<BreakerInfo>, Option<std::io::Error>);

/// A dependency whose fault proxy is an agent's: the agent set up, its
/// faults scheduled, its records read into a plan and a sink of this
/// machine.
async fn stand_up_remote<N>(
    context: &Context<'_, N>,
    dependency: &DependencySpec,
    agent: &crate::experiment::config::agent::Agent,
) -> Result<RunningDependency, RunError> {
    let experiment = context.experiment;
    let faults: Vec<crate::fault::Fault> = experiment
        .faults
        .iter()
        .filter(|f| f.dependency.as_deref() == Some(dependency.name.as_str()))
        .cloned()
        .collect();
    let plan =
        Arc::new(FaultPlan::new(Vec::new(), experiment.seed, context.start).recording_arrivals());
    let records = Arc::new(Collected::default());
    let remote = super::remote::Remote::start(
        &dependency.name,
        agent,
        &faults,
        context.remote,
        experiment.duration,
        context.start,
        plan.clone(),
        records.clone(),
        experiment.correlation(),
    )
    .await?;
    Ok(RunningDependency {
        name: dependency.name.clone(),
        instance: None,
        plan,
        records: Some(records),
        remote: Some(remote),
    })
}

/// The task of a dependency's fault proxy.
type ProxyTask = tokio::task::JoinHandle<std::io::Result<()>>;

/// One dependency's fault proxy on its declared address (behind the
/// dependency's own defense line, if it has one), forwarding to `forward`
/// and recording every request: the running dependency and the proxy's
/// task.
async fn stand_up_dependency<N>(
    context: &Context<'_, N>,
    dependency: &DependencySpec,
    forward: Forward<ServiceConnector>,
) -> Result<(RunningDependency, ProxyTask), RunError> {
    let experiment = context.experiment;
    let (start, servers, grace) = (context.start, context.servers, context.grace);
    let faults = experiment
        .faults
        .iter()
        .filter(|f| f.dependency.as_deref() == Some(dependency.name.as_str()) && !f.manual)
        .cloned()
        .collect();
    let plan = Arc::new(FaultPlan::new(faults, experiment.seed, start).recording_arrivals());
    let acceptor = bind(dependency).await?;
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
                context.observer,
                servers,
                grace,
            )
            .map_err(|e| RunError::PoolServer(format!("dependencies.{}.{e}", dependency.name)))?;
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
    let proxy = spawn_fault_proxy(context, proxy_acceptor, forward, &plan, telemetry);
    let running = RunningDependency {
        name: dependency.name.clone(),
        instance: None,
        plan,
        records: Some(records),
        remote: None,
    };
    Ok((running, proxy))
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

/// A fixture server with `routes` on a free loopback port, for a
/// builtin dependency's proxy to forward to.
async fn builtin(
    routes: &[crate::target::TargetRoute],
    servers: &ShutdownSignal,
) -> Result<Forward<ServiceConnector>, RunError> {
    let acceptor = TcpAcceptor::bind("127.0.0.1:0".parse().expect("literal address"))
        .await
        .map_err(RunError::Listen)?;
    let addr = acceptor.local_addr();
    let stats = Arc::new(TargetStats::with_routes(routes.to_vec()));
    tokio::spawn(crate::target::serve(acceptor, stats, servers.clone()));
    Ok(Forward {
        connector: Arc::new(ServiceConnector::plain(TcpConnector { addr })),
        rewrite: Default::default(),
        client_fin: Default::default(),
        limit: None,
    })
}
