//! What a remote dependency's agent did, as the drill reports it: the
//! windows it applied, the requests its faults hit, the records lost, and
//! the report's account of the agent.

use std::collections::BTreeMap;

use super::{Remote, setup::proxy_path};
use crate::agent::AgentKind;
use crate::agent::report::{AgentReport, Evidence, WindowReport};
use crate::clock::Duration;

impl Remote {
    /// Each fault's windows as the agent applied them: from its answer to
    /// the toxic's creation to its answer to the removal (the run's end
    /// for one never removed).
    pub fn applied_windows(&self, ended: Duration) -> BTreeMap<String, Vec<(Duration, Duration)>> {
        let state = self.lock();
        let mut windows: BTreeMap<String, Vec<(Duration, Duration)>> = BTreeMap::new();
        for (p, a) in self.planned.iter().zip(&state.applied) {
            let entry = windows.entry(p.fault.clone()).or_default();
            if let Some(on) = a.on {
                entry.push((on, a.off.unwrap_or(ended).max(on)));
            }
        }
        windows
    }

    /// Requests each of the drill's faults hit on the agent.
    pub fn injected(&self) -> BTreeMap<String, u64> {
        self.lock().injected.clone()
    }

    /// What went wrong, for the report's warnings.
    pub fn warnings(&self) -> Vec<String> {
        let state = self.lock();
        let mut warnings = state.warnings.clone();
        if state.dropped > 0 {
            warnings.push(format!(
                "dependency {}: its agent no longer kept {} of its request records when the drill read them: what reached it is seen in part",
                self.name, state.dropped
            ));
        }
        warnings
    }

    /// What the drill lost of the agent's records, for the evidence gate:
    /// records the agent no longer kept when read, or a last read that
    /// failed; `None` when every record was read.
    pub fn lost(&self) -> Option<String> {
        let state = self.lock();
        let mut lost = Vec::new();
        if state.dropped > 0 {
            lost.push(format!(
                "its agent dropped {} of its records before the drill read them",
                state.dropped
            ));
        }
        if let Some(why) = &state.unread {
            lost.push(format!(
                "the last read of its agent's records failed ({why})"
            ));
        }
        (!lost.is_empty()).then(|| format!("dependency {}: {}", self.name, lost.join(", ")))
    }

    /// The report's account of the agent.
    pub fn report(&self) -> AgentReport {
        let state = self.lock();
        let ms = |d: Duration| d.as_micros() as f64 / 1000.0;
        AgentReport {
            dependency: self.name.clone(),
            api: self.agent.api.clone(),
            proxy: self.agent.proxy.clone(),
            kind: self.agent.kind,
            proxy_was: if self.created { "created" } else { "adopted" },
            clock: state.clocks.summary(),
            lease_ms: (self.agent.kind == AgentKind::Firedrill)
                .then_some(self.agent.lease.as_millis() as u64),
            windows: self
                .planned
                .iter()
                .zip(&state.applied)
                .map(|(p, a)| WindowReport {
                    fault: p.fault.clone(),
                    planned_ms: (ms(p.window.0), ms(p.window.1)),
                    applied_ms: (a.on.map(ms), a.off.map(ms)),
                    error: a.error.clone(),
                })
                .collect(),
            evidence: Evidence {
                source: match self.agent.kind {
                    AgentKind::Firedrill => format!(
                        "the agent's request records (GET {}/records)",
                        proxy_path(&self.agent.proxy)
                    ),
                    AgentKind::Toxiproxy => {
                        "none: a Toxiproxy keeps no request records".to_string()
                    }
                },
                records: state.read,
                dropped: state.dropped,
            },
        }
    }
}
