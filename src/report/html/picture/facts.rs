//! The fields of `report.json` the page shows, as the page reads them
//! back (reports of older versions lack some: each such field has a
//! default).

use serde::Deserialize;

/// The fields of `report.json` the page shows.
#[derive(Debug, Clone, Deserialize)]
pub struct Facts {
    /// The experiment's name.
    pub experiment: String,
    /// Its description.
    #[serde(default)]
    pub description: Option<String>,
    /// The firedrill version that ran it (absent in reports of older ones).
    #[serde(default)]
    pub version: Option<String>,
    /// The seed.
    pub seed: u64,
    /// `virtual` or `real`.
    pub clock: String,
    /// Real clock: the start, Unix epoch milliseconds.
    #[serde(default)]
    pub started_at_unix_ms: Option<u64>,
    /// How long it ran.
    pub duration_ms: f64,
    /// How long it was to run, when it was cut short.
    #[serde(default)]
    pub planned_duration_ms: Option<f64>,
    /// How it ended.
    pub ending: EndingFacts,
    /// Whether it passed.
    pub passed: bool,
    /// One per expectation.
    pub verdicts: Vec<VerdictFacts>,
    /// Breakers and their transitions.
    pub breakers: Vec<BreakerFacts>,
    /// Fault windows.
    pub faults: Vec<FaultFacts>,
    /// The defense line's pools and their servers' health changes.
    #[serde(default)]
    pub pools: Vec<PoolFacts>,
    /// The verdict in one word (`not_healthy`); absent in reports of older
    /// versions, which the page tells from `ending` and `passed`.
    #[serde(default)]
    pub verdict: Option<String>,
    /// What could not be read after the run.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The keys of the imported defense files the drill does not cover.
    #[serde(default)]
    pub not_drilled: Vec<String>,
    /// Per load route, its figures over the run (none for `load:
    /// external`).
    #[serde(default)]
    pub routes: Vec<RouteFacts>,
    /// Why the evidence cannot carry some verdicts (the evidence gate).
    #[serde(default)]
    pub inconclusive: Vec<crate::experiment::blackbox::gate::Finding>,
    /// Each query a sentence judged, its series over the run (none in
    /// reports of older versions or runs without queries).
    #[serde(default)]
    pub queries: Vec<crate::experiment::prometheus::series::QuerySeries>,
}

/// One load route's figures over the run.
#[derive(Debug, Clone, Deserialize)]
pub struct RouteFacts {
    /// The route.
    pub route: String,
    /// Requests sent.
    pub requests: u64,
    /// Success, percent.
    pub success_pct: f64,
    /// Answered by a fallback, percent.
    pub fallback_pct: f64,
    /// No success, percent (reports of older versions lack it: then
    /// `100 - success_pct`).
    #[serde(default)]
    pub errors_pct: Option<f64>,
    /// Turned away by the defense line, percent.
    pub rejected_pct: f64,
    /// Timed out.
    pub timeouts: u64,
    /// Latency percentiles, milliseconds.
    pub latency_ms: LatencyFacts,
    /// gRPC answers per status name (none without gRPC answers).
    #[serde(default)]
    pub grpc_statuses: std::collections::BTreeMap<String, u64>,
}

/// A route's latency percentiles.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct LatencyFacts {
    /// Median, milliseconds.
    pub p50: f64,
    /// 99th percentile, milliseconds.
    pub p99: f64,
}

/// `ending` in report.json.
#[derive(Debug, Clone, Deserialize)]
pub struct EndingFacts {
    /// `completed`, `halted` or `interrupted`.
    pub kind: String,
    /// A halt's condition.
    #[serde(default)]
    pub condition: Option<String>,
    /// What the halt condition saw.
    #[serde(default)]
    pub seen: Option<String>,
    /// A run not healthy before injection: the steady-state checks that
    /// failed, with what each saw.
    #[serde(default)]
    pub failed: Vec<String>,
}

/// One verdict.
#[derive(Debug, Clone, Deserialize)]
pub struct VerdictFacts {
    /// The sentence.
    pub expectation: String,
    /// Whether it held.
    pub passed: bool,
    /// What it required.
    pub expected: String,
    /// What the run showed.
    pub seen: String,
    /// The intervals it judged, milliseconds.
    #[serde(default)]
    pub judged_ms: Vec<(f64, f64)>,
    /// Why it was not judged, when it was not.
    #[serde(default)]
    pub not_judged: Option<String>,
    /// Why the evidence cannot carry it, when it cannot.
    #[serde(default)]
    pub inconclusive: Option<String>,
}

/// One breaker.
#[derive(Debug, Clone, Deserialize)]
pub struct BreakerFacts {
    /// Its name.
    pub name: String,
    /// `inferred` for a user's service's breaker.
    #[serde(default)]
    pub source: Option<String>,
    /// An inferred breaker's evidence, as the evidence gate read it.
    #[serde(default)]
    pub evidence: Option<crate::experiment::blackbox::evidence::Quality>,
    /// Its transitions.
    pub transitions: Vec<TransitionFacts>,
    /// What the service reported itself, when it did.
    #[serde(default)]
    pub reported: Option<Vec<TransitionFacts>>,
}

/// One transition.
#[derive(Debug, Clone, Deserialize)]
pub struct TransitionFacts {
    /// When, milliseconds.
    pub at_ms: f64,
    /// From.
    pub from: String,
    /// To.
    pub to: String,
    /// Why.
    #[serde(default)]
    pub reason: String,
}

/// One fault.
#[derive(Debug, Clone, Deserialize)]
pub struct FaultFacts {
    /// Its name.
    pub name: String,
    /// Its kind.
    pub kind: String,
    /// `[start, end)` windows, milliseconds.
    pub windows_ms: Vec<(f64, f64)>,
    /// The instance whose proxy applies it (none: every one).
    #[serde(default)]
    pub instance: Option<String>,
    /// Started and stopped by people.
    #[serde(default)]
    pub manual: bool,
    /// A replay: what the recording does per bucket from the window's
    /// start.
    #[serde(default)]
    pub recorded: Option<RecordedFacts>,
}

/// A replayed recording, per bucket.
#[derive(Debug, Clone, Deserialize)]
pub struct RecordedFacts {
    /// One bucket's width, milliseconds.
    pub bucket_ms: f64,
    /// Failed answers per bucket, percent (none: no recorded answer).
    pub failing_pct: Vec<Option<f64>>,
}

/// One pool of the defense line.
#[derive(Debug, Clone, Deserialize)]
pub struct PoolFacts {
    /// Its name.
    pub name: String,
    /// Its servers start out of rotation until a health check passes.
    #[serde(default)]
    pub starts_out: bool,
    /// How long a returning server ramps up, milliseconds.
    #[serde(default)]
    pub slow_start_ms: Option<f64>,
    /// Its servers, in the order configured.
    pub servers: Vec<ServerFacts>,
}

/// One server of a pool.
#[derive(Debug, Clone, Deserialize)]
pub struct ServerFacts {
    /// Its name.
    pub name: String,
    /// Used only when every primary is out.
    #[serde(default)]
    pub backup: bool,
    /// Its health changes, in order.
    pub changes: Vec<HealthFacts>,
}

/// One health change of a pool server.
#[derive(Debug, Clone, Deserialize)]
pub struct HealthFacts {
    /// When, milliseconds.
    pub at_ms: f64,
    /// Back in rotation (true) or ejected.
    pub healthy: bool,
    /// The check that decided and what it saw.
    pub by: String,
}
