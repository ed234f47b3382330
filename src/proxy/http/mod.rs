//! HTTP mode: a reverse proxy on hyper that applies faults per request
//! (latency before the request or the response, status injection, reset,
//! close, truncated bodies, blackhole, bandwidth, a graceful GOAWAY) and
//! otherwise streams requests and responses through untouched, keeping
//! connections alive.
//! Every request is logged with the proxy's [`Recorder`] and every byte on
//! either side counted in its [`Traffic`].

pub mod body;
mod decide;
mod io;

use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use http::{HeaderValue, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};

use self::body::{PerMessage, Throttled, Truncated};
use self::io::{CountedIo, ResettableIo};
use super::record::Recorder;
use super::telemetry::Telemetry;
use super::traffic::Traffic;
use crate::clock;
use crate::fault::{Direction, FaultPlan, Hit};
use crate::http::endpoint::Rewrite;
use crate::http::headers::ERROR_HEADER;
use crate::http::local::Local;
use crate::http::{BoxBody, BoxError, ShutdownSignal, boxed, full};
use crate::net::{Connector, Transport};

/// Header on every response a fault made up (injected status), naming the
/// fault.
pub use crate::http::headers::FAULT_HEADER;

/// One client connection's state, shared by its requests.
struct Conn<C: Connector> {
    /// Opens upstream connections.
    connector: Arc<C>,
    /// What changes in each request forwarded upstream (a real service's
    /// path prefix and `Host`).
    rewrite: Arc<Rewrite>,
    /// The run's fault plan.
    plan: Arc<FaultPlan>,
    /// The proxy's byte counters (upstream connections count into them).
    traffic: Arc<Traffic>,
    /// Logs every request.
    recorder: Recorder,
    /// The upstream connection this client connection uses (HTTP/1: one
    /// request at a time, so one upstream connection suffices; HTTP/2:
    /// the client's streams share it).
    upstream: std::sync::Mutex<Option<Sender>>,
    /// Set to make the client connection close with RST.
    reset: Arc<AtomicBool>,
    /// Fired to end the client connection gracefully (a `goaway` fault).
    goaway: tokio::sync::watch::Sender<bool>,
    /// Runs futures in the client connection's task: its HTTP/2 streams
    /// and an HTTP/2 upstream connection.
    local: Local,
}

/// Handles one client connection in HTTP mode, counting and recording in
/// `telemetry`.
pub async fn handle<S, C>(
    client: S,
    connector: Arc<C>,
    rewrite: Arc<Rewrite>,
    plan: Arc<FaultPlan>,
    fin: crate::http::ClientFin,
    shutdown: ShutdownSignal,
    telemetry: Telemetry,
) where
    S: Transport,
    C: Connector,
{
    let Telemetry { traffic, recorder } = telemetry;
    let reset = Arc::new(AtomicBool::new(false));
    let fin = fin.on(&client);
    let io = ResettableIo::new(CountedIo::client(client, traffic.clone()), reset.clone());
    // A `goaway` ends this connection as the proxy's stop ends them all; a
    // tunnel after a 101 ends with the proxy only.
    let (goaway, connection_shutdown) = shutdown.or_local();
    let local = Local::new();
    let conn = Arc::new(Conn {
        connector,
        rewrite,
        plan,
        traffic,
        recorder,
        upstream: std::sync::Mutex::new(None),
        reset,
        goaway,
        local: local.clone(),
    });
    let tunnel_shutdown = shutdown.clone();
    let service = hyper::service::service_fn(move |mut req| {
        let conn = conn.clone();
        let shutdown = tunnel_shutdown.clone();
        async move {
            let client = hyper::upgrade::on(&mut req);
            // Boxed: the forwarding future is about 5 KB, and hyper moves
            // the service's future (into an HTTP/2 stream's task, into an
            // HTTP/1 connection's state); a box is 8 bytes to move.
            let mut response = Box::pin(conn.forward(req)).await?;
            crate::http::upgrade::tunnel(client, &mut response, shutdown);
            Ok::<_, body::Cut>(response)
        }
    });
    crate::http::serve_http(
        local,
        io,
        service,
        // With a hang-up, a client that leaves (a blackholed request it
        // gave up on) ends its request, so that the request is recorded.
        fin,
        connection_shutdown,
    )
    .await;
}

