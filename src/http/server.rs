//! The accept loop every server of firedrill runs (the fault proxy in both
//! modes, the fixture target, the defense line, /metrics, the API's
//! proxies): a [`Gate`] may close the listener for a while (the proxy's
//! `refuse` fault), each connection gets its own task, and shutdown is
//! graceful (in-flight connections get a grace period). Also the HTTP/1.1
//! and HTTP/2 connection driver they share.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::watch;
use tokio::task::JoinSet;

use super::body::BoxBody;
use super::fin::{FinProbe, Flushed, Held, Holding};
use super::head::{Expired, HeadClock, REQUEST_TIMEOUT, Timed};
use super::limit::Limit;
use super::local::Local;
use super::shutdown::ShutdownSignal;
use crate::clock::{self, Duration, Instant};
use crate::net::Acceptor;

/// Whether a listener takes connections now. The fault proxy's plan closes
/// it while a `refuse` fault is active; every other server is [`Open`].
pub trait Gate: Send + Sync + 'static {
    /// Whether to refuse new connections now, and when that may change by
    /// itself (a window opening or closing).
    fn refusing(&self) -> (bool, Option<Instant>);
    /// Changes whenever the answer may change for another reason (the
    /// fault list replaced); `None` when it never does.
    fn subscribe(&self) -> Option<watch::Receiver<u64>>;
}

/// A gate that never closes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Open;

impl Gate for Open {
    fn refusing(&self) -> (bool, Option<Instant>) {
        (false, None)
    }
    fn subscribe(&self) -> Option<watch::Receiver<u64>> {
        None
    }
}

/// Runs the accept loop until `shutdown` fires, then gives in-flight
/// connections up to `grace` to finish and aborts the rest.
///
/// Returns an error only if the listener cannot be rebound after the gate
/// closed it.
pub async fn serve<A, G, H, F>(
    acceptor: A,
    gate: Arc<G>,
    handler: H,
    shutdown: ShutdownSignal,
    grace: Duration,
) -> std::io::Result<()>
where
    A: Acceptor,
    G: Gate + ?Sized,
    H: Fn(A::Stream, ShutdownSignal) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    serve_limited(acceptor, gate, handler, None, shutdown, grace).await
}

/// [`serve`], with at most `limit` connections held at once (the others
/// refused as they come).
pub async fn serve_limited<A, G, H, F>(
    mut acceptor: A,
    gate: Arc<G>,
    handler: H,
    limit: Option<Limit>,
    mut shutdown: ShutdownSignal,
    grace: Duration,
) -> std::io::Result<()>
where
    A: Acceptor,
    G: Gate + ?Sized,
    H: Fn(A::Stream, ShutdownSignal) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    let mut connections = JoinSet::new();
    // The fault list may be replaced at runtime (a `refuse` added).
    let mut changes = gate.subscribe();
    let mut failing = AcceptFailures::default();
    loop {
        while connections.try_join_next().is_some() {}
        let (refusing, next_change) = gate.refusing();
        if refusing {
            acceptor.pause()?;
        } else {
            acceptor.resume()?;
        }
        let wake = async {
            match next_change {
                Some(at) => clock::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            _ = shutdown.wait() => break,
            _ = wake => continue,
            _ = changed(&mut changes) => continue,
            accepted = acceptor.accept(), if !refusing => match accepted {
                Ok(stream) => {
                    failing.recovered();
                    let held = match &limit {
                        Some(limit) => match limit.admit(&stream) {
                            Some(held) => Some(held),
                            None => continue,
                        },
                        None => None,
                    };
                    let served = handler(stream, shutdown.clone());
                    connections.spawn(async move {
                        served.await;
                        drop(held);
                    });
                }
                Err(err) => {
                    // Out of file descriptors and the like: back off, go on.
                    let wait = failing.failed(&err);
                    tokio::select! {
                        biased;
                        _ = shutdown.wait() => break,
                        _ = clock::sleep(wait) => {}
                    }
                }
            },
        }
    }
    drop(acceptor);
    let drained = tokio::time::timeout(grace, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::info!(
            remaining = connections.len(),
            "grace period over; closing connections"
        );
        connections.abort_all();
        while connections.join_next().await.is_some() {}
    }
    Ok(())
}

