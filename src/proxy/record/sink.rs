//! Where finished records go: a JSON-lines file (`firedrill proxy
//! --record`), flushed at least once a second, or a spill on disk (an
//! experiment's dependency proxies).

use std::io::Write;
use std::sync::{Arc, Mutex};

use http::Method;

use super::{Carried, Duration, Record};
use crate::spill::Spill;

/// Where finished records go.
pub trait RecordSink: Send + Sync + std::fmt::Debug {
    /// Takes one finished request. Called on the proxy's connection tasks:
    /// buffer, do not wait on I/O.
    fn record(&self, record: &Record);

    /// Whether records are wanted now; while not, the proxy builds none.
    /// Checked at each request's arrival, so keep it to an atomic load.
    fn wanted(&self) -> bool {
        true
    }
}

/// Writes each record as one JSON line into a buffer, which reaches the
/// file on [`JsonLines::flush`] (call it at least once a second, see
/// [`flush_every`], and at shutdown) or when the buffer fills.
#[derive(Debug)]
pub struct JsonLines<W: Write + Send = std::fs::File> {
    /// The buffered output.
    out: Mutex<std::io::BufWriter<W>>,
}

impl JsonLines<std::fs::File> {
    /// Creates (or truncates) `path`.
    pub fn create(path: &std::path::Path) -> std::io::Result<Self> {
        Ok(JsonLines::new(std::fs::File::create(path)?))
    }
}

impl<W: Write + Send> JsonLines<W> {
    /// Writes into `out`.
    pub fn new(out: W) -> Self {
        JsonLines {
            out: Mutex::new(std::io::BufWriter::with_capacity(64 * 1024, out)),
        }
    }

    /// Pushes the buffered lines to the writer.
    pub fn flush(&self) -> std::io::Result<()> {
        self.out.lock().unwrap_or_else(|e| e.into_inner()).flush()
    }

    /// The writer, flushed.
    pub fn into_inner(self) -> std::io::Result<W> {
        let out = self.out.into_inner().unwrap_or_else(|e| e.into_inner());
        out.into_inner().map_err(|e| e.into_error())
    }
}

impl<W: Write + Send + std::fmt::Debug> RecordSink for JsonLines<W> {
    fn record(&self, record: &Record) {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let written = serde_json::to_writer(&mut *out, record)
            .map_err(std::io::Error::from)
            .and_then(|()| out.write_all(b"\n"));
        if let Err(err) = written {
            tracing::warn!(%err, "cannot write a request record");
        }
    }
}

/// Flushes `sink` every `period` until the task is dropped or aborted.
pub async fn flush_every<W: Write + Send>(sink: Arc<JsonLines<W>>, period: Duration) {
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Err(err) = sink.flush() {
            tracing::warn!(%err, "cannot flush the request records");
        }
    }
}

/// Keeps every record (an experiment's dependency proxies) in a spill,
/// on disk rather than in memory while the run goes.
#[derive(Debug, Default)]
pub struct Collected(pub(super) Mutex<Spill<Spilled>>);

impl Collected {
    /// The records so far, in the order they finished (those that could
    /// be read back: see [`Collected::error`]).
    pub fn records(&self) -> Vec<Record> {
        let mut spill = self.0.lock().unwrap_or_else(|e| e.into_inner());
        spill.read().into_iter().map(Record::from).collect()
    }

    /// Every record so far, in the order they finished, as the spill holds
    /// them.
    pub fn each_spilled(&self, take: &mut dyn FnMut(Spilled)) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .read_each(take);
    }

    /// The first write or read of the spill that failed, if one did.
    pub fn error(&self) -> Option<std::io::Error> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).error()
    }
}

impl crate::spill::Replay<Record> for Collected {
    fn replay(&self, take: &mut dyn FnMut(Record)) {
        self.each_spilled(&mut |s| take(Record::from(s)));
    }
}

impl RecordSink for Collected {
    fn record(&self, record: &Record) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(&Spilled::from(record));
    }
}

/// A [`Record`] as [`Collected`] spills it: every field, the times as the
/// bits of their `f64` (exact through JSON).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Spilled {
    at_ms: u64,
    proxy: String,
    method: String,
    http2: bool,
    path: String,
    request_id: Option<u64>,
    carried: Option<Carried>,
    status: Option<u16>,
    fault: Option<String>,
    latency_ms: Option<u64>,
    closed_after_ms: Option<u64>,
    bytes_in: u64,
    bytes_out: u64,
    reached_upstream: bool,
    grpc_status: Option<u8>,
}

impl Spilled {
    /// When the call arrived, milliseconds since the start.
    pub fn at_ms(&self) -> f64 {
        f64::from_bits(self.at_ms)
    }
}

impl From<&Record> for Spilled {
    fn from(r: &Record) -> Spilled {
        Spilled {
            at_ms: r.at_ms.to_bits(),
            proxy: r.proxy.to_string(),
            method: r.method.to_string(),
            http2: r.http2,
            path: r.path.clone(),
            request_id: r.request_id,
            carried: r.carried.clone(),
            status: r.status,
            fault: r.fault.clone(),
            latency_ms: r.latency_ms.map(f64::to_bits),
            closed_after_ms: r.closed_after_ms.map(f64::to_bits),
            bytes_in: r.bytes_in,
            bytes_out: r.bytes_out,
            reached_upstream: r.reached_upstream,
            grpc_status: r.grpc_status,
        }
    }
}

impl From<Spilled> for Record {
    fn from(s: Spilled) -> Record {
        Record {
            at_ms: f64::from_bits(s.at_ms),
            proxy: Arc::from(s.proxy),
            // It was a method when it was spilled.
            method: Method::from_bytes(s.method.as_bytes()).unwrap_or_default(),
            http2: s.http2,
            path: s.path,
            request_id: s.request_id,
            carried: s.carried,
            status: s.status,
            fault: s.fault,
            latency_ms: s.latency_ms.map(f64::from_bits),
            closed_after_ms: s.closed_after_ms.map(f64::from_bits),
            bytes_in: s.bytes_in,
            bytes_out: s.bytes_out,
            reached_upstream: s.reached_upstream,
            grpc_status: s.grpc_status,
        }
    }
}
