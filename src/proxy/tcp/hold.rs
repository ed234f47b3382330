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
            crate::clock::later(arrival, cut.after.map_or(Duration::ZERO, |a| a.get())),
        )),
        FaultKind::Close(cut) if cut.stream == Some(dir) => Some(Hold::Timeout),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::spec::Cut;
    use crate::schema::units::Dur;

    #[tokio::test(start_paused = true)]
    async fn a_reset_peer_timer_beyond_the_clock_is_far_away_not_a_panic() {
        let now = crate::clock::now();
        let cut = Cut {
            after_bytes: None,
            after: Some(Dur(Duration::MAX)),
            code: None,
            stream: Some(Direction::Upstream),
        };
        let Some(Hold::ResetPeer(at)) =
            stream_hold(&FaultKind::Reset(cut), Direction::Upstream, now)
        else {
            panic!("an armed reset_peer");
        };
        assert!(at > now + Duration::from_secs(365 * 24 * 3600), "{at:?}");
    }
}
