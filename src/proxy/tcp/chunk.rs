//! What a pump does with one chunk, decided by the faults active on it:
//! hold it (latency), truncate it and end the connection (a cut after
//! bytes, limit_data), swallow it (a stream held), pace it (bandwidth) or
//! slice it (slicer).

use super::Conn;
use super::hold::{Hold, stream_hold};
use super::sent::Sent;
use super::verdict::Verdict;
use crate::clock::{Duration, Instant};
use crate::fault::{Direction, FaultKind, Hit};

/// What a pump does with one chunk, decided by the active faults.
#[derive(Debug, Default)]
pub(super) struct ChunkPlan {
    /// Hold the chunk until this instant (latency).
    pub(super) release_at: Option<Instant>,
    /// Forward only this many bytes, then end the connection this way.
    pub(super) truncate: Option<(usize, Verdict)>,
    /// Swallow the chunk, and the stream from here on: the fault that says
    /// so and how the hold ends.
    pub(super) hold: Option<(Hit, Hold)>,
    /// Bytes per second (bandwidth).
    pub(super) rate: Option<f64>,
    /// Slicer parameters: (fault, average, variation, pause).
    pub(super) slicer: Option<(Hit, usize, usize, Duration)>,
}

impl Conn<'_> {
    /// Decides what happens to a chunk of `len` bytes that arrived at
    /// `arrival`, after what was `sent` this way before it.
    pub(super) fn plan_chunk(
        &self,
        dir: Direction,
        arrival: Instant,
        len: usize,
        sent: &mut Sent,
    ) -> ChunkPlan {
        let mut chunk = ChunkPlan::default();
        let active = self.active(dir);
        sent.keep_limits(&active);
        for hit in active {
            // A stream-bound cut (reset_peer, timeout) holds the stream.
            if let Some(hold) = stream_hold(&hit.fault().kind, dir, arrival) {
                chunk.hold = Some((hit, hold));
                continue;
            }
            match &hit.fault().kind {
                FaultKind::Latency(l) => {
                    let at = crate::clock::later(arrival, self.plan.hit_delay(&hit, l));
                    chunk.release_at = Some(chunk.release_at.map_or(at, |t| t.max(at)));
                }
                FaultKind::Bandwidth(b) => {
                    let r = b.rate.bytes_per_second();
                    chunk.rate = Some(chunk.rate.map_or(r, |x| x.min(r)));
                }
                FaultKind::Slicer(s) => {
                    let s = &s.0;
                    chunk.slicer = Some((
                        hit.clone(),
                        s.average_size.0 as usize,
                        s.size_variation.0 as usize,
                        s.delay.get(),
                    ));
                }
                FaultKind::Blackhole => {
                    let (_, end) = self.plan.hit_next_change(&hit);
                    chunk.hold = Some((hit.clone(), Hold::Blackhole(end)));
                }
                FaultKind::Reset(cut) | FaultKind::Close(cut) => {
                    let verdict = Verdict::of(&hit.fault().kind);
                    match (cut.after_bytes, cut.after) {
                        (Some(limit), _) => {
                            if sent.total.saturating_add(len as u64) >= limit.0 {
                                let keep = limit.0.saturating_sub(sent.total) as usize;
                                chunk.truncate = Some((keep, verdict));
                            }
                        }
                        (None, None) => chunk.truncate = Some((0, verdict)),
                        (None, Some(_)) => {} // handled by the timers
                    }
                }
                FaultKind::LimitData(l) => {
                    let counted = sent.since_limit(&hit.fault().name);
                    if counted.saturating_add(len as u64) >= l.bytes.0 {
                        let keep = l.bytes.0.saturating_sub(counted) as usize;
                        chunk.truncate = Some((keep, Verdict::Close));
                    }
                }
                _ => {}
            }
        }
        if chunk.truncate.is_some() {
            // Record once, where the cut happens.
            self.record_kind(dir, |k| match k {
                FaultKind::Reset(c) | FaultKind::Close(c) => c.stream.is_none(),
                k => matches!(k, FaultKind::LimitData(_)),
            });
        }
        chunk
    }
}
