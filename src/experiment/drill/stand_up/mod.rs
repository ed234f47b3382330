//! The first stage, stand up: what the load will reach (firedrill's own
//! target, or the user's service and its dependencies), each dependency
//! behind its fault proxy, the defense line in front, and the stream that
//! counts every request. Hands [`Stood`] to the drive stage.
//!
//! The built-in target and a user's own service are the two
//! implementations of this stage ([`builtin`], [`service`]) behind one
//! type, [`UnderTest`]; the rest of the drill asks it what differs.

use crate::spill::Replay;
use std::sync::Arc;

use tokio::sync::watch;

use super::collect::stream::{RecordSink, RunObserver, Stream, StreamSetup};
use super::network::Network;
use crate::clock::{self, Duration, Instant};
use crate::defense::DefenseLine;
use crate::defense::breaker::journal::Transition;
use crate::defense::report::{Observer, Recorder};
use crate::experiment::config::Experiment;
use crate::experiment::file::Loaded;
use crate::experiment::timeline::RequestRecord;
use crate::fault::FaultPlan;
use crate::fault::plan::Arrival;
use crate::http::ShutdownSignal;
use crate::http::client::Upstream;
use crate::proxy::record::Collected;
use entry::Entry;

pub mod builtin;
pub mod dial;
pub mod entry;
pub mod remote;
pub mod service;

/// How long a server of the run waits for its connections to finish once
/// the run is over.
const GRACE: Duration = Duration::from_millis(100);

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
    /// Its fault proxy is an agent's, on another host: the faults applied
    /// there, the records read back into `plan` and `records`.
    pub remote: Option<Arc<remote::Remote>>,
}

/// What the load reaches: one type, two implementations of the stand-up
/// stage.
#[derive(Debug)]
pub enum UnderTest<'a> {
    /// firedrill's own target (the fixture server, its instances, or a
    /// real URL) behind its fault proxy.
    Target(builtin::Target<'a>),
    /// The user's own service, each of its dependencies behind a fault
    /// proxy on the address the service calls.
    Service(service::OwnService<'a>),
}

/// What either implementation stands up: the client towards it, its
/// dependency proxies, and the clients towards the target's instances by
/// name (none without `target.builtin.instances`).
pub struct Sides {
    /// Where every call goes that does not name an instance: the target's
    /// fault proxy (the first instance's), or the user's service.
    pub entry: Arc<dyn Upstream>,
    /// One per fault proxy.
    pub dependencies: Vec<RunningDependency>,
    /// The built-in target's instances by name, each a client through its
    /// own fault proxy: a pool's servers call them.
    pub instances: std::collections::BTreeMap<String, Arc<dyn Upstream>>,
}

/// What the parts of the stand-up stage share.
pub struct Context<'a, N> {
    /// The experiment.
    pub experiment: &'a Experiment,
    /// Where the in-process parts meet (memory or loopback).
    pub network: &'a N,
    /// The drill's start: every time counts from it.
    pub start: Instant,
    /// Stops every server of the run.
    pub servers: &'a ShutdownSignal,
    /// How long a server waits for its connections at the end.
    pub grace: Duration,
    /// Told of every call, transition and health change of a defense line.
    pub observer: &'a Arc<dyn Observer>,
    /// The toxic of each fault on a dependency behind an agent.
    pub remote: &'a std::collections::BTreeMap<String, serde_json::Value>,
}

impl std::fmt::Debug for Sides {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sides")
            .field("dependencies", &self.dependencies)
            .field("instances", &self.instances.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl<N> std::fmt::Debug for Context<'_, N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("experiment", &self.experiment.name)
            .field("start", &self.start)
            .finish_non_exhaustive()
    }
}

