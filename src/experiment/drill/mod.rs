//! Running an experiment: stand up target, fault proxy and defense line on
//! a network, drive the load, watch the halt conditions, and collect the
//! timeline. The same code runs in virtual time (in memory, paused clock)
//! and in real time (loopback sockets, wall clock).

use std::sync::Arc;

pub mod collect;
pub mod drive;
pub mod network;
pub mod stand_up;

use crate::clock::{self, Duration};
use crate::defense::DefenseLine;
use crate::defense::report::{Observer, Recorder};
use crate::experiment::config::instances::{InstanceServer, applies_on};
use crate::experiment::config::{ClockKind, Experiment, TargetSpec};
use crate::experiment::drill::collect::stream::{
    Counted, RecordSink, RunObserver, Stream, StreamSetup,
};
use crate::experiment::drill::drive::halt::HaltCondition;
use crate::experiment::drill::drive::load::{Entry, Load};
use crate::experiment::drill::network::{LoopbackNetwork, MemoryNetwork, Network};
use crate::experiment::drill::stand_up::service::RunningDependency;
use crate::experiment::timeline::{
    BreakerInfo, FaultWindows, Phase, PoolInfo, TargetHit, Timeline,
};
use crate::fault::FaultPlan;
use crate::http::ShutdownSignal;
use crate::http::client::{HttpUpstream, Upstream};
use crate::net::Connector;
use crate::proxy::{Forward, ProxyMode, serve_forward};
use crate::target::TargetStats;

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Ending {
    /// Ran its whole duration.
    Completed,
    /// A halt condition held; faults were removed and load stopped.
    Halted {
        /// The condition, as written.
        condition: String,
        /// What it saw.
        seen: String,
    },
    /// Ctrl-C or SIGTERM; faults were removed and load stopped.
    Interrupted,
    /// The steady state did not hold over the warm-up: no fault was
    /// injected, load stopped.
    NotHealthy {
        /// The steady-state checks that failed, with what each saw.
        failed: Vec<String>,
    },
}

/// A finished run.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// What was recorded.
    pub timeline: Timeline,
    /// How it ended.
    pub ending: Ending,
    /// Requests shed by the in-flight cap.
    pub shed: u64,
    /// Real clock: when the drill started, in milliseconds since the Unix
    /// epoch (every time in the report counts from it); virtual: none.
    pub started_at_unix_ms: Option<u64>,
    /// What could not be read after the run (a service's events file).
    pub warnings: Vec<String>,
    /// How many times each fault was injected, by name.
    pub injected: std::collections::BTreeMap<String, u64>,
    /// What was counted of the requests as they finished: the tallies of
    /// [`Counting::expectations`], then of the steady state's before and
    /// after sentences; the figures per route.
    pub counted: Counted,
}

/// What a run counts of its requests, and where it sends each.
#[derive(Default)]
pub struct Counting {
    /// The expectations to count for.
    pub expectations: Vec<crate::experiment::expect::Expectation>,
    /// Where each request goes when final, in id order.
    pub sinks: Vec<Box<dyn RecordSink>>,
}

impl std::fmt::Debug for Counting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counting")
            .field("expectations", &self.expectations.len())
            .field("sinks", &self.sinks.len())
            .finish()
    }
}

/// What a real-time run shows while it runs.
#[derive(Debug, Clone, Default)]
pub struct Live {
    /// Show the run while it runs: the panel on a terminal, heartbeat lines
    /// off one (real clock).
    pub progress: bool,
    /// Off a terminal, one heartbeat line this often (zero: none).
    pub progress_interval: Duration,
    /// Serve the defense line's Prometheus metrics on this address.
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Serve the control endpoint (manual faults, halt, status) here.
    pub control: Option<ControlOptions>,
}

/// `--control ADDR [--control-token TOKEN]`.
#[derive(Debug, Clone)]
pub struct ControlOptions {
    /// Where to listen.
    pub addr: std::net::SocketAddr,
    /// Required as `Authorization: Bearer <token>` when set.
    pub token: Option<String>,
}

