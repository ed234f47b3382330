//! Recording every request of an HTTP-mode proxy: one [`Record`] per
//! request, handed to a [`RecordSink`] (a JSON-lines file for `firedrill
//! proxy --record`, a vector in tests), and the request counters behind
//! `firedrill_proxy_http_requests_total` ([`RequestCounters`]).
//!
//! A [`Recorder`] that is off costs one branch per request; one that only
//! counts costs a relaxed atomic add (plus a short read lock when a fault
//! decided the answer) and allocates nothing; a sink adds the record
//! itself. Times come from the tokio clock, so records are exact under a
//! paused clock.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::{Method, Request, Response};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;

pub use super::record_id::Carried;
use super::record_id::carried;
use super::requests::RequestCounters;
use crate::clock::{self, Duration, Instant};
use crate::fault::Hit;
use crate::http::body::{BoxBody, BoxError};
use crate::http::grpc;
pub use sink::{Collected, JsonLines, RecordSink, Spilled, flush_every};

/// One request through an HTTP-mode proxy, as `--record` writes it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Record {
    /// When the request arrived, milliseconds since the proxy's start
    /// (microsecond precision).
    pub at_ms: f64,
    /// The proxy's name (`firedrill proxy`: `--name`, else the listen
    /// address; `firedrill server`: the API name).
    #[serde(serialize_with = "as_str", deserialize_with = "arc_str")]
    pub proxy: Arc<str>,
    /// The request method.
    #[serde(serialize_with = "as_str", deserialize_with = "method")]
    pub method: Method,
    /// The request came over HTTP/2 (written only then: `"http2": true`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub http2: bool,
    /// The request path with its query.
    pub path: String,
    /// The load request it belongs to: its `x-firedrill-request-id`
    /// header, or (an experiment's dependency proxy) the correlation header
    /// the service passed on, read with the run's seed. Written as a
    /// decimal string, as the header carries it.
    #[serde(default, with = "super::record_id::decimal")]
    pub request_id: Option<u64>,
    /// An agent's proxy (`firedrill server`), which knows no run's seed:
    /// the correlation header the request carried, as it came, for the
    /// drill on another host to read. Kept apart from `request_id` so that
    /// nobody has to guess which form a value is in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carried: Option<Carried>,
    /// The status returned to the client; `None` when the connection was
    /// cut, reset or blackholed and no response head was sent.
    pub status: Option<u16>,
    /// The fault that decided the answer: one that answered or cut it
    /// (status, reset, close, blackhole), else the first that shaped it
    /// (latency, bandwidth); `None` when no fault hit the request.
    pub fault: Option<String>,
    /// From arrival to the response head handed to the client connection,
    /// milliseconds; `None` without a response.
    pub latency_ms: Option<f64>,
    /// Without a response: from arrival until the proxy let the request go,
    /// milliseconds: its client closed the connection (a service that gave
    /// up on a blackholed call), a fault cut it, or the proxy stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_after_ms: Option<f64>,
    /// Request body bytes read by the proxy and forwarded to the upstream
    /// (0 when a fault answered without reading the body).
    pub bytes_in: u64,
    /// Response body bytes passed to the client, counted as they stream.
    pub bytes_out: u64,
    /// Whether the request was forwarded to the upstream.
    pub reached_upstream: bool,
    /// A gRPC answer's `grpc-status` (0 is OK), from its head or its
    /// trailers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_status: Option<u8>,
}

impl Record {
    /// The load request an agent's record belongs to: the id firedrill's
    /// own header carried, else the correlation header the service passed
    /// on, read with the run's seed. Each is read in its own form only.
    pub fn load_request(
        &self,
        correlation: Option<&crate::http::headers::Correlation>,
    ) -> Option<u64> {
        self.request_id
            .or_else(|| correlation?.parse(&self.carried.as_ref()?.value))
    }
}

fn as_str<S: serde::Serializer, T: AsRef<str>>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(value.as_ref())
}

fn arc_str<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Arc<str>, D::Error> {
    <String as serde::Deserialize>::deserialize(d).map(Arc::from)
}

fn method<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Method, D::Error> {
    let text = <String as serde::Deserialize>::deserialize(d)?;
    Method::from_bytes(text.as_bytes()).map_err(serde::de::Error::custom)
}

