//! Streams that stop passing data (`blackhole`, Toxiproxy's `timeout` and
//! armed `reset_peer`) and how each ends its connection.

use super::verdict::Verdict;
use crate::clock::{Duration, Instant};
use crate::fault::{Direction, FaultKind};

/// A stream that stopped passing data: what it swallows is never
/// forwarded, and the hold ends the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Hold {
    /// `blackhole`: closes when the stream ends, at the window's end (this
    /// instant), or at the first chunk after it (bytes were lost).
    Blackhole(Option<Instant>),
    /// Toxiproxy's `timeout` (toxics/timeout.go): closes when the stream
    /// ends or the toxic is removed (`Cleanup`); its timer is one of the
    /// cut timers, counted from when the toxic began acting.
    Timeout,
    /// Toxiproxy's `reset_peer` (toxics/reset_peer.go), armed by the
    /// stream's first data or its end: resets both sides at this instant,
    /// whatever happens meanwhile (its `Pipe` waits without reading).
    ResetPeer(Instant),
}

impl Hold {
    /// The instant the hold ends the connection by itself, and how.
    pub(super) fn deadline(self) -> Option<(Instant, Verdict)> {
        match self {
            Hold::Blackhole(end) => end.map(|at| (at, Verdict::Close)),
            Hold::Timeout => None,
            Hold::ResetPeer(at) => Some((at, Verdict::ResetBoth)),
        }
    }
}

/// The hold of a stream-bound cut (`reset_peer`, `timeout`) in `dir`,
/// for a chunk (or the stream's end) arriving at `arrival`.
pub(super) fn stream_hold(kind: &FaultKind, dir: Direction, arrival: Instant) -> Option<Hold> {
    match kind {
        FaultKind::Reset(cut) if cut.stream == Some(dir) => Some(Hold::ResetPeer(
            arrival + cut.after.map_or(Duration::ZERO, |a| a.get()),
        )),
        FaultKind::Close(cut) if cut.stream == Some(dir) => Some(Hold::Timeout),
        _ => None,
    }
}
