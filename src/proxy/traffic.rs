//! Byte counters of one proxy, per direction: what the proxy read from one
//! side and what it wrote to the other (Toxiproxy's received/sent bytes).
//! Relaxed atomics, one add per chunk: cheap enough for the fast path.
//!
//! Both modes count the bytes on the wire: in HTTP mode that is heads and
//! bodies as read from and written to the sockets, so `received` upstream
//! is what the client sent, `sent` upstream what reached the target,
//! `received` downstream what the target answered and `sent` downstream
//! what reached the client.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::fault::Direction;
use crate::metrics::{Exposition, MetricKind};

/// Bytes through one proxy since it was created.
#[derive(Debug, Default)]
pub struct Traffic {
    /// Bytes read, indexed by [`Direction`] (upstream: from the client).
    received: [AtomicU64; 2],
    /// Bytes written, indexed by [`Direction`] (upstream: to the target).
    sent: [AtomicU64; 2],
}

impl Traffic {
    /// Bytes read from the source side of `dir`.
    pub fn received(&self, dir: Direction) -> u64 {
        self.received[dir as usize].load(Ordering::Relaxed)
    }

    /// Bytes written to the destination side of `dir`.
    pub fn sent(&self, dir: Direction) -> u64 {
        self.sent[dir as usize].load(Ordering::Relaxed)
    }

    /// Counts `n` bytes read in `dir`.
    pub fn add_received(&self, dir: Direction, n: usize) {
        self.received[dir as usize].fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Counts `n` bytes written in `dir`.
    pub fn add_sent(&self, dir: Direction, n: usize) {
        self.sent[dir as usize].fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Toxiproxy's byte counters of the proxy `name` listening on `listen`
    /// in front of `upstream`, per direction.
    pub fn expose(&self, name: &str, listen: &str, upstream: &str, out: &mut Exposition) {
        for (dir, label) in [
            (Direction::Upstream, "upstream"),
            (Direction::Downstream, "downstream"),
        ] {
            let labels = [
                ("direction", label),
                ("listener", listen),
                ("proxy", name),
                ("upstream", upstream),
            ];
            out.sample(
                "toxiproxy_proxy_received_bytes_total",
                "The total bytes received from the source side of the direction",
                MetricKind::Counter,
                &labels,
                self.received(dir) as f64,
            );
            out.sample(
                "toxiproxy_proxy_sent_bytes_total",
                "The total bytes sent to the destination side of the direction",
                MetricKind::Counter,
                &labels,
                self.sent(dir) as f64,
            );
        }
    }
}