/// Milliseconds with microsecond precision (three decimals).
fn millis(d: Duration) -> f64 {
    d.as_micros() as f64 / 1000.0
}

/// What one proxy records and counts per request. Cheap to clone; the
/// default is off (the in-process proxies of an experiment).
#[derive(Debug, Clone, Default)]
pub struct Recorder(Option<Arc<Shared>>);

/// A recorder's state, shared by every connection of its proxy.
#[derive(Debug)]
struct Shared {
    /// Time zero of [`Record::at_ms`].
    start: Instant,
    /// Per status class and fault; holds the proxy's name.
    counters: Arc<RequestCounters>,
    /// Where records go; `None`: count only.
    sink: Option<Arc<dyn RecordSink>>,
    /// A request without `x-firedrill-request-id` is recorded with the
    /// raw value of its `x-request-id` or `traceparent` (an agent's proxy:
    /// the drill on another host reads the load's id from it).
    raw_correlation: bool,
}

impl Recorder {
    /// Counts the requests of the proxy named `name`, and hands a record
    /// of each to `sink` when one is given; `at_ms` counts from `start`.
    pub fn new(name: &str, start: Instant, sink: Option<Arc<dyn RecordSink>>) -> Recorder {
        Recorder(Some(Arc::new(Shared {
            start,
            counters: Arc::new(RequestCounters::new(name)),
            sink,
            raw_correlation: false,
        })))
    }

    /// As [`Recorder::new`], recording a request without
    /// `x-firedrill-request-id` with the raw value of its `x-request-id`
    /// or `traceparent`, for a drill on another host to read.
    pub fn with_raw_correlation(name: &str, start: Instant, sink: Arc<dyn RecordSink>) -> Recorder {
        Recorder(Some(Arc::new(Shared {
            start,
            counters: Arc::new(RequestCounters::new(name)),
            sink: Some(sink),
            raw_correlation: true,
        })))
    }

    /// The request counters, unless the recorder is off.
    pub fn counters(&self) -> Option<&Arc<RequestCounters>> {
        self.0.as_ref().map(|s| &s.counters)
    }

    /// Starts the log of a request that arrived at `arrival`.
    pub(crate) fn begin<B>(&self, req: &Request<B>, arrival: Instant) -> RequestLog<'_> {
        let shared = self.0.as_deref();
        let wanted = |s: &&Shared| s.sink.as_ref().is_some_and(|k| k.wanted());
        let record = shared.filter(wanted).map(|s| {
            let uri = req.uri();
            Box::new(Record {
                at_ms: millis(arrival.saturating_duration_since(s.start)),
                proxy: s.counters.proxy().clone(),
                method: req.method().clone(),
                http2: req.version() == http::Version::HTTP_2,
                path: uri
                    .path_and_query()
                    .map_or_else(|| uri.path(), |p| p.as_str())
                    .to_string(),
                request_id: crate::http::headers::load_request_id(req.headers()),
                carried: s.raw_correlation.then(|| carried(req.headers())).flatten(),
                status: None,
                fault: None,
                latency_ms: None,
                closed_after_ms: None,
                bytes_in: 0,
                bytes_out: 0,
                reached_upstream: false,
                grpc_status: None,
            })
        });
        RequestLog {
            shared,
            arrival,
            fault: None,
            reached_upstream: false,
            record,
            bytes_in: None,
            grpc_deadline: grpc::deadline_of(req.headers()).map(|d| arrival + d),
            done: false,
        }
    }
}

/// One request's log while the proxy decides its answer. Dropped without
/// an answer (a cut, a reset, a blackhole the client gave up on), it logs
/// the request with no status.
pub(crate) struct RequestLog<'a> {
    /// The recorder's state; `None` when it is off.
    shared: Option<&'a Shared>,
    /// When the request arrived.
    arrival: Instant,
    /// The fault that decided the answer so far.
    fault: Option<Hit>,
    /// Set while the request is handed to the upstream connection.
    pub(crate) reached_upstream: bool,
    /// With a sink: the record, its request fields filled at arrival.
    record: Option<Box<Record>>,
    /// With a sink and a forwarded body: the body bytes read so far.
    bytes_in: Option<Arc<AtomicU64>>,
    /// A gRPC call's deadline (`grpc-timeout` from its arrival): a client
    /// that leaves at it saw DEADLINE_EXCEEDED.
    grpc_deadline: Option<Instant>,
    /// The answer (or its absence) was logged.
    done: bool,
}

