//! TCP mode: carries byte streams both ways and applies the connection
//! faults to them (latency per chunk, bandwidth, slicer, limit_data,
//! slow_close, reset, close, blackhole, and the control plane's
//! stream-bound `reset_peer` and `timeout`), as Toxiproxy's toxics do where
//! Toxiproxy has them.

use std::sync::atomic::AtomicU8;
use std::sync::{Arc, Mutex};

use super::traffic::Traffic;
use crate::clock::{self, Instant};
use crate::fault::{ConnectionRolls, Direction, FaultKind, FaultPlan, Hit};
use crate::http::ShutdownSignal;
use crate::net::{Connector, Transport};

mod chunk;
mod cut_timers;
mod hold;
mod pass;
mod pump;
mod sent;
mod slices;
mod verdict;

use self::pass::{PassThrough, pass_through};
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
        // Out of descriptors, every connection fails alike: one line
        // per interval.
        static FAILED: crate::throttle::Throttle = crate::throttle::Throttle::new();
        crate::warn_throttled!(FAILED, %err, "upstream connect failed; closing the client connection");
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

    /// Records a hit for each fault active in `dir` whose kind `pick`
    /// selects.
    fn record_kind(&self, dir: Direction, pick: impl Fn(&FaultKind) -> bool) {
        for hit in self.active(dir).iter().filter(|h| pick(&h.fault().kind)) {
            self.plan.record_hit(hit, "connection");
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
        FaultKind::Status(_)
        | FaultKind::Grpc(_)
        | FaultKind::Refuse
        | FaultKind::Replay(_)
        | FaultKind::GoAway => false,
    }
}
