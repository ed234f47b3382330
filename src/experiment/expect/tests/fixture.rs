//! Hand-built timelines for the judge tests: a 60 s run with breaker
//! `inventory` (wait_in_open 5s), fault `inventory-down` from 10 s to 40 s
//! and phase `recovery` from 40 s to 60 s; transitions, requests and target
//! hits are added per test.

use crate::clock::Duration;
use crate::defense::breaker::{Reason, State, Transition};
use crate::experiment::expect::{Verdict, evaluate, parse};
use crate::experiment::timeline::{
    BreakerInfo, FaultWindows, Phase, RequestRecord, TargetHit, Timeline,
};

/// `x` seconds.
pub(super) fn s(x: f64) -> Duration {
    Duration::from_secs_f64(x)
}

/// `x` milliseconds.
pub(super) fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

/// The base run described in the module comment.
pub(super) fn run() -> Timeline {
    Timeline {
        duration: s(60.0),
        breakers: vec![BreakerInfo {
            name: "inventory".into(),
            wait_in_open: s(5.0),
            path_glob: Some("/inventory/*".into()),
            evidence: None,
        }],
        faults: vec![FaultWindows {
            name: "inventory-down".into(),
            kind: "blackhole".into(),
            windows: vec![(s(10.0), s(40.0))],
        }],
        phases: vec![Phase {
            name: "recovery".into(),
            from: s(40.0),
            to: s(60.0),
        }],
        ..Timeline::default()
    }
}

/// The base run with breaker `inventory` taking these `(at, to)` steps
/// (each from the state before).
pub(super) fn with_steps(steps: &[(f64, State)]) -> Timeline {
    let mut t = run();
    let mut from = State::Closed;
    for (at, to) in steps {
        t.transitions.push(Transition {
            at: s(*at),
            breaker: "inventory".into(),
            from,
            to: *to,
            reason: Reason::Manual { action: "test" },
        });
        from = *to;
    }
    t
}

/// The classic outage: open at 10.4s, half_open at 15.4s, closed at 15.6s.
pub(super) fn outage() -> Timeline {
    with_steps(&[
        (10.4, State::Open),
        (15.4, State::HalfOpen),
        (15.6, State::Closed),
    ])
}

/// A request of `route` sent at `sent` seconds, answered `status` after
/// `latency_ms` (no fallback, no rejection).
pub(super) fn req(id: u64, route: &str, sent: f64, status: u16, latency_ms: u64) -> RequestRecord {
    RequestRecord {
        id,
        route: route.into(),
        path: format!("/{}/x", route.to_lowercase()),
        sent: s(sent),
        latency: Some(ms(latency_ms)),
        status: Some(status),
        client_error: None,
        fallback: None,
        rejected_by: None,
        defense_error: None,
        breaker_state: Some(State::Closed),
        attempts: 1,
        reached_dependency: 1,
        success: None,
        served_by: None,
        grpc_status: None,
    }
}

/// A target hit on `path` at `at` seconds for request `id`.
pub(super) fn hit(at: f64, path: &str, id: Option<u64>) -> TargetHit {
    TargetHit {
        at: s(at),
        path: path.into(),
        request_id: id,
        instance: None,
    }
}

/// Parses `sentence` (it must parse) and judges it on `timeline`.
pub(super) fn judge(sentence: &str, timeline: &Timeline) -> Verdict {
    let expectation = parse(sentence).unwrap_or_else(|e| panic!("{sentence}: {e}"));
    evaluate(&expectation, timeline)
}
