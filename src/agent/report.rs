//! What a report says of each agent: its clock, when each fault window was
//! planned and when the agent applied it, and the evidence it gave.

use serde::Serialize;

use super::AgentKind;
use super::clock::ClockSummary;

/// One agent of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentReport {
    /// The dependency it proxies.
    pub dependency: String,
    /// Its API.
    pub api: String,
    /// Its proxy's name there.
    pub proxy: String,
    /// firedrill or Toxiproxy.
    pub kind: AgentKind,
    /// `created` by the drill (and deleted at its end) or `adopted`.
    pub proxy_was: &'static str,
    /// Its clock against the drill's.
    pub clock: ClockSummary,
    /// How long a fault outlives the drill's last renewal, milliseconds
    /// (none: a Toxiproxy takes no lease).
    pub lease_ms: Option<u64>,
    /// Each fault window: planned, and as applied.
    pub windows: Vec<WindowReport>,
    /// Where the evidence of what reached the dependency came from.
    pub evidence: Evidence,
}

/// A fault window on an agent.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowReport {
    /// The fault.
    pub fault: String,
    /// When the file says it opens and closes, milliseconds from the
    /// drill's start.
    pub planned_ms: (f64, f64),
    /// When the agent applied it and removed it, on the drill's clock
    /// (the agent's answer, placed with its measured offset); none where
    /// it did not happen.
    pub applied_ms: (Option<f64>, Option<f64>),
    /// Why it was not applied or not removed on time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The evidence an agent gave.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    /// Where it came from, in words.
    pub source: String,
    /// Request records read from the agent.
    pub records: u64,
    /// Records the agent no longer kept when the drill asked for them.
    pub dropped: u64,
}
