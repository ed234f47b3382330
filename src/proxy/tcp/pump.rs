//! One direction of a faulted connection: a pump that reads chunks,
//! stamps their arrival and applies the active faults before writing them
//! on, and how it ends (a hold's deadline, the reader's end, a slow close).

use std::sync::atomic::{AtomicBool, Ordering};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

use super::chunk::ChunkPlan;
use super::hold::{Hold, stream_hold};
use super::sent::Sent;
use super::slices::slice_ends;
use super::verdict::Verdict;
use super::{CHUNK, Conn, QUEUED_CHUNKS};
use crate::clock::{self, Duration, Instant};
use crate::fault::{Direction, FaultKind};
use crate::proxy::pace::Pace;

impl Conn<'_> {
    /// Carries one direction until EOF, a cut, or a fault that ends it.
    pub(super) async fn pump<R, W>(&self, dir: Direction, reader: &mut R, writer: &mut W)
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        if !self.closed[dir as usize] {
            tokio::select! {
                biased;
                _ = self.cut.cancelled() => {}
                verdict = self.pump_inner(dir, reader, writer) => {
                    if let Some(v) = verdict {
                        self.cut.cut(v);
                    }
                }
            }
        }
        self.pumps_left.fetch_sub(1, Ordering::SeqCst);
        self.cut.notify.notify_waiters();
    }

    /// Two stages joined by a bounded queue: ingress reads and stamps each
    /// chunk with its arrival time, egress applies the faults. So a latency
    /// fault holds every chunk exactly `delay` from when it reached the
    /// proxy, and chunks that arrive during a hold are not delayed twice.
    async fn pump_inner<R, W>(
        &self,
        dir: Direction,
        reader: &mut R,
        writer: &mut W,
    ) -> Option<Verdict>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let (tx, rx) = mpsc::channel::<(Instant, Bytes)>(QUEUED_CHUNKS);
        let read_failed = AtomicBool::new(false);
        let ingress = self.ingress(dir, reader, tx, &read_failed);
        let egress = self.egress(dir, rx, &read_failed, writer);
        tokio::pin!(ingress, egress);
        let mut ingress_done = false;
        loop {
            tokio::select! {
                biased;
                verdict = &mut egress => return verdict,
                _ = &mut ingress, if !ingress_done => ingress_done = true,
            }
        }
    }

    /// Reads chunks and queues each with its arrival time, until the end,
    /// a read error (noted in `read_failed`) or egress is gone.
    async fn ingress<R: AsyncRead + Unpin>(
        &self,
        dir: Direction,
        reader: &mut R,
        tx: mpsc::Sender<(Instant, Bytes)>,
        read_failed: &AtomicBool,
    ) {
        let mut buf = BytesMut::with_capacity(CHUNK);
        loop {
            buf.reserve(CHUNK);
            match reader.read_buf(&mut buf).await {
                Ok(0) => break,
                Ok(n) => {
                    self.traffic.add_received(dir, n);
                    let chunk = take_chunk(&mut buf);
                    if tx.send((clock::now(), chunk)).await.is_err() {
                        break;
                    }
                }
                Err(_) => {
                    read_failed.store(true, Ordering::SeqCst);
                    break;
                }
            }
        }
        drop(tx);
    }

    /// Takes the queued chunks and applies the active faults to each:
    /// holds, latency, truncation, then the write (sliced and paced). The
    /// verdict is how the direction ends the connection (`None`: it ended
    /// on its own, passed on as a half-close).
    async fn egress<W: AsyncWrite + Unpin>(
        &self,
        dir: Direction,
        mut rx: mpsc::Receiver<(Instant, Bytes)>,
        read_failed: &AtomicBool,
        writer: &mut W,
    ) -> Option<Verdict> {
        let mut sent = Sent::default();
        let mut hold: Option<Hold> = None;
        let mut changes = self.plan.subscribe();
        let mut pace = Pace::default();
        loop {
            let next = tokio::select! {
                biased;
                verdict = self.hold_ends(dir, hold, &mut changes) => return Some(verdict),
                next = rx.recv() => next,
            };
            let Some((arrival, mut data)) = next else {
                if read_failed.load(Ordering::SeqCst) {
                    return Some(Verdict::ABORTED);
                }
                return self.stream_ended(dir, hold, writer).await;
            };
            let mut chunk = self.plan_chunk(dir, arrival, data.len(), &mut sent);
            match (hold, chunk.hold.take()) {
                (None, Some((hit, new))) => {
                    self.plan.record_hit(&hit, "connection");
                    hold = Some(new);
                    continue;
                }
                // Swallowed: still held, or an armed reset_peer that
                // fires whatever happens to its toxic.
                (Some(_), Some(_)) | (Some(Hold::ResetPeer(_)), None) => continue,
                // The stream lost bytes in the hold: it cannot go on.
                (Some(_), None) => return Some(Verdict::Close),
                (None, None) => {}
            }
            if let Some(at) = chunk.release_at {
                self.record_kind(dir, |k| matches!(k, FaultKind::Latency(_)));
                clock::sleep_until_precise(at).await;
            }
            if let Some((keep, _)) = chunk.truncate {
                data.truncate(keep);
            }
            let len = data.len() as u64;
            let ok = self.write(dir, writer, data, &chunk, &mut pace).await;
            sent.total = sent.total.saturating_add(len);
            if let Some((_, verdict)) = chunk.truncate {
                let _ = writer.flush().await;
                return Some(verdict);
            }
            if !ok {
                return Some(Verdict::ABORTED);
            }
        }
    }

    /// Resolves when the hold on `dir` ends the connection: at its
    /// deadline, with its verdict, or with a close when a `timeout` that
    /// holds the stream is removed. Never, without such a hold.
    async fn hold_ends(
        &self,
        dir: Direction,
        hold: Option<Hold>,
        changes: &mut watch::Receiver<u64>,
    ) -> Verdict {
        let deadline = async {
            match hold.and_then(Hold::deadline) {
                Some((at, verdict)) => {
                    clock::sleep_until(at).await;
                    verdict
                }
                None => std::future::pending().await,
            }
        };
        let removed = async {
            if hold != Some(Hold::Timeout) {
                return std::future::pending().await;
            }
            while changes.changed().await.is_ok() {
                if !self.holds_timeout(dir) {
                    return;
                }
            }
            std::future::pending().await
        };
        tokio::select! {
            biased;
            verdict = deadline => verdict,
            () = removed => Verdict::Close,
        }
    }

    /// Writes a chunk, sliced and paced as the active faults say: slicer
    /// (toxics/slicer.go) in Toxiproxy's slices, each followed by the
    /// pause, the last one too; bandwidth as [`Pace`] says.
    async fn write<W: AsyncWrite + Unpin>(
        &self,
        dir: Direction,
        writer: &mut W,
        data: Bytes,
        chunk: &ChunkPlan,
        pace: &mut Pace,
    ) -> bool {
        let (slices, pause) = match &chunk.slicer {
            Some((hit, average, variation, pause)) => {
                let mut draw = || self.plan.hit_uniform(hit);
                let ends = slice_ends(data.len(), *average, *variation, &mut draw);
                (ends, *pause)
            }
            None => (vec![data.len()], Duration::ZERO),
        };
        let mut start = 0;
        for end in slices {
            let slice = data.slice(start..end);
            start = end;
            if slice.is_empty() {
                continue;
            }
            let pieces = chunk.rate.map_or(slice.len(), Pace::piece_len);
            for piece in slice.chunks(pieces) {
                if let Some(rate) = chunk.rate {
                    clock::sleep_until(pace.release(piece.len(), rate)).await;
                }
                if writer.write_all(piece).await.is_err() {
                    return false;
                }
                self.traffic.add_sent(dir, piece.len());
            }
            if !pause.is_zero() {
                let _ = writer.flush().await;
                clock::sleep(pause).await;
            }
        }
        true
    }

    /// Ends a direction whose reader reached its end. A held stream ends
    /// the connection: at once (blackhole, timeout), or when an armed
    /// reset_peer fires; a stream-bound reset_peer not yet armed is armed
    /// by the end, and a timeout closes the connection at the end even if
    /// no data came. Otherwise the end passes on as a half-close, after
    /// any slow_close.
    async fn stream_ended<W: AsyncWrite + Unpin>(
        &self,
        dir: Direction,
        hold: Option<Hold>,
        writer: &mut W,
    ) -> Option<Verdict> {
        let now = clock::now();
        let hold = hold.or_else(|| {
            self.active(dir).iter().find_map(|hit| {
                let hold = stream_hold(&hit.fault().kind, dir, now)?;
                self.plan.record_hit(hit, "connection");
                Some(hold)
            })
        });
        if let Some(Hold::ResetPeer(at)) = hold {
            clock::sleep_until(at).await;
            return Some(Verdict::ResetBoth);
        }
        self.slow_close(dir).await;
        let _ = writer.shutdown().await;
        hold.map(|_| Verdict::Close)
    }

    /// Whether a `timeout` still holds `dir` (it was not removed).
    fn holds_timeout(&self, dir: Direction) -> bool {
        self.active(dir)
            .iter()
            .any(|hit| stream_hold(&hit.fault().kind, dir, clock::now()) == Some(Hold::Timeout))
    }

    /// Holds back a close while a `slow_close` fault is active.
    async fn slow_close(&self, dir: Direction) {
        let delay = self
            .active(dir)
            .iter()
            .filter_map(|h| match &h.fault().kind {
                FaultKind::SlowClose(s) => Some(s.delay.get()),
                _ => None,
            })
            .max();
        if let Some(delay) = delay {
            self.record_kind(dir, |k| matches!(k, FaultKind::SlowClose(_)));
            clock::sleep(delay).await;
        }
    }
}

