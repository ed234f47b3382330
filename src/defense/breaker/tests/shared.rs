//! The shared breaker and its guard, on a paused tokio clock.

use super::*;
use crate::clock;

fn opened_window() -> SharedBreaker {
    let config = window(|c| {
        c.minimum_calls = 1;
        c.wait_in_open = Duration::from_secs(5);
    });
    let shared = SharedBreaker::new(Breaker::new(&config, clock::now()));
    let guard = shared.try_acquire(clock::now()).unwrap();
    guard.record(
        Outcome::Failure(FailureKind::Timeout),
        Duration::ZERO,
        clock::now(),
    );
    assert_eq!(shared.state(), State::Open);
    shared
}

#[tokio::test(start_paused = true)]
async fn a_dropped_guard_frees_its_half_open_slot() {
    let shared = opened_window();
    // resilience4j admits strictly after the wait.
    tokio::time::advance(Duration::from_millis(5001)).await;
    let guards: Vec<CallGuard> = (0..3)
        .map(|_| shared.try_acquire(clock::now()).unwrap())
        .collect();
    assert!(shared.try_acquire(clock::now()).is_err());
    drop(guards);
    assert_eq!(shared.counters().cancelled, 3);
    let g = shared
        .try_acquire(clock::now())
        .expect("slots freed by the drops");
    assert_eq!(g.admitted_in(), Some(State::HalfOpen));
}

#[tokio::test(start_paused = true)]
async fn a_recorded_guard_reports_exactly_one_outcome() {
    let shared = opened_window();
    // resilience4j admits strictly after the wait.
    tokio::time::advance(Duration::from_millis(5001)).await;
    for _ in 0..3 {
        let g = shared.try_acquire(clock::now()).unwrap();
        g.record(Outcome::Success, Duration::from_millis(5), clock::now());
    }
    let c = shared.counters();
    assert_eq!((c.successes, c.failures, c.cancelled), (3, 1, 0));
    assert_eq!(shared.state(), State::Closed);
    let journal = shared.take_journal();
    assert_eq!(journal.len(), 3);
    assert!(shared.take_journal().is_empty(), "taken once");
}

#[tokio::test(start_paused = true)]
async fn concurrent_tasks_get_exactly_the_permitted_half_open_calls() {
    let shared = opened_window();
    // resilience4j admits strictly after the wait.
    tokio::time::advance(Duration::from_millis(5001)).await;
    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let shared = shared.clone();
            tokio::spawn(async move {
                let Result::Ok(guard) = shared.try_acquire(clock::now()) else {
                    return false;
                };
                tokio::time::sleep(Duration::from_millis(100)).await;
                guard.record(Outcome::Success, Duration::from_millis(100), clock::now());
                true
            })
        })
        .collect();
    let mut admitted = 0;
    for task in tasks {
        admitted += usize::from(task.await.unwrap());
    }
    assert_eq!(admitted, 3);
    assert_eq!(shared.counters().rejected.half_open, 7);
    assert_eq!(shared.state(), State::Closed);
}
