//! Breaker admit + record cost per call: single-threaded on the pure
//! machine, through the shared wrapper, and with 2 threads contending.
//! Run: `cargo bench --bench breaker`. Figures go to BENCHMARKS.md.
//!
//! A benchmark measures wall time by nature, so it reads the std clock.
#![allow(clippy::disallowed_methods, clippy::disallowed_types, missing_docs)]

use std::hint::black_box;
use std::time::Instant as StdInstant;

use firedrill::clock::{Duration, Instant};
use firedrill::defense::breaker::{Breaker, BreakerConfig, Outcome, SharedBreaker};

const CALLS: u64 = 5_000_000;

fn config() -> BreakerConfig {
    BreakerConfig::from_yaml(
        "bench",
        "name: bench\nsliding_window_size: 100\nminimum_calls: 100\n",
    )
    .unwrap()
}

/// Nanoseconds per call of `f` over `calls` calls, best of 5 runs.
fn per_call(calls: u64, mut f: impl FnMut(u64)) -> f64 {
    (0..5)
        .map(|_| {
            let started = StdInstant::now();
            for i in 0..calls {
                f(i);
            }
            started.elapsed().as_nanos() as f64 / calls as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let t0 = Instant::now();
    let tick = Duration::from_micros(1);

    let mut machine = Breaker::new(&config(), t0);
    let pure = per_call(CALLS, |i| {
        let now = t0 + tick * (i as u32 % 1_000_000);
        let permit = machine
            .try_acquire(now)
            .expect("stays closed: every call succeeds");
        machine.record(permit, Outcome::Success, Duration::from_millis(1), now);
        black_box(&machine);
    });

    let shared = SharedBreaker::new(Breaker::new(&config(), t0));
    let guarded = per_call(CALLS, |i| {
        let now = t0 + tick * (i as u32 % 1_000_000);
        let guard = shared.try_acquire(now).expect("closed");
        guard.record(Outcome::Success, Duration::from_millis(1), now);
    });

    let contended = {
        let shared = SharedBreaker::new(Breaker::new(&config(), t0));
        let per_thread = CALLS / 2;
        let started = StdInstant::now();
        std::thread::scope(|s| {
            for _ in 0..2 {
                let shared = shared.clone();
                s.spawn(move || {
                    for i in 0..per_thread {
                        let now = t0 + tick * (i as u32 % 1_000_000);
                        let guard = shared.try_acquire(now).expect("closed");
                        guard.record(Outcome::Success, Duration::from_millis(1), now);
                    }
                });
            }
        });
        started.elapsed().as_nanos() as f64 / CALLS as f64
    };

    let mut open = Breaker::new(
        &BreakerConfig::from_yaml(
            "bench",
            "name: open\nminimum_calls: 1\nsliding_window_size: 1\nwait_in_open: 1h\n",
        )
        .unwrap(),
        t0,
    );
    let permit = open.try_acquire(t0).unwrap();
    open.record(
        permit,
        Outcome::Failure(firedrill::defense::breaker::FailureKind::Timeout),
        Duration::ZERO,
        t0,
    );
    let rejected = per_call(CALLS, |i| {
        let now = t0 + tick * (i as u32 % 1_000_000);
        black_box(open.try_acquire(now).is_err());
    });

    println!("| measurement | ns per call |");
    println!("|---|---:|");
    println!("| admit + record, pure machine, 1 thread | {pure:.1} |");
    println!("| admit + record, shared (mutex + guard), 1 thread | {guarded:.1} |");
    println!("| admit + record, shared, 2 threads contending (wall / calls) | {contended:.1} |");
    println!("| reject while open, pure machine | {rejected:.1} |");
}
