//! The defense line itself: rate limit → workers → bulkhead → (retry →
//! breaker → timeout → dependency) → fallback, for one client request.
//! Every permit and every breaker admission is an RAII guard, so each is
//! released (and each admitted call records exactly one outcome) on every
//! path, including a client that hangs up mid-call.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use rand::Rng;
use tokio::sync::Notify;

use super::breaker::{Breaker, CallGuard, FailureKind, Outcome, SharedBreaker, State};
use super::bulkhead::Bulkhead;
use super::config::{DefenseConfig, FallbackConfig, RetryConfig};
use super::fallback::{self, FALLBACK_HEADER, FallbackKind, MAX_CACHED_BODY, StaleCache};
use super::pool::config::ServerTarget;
use super::pool::{Lease, POOL_BACKUP_HEADER, POOL_SERVER_HEADER, Pool};
use super::rate_limit::TokenBucket;
use super::report::{CallError, CallReport, Observer, Rejection};
use super::retry;
use crate::clock::{self, Duration, Instant, RunRng};
use crate::fault::HttpMatch;
use crate::http::body::{BoxBody, boxed, full};
use crate::http::client::Upstream;
use crate::http::headers::REQUEST_ID_HEADER;

mod answer;
mod timers;

use self::timers::breaker_timers;

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
    rate_limit: Option<TokenBucket>,
    /// The pool the route's calls go to instead of the line's upstream.
    pool: Option<Arc<Pool>>,
}

