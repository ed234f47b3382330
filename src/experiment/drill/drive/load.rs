//! The open-loop load generator: arrivals on a schedule (Poisson or
//! constant, seeded, optionally ramped) that never wait for responses, so a
//! slow dependency cannot slow the offered load (no coordinated omission).
//! A cap on requests in flight sheds and counts what exceeds it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use http::Request;
use http_body_util::BodyExt;
use rand::Rng;
use tokio::sync::Semaphore;

use crate::clock::{self, Duration, Instant};
use crate::experiment::config::{Arrivals, LoadRoute};
use crate::experiment::drill::collect::stream::Stream;
use crate::experiment::drill::stand_up::entry::{Entry, hops};
use crate::experiment::timeline::{ClientError, RequestRecord};
use crate::http::ShutdownSignal;
use crate::http::body::full;
use crate::http::grpc;
use crate::http::headers::{Correlation, FALLBACK_HEADER, FallbackKind, REQUEST_ID_HEADER};

/// The generator's shared state.
pub struct Load {
    /// Sends requests (to the defense line or straight to the proxy).
    client: Entry,
    /// Time zero of the run.
    start: Instant,
    /// Where every request goes as it is sent and as it finishes.
    stream: Arc<Stream>,
    /// Next request id.
    next_id: AtomicU64,
    /// Requests in flight at most.
    in_flight: Arc<Semaphore>,
    /// The cap, to tell when every request has finished.
    max_in_flight: u32,
    /// Requests shed by the cap.
    shed: AtomicU64,
    /// A user's service: the correlation headers each request carries its
    /// id in (none for firedrill's own target, whose requests stay as
    /// they were).
    correlation: Option<Correlation>,
}

impl std::fmt::Debug for Load {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Load")
            .field("next_id", &self.next_id)
            .finish()
    }
}

impl Load {
    /// A generator sending through `client`, with times counted from
    /// `start`, setting the `correlation` headers (a user's service) on
    /// every request.
    pub fn new(
        client: Entry,
        start: Instant,
        max_in_flight: u32,
        stream: Arc<Stream>,
        correlation: Option<Correlation>,
    ) -> Arc<Load> {
        Arc::new(Load {
            client,
            start,
            stream,
            next_id: AtomicU64::new(0),
            in_flight: Arc::new(Semaphore::new(max_in_flight as usize)),
            max_in_flight,
            shed: AtomicU64::new(0),
            correlation,
        })
    }

    /// Sends every route's arrivals until `until` (offset from the start) or
    /// until `stop` fires.
    pub async fn drive(
        self: &Arc<Self>,
        routes: &[LoadRoute],
        seed: u64,
        until: Duration,
        stop: ShutdownSignal,
    ) {
        let schedules = routes.iter().enumerate().map(|(i, route)| {
            let load = self.clone();
            let mut stop = stop.clone();
            let route = route.clone();
            async move {
                tokio::select! {
                    biased;
                    _ = stop.wait() => {}
                    _ = load.schedule(&route, seed, i as u64, until) => {}
                }
            }
        });
        futures_util::future::join_all(schedules).await;
    }

    async fn schedule(self: &Arc<Self>, route: &LoadRoute, seed: u64, index: u64, until: Duration) {
        let mut rng = clock::seeded_rng(seed, 1000 + index);
        let end = route.length.map_or(until, |l| (route.from + l).min(until));
        if let Some(recorded) = &route.recorded {
            for &at in recorded.iter() {
                let t = route.from + at;
                if t >= end {
                    return;
                }
                clock::sleep_until(self.start + t).await;
                self.send(route);
            }
            return;
        }
        let mut t = route.from;
        loop {
            let rate = ramped_rate(route, t);
            let gap = match route.arrivals {
                Arrivals::Constant => 1.0 / rate,
                Arrivals::Poisson => -(1.0 - rng.random::<f64>()).ln() / rate,
            };
            t += Duration::from_secs_f64(gap);
            if t >= end {
                return;
            }
            clock::sleep_until(self.start + t).await;
            self.send(route);
        }
    }