impl<C: Connector> Conn<C> {
    /// Forwards one request as its faults decide: answered or cut by a
    /// fault, or sent upstream (late, paced) with its response delayed,
    /// truncated or paced.
    ///
    /// A gRPC call's `grpc-timeout` is honoured as its server would: when
    /// the answer's head is not there by the caller's deadline (a latency
    /// fault, a blackhole, a slow upstream), the proxy fails the call with
    /// DEADLINE_EXCEEDED itself, marked `x-firedrill-error: grpc-deadline`.
    async fn forward(&self, req: Request<Incoming>) -> Result<Response<BoxBody>, body::Cut> {
        let arrival = clock::now();
        // Logs the request on every path: answered, cut, or dropped.
        let mut log = self.recorder.begin(&req, arrival);
        let deadline = crate::http::grpc::deadline_of(req.headers());
        let exchange = self.exchange(req, arrival, &mut log);
        let answered = match deadline {
            Some(d) => match tokio::time::timeout(d, exchange).await {
                Ok(answered) => answered,
                Err(_) => Ok(deadline_exceeded()),
            },
            None => exchange.await,
        };
        answered.map(|resp| log.answered(resp))
    }

    /// The exchange of [`Conn::forward`], its answer not yet logged.
    async fn exchange(
        &self,
        req: Request<Incoming>,
        arrival: clock::Instant,
        log: &mut crate::proxy::record::RequestLog<'_>,
    ) -> Result<Response<BoxBody>, body::Cut> {
        let request_id = self.plan.note_arrival(req.uri().path(), req.headers());
        log.belongs_to(request_id);
        let hits = self
            .plan
            .pick_request(req.method(), req.uri().path(), req.headers());
        let decision = match self.decide(&hits, &req, arrival, log).await {
            ControlFlow::Continue(decision) => decision,
            ControlFlow::Break(answered) => return answered,
        };
        if let Some(at) = decision.request_at {
            clock::sleep_until_precise(at).await;
        }
        if let Some(refused) = self.grpc_refused(&req) {
            return Ok(refused);
        }
        let bodiless = hyper::body::Body::is_end_stream(req.body());
        let [per_message_up, per_message_down] = decision.per_message;
        let req = req.map(|b| {
            let mut body = boxed(b);
            if let Some(delay) = per_message_up {
                body = PerMessage::new(body, delay).boxed_unsync();
            }
            if let Some(rate) = decision.rate[Direction::Upstream as usize] {
                body = Throttled::new(body, rate).boxed_unsync();
            }
            log.forward_body(body)
        });
        let response = match self.send(req, bodiless, &mut log.reached_upstream).await {
            Ok(r) => r,
            Err(err) => return Ok(gateway_error(&err)),
        };
        let response_arrival = clock::now();
        if let Some(delay) = decision.response_delay {
            clock::sleep_until_precise(response_arrival + delay).await;
        }
        Ok(response.map(|b| {
            let mut body = boxed(b);
            if let Some(delay) = per_message_down {
                body = PerMessage::new(body, delay).boxed_unsync();
            }
            if let Some((limit, reset, code)) = decision.truncate {
                let reset = reset.then(|| self.reset.clone());
                body = Truncated::new(body, limit, reset, code).boxed_unsync();
            }
            if let Some(rate) = decision.rate[Direction::Downstream as usize] {
                body = Throttled::new(body, rate).boxed_unsync();
            }
            body
        }))
    }

    /// A gRPC call towards an upstream given as HTTP/1.1 only (`http://`):
    /// gRPC needs HTTP/2, so rather than a bare 502 the proxy answers
    /// UNAVAILABLE with the reason and the fix, marked
    /// `x-firedrill-error: grpc-needs-http2`, and logs it.
    fn grpc_refused<B>(&self, req: &Request<B>) -> Option<Response<BoxBody>> {
        if !crate::http::grpc::is_grpc(req.headers()) || !self.rewrite.http1_only() {
            return None;
        }
        let why = "a gRPC call needs HTTP/2 and the upstream was given as HTTP/1.1 (http://): give it as h2c://HOST:PORT, or as HOST:PORT to send gRPC calls over HTTP/2";
        tracing::warn!(path = %req.uri().path(), "{why}");
        let status = "UNAVAILABLE".parse().expect("a gRPC status name");
        let mut resp = crate::http::grpc::failed_call(status, &format!("firedrill: {why}"));
        resp.headers_mut()
            .insert(ERROR_HEADER, HeaderValue::from_static("grpc-needs-http2"));
        Some(resp)
    }