impl<'a> UnderTest<'a> {
    /// What `experiment` runs against.
    pub fn of(experiment: &'a Experiment) -> UnderTest<'a> {
        match &experiment.system {
            Some(system) => UnderTest::Service(service::OwnService::new(experiment, system)),
            None => UnderTest::Target(builtin::Target::new(experiment)),
        }
    }

    /// Stands up the target or the service's dependencies.
    async fn stand_up<N: Network>(
        &self,
        context: &Context<'_, N>,
        dialed: &mut dial::Dialed,
    ) -> Result<Sides, crate::experiment::error::RunError> {
        match self {
            UnderTest::Target(target) => target.stand_up(context, dialed).await,
            UnderTest::Service(service) => service.stand_up(context, dialed).await,
        }
    }

    /// Starts what watches the system under test during the run (the
    /// scrapers of a service's own breaker metrics).
    fn start_watching(&mut self, start: Instant, servers: &ShutdownSignal) {
        if let UnderTest::Service(service) = self {
            service.start_watching(start, servers);
        }
    }

    /// Once the servers were told to stop: waits for what must finish
    /// before the run is collected (a service's dependency proxies, so
    /// that every call they still held is recorded).
    pub async fn wind_down(&self, dependencies: &[RunningDependency]) {
        if let UnderTest::Service(service) = self {
            service.wind_down(GRACE, dependencies).await;
        }
    }

    /// Whether the run keeps every request and judges on the whole
    /// timeline after it: a user's service, whose breakers are inferred
    /// only once the run is over.
    pub fn judged_after_the_run(&self) -> bool {
        matches!(self, UnderTest::Service(_))
    }

    /// The breakers inferred from `requests` and what reached the
    /// dependencies by `duration` (`arrivals` and `records`: each one's,
    /// in order):
    /// their transitions and what expectations need to know of each (none
    /// for firedrill's own target).
    pub fn inferred(
        &self,
        requests: &dyn Replay<RequestRecord>,
        dependencies: &[RunningDependency],
        arrivals: &[&dyn Replay<Arrival>],
        records: &[&dyn Replay<crate::proxy::record::Record>],
        duration: Duration,
    ) -> service::Inferred {
        match self {
            UnderTest::Target(_) => Default::default(),
            UnderTest::Service(service) => {
                service.inferred(requests, dependencies, arrivals, records, duration)
            }
        }
    }

    /// What the service reported of its breakers, and a warning for each
    /// source that could not be read (nothing for firedrill's own target).
    pub fn reported(&self, started_at_unix_ms: Option<u64>) -> (Vec<Transition>, Vec<String>) {
        match self {
            UnderTest::Target(_) => Default::default(),
            UnderTest::Service(service) => service.reported(started_at_unix_ms),
        }
    }
}

/// Starts the HTTP fault proxy with `plan` in front of whatever `forward`
/// reaches, on `acceptor`, until the run's servers stop.
fn spawn_fault_proxy<N, A: crate::net::Acceptor, C: crate::net::Connector>(
    context: &Context<'_, N>,
    acceptor: A,
    forward: crate::proxy::Forward<C>,
    plan: &Arc<FaultPlan>,
    telemetry: crate::proxy::Telemetry,
) -> tokio::task::JoinHandle<std::io::Result<()>> {
    tokio::spawn(crate::proxy::serve_forward(
        acceptor,
        forward,
        plan.clone(),
        crate::proxy::ProxyMode::Http,
        context.servers.clone(),
        context.grace,
        telemetry,
    ))
}

/// What the stand-up stage hands to the drive stage.
pub struct Stood<'a> {
    /// What the load reaches.
    pub under_test: UnderTest<'a>,
    /// The drill's start: every time counts from it.
    pub start: Instant,
    /// Real clock: the start in milliseconds since the Unix epoch.
    pub started_at_unix_ms: Option<u64>,
    /// Stops every server of the run when sent `true`.
    pub stop_servers: watch::Sender<bool>,
    /// What every server of the run waits on.
    pub servers: ShutdownSignal,
    /// The defense line's calls, transitions and health changes.
    pub recorder: Arc<Recorder>,
    /// Every request, counted as it finishes.
    pub stream: Arc<Stream>,
    /// Where the load sends its requests.
    pub client: Entry,
    /// The defense line, if the experiment has one.
    pub line: Option<Arc<DefenseLine>>,
    /// Every fault proxy of the run.
    pub dependencies: Vec<RunningDependency>,
    /// The built-in target's instances by name, each a client through its
    /// own fault proxy (none without `target.builtin.instances`).
    pub instances: std::collections::BTreeMap<String, Arc<dyn Upstream>>,
    /// Locust, when it drives the load.
    pub swarm: Option<Arc<super::locust::Swarm>>,
    /// Warnings said on the console while the run went on (a Prometheus
    /// halt's source that stopped answering), for the report too.
    pub said: std::sync::Mutex<Vec<String>>,
}

impl std::fmt::Debug for Stood<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stood")
            .field("under_test", &self.under_test)
            .field("start", &self.start)
            .field("client", &self.client)
            .field("dependencies", &self.dependencies)
            .finish_non_exhaustive()
    }
}

