//! The breaker's states, the permit an admitted call carries, and the
//! rejection a refused call gets.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::clock::Duration;

/// Where a breaker stands. The names are the ones used everywhere: code,
/// YAML, JSON, metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Calls flow; outcomes are counted.
    Closed,
    /// Calls are rejected at once until the wait has passed.
    Open,
    /// A limited number of trial calls decide between closed and open.
    HalfOpen,
    /// Manual override: every call is rejected until `reset`.
    ForcedOpen,
    /// Manual override: every call passes and nothing is counted.
    Disabled,
}

impl State {
    /// Every state, in a fixed order (for counters and reports).
    pub const ALL: [State; 5] = [
        State::Closed,
        State::Open,
        State::HalfOpen,
        State::ForcedOpen,
        State::Disabled,
    ];

    /// The standard name: `closed`, `open`, `half_open`, `forced_open`,
    /// `disabled`.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Closed => "closed",
            State::Open => "open",
            State::HalfOpen => "half_open",
            State::ForcedOpen => "forced_open",
            State::Disabled => "disabled",
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Proof that a call was admitted. It is not `Clone`: handing it back to
/// `record` or `release_without_outcome` consumes it, so a call reports at
/// most once (and [`CallGuard`](super::CallGuard) makes it at least once).
#[derive(Debug, PartialEq, Eq)]
pub struct Permit {
    /// The episode the call was admitted in; bumped by every transition and
    /// every progressive stage, so a straggler from an earlier episode is
    /// recognised.
    pub(crate) episode: u64,
    /// Transitions before the call was admitted: a straggler of the same
    /// state (a progressive stage ago) is told from one of another state.
    pub(crate) transitions: u64,
    /// The state that admitted the call.
    pub(crate) state: State,
}

impl Permit {
    /// The episode the call was admitted in.
    pub fn episode(&self) -> u64 {
        self.episode
    }

    /// The state that admitted the call.
    pub fn state(&self) -> State {
        self.state
    }
}

/// Why a call was not admitted (fail fast: no I/O happened).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("circuit breaker is {state}")]
pub struct Rejected {
    /// The state that rejected the call.
    pub state: State,
    /// When known, how long until the breaker lets a trial call through
    /// (open only); a `Retry-After` hint.
    pub retry_after: Option<Duration>,
}
