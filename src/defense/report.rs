//! What the defense line tells its observers: one report per client
//! request, and every breaker transition as it happens.

use serde::{Deserialize, Serialize};

use super::breaker::{State, Transition};
use super::fallback::FallbackKind;
use crate::clock::Duration;

/// Why the defense line answered without calling the dependency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rejection {
    /// The token bucket was empty.
    RateLimit,
    /// Every worker (`max_concurrent`) was busy.
    Workers,
    /// The route's bulkhead was full.
    Bulkhead,
    /// The route's breaker did not admit the call.
    Breaker,
}

/// How the last attempt failed, when it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallError {
    /// The dependency answered with a status that counts as a failure.
    Status,
    /// No answer within the attempt's timeout.
    Timeout,
    /// The connection could not be made.
    Connect,
    /// Every server of the route's pool was out of rotation: no
    /// connection was tried (before the first health check passes, or
    /// while every server is ejected).
    NoServer,
    /// The connection broke (reset, closed early, protocol error).
    Broken,
    /// The request's outer deadline (`request_timeout`) passed.
    Deadline,
    /// The caller gave up (hung up) before the defense line answered.
    Cancelled,
}

/// One client request as the defense line saw it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallReport {
    /// The route it matched (`default` when none did).
    pub route: String,
    /// The caller's `x-firedrill-request-id`, if it sent one.
    pub request_id: Option<u64>,
    /// The status returned to the caller.
    pub status: u16,
    /// Time from arrival to the response head.
    pub latency: Duration,
    /// The breaker's state when the first attempt asked it.
    pub breaker_state: Option<State>,
    /// What turned the request away, if anything did.
    pub rejected_by: Option<Rejection>,
    /// How the last attempt failed, if it did.
    pub error: Option<CallError>,
    /// The fallback that answered, if one did.
    pub fallback: Option<FallbackKind>,
    /// Attempts sent to the dependency (retries included).
    pub attempts: u32,
    /// The pool server that answered the last attempt, when the route's
    /// dependency is a pool.
    pub served_by: Option<ServedBy>,
}

/// Which server of a pool answered a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServedBy {
    /// The pool's name.
    pub pool: String,
    /// The server's name.
    pub server: String,
    /// The server is a backup (used only when every primary is out).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub backup: bool,
    /// When the pool chose the server, from the run's start: a pool's share
    /// sentences count a call by this time, so a call sent just before a
    /// server came back and routed just after is not counted in the
    /// ejection (`picked_ms`, exact to the nanosecond).
    #[serde(rename = "picked_ms", with = "crate::clock::exact_ms")]
    pub picked: Duration,
}

/// A pool server was taken out of rotation or brought back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HealthChange {
    /// When, from the run's start.
    pub at: Duration,
    /// The pool's name.
    pub pool: String,
    /// The server's name.
    pub server: String,
    /// Healthy (back in rotation) or not (ejected).
    pub healthy: bool,
    /// What decided: the check and what it saw (`active check /health:
    /// status 500, 3rd failure in a row`, `passive: 3 failures in 10s`).
    pub by: String,
}

impl HealthChange {
    /// The journal line: `{"at_ms":12000.0,"pool":..,"server":..,
    /// "healthy":false,"by":".."}`, one JSON object, no newline.
    pub fn to_json_line(&self) -> String {
        /// The line's fields, in this order.
        #[derive(Serialize)]
        struct Line<'a> {
            at_ms: f64,
            pool: &'a str,
            server: &'a str,
            healthy: bool,
            by: &'a str,
        }
        serde_json::to_string(&Line {
            at_ms: super::breaker::journal::millis(self.at),
            pool: &self.pool,
            server: &self.server,
            healthy: self.healthy,
            by: &self.by,
        })
        .unwrap_or_default()
    }
}

/// Receives reports and transitions (experiments record them, `defend`
/// writes the journal). Called inline: keep it cheap.
pub trait Observer: Send + Sync + 'static {
    /// A breaker changed state.
    fn transition(&self, _transition: &Transition) {}
    /// A client request finished (its response head was produced).
    fn call(&self, _report: &CallReport) {}
    /// A pool server's health changed.
    fn health(&self, _change: &HealthChange) {}
}

/// An observer that ignores everything.
#[derive(Debug, Default)]
pub struct NoObserver;

impl Observer for NoObserver {}

/// Writes every transition and pool health change as one JSON line to a
/// file (the transition journal), flushing each line so an interrupted run
/// keeps them all.
#[derive(Debug)]
pub struct JournalFile {
    /// The open file.
    file: std::sync::Mutex<std::fs::File>,
}

impl JournalFile {
    /// Creates (truncates) `path`.
    pub fn create(path: &std::path::Path) -> std::io::Result<JournalFile> {
        Ok(JournalFile {
            file: std::sync::Mutex::new(std::fs::File::create(path)?),
        })
    }
}

impl Observer for JournalFile {
    fn transition(&self, transition: &Transition) {
        use std::io::Write;
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(err) = writeln!(file, "{}", transition.to_json_line()) {
            tracing::warn!(%err, "cannot write the transition journal");
        }
    }

    fn health(&self, change: &HealthChange) {
        use std::io::Write;
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(err) = writeln!(file, "{}", change.to_json_line()) {
            tracing::warn!(%err, "cannot write the transition journal");
        }
    }
}

/// Keeps every transition and report in memory (experiments, tests).
#[derive(Debug, Default)]
pub struct Recorder {
    /// Transitions in the order they happened.
    transitions: std::sync::Mutex<Vec<Transition>>,
    /// Reports in the order requests finished.
    calls: std::sync::Mutex<Vec<CallReport>>,
    /// Pool health changes in the order they happened.
    health: std::sync::Mutex<Vec<HealthChange>>,
}

impl Recorder {
    /// The transitions so far.
    pub fn transitions(&self) -> Vec<Transition> {
        self.transitions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The reports so far.
    pub fn calls(&self) -> Vec<CallReport> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The pool health changes so far.
    pub fn health_changes(&self) -> Vec<HealthChange> {
        self.health
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Observer for Recorder {
    fn transition(&self, transition: &Transition) {
        self.transitions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(transition.clone());
    }

    fn call(&self, report: &CallReport) {
        self.calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(report.clone());
    }

    fn health(&self, change: &HealthChange) {
        self.health
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(change.clone());
    }
}
