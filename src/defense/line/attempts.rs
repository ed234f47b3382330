//! The attempt loop: the request sent once, or again on retry, each attempt
//! admitted by the route's breaker, sent to the dependency (or a pool
//! server) under the per-attempt timeout, and judged a success or a
//! failure the breaker records.

use std::sync::atomic::Ordering;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use rand::Rng;

use super::deferred::{Deferred, Verdict};
use super::{DefenseLine, Route};
use crate::clock::{self, Duration};
use crate::defense::breaker::{CallGuard, Classifier, FailureKind, Outcome, Rejected, State};
use crate::defense::config::{NextUpstream, RetryConfig};
use crate::defense::fallback::MAX_CACHED_BODY;
use crate::defense::pool::outlier::Answer;
use crate::defense::pool::{Lease, POOL_BACKUP_HEADER, POOL_SERVER_HEADER};
use crate::defense::report::{CallError, CallReport};
use crate::defense::retry;
use crate::http::body::{BoxBody, boxed, full};
use crate::http::client::Upstream;
use crate::http::grpc;

/// How the attempts ended.
pub(super) enum Failed {
    /// A response to pass on (success or ignored status).
    Answered(Response<BoxBody>),
    /// The breaker turned the call away.
    Rejected {
        /// The state that rejected.
        state: State,
        /// When a trial call will be let through.
        retry_after: Option<Duration>,
    },
    /// The last attempt got a failure status.
    Status(Response<BoxBody>),
    /// The last attempt timed out.
    Timeout,
    /// The outer deadline passed.
    Deadline,
    /// The last attempt could not connect.
    Connect,
    /// The last attempt's connection broke.
    Broken,
    /// Every server of the route's pool was out.
    NoServer,
}

/// The request body across attempts: a retried request is sent again, so
/// its body is kept (small bodies only); any other request streams its
/// body once.
enum AttemptBody {
    /// Kept whole, sent again on every attempt.
    Kept(Bytes),
    /// Streamed by the first attempt (then gone).
    Streaming(Option<BoxBody>),
}

impl AttemptBody {
    /// Keeps `body` when more attempts may follow and it is small, else
    /// streams it; `None` when reading a body to keep failed.
    async fn new(body: BoxBody, again: bool) -> Option<Self> {
        let small = http_body::Body::size_hint(&body)
            .upper()
            .is_some_and(|n| n <= MAX_CACHED_BODY as u64);
        if again && small {
            body.collect()
                .await
                .ok()
                .map(|b| AttemptBody::Kept(b.to_bytes()))
        } else {
            Some(AttemptBody::Streaming(Some(body)))
        }
    }

    /// How many attempts the body allows: `planned` when it is kept, one
    /// when it streams.
    fn max_attempts(&self, planned: u32) -> u32 {
        match self {
            AttemptBody::Kept(_) => planned,
            AttemptBody::Streaming(_) => 1,
        }
    }

    /// The body for the next attempt; `None` once a streamed one is gone.
    fn next(&mut self) -> Option<BoxBody> {
        match self {
            AttemptBody::Kept(bytes) => Some(full(bytes.clone())),
            AttemptBody::Streaming(body) => body.take(),
        }
    }
}

/// What one sent attempt came to.
enum Judged {
    /// A response the caller gets as it is, with the breaker's verdict.
    Good(Response<Incoming>, Outcome),
    /// A failure: the breaker's verdict, how the attempts end if it is the
    /// last, and the error it reports.
    Bad(Outcome, Failed, CallError),
}

