//! What one direction of a faulted connection has sent, as the byte-count
//! faults (`limit_data`, `after_bytes` cuts) count it.

use std::collections::BTreeMap;

use crate::fault::{FaultKind, Hit};

/// The bytes one direction has sent, and where each `limit_data` began
/// counting: Toxiproxy counts from when the toxic began acting on the link
/// (its state is made at the link's start or at `AddToxic`, and kept by an
/// update: toxics/limit_data.go, link.go), so bytes sent before it was
/// added do not count.
#[derive(Debug, Default)]
pub(super) struct Sent {
    /// Bytes sent this way.
    pub(super) total: u64,
    /// Per active `limit_data` fault, by name: `total` when it was first
    /// seen.
    limit_from: BTreeMap<String, u64>,
}

impl Sent {
    /// Forgets where removed `limit_data` faults began counting.
    pub(super) fn keep_limits(&mut self, active: &[Hit]) {
        self.limit_from.retain(|name, _| {
            active.iter().any(|h| {
                h.fault().name == *name && matches!(h.fault().kind, FaultKind::LimitData(_))
            })
        });
    }

    /// Bytes counted by the `limit_data` fault `name`, which starts
    /// counting now if it just appeared.
    pub(super) fn since_limit(&mut self, name: &str) -> u64 {
        let from = *self
            .limit_from
            .entry(name.to_string())
            .or_insert(self.total);
        self.total.saturating_sub(from)
    }
}
