//! TCP mode: carries byte streams both ways and applies the connection
//! faults to them (latency per chunk, bandwidth, slicer, limit_data,
//! slow_close, reset, close, blackhole, and the control plane's
//! stream-bound `reset_peer` and `timeout`), as Toxiproxy's toxics do where
//! Toxiproxy has them.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use super::pace::Pace;
use super::traffic::Traffic;
use crate::clock::{self, Duration, Instant};
use crate::fault::{ConnectionRolls, Direction, FaultKind, FaultPlan, Hit};
use crate::http::ShutdownSignal;
use crate::net::{Connector, Transport};

mod hold;
mod pass;
mod sent;
mod slices;
mod verdict;

use self::hold::{Hold, stream_hold};
use self::pass::{PassThrough, pass_through};
use self::sent::Sent;
use self::slices::slice_ends;
use self::verdict::{CutSignal, Verdict, finish};

/// Size of one read from either side.
const CHUNK: usize = 64 * 1024;

/// Chunks read ahead of a held one (latency): bounds the memory a slow
/// direction can take to this many chunks.
const QUEUED_CHUNKS: usize = 32;

/// Handles one client connection in TCP mode, counting its bytes in
/// `traffic`.
///
/// A connection no fault hit runs on a plain copy loop; when the plan's
/// fault list is replaced, it stops between chunks, rolls the new list, and
/// goes on through the fault pumps (so new toxics reach open connections).
pub async fn handle<S, C>(
    client: S,
    connector: Arc<C>,
    plan: Arc<FaultPlan>,
    _shutdown: ShutdownSignal,
    traffic: Arc<Traffic>,
) where
    S: Transport,
    C: Connector,
{
    // Subscribe before rolling, so a replace in between is not missed.
    let changes = plan.subscribe();
    let rolls = plan.roll_connection(None);
    let opened = clock::now();
    if rolls.is_clean() && !plan.accepts_additions() {
        // No fault hit this connection and none can be added later.
        let Ok(mut upstream) = connect(&*connector).await else {
            return;
        };
        let mut client = client;
        let verdict = match tokio::io::copy_bidirectional_with_sizes(
            &mut client,
            &mut upstream,
            CHUNK,
            CHUNK,
        )
        .await
        {
            Ok((up, down)) => {
                traffic.add_received(Direction::Upstream, up as usize);
                traffic.add_sent(Direction::Upstream, up as usize);
                traffic.add_received(Direction::Downstream, down as usize);
                traffic.add_sent(Direction::Downstream, down as usize);
                Verdict::Normal
            }
            Err(err) => {
                tracing::trace!(%err, "connection ended with an error");
                Verdict::ABORTED
            }
        };
        return finish(client, Some(upstream), verdict);
    }
    let (client, upstream, rolls, closed) = if rolls.is_clean() {
        let Ok(upstream) = connect(&*connector).await else {
            return;
        };
        match pass_through(client, upstream, changes, &traffic).await {
            PassThrough::Done => return,
            PassThrough::Changed {
                client,
                upstream,
                closed,
            } => {
                let rolls = plan.roll_connection(Some(&rolls));
                (client, upstream, rolls, closed)
            }
        }
    } else {
        // A cut that is active right now happens before anything is
        // forwarded (a stream-bound one waits for its stream).
        for hit in rolls.hits() {
            if let FaultKind::Reset(cut) | FaultKind::Close(cut) = &hit.fault().kind
                && cut.after.is_none()
                && cut.after_bytes.is_none()
                && cut.stream.is_none()
                && plan.hit_active(&hit)
            {
                plan.record_hit(&hit, "connection");
                return finish::<S, C::Stream>(client, None, Verdict::of(&hit.fault().kind));
            }
        }
        let Ok(upstream) = connect(&*connector).await else {
            return;
        };
        (client, upstream, rolls, [false; 2])
    };
    let conn = Conn {
        plan: &plan,
        rolls: Mutex::new(Arc::new(rolls)),
        cut: CutSignal::default(),
        opened,
        traffic: &traffic,
        closed,
        pumps_left: AtomicU8::new(2),
    };
    let (mut client_read, mut client_write) = tokio::io::split(client);
    let (mut upstream_read, mut upstream_write) = tokio::io::split(upstream);
    tokio::join!(
        conn.pump(Direction::Upstream, &mut client_read, &mut upstream_write),
        conn.pump(Direction::Downstream, &mut upstream_read, &mut client_write),
        conn.cut_timers(),
    );
    let verdict = conn.cut.get();
    finish(
        client_read.unsplit(client_write),
        Some(upstream_read.unsplit(upstream_write)),
        verdict,
    );
}