pub use crate::experiment::error::RunError;

/// Runs `experiment` with its clock (or `clock` when given), stopping
/// early when `interrupt` resolves.
pub fn run(
    experiment: &Experiment,
    clock: ClockKind,
    halts: &[HaltCondition],
    steady: Option<&crate::experiment::expect::steady::SteadyState>,
    interrupt: impl std::future::Future<Output = ()> + Send + 'static,
    live: Live,
    counting: Counting,
) -> Result<RunResult, RunError> {
    match clock {
        ClockKind::Virtual => {
            // In memory, the run needs no I/O driver (which the paused clock
            // would poll at every step); a user's service is reached over
            // loopback sockets, so it keeps one.
            let mut builder = tokio::runtime::Builder::new_current_thread();
            builder.enable_time().start_paused(true);
            if experiment.system.is_some() {
                builder.enable_io();
            }
            let runtime = builder.build().map_err(RunError::Runtime)?;
            let (interrupted, watcher) = watch_interrupt(interrupt)?;
            let result = runtime.block_on(execute(
                experiment,
                MemoryNetwork::default(),
                halts,
                steady,
                interrupted,
                Live::default(),
                counting,
            ));
            // The run is over: the watcher sees its channel closed and ends.
            let _ = watcher.join();
            result
        }
        ClockKind::Real => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .map_err(RunError::Runtime)?;
            runtime.block_on(execute(
                experiment,
                LoopbackNetwork,
                halts,
                steady,
                interrupt,
                live,
                counting,
            ))
        }
    }
}

/// Waits for `interrupt` (a signal needs an I/O driver) on a thread of its
/// own; the returned future resolves when it does, the thread ends once
/// that future is dropped.
fn watch_interrupt(
    interrupt: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<
    (
        impl std::future::Future<Output = ()> + Send + 'static,
        std::thread::JoinHandle<()>,
    ),
    RunError,
> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(RunError::Runtime)?;
    let (mut tell, told) = tokio::sync::oneshot::channel::<()>();
    let watcher = std::thread::spawn(move || {
        runtime.block_on(async move {
            tokio::select! {
                biased;
                _ = tell.closed() => {}
                _ = interrupt => { let _ = tell.send(()); }
            }
        });
    });
    let interrupted = async move {
        if told.await.is_err() {
            // The watcher is gone without a signal: never interrupted.
            std::future::pending::<()>().await;
        }
    };
    Ok((interrupted, watcher))
}

