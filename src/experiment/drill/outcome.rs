//! What a run gives: how it ended, and what it recorded and counted.

use super::collect::stream::Counted;
use crate::experiment::timeline::Timeline;

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
    /// Why nothing of the run can be judged (`load: external` and no call
    /// reached any dependency): every verdict fails with this as what it
    /// saw. None for every other run.
    pub nothing_to_judge: Option<String>,
    /// Each agent of the run: its clock, its windows as applied, its
    /// evidence.
    pub agents: Vec<crate::agent::AgentReport>,
    /// Why the evidence cannot carry a verdict (the evidence gate): every
    /// sentence about a breaker named is inconclusive, and a finding on no
    /// breaker makes every sentence so. Empty when the evidence holds.
    pub inconclusive: Vec<crate::experiment::blackbox::gate::Finding>,
    /// How many times each fault was injected, by name.
    pub injected: std::collections::BTreeMap<String, u64>,
    /// What was counted of the requests as they finished: the tallies of
    /// the experiment's expectations, then of the steady state's before and
    /// after sentences; the figures per route.
    pub counted: Counted,
    /// The verdicts of the `query` sentences, by index among the
    /// expectations: judged by Prometheus after the run.
    pub queried: std::collections::BTreeMap<usize, crate::experiment::Verdict>,
    /// The verdicts of the steady state's `query` sentences, by index
    /// among its before then after sentences: judged by Prometheus after
    /// the run.
    pub steady_queried: std::collections::BTreeMap<usize, crate::experiment::Verdict>,
    /// The series of the queries those sentences judged, over the run:
    /// drawn on the page under the fault and breaker bands.
    pub queries: Vec<crate::experiment::prometheus::series::QuerySeries>,
}
