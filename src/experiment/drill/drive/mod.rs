//! The second stage, drive: send the load (or wait out outside traffic)
//! until the drill ends, watching the halt conditions, the steady state
//! over the warm-up, an interrupt and the control endpoint; serve the live
//! view and the metrics. When it ends early the faults go first, then the
//! load. Hands [`Driven`] to the collect stage.

use std::sync::Arc;

use super::outcome::Ending;
use super::stand_up::Stood;
use crate::clock::{self, Duration};
use crate::experiment::error::RunError;
use crate::experiment::file::Loaded;
use crate::http::ShutdownSignal;

pub mod control;
pub mod halt;
pub mod load;
pub mod progress;

use control::Control;
use load::Load;

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
    /// Where a sweep reads how far this run has got: its simulated
    /// milliseconds, set at each hundredth of it, for the sweep's
    /// heartbeat during a long point.
    pub reached: Option<Arc<std::sync::atomic::AtomicU64>>,
}

/// `--control ADDR [--control-token TOKEN]`.
#[derive(Debug, Clone)]
pub struct ControlOptions {
    /// Where to listen.
    pub addr: std::net::SocketAddr,
    /// Required as `Authorization: Bearer <token>` when set.
    pub token: Option<String>,
}

/// What the drive stage hands to the collect stage.
#[derive(Debug)]
pub struct Driven {
    /// How the run ended.
    pub ending: Ending,
    /// When it ended, from the start.
    pub ended_at: Duration,
    /// The load generator, every request settled.
    pub load: Arc<Load>,
    /// The control endpoint's state, if the run had one.
    pub control: Option<Arc<Control>>,
}