async fn execute<N: Network>(
    experiment: &Experiment,
    network: N,
    halts: &[HaltCondition],
    steady: Option<&crate::experiment::expect::steady::SteadyState>,
    interrupt: impl std::future::Future<Output = ()> + Send + 'static,
    live: Live,
    counting: Counting,
) -> Result<RunResult, RunError> {
    let listen = || async { network.listen().await.map_err(RunError::Listen) };
    let mut dialed = crate::experiment::drill::stand_up::service::dial_all(experiment).await?;
    let start = clock::now();
    let started_at_unix_ms = N::WALL_CLOCK.then(clock::unix_ms);
    let (stop_servers, servers) = ShutdownSignal::new();
    let grace = Duration::from_millis(100);

    // The dependency: the fault proxy in front of the fixture server or a
    // real target; or, for the user's own service, one proxy per dependency.
    let recorder = Arc::new(Recorder::default());
    let expectations = counting.expectations.clone();
    let stream = Stream::new(stream_setup(experiment, halts, steady, counting), start);
    let observer: Arc<dyn Observer> = Arc::new(RunObserver {
        recorder: recorder.clone(),
        stream: stream.clone(),
    });
    let (entry, dependencies, instances) = match &experiment.system {
        Some(system) => {
            let (entry, dependencies) = crate::experiment::drill::stand_up::service::stand_up(
                experiment,
                system,
                start,
                &servers,
                grace,
                &observer,
                &mut dialed,
            )
            .await?;
            (entry, dependencies, Default::default())
        }
        None => stand_up_target(experiment, &network, start, &servers, grace, &mut dialed).await?,
    };
    // The built-in target's instances by name, each a client through its
    // own fault proxy (none without `target.builtin.instances`): a pool's
    // servers call them. Every other call (the load without a defense line,
    // a route without a pool) goes to `entry`: the first instance, in name
    // order.
    let instance_upstreams: std::collections::BTreeMap<String, Arc<dyn Upstream>> = instances;
    let to_proxy = entry;

    // The defense line, if any, in front of the fault proxy.
    let instance = |name: &str| instance_upstreams.get(name).cloned();
    let (client, line): (Entry, Option<Arc<DefenseLine>>) = match &experiment.defense {
        Some(config) => {
            let (acceptor, connector, authority) = listen().await?;
            let line = crate::defense::serve::start(
                config,
                to_proxy.clone(),
                &instance,
                acceptor,
                experiment.seed,
                start,
                &observer,
                &servers,
                grace,
            )
            .map_err(RunError::PoolServer)?;
            // In virtual time the load calls the line in-process; it is
            // still served (and reachable) on its endpoint.
            let in_process = (!N::WALL_CLOCK)
                .then(|| Entry::in_process(line.clone(), &authority, &experiment.load))
                .flatten();
            let client = in_process.unwrap_or_else(|| {
                Entry::Http(Arc::new(HttpUpstream::new(Arc::new(connector), &authority)))
            });
            (client, Some(line))
        }
        None => (Entry::Http(to_proxy.clone()), None),
    };

    if let (Some(addr), Some(line)) = (live.metrics_listen, &line) {
        let acceptor = crate::net::TcpAcceptor::bind(addr)
            .await
            .map_err(|source| RunError::MetricsBind { addr, source })?;
        let registry = Arc::new(crate::metrics::MetricsRegistry::default());
        registry.register(line.clone());
        tokio::spawn(crate::metrics::serve(acceptor, registry, servers.clone()));
    }

    let reporters = match &experiment.system {
        Some(system) => {
            crate::experiment::drill::stand_up::service::start_reporters(system, start, &servers)
        }
        None => crate::experiment::drill::stand_up::service::Reporters::default(),
    };

    // Load, halt watch and interrupt.
    stream.watch_plans(
        dependencies
            .iter()
            .map(|d| (d.plan.clone(), d.instance.clone()))
            .collect(),
    );
    let load = Load::new(client, start, experiment.max_in_flight, stream.clone());
    let control = live.control.as_ref().map(|_| {
        Arc::new(crate::experiment::drill::drive::control::Control::new(
            experiment,
            &dependencies,
            start,
        ))
    });
    if let Some(control) = &control {
        stream.watch_control(control.clone());
    }
    if let (Some(options), Some(control)) = (&live.control, &control) {
        let addr = options.addr;
        let acceptor = crate::net::TcpAcceptor::bind(addr)
            .await
            .map_err(|source| RunError::ControlBind { addr, source })?;
        eprintln!(
            "control endpoint listening on http://{}",
            acceptor.local_addr()
        );
        let status = crate::experiment::drill::drive::progress::Status {
            experiment: Arc::new(experiment.clone()),
            load: load.clone(),
            line: line.clone(),
            recorder: recorder.clone(),
            control: control.clone(),
            start,
        };
        let guard = crate::api::guard::Guard::new(options.token.clone(), 1024);
        tokio::spawn(crate::experiment::drill::drive::control::serve(
            acceptor,
            control.clone(),
            Arc::new(move || status.now()),
            guard,
            servers.clone(),
        ));
    }
    let (stop_load, load_stop) = ShutdownSignal::new();
    let ending = {
        let drive = async {
            if experiment.external_load {
                // The traffic comes from elsewhere: wait out the drill.
                clock::sleep(experiment.duration).await;
            } else {
                load.drive(
                    &experiment.load,
                    experiment.seed,
                    experiment.duration,
                    load_stop,
                )
                .await;
            }
        };
        let watch = crate::experiment::drill::drive::halt::watch(halts, &load, start);
        let view = crate::experiment::drill::drive::progress::View::choose(
            live.progress,
            N::WALL_CLOCK,
            live.progress_interval,
        );
        let watched = crate::experiment::drill::drive::progress::Watched {
            experiment,
            load: &load,
            line: line.clone(),
            recorder: recorder.clone(),
            control: control.clone(),
            start,
        };
        let bar = crate::experiment::drill::drive::progress::show(view, watched);
        let halt_asked = async {
            match &control {
                Some(control) => control.halted().await,
                None => std::future::pending().await,
            }
        };
        let warm_up = async {
            let Some(steady) = steady else {
                return std::future::pending().await;
            };
            // Just before the first fault would act.
            let at = steady.check_at.saturating_sub(Duration::from_millis(1));
            clock::sleep_until(start + at).await;
            let so_far = collect(
                experiment,
                &dependencies,
                &recorder,
                line.as_deref(),
                &std::collections::BTreeMap::new(),
                at,
                Vec::new(),
            );
            let first = expectations.len();
            let before = stream.tallies_now(first..first + steady.before.len());
            let failed: Vec<String> = steady
                .judge_warm_up(&so_far, &before)
                .into_iter()
                .filter(|v| !v.passed)
                .map(|v| format!("{} (seen: {})", v.expectation, v.seen))
                .collect();
            if failed.is_empty() {
                return std::future::pending().await;
            }
            failed
        };
        tokio::pin!(drive, watch, interrupt, bar, warm_up, halt_asked);
        tokio::select! {
            biased;
            _ = &mut interrupt => Ending::Interrupted,
            _ = &mut halt_asked => Ending::Halted {
                condition: "POST /halt on the control endpoint".to_string(),
                seen: format!("asked at {:.1}s", clock::now().saturating_duration_since(start).as_secs_f64()),
            },
            failed = &mut warm_up => Ending::NotHealthy { failed },
            (condition, seen) = &mut watch => Ending::Halted { condition, seen },
            _ = &mut drive => Ending::Completed,
            _ = &mut bar => unreachable!("the live view never ends by itself"),
        }
    };
    let ended_at = clock::now().saturating_duration_since(start);
    if ending != Ending::Completed {
        stream.cut(ended_at);
        // Faults first, then the load.
        for dependency in &dependencies {
            dependency.plan.remove_all();
        }
        let _ = stop_load.send(true);
    }
    // Every request in flight ends by its own timeout at the latest.
    let longest = experiment
        .load
        .iter()
        .map(|l| l.timeout)
        .max()
        .unwrap_or_default();
    let _ = tokio::time::timeout(longest + Duration::from_secs(1), load.settle()).await;
    let _ = stop_servers.send(true);

    let duration = if ending == Ending::Completed {
        experiment.duration
    } else {
        ended_at
    };
    let manual = control
        .as_ref()
        .map(|c| c.windows(duration))
        .unwrap_or_default();
    let mut counted = stream.finish().map_err(RunError::Records)?;
    let mut timeline = collect(
        experiment,
        &dependencies,
        &recorder,
        line.as_deref(),
        &manual,
        duration,
        std::mem::take(&mut counted.requests),
    );
    if experiment.system.is_some() {
        // Its breakers were inferred after the run: judge on everything.
        let mut all = expectations;
        if let Some(steady) = steady {
            all.extend(steady.before.iter().chain(&steady.after).cloned());
        }
        counted.tallies = all
            .iter()
            .map(|e| crate::experiment::expect::tally(e, &timeline))
            .collect();
    }
    let mut warnings = experiment.tls_warnings();
    warnings.extend(blind_breakers(experiment));
    warnings.extend(crate::fault::recordings::gap_warnings(&experiment.faults));
    if control.is_none() {
        for f in experiment.faults.iter().filter(|f| f.manual) {
            warnings.push(format!(
                "fault {} is manual (at: manual) and the run had no --control: it never started",
                f.name
            ));
        }
    }
    if let Some(system) = &experiment.system {
        let (reported, unread) = crate::experiment::drill::stand_up::service::reported(
            system,
            &reporters,
            started_at_unix_ms,
        );
        timeline.reported = reported;
        timeline.dependency_requests = dependencies
            .iter()
            .filter_map(|d| d.records.as_ref())
            .flat_map(|r| r.records())
            .collect();
        timeline
            .dependency_requests
            .sort_by(|a, b| a.at_ms.total_cmp(&b.at_ms));
        warnings.extend(unread);
    }
    let mut injected = std::collections::BTreeMap::new();
    for dependency in &dependencies {
        for (name, n) in dependency.plan.injected_by_name() {
            *injected.entry(name).or_insert(0) += n;
        }
    }
    Ok(RunResult {
        timeline,
        ending,
        injected,
        counted,
        shed: load.shed(),
        started_at_unix_ms,
        warnings,
    })
}

