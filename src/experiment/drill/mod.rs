//! A run as a pipeline of named stages, each handing a typed value to the
//! next:
//!
//! 1. [`stand_up`] — the target or the user's service, their fault
//!    proxies, the defense line, the stream: [`stand_up::Stood`];
//! 2. [`drive`] — the load, live control, the halt watch, the live view,
//!    until the drill ends: [`drive::Driven`];
//! 3. [`collect`] — the stream's tallies, the timeline, inferred breakers:
//!    [`RunResult`];
//! 4. [`judge`] — the expectations and the steady state: [`Judged`];
//! 5. [`report`] — whatever the caller reports to ([`Report`]).
//!
//! The same stages run in virtual time (in memory, paused clock) and in
//! real time (loopback sockets, wall clock); [`network`] is where the two
//! differ.

pub mod collect;
pub mod drive;
pub mod judge;
pub mod locust;
pub mod network;
mod outcome;
pub mod report;
pub mod stand_up;

pub use crate::experiment::error::RunError;
pub use drive::{ControlOptions, Live};
pub use judge::Judged;
pub use outcome::{Ending, RunResult};
pub use report::Report;

use crate::experiment::config::ClockKind;
use crate::experiment::file::Loaded;
use network::{LoopbackNetwork, MemoryNetwork, Network};

/// Runs `loaded` with its clock (or `clock` when given) through every
/// stage, stopping early when `interrupt` resolves, and reports to
/// `report`.
pub fn run<R: Report>(
    loaded: &Loaded,
    clock: ClockKind,
    interrupt: impl std::future::Future<Output = ()> + Send + 'static,
    live: Live,
    report: R,
) -> Result<R::Output, RunError> {
    match clock {
        ClockKind::Virtual => {
            // In memory, the run needs no I/O driver (which the paused clock
            // would poll at every step); a user's service is reached over
            // loopback sockets, so it keeps one.
            let mut builder = tokio::runtime::Builder::new_current_thread();
            builder.enable_time().start_paused(true);
            if loaded.experiment.system.is_some() {
                builder.enable_io();
            }
            let runtime = builder.build().map_err(RunError::Runtime)?;
            let (interrupted, watcher) = watch_interrupt(interrupt)?;
            let network = MemoryNetwork::default();
            // The live view only: metrics and the control endpoint are
            // for people in real time.
            let live = Live {
                progress: live.progress,
                progress_interval: live.progress_interval,
                reached: live.reached.clone(),
                ..Live::default()
            };
            let drill = execute(loaded, network, interrupted, live, report);
            // Under the paused clock the tokio timer is exact.
            let result = crate::clock::coarse_only(|| runtime.block_on(drill));
            // The run is over: the watcher sees its channel closed and ends.
            let _ = watcher.join();
            result
        }
        ClockKind::Real => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .map_err(RunError::Runtime)?;
            runtime.block_on(execute(loaded, LoopbackNetwork, interrupt, live, report))
        }
    }
}

/// The pipeline, stage by stage.
async fn execute<N: Network, R: Report>(
    loaded: &Loaded,
    network: N,
    interrupt: impl std::future::Future<Output = ()> + Send + 'static,
    live: Live,
    mut report: R,
) -> Result<R::Output, RunError> {
    let stood = stand_up::stand_up(loaded, &network, report.sinks()).await?;
    let driven = drive::drive(loaded, &stood, N::WALL_CLOCK, interrupt, live).await?;
    let start = stood.start;
    let mut run = collect::collect(loaded, stood, driven)?;
    // The steady state's sentences after the last fault were judged only
    // when a fault was injected.
    let injected = !matches!(run.ending, outcome::Ending::NotHealthy { .. });
    let steady: Vec<crate::experiment::expect::Expectation> =
        loaded.steady.as_ref().map_or_else(Vec::new, |s| {
            s.before
                .iter()
                .chain(s.after.iter().filter(|_| injected))
                .cloned()
                .collect()
        });
    let queried = crate::experiment::prometheus::judge::judge_queries(
        &loaded.experiment,
        &loaded.expectations,
        &steady,
        &run.timeline,
        start,
        run.started_at_unix_ms,
    )
    .await;
    run.queried = queried.verdicts;
    run.steady_queried = queried.steady;
    run.queries = queried.drawn;
    let judged = judge::judge(loaded, run);
    Ok(report.report(judged))
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