/// What a client's FIN while a request is in flight means to a server: a
/// FIN alone cannot tell a client that half-closed after a whole request
/// from one that hung up, so each server says which it expects, or asks.
///
/// `firedrill proxy` and `firedrill defend` ask by default ([`fin`]: a
/// `100 Continue` written after the FIN draws an RST from a client that
/// closed) and take a hang-up with `--abort-on-close` (as nginx and Envoy
/// do); a drill's own servers take a hang-up, since its load generator
/// never half-closes: a FIN there is a caller giving up.
///
/// [`fin`]: super::fin
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientFin {
    /// A half-close: the request is whole, answer it (the fixture target,
    /// plain endpoints); a client that hung up is noticed when the answer
    /// is written.
    HalfClose,
    /// A hang-up: the call in flight is dropped at once (the defense line,
    /// so that a breaker probe whose client left frees its slot; the fault
    /// proxy, so that a blackholed request its client gave up on is
    /// recorded), as nginx does for a proxied request.
    #[default]
    HangUp,
    /// Ask the client (TCP only; elsewhere a half-close): a client that hung
    /// up releases its request at once, one that half-closed is answered
    /// (`firedrill proxy --mode http` and `firedrill defend` by default).
    Probe,
}

impl ClientFin {
    /// What the server does with `stream`'s FIN: with [`ClientFin::Probe`],
    /// a watch on its socket where the transport has one.
    pub fn on<T: crate::net::Transport>(self, stream: &T) -> Fin {
        let socket = stream.shared_tcp();
        Fin {
            probe: match self {
                ClientFin::Probe => socket.clone().map(|s| FinProbe::of(s, stream.read_spent())),
                _ => None,
            },
            half_close: self != ClientFin::HangUp,
            socket,
        }
    }
}

/// A client's FIN as one connection's server takes it: from
/// [`ClientFin::on`].
#[derive(Debug)]
pub struct Fin {
    /// Whether a FIN with a request in flight lets the request be answered.
    half_close: bool,
    /// Watches for a hang-up while a request is held.
    probe: Option<FinProbe>,
    /// The client's socket, where a stalled head's `408` is written past
    /// the codec (none on other transports: the connection is closed).
    socket: Option<Arc<tokio::net::TcpStream>>,
}

/// Serves HTTP/1.1 and HTTP/2 (h2c with prior knowledge: a connection
/// that opens with HTTP/2's preface) on one accepted connection with
/// `service` until the client closes it or `shutdown` fires (then
/// gracefully: the requests in flight finish, keep-alive ends, an HTTP/2
/// client is sent GOAWAY). Every HTTP server of firedrill (the
/// proxy's HTTP mode, the fixture target, the defense line, /metrics)
/// serves its connections through this. With a [`Fin`] that probes, a
/// client that hangs up while its request is held ends the connection at
/// once (the request is dropped).
///
/// The connection's HTTP/2 streams run on `local`, inside the
/// connection's task, not as tasks of their own; so does what the
/// service spawns on it (the proxy's HTTP/2 upstream connection).
pub async fn serve_http<I, S, E>(
    local: Local,
    io: I,
    service: S,
    fin: Fin,
    mut shutdown: ShutdownSignal,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    S: hyper::service::Service<
            http::Request<hyper::body::Incoming>,
            Response = http::Response<BoxBody>,
            Error = E,
        > + Send
        + 'static,
    S::Future: Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    // Without a probe the wrappers pass everything through.
    let held = fin.probe.map(Held::new);
    let clock = HeadClock::new();
    let io = Flushed {
        inner: io,
        held: held.clone(),
        head: clock.clone(),
    };
    let service = Timed {
        inner: Holding {
            inner: service,
            held: held.clone(),
        },
        clock: clock.clone(),
    };
    let hung_up = async {
        match &held {
            Some(held) => {
                held.hung_up().await;
                tracing::debug!("the client hung up with a request held: released");
            }
            _ => std::future::pending().await,
        }
    };
    let mut builder = hyper_util::server::conn::auto::Builder::new(local.clone());
    builder
        .http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .keep_alive(true)
        .half_close(fin.half_close)
        // Timed here instead (`head`), to answer a stalled head 408.
        .header_read_timeout(None);
    builder.http2().timer(hyper_util::rt::TokioTimer::new());
    // HTTP/1.1, or HTTP/2 when the client opens with its preface (h2c with
    // prior knowledge). A 101 hands an HTTP/1.1 connection to whoever took
    // its upgrade (`upgrade::tunnel`).
    let served = builder.serve_connection_with_upgrades(hyper_util::rt::TokioIo::new(io), service);
    tokio::pin!(served);
    tokio::pin!(hung_up);
    let streams = local.run();
    tokio::pin!(streams);
    let mut shutting_down = false;
    let result = loop {
        tokio::select! {
            biased;
            r = served.as_mut() => break r,
            () = streams.as_mut() => unreachable!("a local executor runs until dropped"),
            () = hung_up.as_mut() => return,
            expired = clock.expired(), if !shutting_down => {
                if let (Expired::Stalled, Some(socket)) = (expired, &fin.socket) {
                    // Nothing of the codec's is unsent: no request is in
                    // service and no answer is on its way.
                    let _ = socket2::SockRef::from(&**socket).send(REQUEST_TIMEOUT);
                    tracing::debug!("a request head stalled; answered 408 and closed");
                }
                return;
            }
            _ = shutdown.wait(), if !shutting_down => {
                served.as_mut().graceful_shutdown();
                shutting_down = true;
            }
        }
    };
    if let Err(err) = result {
        tracing::trace!(%err, "connection ended with an error");
    }
}