/// Stands up everything `loaded` runs against on `network`, its requests
/// to go to `sinks` as they finish.
pub async fn stand_up<'a, N: Network>(
    loaded: &'a Loaded,
    network: &N,
    sinks: Vec<Box<dyn RecordSink>>,
) -> Result<Stood<'a>, crate::experiment::error::RunError> {
    let experiment = &loaded.experiment;
    let mut under_test = UnderTest::of(experiment);
    // The team's Prometheus answers before anything starts.
    crate::experiment::prometheus::check_sources(experiment, N::WALL_CLOCK).await?;
    let mut dialed = dial::dial_all(experiment).await?;
    // Locust's workers join before the clock starts: its load starts at 0 s.
    let swarm = match &experiment.locust {
        Some(spec) => Some(Arc::new(
            super::locust::Swarm::ready(spec, experiment).await?,
        )),
        None => None,
    };
    let start = clock::now();
    let started_at_unix_ms = N::WALL_CLOCK.then(clock::unix_ms);
    let (stop_servers, servers) = ShutdownSignal::new();
    let recorder = Arc::new(Recorder::default());
    let setup = stream_setup(loaded, under_test.judged_after_the_run(), sinks);
    let stream = Stream::new(setup, start);
    let observer: Arc<dyn Observer> = Arc::new(RunObserver {
        recorder: recorder.clone(),
        stream: stream.clone(),
    });
    let context = Context {
        experiment,
        network,
        start,
        servers: &servers,
        grace: GRACE,
        observer: &observer,
        remote: &loaded.remote,
    };
    let sides = under_test.stand_up(&context, &mut dialed).await?;
    let (client, line) = defense_line(&context, &sides).await?;
    under_test.start_watching(start, &servers);
    Ok(Stood {
        under_test,
        start,
        started_at_unix_ms,
        stop_servers,
        servers,
        recorder,
        stream,
        client,
        line,
        dependencies: sides.dependencies,
        instances: sides.instances,
        swarm,
        said: std::sync::Mutex::new(Vec::new()),
    })
}

/// The defense line, if any, in front of the fault proxy: where the load
/// sends its requests, and the line.
async fn defense_line<N: Network>(
    context: &Context<'_, N>,
    sides: &Sides,
) -> Result<(Entry, Option<Arc<DefenseLine>>), crate::experiment::error::RunError> {
    use crate::experiment::error::RunError;
    let experiment = context.experiment;
    let Some(config) = &experiment.defense else {
        return Ok((Entry::Http(sides.entry.clone()), None));
    };
    let (acceptor, connector, authority) =
        context.network.listen().await.map_err(RunError::Listen)?;
    let instance = |name: &str| sides.instances.get(name).cloned();
    let line = crate::defense::serve::start(
        config,
        sides.entry.clone(),
        &instance,
        acceptor,
        experiment.seed,
        context.start,
        context.observer,
        context.servers,
        context.grace,
    )
    .map_err(RunError::PoolServer)?;
    // In virtual time the load calls the line in-process; it is still
    // served (and reachable) on its endpoint.
    let in_process = (!N::WALL_CLOCK)
        .then(|| Entry::in_process(line.clone(), &authority, &experiment.load))
        .flatten();
    let client = in_process
        .unwrap_or_else(|| Entry::Http(builtin::own_hop(connector, &authority, experiment.http2)));
    Ok((client, Some(line)))
}

/// What the stream of a run counts and keeps: the expectations, then the
/// steady state's before and after sentences; every request kept when
/// `keep` (judged after the run).
fn stream_setup(loaded: &Loaded, keep: bool, sinks: Vec<Box<dyn RecordSink>>) -> StreamSetup {
    let experiment = &loaded.experiment;
    let mut expectations = loaded.expectations.clone();
    if let Some(steady) = &loaded.steady {
        expectations.extend(steady.before.iter().chain(&steady.after).cloned());
    }
    let planned = experiment.duration;
    let fault_spans = experiment
        .faults
        .iter()
        .filter(|f| !f.manual)
        .filter_map(|f| {
            let windows = f.window.windows_within(planned);
            Some((f.name.clone(), (windows.first()?.0, windows.last()?.1)))
        })
        .collect();
    StreamSetup {
        expectations,
        routes: experiment.load.iter().map(|l| l.name.clone()).collect(),
        sinks,
        keep,
        // The halt watch looks this far back from each tick.
        recent: loaded
            .halts
            .iter()
            .map(|h| h.window + Duration::from_secs(1))
            .max()
            .unwrap_or_default(),
        defended: experiment.defense.is_some(),
        planned,
        fault_spans,
        phases: experiment
            .phases
            .iter()
            .map(|p| (p.name.clone(), (p.from.get(), p.to.get())))
            .collect(),
    }
}