/// Drives the load through what stood up until the drill ends, then winds
/// it down: every request in flight settled, every server stopped.
pub async fn drive(
    loaded: &Loaded,
    stood: &Stood<'_>,
    real_clock: bool,
    interrupt: impl std::future::Future<Output = ()> + Send + 'static,
    live: Live,
) -> Result<Driven, RunError> {
    let experiment = &loaded.experiment;
    let start = stood.start;
    if let (Some(addr), Some(line)) = (live.metrics_listen, &stood.line) {
        let acceptor = crate::net::TcpAcceptor::bind(addr)
            .await
            .map_err(|source| RunError::MetricsBind { addr, source })?;
        let registry = Arc::new(crate::metrics::MetricsRegistry::default());
        registry.register(line.clone());
        tokio::spawn(crate::metrics::serve(
            acceptor,
            registry,
            stood.servers.clone(),
        ));
    }
    stood.stream.watch_plans(
        stood
            .dependencies
            .iter()
            .map(|d| (d.plan.clone(), d.instance.clone()))
            .collect(),
    );
    let correlation = experiment.correlation();
    if let Some(correlation) = &correlation {
        // Before the first request: every arrival is read with them.
        for dependency in &stood.dependencies {
            dependency.plan.correlate(correlation.clone());
        }
    }
    let load = Load::new(
        stood.client.clone(),
        start,
        experiment.max_in_flight,
        stood.stream.clone(),
        correlation,
    );
    let control = live
        .control
        .as_ref()
        .map(|_| Arc::new(Control::new(experiment, &stood.dependencies, start)));
    if let Some(control) = &control {
        stood.stream.watch_control(control.clone());
    }
    if let (Some(options), Some(control)) = (&live.control, &control) {
        serve_control(loaded, stood, options, control, &load).await?;
    }
    if let Some(reached) = live.reached.clone() {
        tokio::spawn(progress::publish(reached, start, experiment.duration));
    }
    let (stop_load, load_stop) = ShutdownSignal::new();
    let view = progress::View::choose(
        live.progress,
        real_clock,
        live.progress_interval,
        experiment.duration,
    );
    let ending = until_the_end(loaded, stood, view, &load, &control, load_stop, interrupt).await;
    let ended_at = clock::now().saturating_duration_since(start);
    if ending != Ending::Completed {
        stood.stream.cut(ended_at);
        // Faults first, then the load; those on agents too.
        for dependency in &stood.dependencies {
            dependency.plan.remove_all();
        }
        let remotes = stood
            .dependencies
            .iter()
            .filter_map(|d| d.remote.as_deref());
        futures_util::future::join_all(remotes.map(|r| r.withdraw())).await;
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
    let _ = stood.stop_servers.send(true);
    stood.under_test.wind_down(&stood.dependencies).await;
    Ok(Driven {
        ending,
        ended_at,
        load,
        control,
    })
}

/// Serves the control endpoint on `options.addr` for the run.
async fn serve_control(
    loaded: &Loaded,
    stood: &Stood<'_>,
    options: &ControlOptions,
    control: &Arc<Control>,
    load: &Arc<Load>,
) -> Result<(), RunError> {
    let addr = options.addr;
    let acceptor = crate::net::TcpAcceptor::bind(addr)
        .await
        .map_err(|source| RunError::ControlBind { addr, source })?;
    eprintln!(
        "control endpoint listening on http://{}",
        acceptor.local_addr()
    );
    let status = progress::Status {
        experiment: Arc::new(loaded.experiment.clone()),
        load: load.clone(),
        line: stood.line.clone(),
        recorder: stood.recorder.clone(),
        control: control.clone(),
        start: stood.start,
    };
    let guard = crate::api::guard::Guard::new(options.token.clone(), 1024);
    tokio::spawn(control::serve(
        acceptor,
        control.clone(),
        Arc::new(move || status.now()),
        guard,
        stood.servers.clone(),
    ));
    Ok(())
}

/// Sends the load until the first of: an interrupt, a halt asked on the
/// control endpoint, a steady state that did not hold over the warm-up, a
/// halt condition, the drill's end. The live `view` shows meanwhile.
async fn until_the_end(
    loaded: &Loaded,
    stood: &Stood<'_>,
    view: progress::View,
    load: &Arc<Load>,
    control: &Option<Arc<Control>>,
    load_stop: ShutdownSignal,
    interrupt: impl std::future::Future<Output = ()> + Send + 'static,
) -> Ending {
    let experiment = &loaded.experiment;
    let start = stood.start;
    let drive = async {
        if experiment.external_load {
            // The traffic comes from elsewhere: wait out the drill.
            clock::sleep(experiment.duration).await;
        } else if let Some(swarm) = &stood.swarm {
            let started = stood.started_at_unix_ms.unwrap_or_default();
            swarm
                .drive(
                    &experiment.load,
                    &stood.stream,
                    start,
                    started,
                    experiment.duration,
                )
                .await;
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
    let watch = halt::watch(&loaded.halts, load, start);
    let alarm = crate::experiment::prometheus::halt::watch(&loaded.prom_halts, start, &stood.said);
    let watched = progress::Watched {
        experiment,
        load,
        line: stood.line.clone(),
        recorder: stood.recorder.clone(),
        control: control.clone(),
        start,
    };
    let bar = progress::show(view, watched);
    let halt_asked = async {
        match control {
            Some(control) => control.halted().await,
            None => std::future::pending().await,
        }
    };
    let warm_up = not_healthy(loaded, stood);
    tokio::pin!(drive, watch, alarm, interrupt, bar, warm_up, halt_asked);
    tokio::select! {
        biased;
        _ = &mut interrupt => Ending::Interrupted,
        _ = &mut halt_asked => Ending::Halted {
            condition: "POST /halt on the control endpoint".to_string(),
            seen: format!("asked at {:.1}s", clock::now().saturating_duration_since(start).as_secs_f64()),
        },
        failed = &mut warm_up => Ending::NotHealthy { failed },
        (condition, seen) = &mut watch => Ending::Halted { condition, seen },
        (condition, seen) = &mut alarm => Ending::Halted { condition, seen },
        _ = &mut drive => Ending::Completed,
        _ = &mut bar => unreachable!("the live view never ends by itself"),
    }
}

/// Resolves, just before the first fault would act, with the steady-state
/// checks that failed over the warm-up (with what each saw); never, when
/// they all held or there are none. Query sentences are asked of
/// Prometheus one scrape interval earlier (at most half the warm-up), and
/// must be answered before the fault: no answer by then fails them, so a
/// slow Prometheus never lets a fault in unjudged.
async fn not_healthy(loaded: &Loaded, stood: &Stood<'_>) -> Vec<String> {
    let Some(steady) = &loaded.steady else {
        return std::future::pending().await;
    };
    let at = steady.check_at.saturating_sub(Duration::from_millis(1));
    let queried = warm_up_queries(loaded, stood, steady, at).await;
    clock::sleep_until(stood.start + at).await;
    let so_far = super::collect::timeline::timeline(
        &loaded.experiment,
        stood,
        &std::collections::BTreeMap::new(),
        at,
        crate::spill::Spill::new(),
        stood.stream.kept_arrivals(),
    );
    let first = loaded.expectations.len();
    let before = stood.stream.tallies_now(first..first + steady.before.len());
    let mut verdicts = steady.judge_warm_up(&so_far, &before);
    for (i, verdict) in queried {
        verdicts[i] = verdict;
    }
    let failed: Vec<String> = verdicts
        .into_iter()
        .filter(|v| !v.passed)
        .map(|v| format!("{} (seen: {})", v.expectation, v.seen))
        .collect();
    if failed.is_empty() {
        return std::future::pending().await;
    }
    failed
}

/// The warm-up's query sentences, by index among its sentences, asked of
/// Prometheus ahead of the check at `check` (see [`not_healthy`]).
async fn warm_up_queries(
    loaded: &Loaded,
    stood: &Stood<'_>,
    steady: &crate::experiment::expect::steady::SteadyState,
    check: Duration,
) -> Vec<(usize, crate::experiment::Verdict)> {
    use crate::experiment::prometheus::judge::{At, judge_query};
    let mut out = Vec::new();
    let Some(t0_ms) = stood.started_at_unix_ms else {
        return out;
    };
    let experiment = &loaded.experiment;
    let lead = experiment
        .prometheus
        .iter()
        .map(|s| s.scrape_interval)
        .max()
        .unwrap_or_default()
        .min(check / 2);
    let ask = check.saturating_sub(lead);
    let queries: Vec<_> = steady
        .before
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match &e.rule {
            crate::experiment::expect::Rule::Query(rule) => Some((i, e, rule)),
            _ => None,
        })
        .collect();
    if queries.is_empty() {
        return out;
    }
    clock::sleep_until(stood.start + ask).await;
    let so_far = super::collect::timeline::timeline(
        experiment,
        stood,
        &std::collections::BTreeMap::new(),
        ask,
        crate::spill::Spill::new(),
        stood.stream.kept_arrivals(),
    );
    let at = At {
        start: stood.start,
        t0_ms,
        settle: false,
    };
    for (i, e, rule) in queries {
        let asked = judge_query(experiment, e, rule, &so_far, at);
        let verdict = match tokio::time::timeout_at(stood.start + check, asked).await {
            Ok(verdict) => verdict,
            Err(_) => {
                let mut v = crate::experiment::expect::evaluate(e, &so_far);
                v.passed = false;
                v.seen = format!(
                    "Prometheus did not answer before the first fault ({} after asking): no answer is never healthy",
                    crate::schema::units::Dur(lead)
                );
                v
            }
        };
        out.push((i, verdict));
    }
    out
}