/// A run of failed accepts (out of file descriptors, say): each failure
/// doubles the wait before the next try, from 10 ms up to 1 s, so that a
/// listener that cannot accept neither spins nor floods the log: the first
/// failure of a run is logged, and its end, each at most once per
/// [`crate::throttle::INTERVAL`] with the count of those left out (runs
/// come and go while descriptors are short).
#[derive(Debug, Default)]
struct AcceptFailures {
    /// Failures in a row.
    count: u64,
    /// The warning that a run began, written once per interval.
    failed: crate::throttle::Throttle,
    /// The note that a run ended, written once per interval.
    recovered: crate::throttle::Throttle,
}

impl AcceptFailures {
    /// The first wait after a failed accept.
    const FIRST: Duration = Duration::from_millis(10);
    /// The longest wait.
    const LAST: Duration = Duration::from_secs(1);

    /// Notes a failure; returns how long to wait before the next try.
    fn failed(&mut self, err: &std::io::Error) -> Duration {
        if self.count == 0 {
            crate::warn_throttled!(self.failed, %err, "accept failed; retrying with backoff up to 1s");
        } else {
            tracing::debug!(%err, failures = self.count + 1, "accept failed again");
        }
        let doublings = u32::try_from(self.count.min(16)).unwrap_or(16);
        self.count += 1;
        Self::FIRST.saturating_mul(1 << doublings).min(Self::LAST)
    }

    /// Notes an accepted connection, ending a run of failures.
    fn recovered(&mut self) {
        if self.count > 0 {
            if let Some(repeated) = self.recovered.occurred() {
                tracing::info!(failures = self.count, repeated, "accepting again");
            }
            self.count = 0;
        }
    }
}

/// Resolves when the gate's watch changes; never without one.
async fn changed(changes: &mut Option<watch::Receiver<u64>>) {
    match changes {
        Some(rx) => {
            let _ = rx.changed().await;
        }
        None => std::future::pending().await,
    }
}