/// The bytes of one read, as a chunk that may wait in the queue (a hold
/// keeps it for the whole delay). A small read is copied out and the read
/// buffer kept for the next one: handing out a slice of it would pin its
/// 64 KiB until the chunk is written, and the next read would need a new
/// one, a large allocation with fresh pages for every request a latency
/// fault holds. A large read is handed out as it is, without a copy.
fn take_chunk(buf: &mut BytesMut) -> Bytes {
    if buf.len() <= SMALL_READ {
        let chunk = Bytes::copy_from_slice(buf);
        buf.clear();
        chunk
    } else {
        buf.split().freeze()
    }
}

/// The largest read [`take_chunk`] copies out of the read buffer.
const SMALL_READ: usize = CHUNK / 16;

#[cfg(test)]
mod tests {
    use super::*;

    /// A read buffer as ingress holds it, after a read of `n` bytes.
    fn read_of(n: usize) -> BytesMut {
        let mut buf = BytesMut::with_capacity(CHUNK);
        buf.extend((0..n).map(|i| i as u8));
        buf
    }

    #[test]
    fn a_small_read_is_copied_out_and_the_read_buffer_kept_for_the_next() {
        for n in [1, 200, SMALL_READ] {
            let mut buf = read_of(n);
            let at = buf.as_ptr();
            let chunk = take_chunk(&mut buf);
            assert_eq!(chunk, read_of(n).freeze(), "{n} bytes");
            assert_ne!(
                chunk.as_ptr(),
                at,
                "{n} bytes: copied, not a slice of the buffer"
            );
            assert!(buf.is_empty());
            buf.reserve(CHUNK);
            assert_eq!(
                buf.as_ptr(),
                at,
                "{n} bytes: the next read reuses the buffer"
            );
        }
    }

    #[test]
    fn a_large_read_is_handed_out_without_a_copy() {
        for n in [SMALL_READ + 1, CHUNK] {
            let mut buf = read_of(n);
            let at = buf.as_ptr();
            let chunk = take_chunk(&mut buf);
            assert_eq!(chunk, read_of(n).freeze(), "{n} bytes");
            assert_eq!(chunk.as_ptr(), at, "{n} bytes: the buffer's own bytes");
            assert!(buf.is_empty());
        }
    }
}