impl RequestLog<'_> {
    /// The load request the plan found in the request's headers, when the
    /// record has none of its own.
    pub(crate) fn belongs_to(&mut self, request_id: Option<u64>) {
        if let (Some(record), Some(id)) = (self.record.as_mut(), request_id)
            && record.request_id.is_none()
        {
            record.request_id = Some(id);
        }
    }

    /// Notes a fault that answered or cuts the response: it decides.
    pub(crate) fn decided_by(&mut self, hit: &Hit) {
        if self.shared.is_some() {
            self.fault = Some(hit.clone());
        }
    }

    /// Notes a fault that shapes the response (latency, bandwidth): it
    /// decides unless another did first.
    pub(crate) fn shaped_by(&mut self, hit: &Hit) {
        if self.shared.is_some() && self.fault.is_none() {
            self.fault = Some(hit.clone());
        }
    }

    /// The request body to forward: counted when recording.
    pub(crate) fn forward_body(&mut self, body: BoxBody) -> BoxBody {
        if self.record.is_none() {
            return body;
        }
        let count = Arc::new(AtomicU64::new(0));
        self.bytes_in = Some(count.clone());
        Tapped {
            inner: body,
            tap: count,
        }
        .boxed_unsync()
    }

    /// Logs the response head going to the client; when recording, the
    /// record is written once its body has passed. A gRPC answer's status is counted (and recorded) from its head, or
    /// from its trailers as they pass.
    pub(crate) fn answered(mut self, resp: Response<BoxBody>) -> Response<BoxBody> {
        let grpc = grpc::is_grpc(resp.headers());
        let head_status = grpc::status_of(resp.headers(), None);
        if let (Some(shared), Some(code)) = (self.shared, head_status) {
            shared.counters.count_grpc(code);
        }
        // Only a gRPC answer still to end in trailers is watched (no
        // counter handle taken for any other).
        let watch = self
            .shared
            .filter(|_| grpc && head_status.is_none())
            .map(|s| s.counters.clone());
        let mut pending = self.finish(Some(resp.status().as_u16()));
        if let Some(record) = pending.as_mut().and_then(|p| p.record.as_mut()) {
            record.grpc_status = head_status;
        }
        match (watch, pending) {
            (Some(counters), pending) => tapped(resp, GrpcTrailers { counters, pending }),
            (None, Some(pending)) => tapped(resp, pending),
            (None, None) => resp,
        }
    }

    /// Counts the outcome; when recording, returns the completed record,
    /// still to be written.
    fn finish(&mut self, status: Option<u16>) -> Option<Pending> {
        self.done = true;
        let shared = self.shared?;
        let fault = self.fault.as_ref().map(|h| h.fault().name.as_str());
        shared.counters.count(status, fault);
        let mut record = self.record.take()?;
        record.status = status;
        record.fault = fault.map(str::to_string);
        let took = millis(clock::now() - self.arrival);
        record.latency_ms = status.map(|_| took);
        record.closed_after_ms = status.is_none().then_some(took);
        record.reached_upstream = self.reached_upstream;
        Some(Pending {
            record: Some(record),
            bytes_in: self.bytes_in.take(),
            sink: shared.sink.clone()?,
        })
    }
}

impl Drop for RequestLog<'_> {
    /// No answer was sent: the request is logged with no status (the
    /// record, if any, is written as the [`Pending`] drops). A gRPC call
    /// its client left at its deadline is logged with the status the
    /// client saw, DEADLINE_EXCEEDED, written before the log is gone.
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let timed_out = self.left_at_deadline(clock::now());
        let mut pending = self.finish(None);
        if let Some(code) = timed_out {
            if let Some(shared) = self.shared {
                shared.counters.count_grpc(code);
            }
            if let Some(record) = pending.as_mut().and_then(|p| p.record.as_mut()) {
                record.grpc_status = Some(code);
            }
        }
    }
}