    /// Starts one request without waiting for it.
    fn send(self: &Arc<Self>, route: &LoadRoute) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let sent_at = clock::now();
        let mut record = RequestRecord::sent(
            id,
            &route.name,
            &route.path,
            sent_at.saturating_duration_since(self.start),
        );
        self.stream.sent(record.clone());
        let Ok(permit) = self.in_flight.clone().try_acquire_owned() else {
            self.shed.fetch_add(1, Ordering::Relaxed);
            record.client_error = Some(ClientError::Shed);
            self.stream.finished(record);
            return;
        };
        let mut builder = Request::builder()
            .method(route.method.clone())
            .uri(route.path.as_str());
        for (k, v) in &route.headers {
            builder = builder.header(k.as_str(), v.as_str());
        }
        let mut request = builder
            .header(REQUEST_ID_HEADER, id.to_string())
            .body(full(route.body.clone()))
            .expect("method, path and headers were validated");
        if let Some(correlation) = &self.correlation {
            // Replacing a route's own header of the same name.
            for name in &correlation.headers {
                let value = correlation.value(name, id);
                request.headers_mut().insert(name.clone(), value);
            }
        }
        let load = self.clone();
        let timeout = route.timeout;
        let rule = route.fallback.clone();
        let success = route.success.clone();
        // Boxed: the task then holds a pointer, not the whole exchange (the
        // line's call in it, in-process), which the runtime would copy as
        // it spawns, polls and completes the task.
        tokio::spawn(Box::pin(async move {
            let exchange = async {
                let resp = load.client.send(request).await?;
                let head_at = clock::now();
                let status = resp.status().as_u16();
                let (head, body) = resp.into_parts();
                // Read the body through; a body cut short still leaves the
                // status the client saw.
                let body = body.collect().await.ok();
                let trailers = body.as_ref().and_then(|b| b.trailers());
                let grpc_status = grpc::status_of(&head.headers, trailers);
                let fallback = match &rule {
                    Some(rule) => {
                        let bytes = body.map(|b| b.to_bytes()).unwrap_or_default();
                        rule.matches(status, &head.headers, &bytes)
                            .then_some(FallbackKind::Service)
                    }
                    None => head
                        .headers
                        .get(FALLBACK_HEADER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(FallbackKind::from_header),
                };
                Ok::<_, ClientError>((head_at, status, grpc_status, fallback))
            };
            let mut exchange = std::pin::pin!(exchange);
            let answer = tokio::time::timeout(timeout, exchange.as_mut()).await;
            let timed_out = answer.is_err();
            match answer {
                Ok(Ok((head_at, status, grpc_status, fallback))) => {
                    record.latency = Some(head_at - sent_at);
                    record.status = Some(status);
                    record.grpc_status = grpc_status;
                    record.fallback = fallback;
                    record.success = success
                        .as_ref()
                        .map(|patterns| patterns.iter().any(|p| p.matches(status)));
                }
                Ok(Err(err)) => record.client_error = Some(err),
                Err(_) => record.client_error = Some(ClientError::Timeout),
            }
            load.stream.finished(record);
            drop(permit);
            // An exchange that timed out is dropped (the line's call in it
            // reported as cancelled) only as this task ends: a client gives
            // up first, then the server notices, the turns of a hang-up
            // later.
            if timed_out && load.client.is_in_process() {
                hops().await;
            }
        }));
    }

    /// Waits until no request is in flight.
    pub async fn settle(&self) {
        let _all = self.in_flight.acquire_many(self.max_in_flight).await;
    }

    /// Where the requests go: the halt watch and the live view read it.
    pub fn stream(&self) -> &Arc<Stream> {
        &self.stream
    }

    /// Requests shed by the in-flight cap.
    pub fn shed(&self) -> u64 {
        self.shed.load(Ordering::Relaxed)
    }
}

/// The route's rate at offset `t`, ramped linearly over `ramp` from its
/// start (never below 1 % of the rate, so the schedule always moves on).
fn ramped_rate(route: &LoadRoute, t: Duration) -> f64 {
    if route.ramp.is_zero() {
        return route.rate;
    }
    let into = t.saturating_sub(route.from).as_secs_f64() / route.ramp.as_secs_f64();
    route.rate * into.clamp(0.01, 1.0)
}
