//! The defense line itself: rate limit → workers → bulkhead → (retry →
//! breaker → timeout → dependency) → fallback, for one client request.
//! Every permit and every breaker admission is an RAII guard, so each is
//! released (and each admitted call records exactly one outcome) on every
//! path, including a client that hangs up mid-call.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use http::{Request, Response};
use tokio::sync::Notify;

use super::breaker::SharedBreaker;
use super::bulkhead::Bulkhead;
use super::config::{FallbackConfig, NextUpstream, RetryConfig};
use super::fallback::{FALLBACK_HEADER, FallbackKind, StaleCache};
use super::pool::Pool;
use super::rate_limit::RateLimit;
use super::report::{CallError, CallReport, Observer};
use crate::clock::{self, Duration, RunRng};
use crate::fault::HttpMatch;
use crate::http::body::BoxBody;
use crate::http::client::Upstream;
use crate::http::headers::load_request_id;

mod answer;
mod attempts;
mod build;
mod deferred;
mod protect;
mod timers;

/// One route's protections.
struct Route {
    /// Name in reports, journal and metrics.
    name: String,
    /// Which requests belong here.
    matcher: HttpMatch,
    /// Per-attempt timeout.
    timeout: Option<Duration>,
    /// Concurrent calls of the route.
    bulkhead: Option<Bulkhead>,
    /// The route's breaker.
    breaker: Option<SharedBreaker>,
    /// Woken after every breaker step, so the timer task re-reads its
    /// next deadline.
    breaker_stepped: Arc<Notify>,
    /// Retries.
    retry: Option<RetryConfig>,
    /// Fallbacks.
    fallback: Option<FallbackConfig>,
    /// Last good responses, when `fallback.stale` is set.
    stale: Option<StaleCache>,
    /// The backup upstream, when `fallback.backup` is set.
    backup: Option<Arc<dyn Upstream>>,
    /// The route's token bucket.
    rate_limit: Option<RateLimit>,
    /// The pool the route's calls go to instead of the line's upstream.
    pool: Option<Arc<Pool>>,
    /// Passing a failed attempt on to an untried pool server (NGINX).
    next_upstream: Option<NextUpstream>,
}

/// The whole line, shared by every connection (`Arc`).
pub struct DefenseLine {
    /// Routes, first match wins; the last one is the catch-all `default`.
    routes: Vec<Route>,
    /// All calls in flight (`max_concurrent`).
    workers: Option<Bulkhead>,
    /// The line's token bucket.
    rate_limit: Option<RateLimit>,
    /// Outer deadline per client request.
    request_timeout: Option<Duration>,
    /// The dependency.
    upstream: Arc<dyn Upstream>,
    /// The upstream pools, in configuration order.
    pools: Vec<Arc<Pool>>,
    /// Jitter of retry backoffs.
    rng: Mutex<RunRng>,
    /// Who hears about calls and transitions.
    observer: Arc<dyn Observer>,
    /// Client requests handled.
    requests: AtomicU64,
    /// Attempts sent to the dependency (retry amplification = this / requests).
    attempts: AtomicU64,
}

impl std::fmt::Debug for DefenseLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DefenseLine")
            .field(
                "routes",
                &self.routes.iter().map(|r| &r.name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl DefenseLine {
    /// The upstream pools, in configuration order.
    pub fn pools(&self) -> &[Arc<Pool>] {
        &self.pools
    }

    /// The breakers, by route name.
    pub fn breakers(&self) -> impl Iterator<Item = (&str, &SharedBreaker)> {
        self.routes
            .iter()
            .filter_map(|r| r.breaker.as_ref().map(|b| (r.name.as_str(), b)))
    }

    /// The bulkheads, by route name (`workers` for `max_concurrent`).
    pub fn bulkheads(&self) -> impl Iterator<Item = (&str, &Bulkhead)> {
        let workers = self.workers.as_ref().map(|b| ("workers", b));
        workers.into_iter().chain(
            self.routes
                .iter()
                .filter_map(|r| r.bulkhead.as_ref().map(|b| (r.name.as_str(), b))),
        )
    }

    /// Client requests handled so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Attempts sent to the dependency so far.
    pub fn attempts(&self) -> u64 {
        self.attempts.load(Ordering::Relaxed)
    }

    /// Handles one client request (its body boxed: from a client
    /// connection, or in-process from a drill's load generator).
    pub async fn handle(&self, req: Request<BoxBody>) -> Response<BoxBody> {
        let arrival = clock::now();
        self.requests.fetch_add(1, Ordering::Relaxed);
        let route = self
            .routes
            .iter()
            .find(|r| {
                r.matcher
                    .matches(req.method(), req.uri().path(), req.headers())
            })
            .expect("the default route matches everything");
        let report = CallReport {
            route: route.name.clone(),
            request_id: load_request_id(req.headers()),
            status: 0,
            latency: Duration::ZERO,
            breaker_state: None,
            rejected_by: None,
            error: None,
            fallback: None,
            attempts: 0,
            served_by: None,
        };
        // Reported even when the caller hangs up first and this future is
        // dropped half-way: then as cancelled.
        let mut pending = Pending {
            report: Some(report),
            observer: self.observer.as_ref(),
            arrival,
        };
        let report = pending.report.as_mut().expect("set above");
        let grpc = crate::http::grpc::is_grpc(req.headers());
        let mut response = self.protect(route, req, report).await;
        if grpc {
            response = super::fallback::for_grpc_caller(response).await;
        }
        let mut report = pending.report.take().expect("taken once");
        report.status = response.status().as_u16();
        report.latency = clock::now() - arrival;
        report.fallback =
            response
                .headers()
                .get(FALLBACK_HEADER)
                .and_then(|v| match v.as_bytes() {
                    b"stale" => Some(FallbackKind::Stale),
                    b"backup" => Some(FallbackKind::Backup),
                    b"static" => Some(FallbackKind::Static),
                    _ => None,
                });
        self.observer.call(&report);
        response
    }
}

impl Route {
    /// Publishes the breaker's new transitions and wakes its timer task.
    fn stepped(&self, line: &DefenseLine) {
        if let Some(b) = &self.breaker {
            for t in b.take_journal() {
                line.observer.transition(&t);
            }
            self.breaker_stepped.notify_one();
        }
    }
}

/// A call's report until the call ends: dropped before that (the caller
/// gave up and the connection went), it reports the call as cancelled.
struct Pending<'a> {
    /// The report; taken when the call ends normally.
    report: Option<CallReport>,
    /// Where reports go.
    observer: &'a dyn Observer,
    /// When the call arrived.
    arrival: crate::clock::Instant,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if let Some(mut report) = self.report.take() {
            report.error = Some(CallError::Cancelled);
            report.latency = clock::now() - self.arrival;
            self.observer.call(&report);
        }
    }
}