    /// Sends a request on this connection's upstream connection, opening
    /// one when there is none or the last one closed. When the kept-alive
    /// connection closed under the request before any of it was written
    /// (the keep-alive race), hyper hands the request back and it is sent
    /// once more on a fresh connection. When the close came after the
    /// request was written and before any answer (the upstream dropped an
    /// idle connection as the request crossed), a request that is safe to
    /// repeat (an idempotent method, no body) is sent once more on a fresh
    /// connection, as nginx and haproxy do; only its head is copied, and
    /// only when it goes out on a reused connection.
    ///
    /// HTTP/1 serves one request at a time per client connection, so the
    /// sender is taken out of its slot for the call and put back after; a
    /// call abandoned half-way (the client hung up) drops it with its
    /// connection, and the next request opens a fresh one.
    ///
    /// `reached` is set while the request is in the upstream connection's
    /// hands (it stays set when the call is abandoned there).
    async fn send(
        &self,
        req: Request<BoxBody>,
        bodiless: bool,
        reached: &mut bool,
    ) -> Result<Response<Incoming>, BoxError> {
        let slot = || self.upstream.lock().unwrap_or_else(|e| e.into_inner());
        let http2 = self.rewrite.http2_for(req.headers());
        let mut upstream = {
            let mut slot = slot();
            match slot.as_ref() {
                // HTTP/2: every stream of the client's shares it.
                Some(Sender::H2(s)) if !s.is_closed() => Some(Sender::H2(s.clone())),
                // An HTTP/1.1 connection cannot carry a call that goes
                // over HTTP/2: a fresh one is opened.
                Some(Sender::H1(_)) if http2 => None,
                _ => slot.take(),
            }
        };
        let reused = upstream.as_ref().is_some_and(|s| !s.is_closed());
        let repeat = (reused && bodiless && req.method().is_idempotent()).then(|| head_of(&req));
        let result = match self.send_on(&mut upstream, req, reached, http2).await {
            Ok(r) => Ok(r),
            Err(Unsent {
                request: Some(req), ..
            }) => {
                upstream = None;
                self.send_on(&mut upstream, req, reached, http2)
                    .await
                    .map_err(|u| u.error)
            }
            Err(unsent) => match repeat {
                Some(req) => {
                    tracing::debug!(error = %unsent.error, "kept-alive upstream connection closed under a request; sending it again");
                    upstream = None;
                    self.send_on(&mut upstream, req, reached, http2)
                        .await
                        .map_err(|u| u.error)
                }
                None => Err(unsent.error),
            },
        };
        *slot() = upstream;
        result
    }

    /// Sends `req` on the connection in `slot`, opening one (HTTP/2 from
    /// the first byte when `http2`) when there is none or it closed.
    async fn send_on(
        &self,
        slot: &mut Option<Sender>,
        req: Request<BoxBody>,
        reached: &mut bool,
        http2: bool,
    ) -> Result<Response<Incoming>, Unsent> {
        let failed = |error: BoxError| Unsent {
            request: None,
            error,
        };
        if slot.as_ref().is_none_or(Sender::is_closed) {
            let stream = self
                .connector
                .connect()
                .await
                .map_err(|e| failed(boxed_error(UpstreamError::Connect(e))))?;
            // HTTP/2 for an `h2c://` upstream (or a gRPC call towards one
            // whose version was not given), or an `https://` one whose ALPN
            // chose it.
            let http2 = http2 || stream.alpn_h2();
            let io = TokioIo::new(CountedIo::upstream(stream, self.traffic.clone()));
            let sender = if http2 {
                // Its streams are many at once, as the client's are: it runs
                // beside them in the client connection's task, and ends with
                // that connection (or when `sender` is dropped).
                let (sender, connection) =
                    hyper::client::conn::http2::Builder::new(self.local.clone())
                        .timer(TokioTimer::new())
                        .handshake(io)
                        .await
                        .map_err(|e| failed(boxed_error(e)))?;
                self.local.spawn(ended(connection));
                Sender::H2(sender)
            } else {
                let (sender, connection) = hyper::client::conn::http1::Builder::new()
                    .handshake(io)
                    .await
                    .map_err(|e| failed(boxed_error(e)))?;
                // An HTTP/1.1 upstream connection runs as a task of its own:
                // a request written by the client connection's task is sent
                // upstream when that task runs, after the other connections
                // ready at the same time, so one wake-up of the upstream
                // serves them all (on a busy core, writing each request at
                // once has the upstream preempt the proxy once per request).
                // Driving it in the client connection's task instead was
                // measured slower (BENCHMARKS.md, seventh round). It ends
                // when `sender` is dropped with the client connection (after
                // a 101, with the tunnel).
                tokio::spawn(ended(connection.with_upgrades()));
                Sender::H1(sender)
            };
            *slot = Some(sender);
        }
        let sender = slot.as_mut().expect("set above");
        let mut req = req;
        self.rewrite
            .prepare_for(&mut req, matches!(sender, Sender::H2(_)));
        if let Err(e) = sender.ready().await {
            return Err(Unsent {
                request: Some(req),
                error: boxed_error(e),
            });
        }
        *reached = true;
        sender.try_send(req).await.map_err(|(request, error)| {
            *reached = request.is_none();
            Unsent { request, error }
        })
    }
}