/// The timeline of the run so far; `requests` are the ones the stream
/// kept (a user's service's run), none otherwise.
#[allow(clippy::too_many_arguments)]
fn collect(
    experiment: &Experiment,
    dependencies: &[RunningDependency],
    recorder: &Recorder,
    line: Option<&DefenseLine>,
    manual: &std::collections::BTreeMap<String, Vec<(Duration, Duration)>>,
    duration: Duration,
    requests: Vec<crate::experiment::timeline::RequestRecord>,
) -> Timeline {
    // The dependency is the fault proxy and the target behind it: a call
    // answered by a fault in the target's place reached it too.
    let mut target_hits: Vec<TargetHit> = dependencies
        .iter()
        .flat_map(|d| {
            d.plan.arrivals().into_iter().map(|a| TargetHit {
                at: a.at,
                path: a.path,
                request_id: a.request_id,
                instance: d.instance.clone(),
            })
        })
        .collect();
    target_hits.sort_by_key(|h| h.at);
    // From the experiment, not the plan: a halt empties the plan, and the
    // windows end at the halt anyway (the run's duration).
    let faults = experiment
        .faults
        .iter()
        .map(|f| FaultWindows {
            name: f.name.clone(),
            kind: f.kind.key().to_string(),
            // A manual fault: when people started and stopped it.
            windows: if f.manual {
                manual.get(&f.name).cloned().unwrap_or_default()
            } else {
                windows_of(&f.window, duration)
            },
        })
        .collect();
    let defenses = line.and(experiment.defense.as_ref()).into_iter().chain(
        experiment
            .dependencies
            .iter()
            .filter_map(|d| d.defense.as_ref()),
    );
    let mut breakers: Vec<BreakerInfo> = defenses
        .flat_map(|config| config.breakers())
        .map(|(name, breaker, glob)| BreakerInfo {
            name: name.to_string(),
            wait_in_open: breaker.wait_in_open(),
            path_glob: glob.map(str::to_string),
        })
        .collect();
    let pools: Vec<PoolInfo> = line
        .and(experiment.defense.as_ref())
        .into_iter()
        .flat_map(|config| &config.pools)
        .map(|(name, pool)| PoolInfo {
            name: name.clone(),
            servers: pool
                .servers
                .iter()
                .map(|s| (s.name.clone(), s.backup))
                .collect(),
            starts_out: pool.health_check.is_some(),
        })
        .collect();
    let mut transitions = recorder.transitions();
    if let Some(system) = &experiment.system {
        let (inferred, infos) = crate::experiment::drill::stand_up::service::inferred(
            experiment,
            system,
            &requests,
            dependencies,
            duration,
        );
        transitions.extend(inferred);
        transitions.sort_by_key(|t| t.at);
        breakers.extend(infos);
    }
    Timeline {
        duration,
        requests,
        target_hits,
        transitions,
        health: recorder.health_changes(),
        pools,
        reported: Vec::new(),
        dependency_requests: Vec::new(),
        faults,
        breakers,
        phases: experiment
            .phases
            .iter()
            .map(|p| Phase {
                name: p.name.clone(),
                from: p.from.get(),
                to: p.to.get(),
            })
            .collect(),
    }
}