impl DefenseLine {
    /// The attempt loop: retries, each through the breaker and the timeout.
    pub(super) async fn try_attempts(
        &self,
        route: &Route,
        req: Request<BoxBody>,
        key: &str,
        report: &mut CallReport,
    ) -> Failed {
        let (parts, body) = req.into_parts();
        let grpc = grpc::is_grpc(&parts.headers);
        let retry = route
            .retry
            .as_ref()
            .filter(|r| retry::may_retry(r, &parts.method, grpc));
        let planned = planned_attempts(route, retry);
        let Some(mut body) = AttemptBody::new(body, planned > 1).await else {
            return Failed::Broken;
        };
        let attempts = body.max_attempts(planned);
        let mut tried = Vec::new();
        let mut last = Failed::Broken;
        for attempt in 1..=attempts {
            if let (true, Some(retry)) = (attempt > 1, retry) {
                self.back_off(retry, attempt).await;
            }
            let guard = match self.admit(route, report) {
                Ok(guard) => guard,
                Err(rejected) => {
                    return Failed::Rejected {
                        state: rejected.state,
                        retry_after: rejected.retry_after,
                    };
                }
            };
            let Some(body) = body.next() else { return last };
            let request = Request::from_parts(parts.clone(), body);
            let Ok(lease) = pick_server(route, &tried) else {
                // Every server is out: the breaker counts it as an
                // unreachable upstream; the report says which it was.
                let connect = error_verdict(route, FailureKind::Connect);
                record(route, self, guard, connect, Duration::ZERO);
                report.error = Some(CallError::NoServer);
                report.served_by = None;
                last = Failed::NoServer;
                if route.next_upstream.is_some() {
                    return last; // NGINX: no live upstreams.
                }
                continue;
            };
            tried.extend(lease.as_ref().map(Lease::index));
            let upstream = lease
                .as_ref()
                .map_or(self.upstream.as_ref(), Lease::upstream);
            report.served_by = lease.as_ref().map(Lease::served_by);
            self.attempts.fetch_add(1, Ordering::Relaxed);
            report.attempts += 1;
            let sent = clock::now();
            let outcome = send(upstream, request, route.timeout).await;
            let took = clock::now() - sent;
            let judged = judge(route, outcome, lease.as_ref());
            let passes = route.next_upstream.as_ref().map(|n| {
                let more = attempt < attempts;
                passes_on(n, &judged, &parts.method, more)
            });
            if let Some(lease) = &lease {
                lease.record_answer(failed_attempt(&judged, passes), answer_of(&judged));
            }
            match (judged, passes) {
                (Judged::Good(resp, verdict), None | Some(Pass::Answer)) => {
                    report.error = None;
                    let pending = grpc && grpc::status_pending(&resp);
                    let verdict = self.record_or_defer(route, guard, verdict, took, sent, pending);
                    let mut resp = self.deliver(route, key, resp).await;
                    if let Some(verdict) = verdict {
                        resp = resp.map(|b| Deferred::new(b, verdict).boxed_unsync());
                    }
                    mark_server(&mut resp, lease.as_ref());
                    return Failed::Answered(resp);
                }
                (Judged::Good(_, verdict), Some(_)) => {
                    record(route, self, guard, verdict, took);
                }
                (Judged::Bad(verdict, failed, call_error), passes) => {
                    record(route, self, guard, verdict, took);
                    report.error = Some(call_error);
                    let unlisted = match (verdict, retry) {
                        (Outcome::Failure(kind), Some(retry)) if grpc => {
                            !retry::retries_grpc(retry, kind)
                        }
                        _ => false,
                    };
                    if passes == Some(Pass::Answer) || unlisted {
                        return failed;
                    }
                    last = failed;
                }
            }
        }
        last
    }

    /// Records a good attempt's verdict now; or, for a gRPC answer whose
    /// status is still to come in its trailers (`pending`), returns what
    /// records it at the body's end, `sent` starting its duration.
    fn record_or_defer(
        &self,
        route: &Route,
        guard: Option<CallGuard>,
        verdict: Outcome,
        took: Duration,
        sent: clock::Instant,
        pending: bool,
    ) -> Option<Verdict> {
        match (pending, guard, &route.breaker) {
            (true, Some(guard), Some(breaker)) => Some(Verdict {
                guard,
                breaker: breaker.clone(),
                stepped: route.breaker_stepped.clone(),
                observer: self.observer.clone(),
                sent,
            }),
            (_, guard, _) => {
                record(route, self, guard, verdict, took);
                None
            }
        }
    }

    /// Waits out the backoff before retry number `attempt`, its jitter
    /// drawn from the line's RNG.
    async fn back_off(&self, retry: &RetryConfig, attempt: u32) {
        let draw = self
            .rng
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .random::<f64>();
        clock::sleep(retry::backoff(retry, attempt, draw)).await;
    }

