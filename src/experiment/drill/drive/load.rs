//! The open-loop load generator: arrivals on a schedule (Poisson or
//! constant, seeded, optionally ramped) that never wait for responses, so a
//! slow dependency cannot slow the offered load (no coordinated omission).
//! A cap on requests in flight sheds and counts what exceeds it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, HOST, TRANSFER_ENCODING};
use http::{HeaderValue, Request, Response};
use http_body_util::BodyExt;
use rand::Rng;
use tokio::sync::Semaphore;

use crate::clock::{self, Duration, Instant};
use crate::experiment::config::{Arrivals, LoadRoute};
use crate::experiment::drill::collect::stream::Stream;
use crate::experiment::timeline::{ClientError, RequestRecord};
use crate::http::ShutdownSignal;
use crate::http::body::{BoxBody, boxed, full};
use crate::http::client::{Handler, Upstream};
use crate::http::headers::REQUEST_ID_HEADER;
use crate::http::headers::{FALLBACK_HEADER, FallbackKind};

/// Where the generator's requests go.
#[derive(Clone)]
pub enum Entry {
    /// Over HTTP/1.1: to the defense line's listener, the fault proxy or
    /// the user's service.
    Http(Arc<dyn Upstream>),
    /// Into firedrill's own defense line in-process (a virtual-clock
    /// drill): each request as the line's HTTP server would hand it over
    /// (see [`Entry::in_process`]), without encoding and parsing it in
    /// between.
    InProcess {
        /// The line.
        server: Arc<dyn Handler>,
        /// The `Host` an HTTP client puts on requests to the line.
        host: HeaderValue,
    },
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Entry::Http(_) => f.write_str("Entry::Http"),
            Entry::InProcess { host, .. } => f
                .debug_struct("Entry::InProcess")
                .field("host", host)
                .finish(),
        }
    }
}

impl Entry {
    /// The in-process entry into `server` (the defense line), which
    /// listens on `authority`
    /// (`host:port`), for `routes`; none when a route needs what only the
    /// HTTP hop gives: a `fallback:` rule (it may read any response header,
    /// such as those the line's HTTP server adds) or its own
    /// `content-length` / `transfer-encoding` header (HTTP framing).
    pub fn in_process(
        server: Arc<dyn Handler>,
        authority: &str,
        routes: &[LoadRoute],
    ) -> Option<Entry> {
        in_process_host(authority, routes).map(|host| Entry::InProcess { server, host })
    }

    /// Whether requests go to the line in-process.
    fn is_in_process(&self) -> bool {
        matches!(self, Entry::InProcess { .. })
    }

    /// Sends `req` (origin-form URI) and returns the response head, or why
    /// none came.
    async fn send(&self, mut req: Request<BoxBody>) -> Result<Response<BoxBody>, ClientError> {
        match self {
            Entry::Http(client) => match client.send(req).await {
                Ok(resp) => Ok(resp.map(boxed)),
                Err(err) if err.is_connect() => Err(ClientError::Connect),
                Err(_) => Err(ClientError::Broken),
            },
            Entry::InProcess { server, host } => {
                // The headers an HTTP/1.1 client adds, in its order: `Host`
                // after the request's own, then the body's length.
                let len = http_body::Body::size_hint(req.body()).exact().unwrap_or(0);
                let headers = req.headers_mut();
                headers.entry(HOST).or_insert_with(|| host.clone());
                if len > 0 {
                    headers.insert(CONTENT_LENGTH, HeaderValue::from(len));
                }
                // Each way, the tasks an HTTP exchange passes through take
                // their turns (see [`HOPS`]) before the other end sees it.
                hops().await;
                let resp = server.answer(req).await;
                hops().await;
                Ok(resp)
            }
        }
    }
}

/// The `Host` an HTTP/1.1 client sends to `authority` (the port only when
/// not 80), if every route can go in-process (see [`Entry::in_process`]).
fn in_process_host(authority: &str, routes: &[LoadRoute]) -> Option<HeaderValue> {
    let framing = |k: &String| {
        k.eq_ignore_ascii_case(CONTENT_LENGTH.as_str())
            || k.eq_ignore_ascii_case(TRANSFER_ENCODING.as_str())
    };
    let plain = routes
        .iter()
        .all(|r| r.fallback.is_none() && !r.headers.keys().any(framing));
    let host = authority.strip_suffix(":80").unwrap_or(authority);
    plain.then(|| HeaderValue::from_str(host).ok()).flatten()
}