/// What [`stand_up_target`] gives: the client towards the target's fault
/// proxy (the first instance's, with instances), one running dependency
/// per fault proxy, and the client towards each instance's proxy by name
/// (none without `target.builtin.instances`).
type TargetUp = (
    Arc<dyn Upstream>,
    Vec<RunningDependency>,
    std::collections::BTreeMap<String, Arc<dyn Upstream>>,
);

/// The fault proxy in front of a real target, or in front of the fixture
/// server (one of each per instance, with instances).
async fn stand_up_target<N: Network>(
    experiment: &Experiment,
    network: &N,
    start: clock::Instant,
    servers: &ShutdownSignal,
    grace: Duration,
    dialed: &mut crate::experiment::drill::stand_up::service::Dialed,
) -> Result<TargetUp, RunError> {
    let builtin = match &experiment.target {
        TargetSpec::Builtin(builtin) => builtin,
        TargetSpec::Url(service) => {
            let plan = target_plan(experiment, None, start);
            let (acceptor, connector, authority) =
                network.listen().await.map_err(RunError::Listen)?;
            let forward =
                crate::experiment::drill::stand_up::service::take(dialed, service).await?;
            spawn_proxy(acceptor, forward, &plan, servers, grace);
            let entry: Arc<dyn Upstream> =
                Arc::new(HttpUpstream::new(Arc::new(connector), &authority));
            let target = target_dependency(None, plan);
            return Ok((entry, vec![target], Default::default()));
        }
    };
    let (first, others) = builtin.servers();
    let (entry, dependency) =
        stand_up_instance(experiment, network, first, start, servers, grace).await?;
    let mut stood = vec![(entry.clone(), dependency)];
    for server in others {
        stood.push(stand_up_instance(experiment, network, server, start, servers, grace).await?);
    }
    let instances = stood
        .iter()
        .filter_map(|(client, d)| Some((d.instance.clone()?, client.clone())))
        .collect();
    let dependencies = stood.into_iter().map(|(_, d)| d).collect();
    Ok((entry, dependencies, instances))
}