impl RequestLog<'_> {
    /// DEADLINE_EXCEEDED's code when a gRPC call with a deadline is left by
    /// its client `at` its deadline. The client measured `grpc-timeout`
    /// when it sent the call, before the call arrived here, so its
    /// deadline comes a little before the one counted from the arrival:
    /// the client's cancel crosses the proxy's own DEADLINE_EXCEEDED, and
    /// either may come first; on a busy machine the call reaches the proxy
    /// late (a run of 20 beside a build saw one more than 50 ms late). A
    /// client that leaves within [`LEAVING`] of its deadline (within its
    /// second half, for a deadline shorter than twice that) or after it is
    /// taken to have left at it; one that leaves earlier cancelled its
    /// call (no status).
    fn left_at_deadline(&self, at: Instant) -> Option<u8> {
        let deadline = self.grpc_deadline?;
        let timeout = deadline.saturating_duration_since(self.arrival);
        let slack = LEAVING.min(timeout / 2);
        (at + slack >= deadline).then_some(DEADLINE_EXCEEDED)
    }
}

/// How long before its deadline, counted from the call's arrival, a
/// client's leaving is taken for its deadline.
const LEAVING: Duration = Duration::from_secs(1);

/// DEADLINE_EXCEEDED's gRPC code.
const DEADLINE_EXCEEDED: u8 = 4;

/// A record waiting for its response body; written when the body ends or
/// is dropped, whichever comes first.
struct Pending {
    /// The record; `None` once written.
    record: Option<Box<Record>>,
    /// The request body's byte count, when it was forwarded.
    bytes_in: Option<Arc<AtomicU64>>,
    /// Where it goes.
    sink: Arc<dyn RecordSink>,
}

impl Pending {
    fn write(&mut self) {
        if let Some(mut record) = self.record.take() {
            if let Some(n) = &self.bytes_in {
                record.bytes_in = n.load(Ordering::Relaxed);
            }
            self.sink.record(&record);
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.write();
    }
}

/// The data bytes of `frame` (0 for trailers).
fn data_len(frame: &Frame<Bytes>) -> u64 {
    frame.data_ref().map_or(0, |d| d.len() as u64)
}

/// What a [`Tapped`] body does with each frame it passes on (`None`: the
/// body ended).
trait Tap {
    fn frame(&mut self, frame: Option<&Result<Frame<Bytes>, BoxError>>);
}

/// A request body's bytes, counted as they are read.
impl Tap for Arc<AtomicU64> {
    fn frame(&mut self, frame: Option<&Result<Frame<Bytes>, BoxError>>) {
        if let Some(Ok(f)) = frame {
            self.fetch_add(data_len(f), Ordering::Relaxed);
        }
    }
}

/// A response body's bytes, counted into its record, which is written when
/// the body ends or fails (or, failing that, when it is dropped).
impl Tap for Pending {
    fn frame(&mut self, frame: Option<&Result<Frame<Bytes>, BoxError>>) {
        match frame {
            Some(Ok(f)) => {
                if let Some(record) = &mut self.record {
                    record.bytes_out += data_len(f);
                }
            }
            Some(Err(_)) | None => self.write(),
        }
    }
}

/// A gRPC answer whose status comes in its trailers: counted, and put in
/// its record (if any), as they pass.
struct GrpcTrailers {
    counters: Arc<RequestCounters>,
    pending: Option<Pending>,
}

impl Tap for GrpcTrailers {
    fn frame(&mut self, frame: Option<&Result<Frame<Bytes>, BoxError>>) {
        let trailers = frame
            .and_then(|f| f.as_ref().ok())
            .and_then(Frame::trailers_ref);
        if let Some(code) = trailers.and_then(grpc::status_in) {
            self.counters.count_grpc(code);
            if let Some(record) = self.pending.as_mut().and_then(|p| p.record.as_mut()) {
                record.grpc_status = Some(code);
            }
        }
        if let Some(pending) = &mut self.pending {
            pending.frame(frame);
        }
    }
}

/// `resp` with its body's frames shown to `tap`.
fn tapped<T: Tap + Send + 'static>(resp: Response<BoxBody>, tap: T) -> Response<BoxBody> {
    resp.map(|inner| Tapped { inner, tap }.boxed_unsync())
}

pin_project_lite::pin_project! {
    /// A body passed through unchanged, each frame shown to its tap.
    struct Tapped<T> {
        #[pin]
        inner: BoxBody,
        tap: T,
    }
}

impl<T: Tap> Body for Tapped<T> {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.project();
        let frame = ready!(this.inner.poll_frame(cx));
        this.tap.frame(frame.as_ref());
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

mod sink;

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
