//! A run's pools as its reports show them: each server, in rotation or
//! not at the end, with its health changes.

use serde::Serialize;

use super::ms;

/// One pool's story: its servers and when each left and rejoined rotation.
#[derive(Debug, Clone, Serialize)]
pub struct PoolReport {
    /// Its name.
    pub name: String,
    /// Its servers start out of rotation until they pass an active health
    /// check.
    pub starts_out: bool,
    /// How long a server that comes back ramps up to its full share
    /// (omitted without slow start).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slow_start_ms: Option<f64>,
    /// Its servers, in the order configured.
    pub servers: Vec<PoolServerReport>,
}

/// One pool server's story.
#[derive(Debug, Clone, Serialize)]
pub struct PoolServerReport {
    /// Its name.
    pub name: String,
    /// Used only when every primary is out.
    pub backup: bool,
    /// In rotation at the end (a server of a pool with health checks
    /// starts out until it passes one).
    pub healthy_at_end: bool,
    /// Its health changes, in order.
    pub changes: Vec<HealthChangeReport>,
}

/// One health change, for reports.
#[derive(Debug, Clone, Serialize)]
pub struct HealthChangeReport {
    /// When, in milliseconds from the start.
    pub at_ms: f64,
    /// Back in rotation (true) or ejected (false).
    pub healthy: bool,
    /// The check that decided and what it saw.
    pub by: String,
}

/// The pools of a timeline, with their servers' health changes.
pub(super) fn pools(t: &crate::experiment::timeline::Timeline) -> Vec<PoolReport> {
    t.pools
        .iter()
        .map(|p| PoolReport {
            name: p.name.clone(),
            starts_out: p.starts_out,
            slow_start_ms: (!p.slow_start.is_zero()).then(|| ms(p.slow_start)),
            servers: p
                .servers
                .iter()
                .map(|(server, backup)| {
                    let changes: Vec<HealthChangeReport> = t
                        .health
                        .iter()
                        .filter(|h| h.pool == p.name && &h.server == server)
                        .map(|h| HealthChangeReport {
                            at_ms: ms(h.at),
                            healthy: h.healthy,
                            by: h.by.clone(),
                        })
                        .collect();
                    PoolServerReport {
                        name: server.clone(),
                        backup: *backup,
                        healthy_at_end: changes.last().map_or(!p.starts_out, |c| c.healthy),
                        changes,
                    }
                })
                .collect(),
        })
        .collect()
}