/// One fixture server and the fault proxy in front of it, applying the
/// faults meant for its instance: the client towards the proxy, and the
/// proxy as a running dependency.
async fn stand_up_instance<N: Network>(
    experiment: &Experiment,
    network: &N,
    server: InstanceServer,
    start: clock::Instant,
    servers: &ShutdownSignal,
    grace: Duration,
) -> Result<(Arc<dyn Upstream>, RunningDependency), RunError> {
    let listen = || async { network.listen().await.map_err(RunError::Listen) };
    let plan = target_plan(experiment, server.name.as_deref(), start);
    let (proxy_acceptor, proxy_connector, proxy_authority) = listen().await?;
    let (acceptor, connector, _) = listen().await?;
    let stats = Arc::new(TargetStats::with_routes(server.routes));
    tokio::spawn(crate::target::serve(acceptor, stats, servers.clone()));
    let forward = Forward {
        connector: Arc::new(connector),
        rewrite: Default::default(),
        client_fin: Default::default(),
    };
    spawn_proxy(proxy_acceptor, forward, &plan, servers, grace);
    let client: Arc<dyn Upstream> = Arc::new(HttpUpstream::new(
        Arc::new(proxy_connector),
        &proxy_authority,
    ));
    Ok((client, target_dependency(server.name, plan)))
}

/// The fault plan of the target's proxy in front of `instance` (none: the
/// target without instances): the scheduled faults that apply there,
/// recording every arrival.
fn target_plan(
    experiment: &Experiment,
    instance: Option<&str>,
    start: clock::Instant,
) -> Arc<FaultPlan> {
    let faults = scheduled(&experiment.faults)
        .into_iter()
        .filter(|f| applies_on(f, instance))
        .collect();
    Arc::new(FaultPlan::new(faults, experiment.seed, start).recording_arrivals())
}