async fn connect<C: Connector>(connector: &C) -> std::io::Result<C::Stream> {
    connector.connect().await.inspect_err(|err| {
        tracing::warn!(%err, "upstream connect failed; closing the client connection");
    })
}

/// One faulted connection: the plan, the faults it rolled, and its cut.
struct Conn<'a> {
    /// The run's fault plan (windows, RNG, counters).
    plan: &'a FaultPlan,
    /// The faults this connection rolled; rolled again (new or edited
    /// faults only) when the plan's list is replaced.
    rolls: Mutex<Arc<ConnectionRolls>>,
    /// The shared end of the connection.
    cut: CutSignal,
    /// When the connection was accepted (for `after` cuts).
    opened: Instant,
    /// The proxy's byte counters.
    traffic: &'a Traffic,
    /// Per [`Direction`]: already ended before the pumps started.
    closed: [bool; 2],
    /// Pumps still running; the cut timers stop when both are done.
    pumps_left: AtomicU8,
}

/// What a pump does with one chunk, decided by the active faults.
#[derive(Debug, Default)]
struct ChunkPlan {
    /// Hold the chunk until this instant (latency).
    release_at: Option<Instant>,
    /// Forward only this many bytes, then end the connection this way.
    truncate: Option<(usize, Verdict)>,
    /// Swallow the chunk, and the stream from here on: the fault that says
    /// so and how the hold ends.
    hold: Option<(Hit, Hold)>,
    /// Bytes per second (bandwidth).
    rate: Option<f64>,
    /// Slicer parameters: (fault, average, variation, pause).
    slicer: Option<(Hit, usize, usize, Duration)>,
}