/// Serves plain request-answer endpoints (metrics, control) on `acceptor`
/// until `shutdown`: each request is answered by `answer`, through the one
/// accept loop, with no gate and 100 ms of grace.
pub async fn serve_answers<A, F, Fut>(
    acceptor: A,
    answer: F,
    shutdown: ShutdownSignal,
) -> std::io::Result<()>
where
    A: Acceptor,
    F: Fn(http::Request<hyper::body::Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = http::Response<BoxBody>> + Send + 'static,
{
    serve(
        acceptor,
        Arc::new(Open),
        move |stream, shutdown| {
            let answer = answer.clone();
            async move {
                let service = hyper::service::service_fn(move |req| {
                    let answer = answer.clone();
                    async move { Ok::<_, std::convert::Infallible>(answer(req).await) }
                });
                let fin = ClientFin::HalfClose.on(&stream);
                serve_http(Local::new(), stream, service, fin, shutdown).await;
            }
        },
        shutdown,
        Duration::from_millis(100),
    )
    .await
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    /// An acceptor out of descriptors: every accept fails, counted.
    struct OutOfDescriptors(Arc<AtomicU64>);

    impl Acceptor for OutOfDescriptors {
        type Stream = tokio::io::DuplexStream;

        async fn accept(&mut self) -> std::io::Result<Self::Stream> {
            self.0.fetch_add(1, Ordering::SeqCst);
            // EMFILE, as accept(2) says when the process is out of them.
            Err(std::io::Error::from_raw_os_error(24))
        }
        fn pause(&mut self) -> std::io::Result<()> {
            Ok(())
        }
        fn resume(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test(start_paused = true)]
    async fn failing_accepts_back_off_to_one_try_a_second_and_stop_on_shutdown() {
        let tries = Arc::new(AtomicU64::new(0));
        let (stop, shutdown) = ShutdownSignal::new();
        let server = tokio::spawn(serve(
            OutOfDescriptors(tries.clone()),
            Arc::new(Open),
            |_stream, _shutdown| async {},
            shutdown,
            Duration::from_millis(100),
        ));
        tokio::time::sleep(Duration::from_secs(60)).await;
        // 10, 20, ..., 640 ms, then 1 s apart: 8 tries in the first 1.27 s
        // and one a second after (a fixed 10 ms would be 6,000).
        let seen = tries.load(Ordering::SeqCst);
        assert!((60..=70).contains(&seen), "{seen} tries in 60 s");
        stop.send(true).unwrap();
        // Shutdown ends a backoff wait at once.
        tokio::time::timeout(Duration::from_millis(1), server)
            .await
            .expect("the server stops within its backoff wait")
            .unwrap()
            .unwrap();
    }

    /// An acceptor whose descriptors come and go: every other accept fails.
    struct Flickering(bool);

    impl Acceptor for Flickering {
        type Stream = tokio::io::DuplexStream;

        async fn accept(&mut self) -> std::io::Result<Self::Stream> {
            self.0 = !self.0;
            match self.0 {
                true => Err(std::io::Error::from_raw_os_error(24)),
                false => Ok(tokio::io::duplex(1).0),
            }
        }
        fn pause(&mut self) -> std::io::Result<()> {
            Ok(())
        }
        fn resume(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Log lines written while `run` runs, one string each.
    async fn logged(run: impl Future<Output = ()>) -> Vec<String> {
        let lines = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = lines.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .with_ansi(false)
            .with_writer(move || Sink(sink.clone()))
            .finish();
        let _guard = tracing::subscriber::set_default(subscriber);
        run.await;
        let bytes = lines.lock().unwrap().clone();
        String::from_utf8_lossy(&bytes)
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Where [`logged`] writes.
    struct Sink(Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test(start_paused = true)]
    async fn accepts_failing_on_and_off_for_a_minute_log_one_warning_per_10_s_with_the_count() {
        let lines = logged(async {
            let (stop, shutdown) = ShutdownSignal::new();
            let server = tokio::spawn(serve(
                Flickering(false),
                Arc::new(Open),
                |_stream, _shutdown| async {},
                shutdown,
                Duration::from_millis(100),
            ));
            tokio::time::sleep(Duration::from_secs(60)).await;
            stop.send(true).unwrap();
            server.await.unwrap().unwrap();
        })
        .await;
        let warned: Vec<_> = lines
            .iter()
            .filter(|l| l.contains("accept failed"))
            .collect();
        // One at 0, 10, ..., 50 s (thousands of failures in the minute).
        assert_eq!(warned.len(), 6, "{warned:#?}");
        assert!(warned[1].contains("repeated="), "{}", warned[1]);
        let recovered = lines
            .iter()
            .filter(|l| l.contains("accepting again"))
            .count();
        assert_eq!(recovered, 6);
    }

    #[test]
    fn accept_backoff_doubles_from_10_ms_to_1_s_and_starts_over_after_a_success() {
        let mut failures = AcceptFailures::default();
        let err = std::io::Error::from_raw_os_error(24);
        let waits: Vec<_> = (0..10).map(|_| failures.failed(&err).as_millis()).collect();
        assert_eq!(waits, [10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000]);
        failures.recovered();
        assert_eq!(failures.failed(&err).as_millis(), 10);
    }
}