/// The target's fault proxy (in front of `instance`, if named) as a
/// running dependency.
fn target_dependency(instance: Option<String>, plan: Arc<FaultPlan>) -> RunningDependency {
    RunningDependency {
        name: "target".to_string(),
        instance,
        plan,
        records: None,
    }
}

/// Starts the HTTP fault proxy in front of whatever `forward` reaches.
fn spawn_proxy<A: crate::net::Acceptor, C: Connector>(
    acceptor: A,
    forward: Forward<C>,
    plan: &Arc<FaultPlan>,
    servers: &ShutdownSignal,
    grace: Duration,
) {
    tokio::spawn(serve_forward(
        acceptor,
        forward,
        plan.clone(),
        ProxyMode::Http,
        servers.clone(),
        grace,
        Default::default(),
    ));
}

/// A load route whose own timeout is shorter than the defense line's
/// timeout for its requests: the caller gives up first, so the breaker sees
/// a cancelled call where the dependency was slow (it never opens unless
/// `count_cancelled` is set). A finding the drill should report.
fn blind_breakers(experiment: &Experiment) -> Vec<String> {
    let Some(defense) = &experiment.defense else {
        return Vec::new();
    };
    let headers = http::HeaderMap::new();
    experiment
        .load
        .iter()
        .filter_map(|load| {
            let (name, route) = defense
                .routes
                .iter()
                .find(|(_, r)| r.matcher.matches(&load.method, &load.path, &headers))?;
            let timeout = route.timeout.or(defense.timeout)?;
            let counts = route.breaker.as_ref()?.classifier.count_cancelled;
            (timeout > load.timeout && !counts).then(|| {
                format!(
                    "route {}: its timeout ({}) is shorter than defense route {name}'s ({}): the caller gives up first, so breaker {name} sees cancelled calls, not failures (set count_cancelled: true to count them)",
                    load.name,
                    crate::schema::units::Dur(load.timeout),
                    crate::schema::units::Dur(timeout),
                )
            })
        })
        .collect()
}

/// The faults with a window in the file: manual ones join the plan only
/// when started through the control endpoint.
pub fn scheduled(faults: &[crate::fault::Fault]) -> Vec<crate::fault::Fault> {
    faults.iter().filter(|f| !f.manual).cloned().collect()
}

/// The `[start, end)` intervals a window is active within `[0, duration)`.
pub fn windows_of(window: &crate::fault::Window, duration: Duration) -> Vec<(Duration, Duration)> {
    let mut out = Vec::new();
    let mut t = Duration::ZERO;
    while t < duration {
        let (active, next) = window.next_change(t);
        let end = next.unwrap_or(duration).min(duration);
        if active {
            out.push((t, end));
        }
        match next {
            Some(n) if n > t => t = n,
            _ => break,
        }
    }
    out
}

/// What the stream of a run counts and keeps.
fn stream_setup(
    experiment: &Experiment,
    halts: &[HaltCondition],
    steady: Option<&crate::experiment::expect::steady::SteadyState>,
    counting: Counting,
) -> StreamSetup {
    let mut expectations = counting.expectations;
    if let Some(steady) = steady {
        expectations.extend(steady.before.iter().chain(&steady.after).cloned());
    }
    let planned = experiment.duration;
    let fault_spans = experiment
        .faults
        .iter()
        .filter(|f| !f.manual)
        .filter_map(|f| {
            let windows = windows_of(&f.window, planned);
            Some((f.name.clone(), (windows.first()?.0, windows.last()?.1)))
        })
        .collect();
    StreamSetup {
        expectations,
        routes: experiment.load.iter().map(|l| l.name.clone()).collect(),
        sinks: counting.sinks,
        keep: experiment.system.is_some(),
        // The halt watch looks this far back from each tick.
        recent: halts
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

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
