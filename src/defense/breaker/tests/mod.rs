//! Tests of the breaker: a replay harness for table-driven sequences, then
//! one file per model, configuration, journal, the shared guard, and
//! property tests.

mod config;
mod consecutive;
mod fidelity;
mod journal;
mod opossum;
mod props;
mod ratio;
mod shared;
mod window;

use super::*;
use crate::clock::{Duration, Instant};

/// What happens at one step of a replay.
#[derive(Debug, Clone, Copy)]
pub(super) enum Op {
    /// A call that must be admitted and succeeds after `ms`.
    Ok(u64),
    /// A call that must be admitted and fails (5xx) after `ms`.
    Fail(u64),
    /// A call that must be admitted and gets a 4xx.
    Ignore,
    /// A call that must be rejected.
    Reject,
    /// Timers fire (`on_timer`).
    Timer,
}

/// One step: at `ms` since the run start, do `op`.
pub(super) type Step = (u64, Op);

/// A journal entry in a form a table can spell: (ms, from, to, reason).
pub(super) type Seen = (u64, &'static str, &'static str, String);

/// The run start shared by every test (fixed once, so breakers built by
/// `replay` and instants built by a test agree); Instant arithmetic needs
/// no runtime.
pub(super) fn base() -> Instant {
    static BASE: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *BASE.get_or_init(Instant::now)
}

pub(super) fn ms(base: Instant, ms: u64) -> Instant {
    base + Duration::from_millis(ms)
}

pub(super) fn window(edit: impl FnOnce(&mut WindowConfig)) -> BreakerConfig {
    let mut c = WindowConfig::default();
    edit(&mut c);
    BreakerConfig::new("dep", ModelConfig::Window(c))
}

pub(super) fn consecutive(edit: impl FnOnce(&mut ConsecutiveConfig)) -> BreakerConfig {
    let mut c = ConsecutiveConfig::default();
    edit(&mut c);
    BreakerConfig::new("dep", ModelConfig::Consecutive(c))
}

pub(super) fn ratio(edit: impl FnOnce(&mut RatioConfig)) -> BreakerConfig {
    let mut c = RatioConfig::default();
    edit(&mut c);
    BreakerConfig::new("dep", ModelConfig::Ratio(c))
}

/// The journal as (ms, from, to, reason) rows.
pub(super) fn seen(b: &Breaker) -> Vec<Seen> {
    b.journal()
        .iter()
        .map(|t| {
            (
                t.at.as_millis() as u64,
                t.from.as_str(),
                t.to.as_str(),
                t.reason.to_string(),
            )
        })
        .collect()
}

/// Replays `steps` through a fresh breaker (each call is acquired and
/// recorded at its step's time; its duration feeds the slow rules), checks
/// every admission or rejection the table demands, and returns the breaker.
pub(super) fn replay(config: &BreakerConfig, steps: &[Step]) -> Breaker {
    let start = base();
    let mut b = Breaker::new(config, start);
    for (i, &(at, op)) in steps.iter().enumerate() {
        let now = ms(start, at);
        let (outcome, took) = match op {
            Op::Timer => {
                b.on_timer(now);
                continue;
            }
            Op::Reject => {
                let got = b.try_acquire(now);
                assert!(
                    got.is_err(),
                    "step {i} at {at}ms: expected a rejection, got {got:?}"
                );
                continue;
            }
            Op::Ok(d) => (Outcome::Success, d),
            Op::Fail(d) => (Outcome::Failure(FailureKind::Status(503)), d),
            Op::Ignore => (b.classifier().classify_status(404), 0),
        };
        let permit = b
            .try_acquire(now)
            .unwrap_or_else(|r| panic!("step {i} at {at}ms: expected admission, got {r:?}"));
        b.record(permit, outcome, Duration::from_millis(took), now);
    }
    b
}

/// `n` steps of `op`, one every `every` ms from `from`.
pub(super) fn repeat(from: u64, every: u64, n: u64, op: Op) -> Vec<Step> {
    (0..n).map(|i| (from + i * every, op)).collect()
}

/// Asserts the journal equals `expected`, row by row.
pub(super) fn assert_journal(b: &Breaker, expected: &[(u64, &str, &str, &str)]) {
    let got = seen(b);
    let want: Vec<Seen> = expected
        .iter()
        .map(|&(at, from, to, reason)| (at, leak(from), leak(to), reason.to_string()))
        .collect();
    assert_eq!(got, want);
}

fn leak(s: &str) -> &'static str {
    State::ALL
        .iter()
        .map(|st| st.as_str())
        .find(|name| *name == s)
        .unwrap_or_else(|| panic!("unknown state {s}"))
}