/// The whole line, shared by every connection (`Arc`).
pub struct DefenseLine {
    /// Routes, first match wins; the last one is the catch-all `default`.
    routes: Vec<Route>,
    /// All calls in flight (`max_concurrent`).
    workers: Option<Bulkhead>,
    /// The line's token bucket.
    rate_limit: Option<TokenBucket>,
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
    /// Builds the line. `backup` opens an upstream for a fallback's backup
    /// address, `server` one for a pool server (`None`: it cannot be
    /// reached, an error naming it); `run_start` is time zero of the
    /// journal.
    pub fn new(
        config: &DefenseConfig,
        upstream: Arc<dyn Upstream>,
        backup: &dyn Fn(&str) -> Arc<dyn Upstream>,
        server: &dyn Fn(&ServerTarget) -> Option<Arc<dyn Upstream>>,
        seed: u64,
        run_start: Instant,
        observer: Arc<dyn Observer>,
    ) -> Result<Arc<DefenseLine>, String> {
        let now = clock::now();
        let mut pools = Vec::new();
        for (name, pool) in &config.pools {
            let mut upstreams = Vec::new();
            for (i, s) in pool.servers.iter().enumerate() {
                let open = server(&s.target).ok_or_else(|| match &s.target {
                    ServerTarget::Instance(instance) => format!(
                        "pools.{name}.servers[{i}].instance: no target instance `{instance}`"
                    ),
                    ServerTarget::Address(address) => {
                        format!("pools.{name}.servers[{i}].address: cannot reach `{address}`")
                    }
                })?;
                upstreams.push(open);
            }
            pools.push(Pool::new(
                name,
                pool,
                upstreams,
                run_start,
                observer.clone(),
            ));
        }
        let pool_named = |name: &Option<String>| {
            name.as_ref()
                .and_then(|n| pools.iter().find(|p| p.name() == n))
                .cloned()
        };
        let mut routes: Vec<Route> = config
            .routes
            .iter()
            .map(|(name, r)| Route {
                name: name.clone(),
                matcher: r.matcher.clone(),
                timeout: r.timeout.or(config.timeout),
                bulkhead: r
                    .bulkhead
                    .map(|b| Bulkhead::new(b.max_concurrent, b.max_wait.get())),
                breaker: r
                    .breaker
                    .as_ref()
                    .map(|b| SharedBreaker::new(Breaker::new(b, run_start))),
                breaker_stepped: Arc::new(Notify::new()),
                retry: r.retry.clone(),
                fallback: r.fallback.clone(),
                stale: r
                    .fallback
                    .as_ref()
                    .and_then(|f| f.stale)
                    .map(StaleCache::new),
                backup: r
                    .fallback
                    .as_ref()
                    .and_then(|f| f.backup.as_deref())
                    .map(backup),
                rate_limit: r.rate_limit.map(|c| TokenBucket::new(c, now)),
                pool: pool_named(&r.pool),
            })
            .collect();
        routes.push(Route {
            name: "default".to_string(),
            matcher: HttpMatch::default(),
            timeout: config.timeout,
            bulkhead: None,
            breaker: None,
            breaker_stepped: Arc::new(Notify::new()),
            retry: None,
            fallback: None,
            stale: None,
            backup: None,
            rate_limit: None,
            pool: None,
        });
        let line = Arc::new(DefenseLine {
            routes,
            workers: config
                .max_concurrent
                .map(|n| Bulkhead::new(n, Duration::ZERO)),
            rate_limit: config.rate_limit.map(|c| TokenBucket::new(c, now)),
            request_timeout: config.request_timeout,
            upstream,
            pools,
            rng: Mutex::new(clock::seeded_rng(seed, 0xdefe)),
            observer,
            requests: AtomicU64::new(0),
            attempts: AtomicU64::new(0),
        });
        for index in 0..line.routes.len() {
            if line.routes[index].breaker.is_some() {
                tokio::spawn(breaker_timers(Arc::downgrade(&line), index));
            }
        }
        for pool in &line.pools {
            pool.start();
        }
        Ok(line)
    }

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
            request_id: req
                .headers()
                .get(REQUEST_ID_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
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
        let response = self.protect(route, req, report).await;
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

    async fn protect(
        &self,
        route: &Route,
        req: Request<BoxBody>,
        report: &mut CallReport,
    ) -> Response<BoxBody> {
        // The request key (method and path) is needed only by the stale
        // cache and the backup call; other routes skip the allocation.
        let key = if route.stale.is_some() || route.backup.is_some() {
            let path = req.uri().path_and_query().map_or("/", |p| p.as_str());
            format!("{} {path}", req.method())
        } else {
            String::new()
        };
        let now = clock::now();
        let limited = [&self.rate_limit, &route.rate_limit]
            .into_iter()
            .flatten()
            .any(|b| !b.try_take(now));
        if limited {
            report.rejected_by = Some(Rejection::RateLimit);
            return fallback::error_response(StatusCode::SERVICE_UNAVAILABLE, "rate-limited", None);
        }
        let _worker = match &self.workers {
            Some(w) => match w.acquire().await {
                Ok(p) => Some(p),
                Err(_) => {
                    report.rejected_by = Some(Rejection::Workers);
                    return self
                        .fall_back(route, &key, None, "workers-exhausted", None)
                        .await;
                }
            },
            None => None,
        };
        let _slot = match &route.bulkhead {
            Some(b) => match b.acquire().await {
                Ok(p) => Some(p),
                Err(_) => {
                    report.rejected_by = Some(Rejection::Bulkhead);
                    return self
                        .fall_back(route, &key, None, "bulkhead-full", None)
                        .await;
                }
            },
            None => None,
        };
        let attempts = self.try_attempts(route, req, &key, report);
        let result = match self.request_timeout {
            Some(deadline) => match tokio::time::timeout(deadline, attempts).await {
                Ok(r) => r,
                Err(_) => {
                    report.error = Some(CallError::Deadline);
                    Failed::Deadline
                }
            },
            None => attempts.await,
        };
        match result {
            Failed::Answered(resp) => resp,
            Failed::Rejected { state, retry_after } => {
                report.rejected_by = Some(Rejection::Breaker);
                let reason = if state == State::HalfOpen {
                    "breaker-half-open"
                } else {
                    "breaker-open"
                };
                self.fall_back(route, &key, None, reason, retry_after).await
            }
            Failed::Status(resp) => {
                self.fall_back(route, &key, Some(resp), "upstream-status", None)
                    .await
            }
            Failed::Timeout => self.fall_back(route, &key, None, "timeout", None).await,
            Failed::Deadline => {
                self.fall_back(route, &key, None, "request-timeout", None)
                    .await
            }
            Failed::Connect => {
                self.fall_back(route, &key, None, "upstream-connect", None)
                    .await
            }
            Failed::Broken => {
                self.fall_back(route, &key, None, "upstream-error", None)
                    .await
            }
            Failed::NoServer => {
                self.fall_back(route, &key, None, "pool-no-server", None)
                    .await
            }
        }
    }

    /// The attempt loop: retries, each through the breaker and the timeout.
    async fn try_attempts(
        &self,
        route: &Route,
        req: Request<BoxBody>,
        key: &str,
        report: &mut CallReport,
    ) -> Failed {
        let (parts, body) = req.into_parts();
        let retry = route
            .retry
            .as_ref()
            .filter(|r| retry::may_retry(r, &parts.method));
        // A retried request is sent again, so its body is kept (small bodies
        // only); any other request streams its body once.
        let small = http_body::Body::size_hint(&body)
            .upper()
            .is_some_and(|n| n <= MAX_CACHED_BODY as u64);
        let (mut streaming, kept) = match (retry, small) {
            (Some(_), true) => match body.collect().await {
                Ok(b) => (None, Some(b.to_bytes())),
                Err(_) => return Failed::Broken,
            },
            _ => (Some(body), None),
        };
        let max_attempts = if kept.is_some() {
            retry.map_or(1, |r| r.attempts)
        } else {
            1
        };
        let mut last = Failed::Broken;
        for attempt in 1..=max_attempts {
            if attempt > 1 {
                let draw = self
                    .rng
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .random::<f64>();
                clock::sleep(retry::backoff(retry.expect("retrying"), attempt, draw)).await;
            }
            let guard = match &route.breaker {
                Some(b) => {
                    let admitted = b.try_acquire(clock::now());
                    route.stepped(self);
                    match admitted {
                        Ok(g) => {
                            report
                                .breaker_state
                                .get_or_insert(g.admitted_in().unwrap_or(State::Closed));
                            Some(g)
                        }
                        Err(rejected) => {
                            report.breaker_state.get_or_insert(rejected.state);
                            return Failed::Rejected {
                                state: rejected.state,
                                retry_after: rejected.retry_after,
                            };
                        }
                    }
                }
                None => None,
            };
            let body = match (&kept, streaming.take()) {
                (Some(bytes), _) => full(bytes.clone()),
                (None, Some(b)) => b,
                (None, None) => return last,
            };
            let request = Request::from_parts(parts.clone(), body);
            let lease = match &route.pool {
                Some(pool) => match pool.pick(clock::now()) {
                    Some(lease) => Some(lease),
                    None => {
                        // Every server is out: as an unreachable upstream.
                        record(
                            route,
                            self,
                            guard,
                            Outcome::Failure(FailureKind::Connect),
                            Duration::ZERO,
                        );
                        report.error = Some(CallError::Connect);
                        report.served_by = None;
                        last = Failed::NoServer;
                        continue;
                    }
                },
                None => None,
            };
            let upstream = lease
                .as_ref()
                .map_or(self.upstream.as_ref(), Lease::upstream);
            report.served_by = lease.as_ref().map(Lease::served_by);
            self.attempts.fetch_add(1, Ordering::Relaxed);
            report.attempts += 1;
            let sent = clock::now();
            let outcome = match route.timeout {
                Some(t) => tokio::time::timeout(t, upstream.send(request)).await.ok(),
                None => Some(upstream.send(request).await),
            };
            let took = clock::now() - sent;
            let (verdict, failed) = match outcome {
                None => (
                    Outcome::Failure(FailureKind::Timeout),
                    Some((Failed::Timeout, CallError::Timeout)),
                ),
                Some(Err(err)) => {
                    let connect = err.is_connect();
                    let kind = if connect {
                        FailureKind::Connect
                    } else {
                        FailureKind::Reset
                    };
                    let call_error = if connect {
                        CallError::Connect
                    } else {
                        CallError::Broken
                    };
                    let failed = if connect {
                        Failed::Connect
                    } else {
                        Failed::Broken
                    };
                    (Outcome::Failure(kind), Some((failed, call_error)))
                }
                Some(Ok(resp)) => {
                    let status = resp.status().as_u16();
                    let verdict = match &route.breaker {
                        Some(b) => b.lock().classifier().classify_status(status),
                        None if status >= 500 => Outcome::Failure(FailureKind::Status(status)),
                        None => Outcome::Success,
                    };
                    match verdict {
                        Outcome::Failure(_) => {
                            let mut resp = resp.map(boxed);
                            mark_server(&mut resp, lease.as_ref());
                            (verdict, Some((Failed::Status(resp), CallError::Status)))
                        }
                        _ => {
                            if let Some(lease) = &lease {
                                lease.record(false);
                            }
                            record(route, self, guard, verdict, took);
                            report.error = None;
                            let mut resp = self.deliver(route, key, resp).await;
                            mark_server(&mut resp, lease.as_ref());
                            return Failed::Answered(resp);
                        }
                    }
                }
            };
            if let Some(lease) = &lease {
                lease.record(true);
            }
            record(route, self, guard, verdict, took);
            let (failed, call_error) = failed.expect("failures only reach here");
            report.error = Some(call_error);
            last = failed;
        }
        last
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

/// How the attempts ended.
enum Failed {
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
