//! Byte counters of one proxy, per direction: what the proxy read from one
//! side and what it wrote to the other (Toxiproxy's received/sent bytes).
//! Relaxed atomics, one add per chunk: cheap enough for the fast path.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::fault::Direction;

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
}