impl Conn<'_> {
    /// This connection's rolls against the current list (one atomic load
    /// when the list did not change).
    fn rolls(&self) -> Arc<ConnectionRolls> {
        let mut rolls = self.rolls.lock().unwrap_or_else(|e| e.into_inner());
        if rolls.version() != self.plan.version() {
            *rolls = Arc::new(self.plan.roll_connection(Some(&rolls)));
        }
        rolls.clone()
    }

    /// Faults of this connection active now that act in `dir`.
    fn active(&self, dir: Direction) -> Vec<Hit> {
        self.rolls()
            .hits()
            .filter(|h| acts_in(&h.fault().kind, dir) && self.plan.hit_active(h))
            .collect()
    }

    /// Decides what happens to a chunk of `len` bytes that arrived at
    /// `arrival`, after what was `sent` this way before it.
    fn plan_chunk(
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
                    let at = arrival + self.plan.hit_delay(&hit, l);
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
                            if sent.total + len as u64 >= limit.0 {
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
                    if counted + len as u64 >= l.bytes.0 {
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

    /// Carries one direction until EOF, a cut, or a fault that ends it.
    async fn pump<R, W>(&self, dir: Direction, reader: &mut R, writer: &mut W)
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
        let (tx, mut rx) = mpsc::channel::<(Instant, Bytes)>(QUEUED_CHUNKS);
        let read_failed = AtomicBool::new(false);
        let ingress = async {
            let mut buf = BytesMut::with_capacity(CHUNK);
            loop {
                buf.reserve(CHUNK);
                match reader.read_buf(&mut buf).await {
                    Ok(0) => break,
                    Ok(n) => {
                        self.traffic.add_received(dir, n);
                        let chunk = buf.split().freeze();
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
        };
        let egress = async {
            let mut sent = Sent::default();
            let mut hold: Option<Hold> = None;
            let mut changes = self.plan.subscribe();
            let mut pace = Pace::default();
            loop {
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
                let next = tokio::select! {
                    biased;
                    verdict = deadline => return Some(verdict),
                    _ = removed => return Some(Verdict::Close),
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
                sent.total += len;
                if let Some((_, verdict)) = chunk.truncate {
                    let _ = writer.flush().await;
                    return Some(verdict);
                }
                if !ok {
                    return Some(Verdict::ABORTED);
                }
            }
        };
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

    fn record_kind(&self, dir: Direction, pick: impl Fn(&FaultKind) -> bool) {
        for hit in self.active(dir).iter().filter(|h| pick(&h.fault().kind)) {
            self.plan.record_hit(hit, "connection");
        }
    }

    /// Fires `reset`/`close` faults that cut `after` a delay (from the
    /// connection's start; a `timeout`'s from when it began acting);
    /// re-armed when the fault list changes; done when both pumps are.
    async fn cut_timers(&self) {
        let mut changes = self.plan.subscribe();
        loop {
            let rolls = self.rolls();
            let mut earliest: Option<(Hit, Instant)> = None;
            for hit in rolls.hits() {
                let from = match &hit.fault().kind {
                    // reset_peer's timer starts at its stream's first data.
                    FaultKind::Reset(c) if c.stream.is_some() => continue,
                    // timeout's, when the toxic began acting (Toxiproxy
                    // starts its Pipe with the link, or when it is added).
                    FaultKind::Close(c) if c.stream.is_some() => rolls.since(&hit),
                    _ => self.opened,
                };
                if let FaultKind::Reset(c) | FaultKind::Close(c) = &hit.fault().kind
                    && let Some(after) = c.after
                {
                    let at = from + after.get();
                    if earliest.as_ref().is_none_or(|(_, e)| at < *e) {
                        earliest = Some((hit, at));
                    }
                }
            }
            let timer = async {
                match &earliest {
                    Some((_, at)) => clock::sleep_until(*at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                _ = self.cut.cancelled() => return,
                _ = self.pumps_done() => return,
                _ = timer => {
                    if let Some((hit, _)) = earliest
                        && self.plan.hit_active(&hit)
                    {
                        self.plan.record_hit(&hit, "connection");
                        self.cut.cut(Verdict::of(&hit.fault().kind));
                    }
                    return;
                }
                _ = changes.changed() => {}
            }
        }
    }

    /// Resolves once both pumps have returned.
    async fn pumps_done(&self) {
        loop {
            let notified = self.cut.notify.notified();
            if self.pumps_left.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}

/// Whether a fault kind acts on data flowing in `dir`.
fn acts_in(kind: &FaultKind, dir: Direction) -> bool {
    match kind {
        FaultKind::Latency(l) => l.direction == dir,
        FaultKind::Bandwidth(b) => b.direction == dir,
        FaultKind::SlowClose(s) => s.direction == dir,
        FaultKind::Slicer(s) => s.0.direction == dir,
        FaultKind::LimitData(l) => l.direction == dir,
        // A stream-bound cut acts on its stream; truncation counts response
        // bytes; a cut before any byte acts on whichever side speaks first.
        FaultKind::Reset(c) | FaultKind::Close(c) => match c.stream {
            Some(stream) => stream == dir,
            None => c.after_bytes.is_none() || dir == Direction::Downstream,
        },
        FaultKind::Blackhole => true,
        FaultKind::Status(_) | FaultKind::Refuse | FaultKind::Replay(_) => false,
    }
}
