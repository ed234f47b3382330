//! What the control endpoint's `GET /status` answers: the live view's
//! moment as JSON.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{Moment, Watched};
use crate::clock::Instant;
use crate::defense::DefenseLine;
use crate::defense::report::Recorder;
use crate::experiment::config::Experiment;
use crate::experiment::drill::drive::load::Load;

/// What the control endpoint's `GET /status` reads, owned so each
/// connection can hold it.
#[derive(Debug, Clone)]
pub struct Status {
    /// The experiment.
    pub experiment: Arc<Experiment>,
    /// The load generator.
    pub load: Arc<Load>,
    /// The defense line, if any.
    pub line: Option<Arc<DefenseLine>>,
    /// Breaker transitions.
    pub recorder: Arc<Recorder>,
    /// The control state.
    pub control: Arc<crate::experiment::drill::drive::control::Control>,
    /// Time zero.
    pub start: Instant,
}

impl Status {
    /// The run now, as JSON.
    pub fn now(&self) -> Value {
        let watched = Watched {
            experiment: &self.experiment,
            load: &self.load,
            line: self.line.clone(),
            recorder: self.recorder.clone(),
            control: Some(self.control.clone()),
            start: self.start,
        };
        let m = Moment::read(&watched, 1);
        let active = self.control.active();
        json!({
            "experiment": m.name,
            "elapsed_ms": crate::defense::breaker::millis(m.elapsed),
            "duration_ms": crate::defense::breaker::millis(m.total),
            "active_faults": m.active,
            "manual_faults": self.control.manual_names().map(|name| json!({
                "name": name,
                "active": active.iter().any(|a| a == name),
            })).collect::<Vec<_>>(),
            "routes": m.routes.iter().map(|r| json!({
                "route": r.name, "requests": r.counts.requests, "success": r.counts.success,
                "fallback": r.counts.fallback, "errors": r.counts.errors,
                "rejected": r.counts.rejected, "timeouts": r.counts.timeouts,
            })).collect::<Vec<_>>(),
            "pools": m.pools.iter().map(|p| json!({
                "name": p.name,
                "in_rotation": p.servers.iter().filter(|(_, up)| *up).map(|(s, _)| s).collect::<Vec<_>>(),
                "out": p.servers.iter().filter(|(_, up)| !up).map(|(s, _)| s).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "breakers": m.breakers.iter().map(|(name, state, last)| json!({
                "name": name,
                "state": state.to_string(),
                "last_transition": last,
            })).collect::<Vec<_>>(),
        })
    }
}