/// Runs an upstream connection until it ends.
async fn ended(connection: impl Future<Output = Result<(), hyper::Error>>) {
    if let Err(err) = connection.await {
        tracing::trace!(%err, "upstream connection ended with an error");
    }
}

/// An upstream connection's sending side, in the upstream's HTTP version.
enum Sender {
    /// HTTP/1.1: one request at a time.
    H1(hyper::client::conn::http1::SendRequest<BoxBody>),
    /// HTTP/2 (`h2c://`): many streams at once.
    H2(hyper::client::conn::http2::SendRequest<BoxBody>),
}

impl Sender {
    fn is_closed(&self) -> bool {
        match self {
            Sender::H1(s) => s.is_closed(),
            Sender::H2(s) => s.is_closed(),
        }
    }

    async fn ready(&mut self) -> Result<(), hyper::Error> {
        match self {
            Sender::H1(s) => s.ready().await,
            Sender::H2(s) => s.ready().await,
        }
    }

    /// Sends `req`; on failure, the error and the request when none of it
    /// was written.
    async fn try_send(
        &mut self,
        req: Request<BoxBody>,
    ) -> Result<Response<Incoming>, (Option<Request<BoxBody>>, BoxError)> {
        let sent = match self {
            Sender::H1(s) => s.try_send_request(req).await,
            Sender::H2(s) => s.try_send_request(req).await,
        };
        sent.map_err(|mut e| (e.take_message(), boxed_error(e.into_error())))
    }
}

/// A copy of a bodiless request's head, to send it again.
fn head_of(req: &Request<BoxBody>) -> Request<BoxBody> {
    let mut copy = Request::new(full(bytes::Bytes::new()));
    *copy.method_mut() = req.method().clone();
    *copy.uri_mut() = req.uri().clone();
    *copy.version_mut() = req.version();
    *copy.headers_mut() = req.headers().clone();
    copy
}

/// A send that failed, with the request back when none of it was written.
struct Unsent {
    /// The request, if the connection closed before it was sent.
    request: Option<Request<BoxBody>>,
    /// Why.
    error: BoxError,
}

/// An answer made by the proxy in the target's place, marked with the
/// fault that made it.
fn status_response(
    code: u16,
    body: &str,
    headers: &indexmap::IndexMap<String, String>,
    hit: &Hit,
) -> Response<BoxBody> {
    let mut resp = Response::new(full(body.to_string()));
    *resp.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    for (k, v) in headers {
        if let (Ok(k), Ok(v)) = (
            http::HeaderName::from_bytes(k.as_bytes()),
            HeaderValue::from_str(v),
        ) {
            resp.headers_mut().append(k, v);
        }
    }
    mark_fault(&mut resp, hit);
    resp
}

/// Marks `resp` as made by `hit`'s fault ([`FAULT_HEADER`]).
fn mark_fault(resp: &mut Response<BoxBody>, hit: &Hit) {
    if let Ok(v) = HeaderValue::from_str(&hit.fault().name) {
        resp.headers_mut().insert(FAULT_HEADER, v);
    }
}

fn boxed_error<E: std::error::Error + Send + Sync + 'static>(err: E) -> BoxError {
    Box::new(err)
}

/// Why the upstream could not be reached.
#[derive(Debug, thiserror::Error)]
enum UpstreamError {
    /// The TCP connect failed.
    #[error("upstream connect failed: {0}")]
    Connect(std::io::Error),
}

/// 502 for an upstream that failed, with the reason in [`ERROR_HEADER`]
/// (no fault decided it, so it carries no [`FAULT_HEADER`]).
fn gateway_error(err: &BoxError) -> Response<BoxBody> {
    let reason = if err.downcast_ref::<UpstreamError>().is_some() {
        "upstream-unreachable"
    } else {
        "upstream-error"
    };
    let mut resp = Response::new(full(format!("firedrill: {err}\n")));
    *resp.status_mut() = StatusCode::BAD_GATEWAY;
    resp.headers_mut()
        .insert(ERROR_HEADER, HeaderValue::from_static(reason));
    resp
}

/// A gRPC call failed at its caller's deadline (`grpc-timeout`), by the
/// proxy itself: DEADLINE_EXCEEDED, marked as the proxy's own answer.
fn deadline_exceeded() -> Response<BoxBody> {
    let status = "DEADLINE_EXCEEDED".parse().expect("a gRPC status name");
    let mut resp = crate::http::grpc::failed_call(status, "deadline exceeded (grpc-timeout)");
    resp.headers_mut()
        .insert(ERROR_HEADER, HeaderValue::from_static("grpc-deadline"));
    resp
}