    /// Asks the route's breaker to let one attempt through (no breaker:
    /// through, unguarded), noting in the report the state the call first
    /// met; `Err` when it is turned away.
    fn admit(&self, route: &Route, report: &mut CallReport) -> Result<Option<CallGuard>, Rejected> {
        let Some(b) = &route.breaker else {
            return Ok(None);
        };
        let admitted = b.try_acquire(clock::now());
        route.stepped(self);
        match admitted {
            Ok(g) => {
                report
                    .breaker_state
                    .get_or_insert(g.admitted_in().unwrap_or(State::Closed));
                Ok(Some(g))
            }
            Err(rejected) => {
                report.breaker_state.get_or_insert(rejected.state);
                Err(rejected)
            }
        }
    }
}

/// Attempts in all: the retry's, or with `next_upstream` its tries (0: one
/// per server of the pool, as NGINX's `proxy_next_upstream_tries 0`).
fn planned_attempts(route: &Route, retry: Option<&RetryConfig>) -> u32 {
    match (&route.next_upstream, &route.pool) {
        (Some(next), Some(pool)) => {
            let servers = u32::try_from(pool.servers().len()).unwrap_or(u32::MAX);
            if next.tries == 0 {
                servers
            } else {
                next.tries.min(servers)
            }
        }
        _ => retry.map_or(1, |r| r.attempts),
    }
}

/// What `next_upstream` does with an attempt's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// Passed on to the next server.
    On,
    /// The caller's answer.
    Answer,
}

/// Whether `judged` is passed on (`ngx_http_upstream_next`,
/// `ngx_http_upstream_test_next`): a listed error, timeout or status,
/// while attempts remain (`more`), and for POST, PATCH and LOCK once
/// sent only with `non_idempotent`.
fn passes_on(next: &NextUpstream, judged: &Judged, method: &http::Method, more: bool) -> Pass {
    let idempotent = !matches!(method.as_str(), "POST" | "PATCH" | "LOCK");
    let (listed, sent) = match judged {
        Judged::Bad(_, Failed::Connect | Failed::NoServer, _) => (next.error, false),
        Judged::Bad(_, Failed::Broken, _) => (next.error, true),
        Judged::Bad(_, Failed::Timeout | Failed::Deadline, _) => (next.timeout, true),
        Judged::Bad(_, Failed::Status(resp) | Failed::Answered(resp), _) => {
            (next.statuses.contains(&resp.status().as_u16()), true)
        }
        Judged::Good(resp, _) => (next.statuses.contains(&resp.status().as_u16()), true),
        Judged::Bad(_, Failed::Rejected { .. }, _) => (false, true),
    };
    let allowed = !sent || idempotent || next.non_idempotent;
    if listed && more && allowed {
        Pass::On
    } else {
        Pass::Answer
    }
}

/// Whether the attempt counts against its server's `max_fails`: without
/// `next_upstream`, any failure; with it, as NGINX frees the peer: a
/// connection error or a timeout always, a status only when it was passed
/// on and is not a 403 or 404.
fn failed_attempt(judged: &Judged, passes: Option<Pass>) -> bool {
    let Some(pass) = passes else {
        return matches!(judged, Judged::Bad(..));
    };
    let status = match judged {
        Judged::Good(resp, _) => Some(resp.status().as_u16()),
        Judged::Bad(_, Failed::Status(resp) | Failed::Answered(resp), _) => {
            Some(resp.status().as_u16())
        }
        Judged::Bad(..) => None,
    };
    match status {
        None => true,
        Some(403 | 404) => false,
        Some(_) => pass == Pass::On,
    }
}

/// What the attempt came to, for the pool's outlier detection.
fn answer_of(judged: &Judged) -> Answer {
    match judged {
        Judged::Good(resp, _) => Answer::Status(resp.status().as_u16()),
        Judged::Bad(_, Failed::Status(resp) | Failed::Answered(resp), _) => {
            Answer::Status(resp.status().as_u16())
        }
        Judged::Bad(_, Failed::Connect | Failed::NoServer, _) => Answer::ConnectFailed,
        Judged::Bad(_, Failed::Timeout | Failed::Deadline, _) => Answer::Timeout,
        Judged::Bad(_, Failed::Broken | Failed::Rejected { .. }, _) => Answer::Reset,
    }
}

