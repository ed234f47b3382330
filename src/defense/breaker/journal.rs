//! The transition journal (one JSON line per transition, with the figures
//! that caused it) and the per-state counters that prove what was admitted.

use std::fmt;

use serde::Serialize;
use serde::ser::{SerializeStruct, Serializer};

use super::state::State;
use crate::clock::Duration;
use crate::schema::units::Dur;

/// Why a transition happened, with its figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reason {
    /// The failure rate reached its threshold (window model).
    FailureRate {
        /// Measured rate, percent.
        rate: f64,
        /// Configured threshold, percent.
        threshold: f64,
        /// Calls the rate was measured over.
        calls: u32,
    },
    /// The slow-call rate reached its threshold (window model).
    SlowCallRate {
        /// Measured rate, percent.
        rate: f64,
        /// Configured threshold, percent.
        threshold: f64,
        /// Calls the rate was measured over.
        calls: u32,
    },
    /// Half-open trial calls stayed below both thresholds (window model).
    RatesBelow {
        /// Failure rate of the trial calls, percent.
        failure_rate: f64,
        /// Slow-call rate of the trial calls, percent.
        slow_call_rate: f64,
        /// Number of trial calls.
        calls: u32,
    },
    /// Failures in a row reached the threshold (consecutive model).
    ConsecutiveFailures {
        /// Failures in a row.
        failures: u32,
        /// Configured threshold.
        threshold: u32,
    },
    /// The ratio exceeded its threshold (ratio model; `slow_ratio` or
    /// `error_ratio`).
    Ratio {
        /// `error_ratio` or `slow_ratio`.
        metric: &'static str,
        /// Measured ratio, percent.
        ratio: f64,
        /// Configured threshold, percent.
        threshold: f64,
        /// Requests the ratio was measured over.
        requests: u32,
    },
    /// Enough successful probes in a row.
    ProbesOk {
        /// Successful probes.
        ok: u32,
        /// Probes needed.
        needed: u32,
    },
    /// A probe failed.
    ProbeFailed {
        /// Successful probes before it.
        ok: u32,
        /// Probes needed.
        needed: u32,
    },
    /// Every progressive stage passed.
    PhasesPassed {
        /// Number of stages.
        phases: u32,
    },
    /// The wait in open passed (`key`: `wait_in_open` or `breaker_duration`).
    WaitElapsed {
        /// The configuration key of the wait.
        key: &'static str,
        /// The wait that passed (after any backoff growth).
        #[serde(rename = "wait_ms", serialize_with = "as_ms")]
        wait: Duration,
    },
    /// Half-open trial calls did not finish within `max_wait_in_half_open`.
    MaxWaitInHalfOpen {
        /// The configured maximum.
        #[serde(rename = "wait_ms", serialize_with = "as_ms")]
        wait: Duration,
    },
    /// An operator override: `force_open`, `disable` or `reset`.
    Manual {
        /// Which override.
        action: &'static str,
    },
    /// Reported by the user's service itself (its events file or metrics).
    Reported {
        /// `events` or `prometheus`.
        source: &'static str,
    },
    /// Inferred black-box from the traffic at a dependency (a user's own
    /// service's breaker), with the evidence.
    Inferred {
        /// What was seen, e.g. `no arrivals for 2.01s while 40 requests were sent`.
        evidence: String,
        /// Arrivals at the dependency in the span that decided it.
        arrivals: u64,
        /// Requests sent to the service in that span.
        sends: u64,
        /// How far the evidence goes: `high` (what the caller got and what
        /// the dependency saw, paired by request id), `medium` (both,
        /// paired by time), `low` (the dependency's side alone).
        confidence: &'static str,
        /// From when the breaker was certainly in its new state, where the
        /// evidence proves it later than `at`: an open is dated at the end
        /// of the failure that tripped it, but a service whose requests run
        /// side by side may have let a request through after that instant
        /// and before it recorded the failure; once the service had
        /// answered a short-circuit it was open. Counting windows (`calls
        /// to`, a route's shares while open) start here.
        #[serde(
            rename = "proven_ms",
            serialize_with = "as_ms_opt",
            skip_serializing_if = "Option::is_none"
        )]
        proven: Option<Duration>,
    },
}

/// Milliseconds with microsecond precision: the one unit of times in
/// report files.
pub fn millis(d: Duration) -> f64 {
    d.as_micros() as f64 / 1000.0
}

fn as_ms<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    millis(*d).serialize(s)
}

fn as_ms_opt<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    d.map(millis).serialize(s)
}

/// A percentage for humans: `60%`, `66.7%`.
pub(crate) fn pct(value: f64) -> String {
    if (value - value.round()).abs() < 1e-9 {
        format!("{value:.0}%")
    } else {
        format!("{value:.1}%")
    }
}