/// The turns a message takes each way between the load generator and the
/// defense line over HTTP/1.1: the client connection's task, then the
/// other end's (the line's server connection, or the request's own task).
/// Taking them in-process keeps the order of everything that happens at
/// one virtual instant (a request and a breaker's timer, an answer and
/// the next arrival) as it was over the wire, so reports stay the same.
const HOPS: usize = 2;

/// Goes to the back of the run queue [`HOPS`] times.
async fn hops() {
    for _ in 0..HOPS {
        Requeue(false).await;
    }
}

/// Goes to the back of the run queue once: every task already woken runs
/// first, as a task woken by this one would run after them.
struct Requeue(bool);

impl std::future::Future for Requeue {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

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
}

impl std::fmt::Debug for Load {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Load")
            .field("next_id", &self.next_id)
            .finish()
    }
}

impl Load {
    /// A generator sending through `client`, with times counted from `start`.
    pub fn new(
        client: Entry,
        start: Instant,
        max_in_flight: u32,
        stream: Arc<Stream>,
    ) -> Arc<Load> {
        Arc::new(Load {
            client,
            start,
            stream,
            next_id: AtomicU64::new(0),
            in_flight: Arc::new(Semaphore::new(max_in_flight as usize)),
            max_in_flight,
            shed: AtomicU64::new(0),
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
        let request = builder
            .header(REQUEST_ID_HEADER, id.to_string())
            .body(full(Bytes::from(route.body.clone())))
            .expect("method, path and headers were validated");
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
                Ok::<_, ClientError>((head_at, status, fallback))
            };
            let mut exchange = std::pin::pin!(exchange);
            let answer = tokio::time::timeout(timeout, exchange.as_mut()).await;
            let timed_out = answer.is_err();
            match answer {
                Ok(Ok((head_at, status, fallback))) => {
                    record.latency = Some(head_at - sent_at);
                    record.status = Some(status);
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

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// The load routes of a drill whose `load:` is `load`.
    fn routes(load: &str) -> Vec<LoadRoute> {
        let yaml = format!(
            "name: x\nduration: 1s\ntarget: {{ builtin: {{ routes: [{{ path: /a }}] }} }}\nload:\n{load}"
        );
        let experiment: crate::experiment::config::Experiment =
            crate::schema::from_yaml_str("x.yaml", &yaml).unwrap();
        experiment.load
    }

    #[test]
    fn the_in_process_host_is_the_authority_without_the_default_port() {
        let plain = routes("  - { name: a, request: GET /a, rate: 1/s }");
        let host = |authority| in_process_host(authority, &plain);
        assert_eq!(
            host("memory-3:80"),
            Some(HeaderValue::from_static("memory-3"))
        );
        assert_eq!(
            host("memory-3:8080"),
            Some(HeaderValue::from_static("memory-3:8080"))
        );
    }

    #[test]
    fn a_fallback_rule_or_a_framing_header_keeps_the_load_on_http() {
        let with = |route: &str| in_process_host("memory-0:80", &routes(route));
        let plain = "  - { name: a, request: GET /a, rate: 1/s, headers: { x-a: b } }";
        assert!(with(plain).is_some());
        let rule = "  - { name: a, request: GET /a, rate: 1/s, fallback: { status: 203 } }";
        assert_eq!(with(rule), None);
        for header in ["Content-Length: '0'", "transfer-encoding: chunked"] {
            let framed =
                format!("  - {{ name: a, request: POST /a, rate: 1/s, headers: {{ {header} }} }}");
            assert_eq!(with(&framed), None, "{header}");
        }
    }

    /// What `order` records: `first` spawned, then `first` spawning
    /// `second` when it runs, while this task takes its [`hops`].
    #[tokio::test(start_paused = true)]
    async fn the_hops_let_a_two_task_chain_woken_first_finish_first() {
        let order = Arc::new(Mutex::new(Vec::new()));
        let push = |o: &Arc<Mutex<Vec<&'static str>>>, what| o.lock().unwrap().push(what);
        let chain = order.clone();
        tokio::spawn(async move {
            push(&chain, "first");
            let second = chain.clone();
            tokio::spawn(async move { push(&second, "second") });
        });
        hops().await;
        push(&order, "in-process");
        assert_eq!(*order.lock().unwrap(), ["first", "second", "in-process"]);
    }
}