/// The pool server for this attempt (none when the route has no pool);
/// `Err` when every server of the pool is out.
fn pick_server(route: &Route, tried: &[usize]) -> Result<Option<Lease>, ()> {
    let untried: &[usize] = if route.next_upstream.is_some() {
        tried
    } else {
        &[]
    };
    match &route.pool {
        Some(pool) => pool.pick_untried(untried).map(Some).ok_or(()),
        None => Ok(None),
    }
}

/// Sends one attempt, under the per-attempt timeout if there is one
/// (`None`: it timed out).
async fn send(
    upstream: &dyn Upstream,
    request: Request<BoxBody>,
    timeout: Option<Duration>,
) -> Option<Result<Response<Incoming>, crate::http::client::SendError>> {
    match timeout {
        Some(t) => tokio::time::timeout(t, upstream.send(request)).await.ok(),
        None => Some(upstream.send(request).await),
    }
}

/// Judges an attempt's outcome: a timeout or a broken connection fails, a
/// status fails as the route's breaker classifies it (no breaker: 5xx).
/// A failed response is marked with the pool server that gave it.
fn judge(
    route: &Route,
    outcome: Option<Result<Response<Incoming>, crate::http::client::SendError>>,
    lease: Option<&Lease>,
) -> Judged {
    match outcome {
        None => Judged::Bad(
            error_verdict(route, FailureKind::Timeout),
            Failed::Timeout,
            CallError::Timeout,
        ),
        Some(Err(err)) if err.is_connect() => Judged::Bad(
            error_verdict(route, FailureKind::Connect),
            Failed::Connect,
            CallError::Connect,
        ),
        Some(Err(_)) => Judged::Bad(
            error_verdict(route, FailureKind::Reset),
            Failed::Broken,
            CallError::Broken,
        ),
        Some(Ok(resp)) => {
            let verdict = verdict_of(route, &resp);
            if let Outcome::Failure(_) = verdict {
                let mut resp = resp.map(boxed);
                mark_server(&mut resp, lease);
                Judged::Bad(verdict, Failed::Status(resp), CallError::Status)
            } else {
                Judged::Good(resp, verdict)
            }
        }
    }
}

/// The breaker's verdict on a call without an answer: a failure unless the
/// route's breaker counts its class otherwise (`ignore_errors`,
/// `success_errors`); the attempt failed all the same (retried, reported).
fn error_verdict(route: &Route, kind: FailureKind) -> Outcome {
    match &route.breaker {
        Some(b) => b.lock().classifier().classify_error(kind),
        None => Outcome::Failure(kind),
    }
}

/// The breaker's verdict on an answer: a gRPC call that ended in its
/// head by its gRPC status, any other by its HTTP status; classified as
/// the route's breaker does (no breaker: the default classifier).
fn verdict_of<B>(route: &Route, resp: &Response<B>) -> Outcome {
    let classify = |c: &Classifier| match grpc::answered_status(resp) {
        Some(code) => c.classify_grpc(code),
        None => c.classify_status(resp.status().as_u16()),
    };
    match &route.breaker {
        Some(b) => classify(b.lock().classifier()),
        None => classify(Classifier::standard()),
    }
}

/// Marks an answer from a pool server with the server's name (and, from a
/// backup, the backup header).
fn mark_server(resp: &mut Response<BoxBody>, lease: Option<&Lease>) {
    let Some(lease) = lease else { return };
    if let Ok(name) = http::HeaderValue::from_str(lease.server()) {
        resp.headers_mut().insert(POOL_SERVER_HEADER, name);
    }
    if lease.is_backup() {
        resp.headers_mut()
            .insert(POOL_BACKUP_HEADER, http::HeaderValue::from_static("1"));
    }
}

/// Records an attempt's outcome with its breaker and publishes transitions.
fn record(
    route: &Route,
    line: &DefenseLine,
    guard: Option<CallGuard>,
    outcome: Outcome,
    took: Duration,
) {
    if let Some(g) = guard {
        g.record(outcome, took, clock::now());
        route.stepped(line);
    }
}