/// `1 call`, `3 calls`.
fn count(n: u32, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::FailureRate {
                rate,
                threshold,
                calls,
            } => write!(
                f,
                "failure_rate {} >= {} over {}",
                pct(*rate),
                pct(*threshold),
                count(*calls, "call")
            ),
            Reason::SlowCallRate {
                rate,
                threshold,
                calls,
            } => write!(
                f,
                "slow_call_rate {} >= {} over {}",
                pct(*rate),
                pct(*threshold),
                count(*calls, "call")
            ),
            Reason::RatesBelow {
                failure_rate,
                slow_call_rate,
                calls,
            } => write!(
                f,
                "failure_rate {} and slow_call_rate {} below thresholds over {}",
                pct(*failure_rate),
                pct(*slow_call_rate),
                count(*calls, "call")
            ),
            Reason::ConsecutiveFailures {
                failures,
                threshold,
            } => {
                write!(f, "consecutive_failures {failures} >= {threshold}")
            }
            Reason::Ratio {
                metric,
                ratio,
                threshold,
                requests,
            } => {
                // Sentinel opens above the threshold, or at it when it is 100 %.
                let op = if ratio > threshold { ">" } else { ">=" };
                write!(
                    f,
                    "{metric} {} {op} {} over {}",
                    pct(*ratio),
                    pct(*threshold),
                    count(*requests, "request")
                )
            }
            Reason::ProbesOk { ok, needed } => write!(f, "probes {ok}/{needed} ok"),
            Reason::ProbeFailed { ok, needed } => {
                write!(f, "probe failed after {ok}/{needed} ok")
            }
            Reason::PhasesPassed { phases } => write!(f, "phases {phases}/{phases} passed"),
            Reason::WaitElapsed { key, wait } => write!(f, "{key} {} elapsed", Dur(*wait)),
            Reason::MaxWaitInHalfOpen { wait } => {
                write!(f, "max_wait_in_half_open {} elapsed", Dur(*wait))
            }
            Reason::Manual { action } => f.write_str(action),
            Reason::Inferred {
                evidence,
                confidence,
                ..
            } => write!(f, "inferred ({confidence} confidence): {evidence}"),
            Reason::Reported { source } => write!(f, "reported by the service ({source})"),
        }
    }
}

impl Reason {
    /// Whether an operator caused it (any edge is legal for those).
    pub fn is_manual(&self) -> bool {
        matches!(self, Reason::Manual { .. })
    }
}

/// One state change of one breaker.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    /// Time since the run started.
    pub at: Duration,
    /// The breaker's name.
    pub breaker: String,
    /// State before.
    pub from: State,
    /// State after.
    pub to: State,
    /// Why, with figures.
    pub reason: Reason,
}

impl Transition {
    /// The journal line: one JSON object, no newline.
    pub fn to_json_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

impl Serialize for Transition {
    /// `{"at_ms":12000.0,"breaker":..,"from":..,"to":..,
    /// "reason":"failure_rate 60% >= 50% over 10 calls","figures":{..}}`:
    /// times in milliseconds, as numbers, as in every report file.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Transition", 6)?;
        st.serialize_field("at_ms", &millis(self.at))?;
        st.serialize_field("breaker", &self.breaker)?;
        st.serialize_field("from", &self.from)?;
        st.serialize_field("to", &self.to)?;
        st.serialize_field("reason", &self.reason.to_string())?;
        st.serialize_field("figures", &self.reason)?;
        st.end()
    }
}

/// Whether `from -> to` is an edge the breaker may take for `reason`:
/// the four automatic edges, or any change of state by an operator.
pub fn is_legal(from: State, to: State, reason: &Reason) -> bool {
    use State::{Closed, HalfOpen, Open};
    if from == to {
        return false;
    }
    if reason.is_manual() {
        return true;
    }
    matches!(
        (from, to),
        (Closed, Open) | (Open, HalfOpen) | (HalfOpen, Closed) | (HalfOpen, Open)
    )
}

/// One count per state, named like the states (for JSON and metrics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PerState {
    /// Count in `closed`.
    pub closed: u64,
    /// Count in `open`.
    pub open: u64,
    /// Count in `half_open`.
    pub half_open: u64,
    /// Count in `forced_open`.
    pub forced_open: u64,
    /// Count in `disabled`.
    pub disabled: u64,
}

impl PerState {
    /// The count for `state`.
    pub fn get(&self, state: State) -> u64 {
        match state {
            State::Closed => self.closed,
            State::Open => self.open,
            State::HalfOpen => self.half_open,
            State::ForcedOpen => self.forced_open,
            State::Disabled => self.disabled,
        }
    }

    pub(crate) fn bump(&mut self, state: State) {
        let slot = match state {
            State::Closed => &mut self.closed,
            State::Open => &mut self.open,
            State::HalfOpen => &mut self.half_open,
            State::ForcedOpen => &mut self.forced_open,
            State::Disabled => &mut self.disabled,
        };
        *slot += 1;
    }
}

/// What the breaker did with the calls offered to it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Counters {
    /// Calls admitted, by the state that admitted them: the counter proof
    /// (`open` and `forced_open` must stay 0).
    pub admitted: PerState,
    /// Calls rejected, by the state that rejected them.
    pub rejected: PerState,
    /// Outcomes recorded as success (stragglers included).
    pub successes: u64,
    /// Outcomes recorded as failure (stragglers included).
    pub failures: u64,
    /// Outcomes recorded as ignored (4xx by default).
    pub ignored: u64,
    /// Calls released without an outcome (cancellation, disconnect).
    pub cancelled: u64,
    /// Outcomes from an earlier episode, left out of the statistics.
    pub stragglers: u64,
    /// Total duration of successful calls, in seconds.
    pub success_seconds: f64,
    /// Total duration of failed calls, in seconds.
    pub failure_seconds: f64,
    /// Total duration of ignored calls, in seconds.
    pub ignored_seconds: f64,
}
