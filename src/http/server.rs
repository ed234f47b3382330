//! The accept loop every server of firedrill runs (the fault proxy in both
//! modes, the fixture target, the defense line, /metrics, the API's
//! proxies): a [`Gate`] may close the listener for a while (the proxy's
//! `refuse` fault), each connection gets its own task, and shutdown is
//! graceful (in-flight connections get a grace period). Also the HTTP/1.1
//! connection driver they share.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::watch;
use tokio::task::JoinSet;

use super::body::BoxBody;
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
    mut acceptor: A,
    gate: Arc<G>,
    handler: H,
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
                    connections.spawn(handler(stream, shutdown.clone()));
                }
                Err(err) => {
                    // Out of file descriptors and the like: log, back off, go on.
                    tracing::warn!(%err, "accept failed");
                    clock::sleep(Duration::from_millis(10)).await;
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
/// from one that hung up, so each server says which it expects.
///
/// `firedrill proxy` and `firedrill defend` answer by default (as haproxy
/// does without `option abortonclose`) and take a hang-up with
/// `--abort-on-close` (as nginx and Envoy do); a drill's own servers take
/// a hang-up, since its load generator never half-closes: a FIN there is
/// a caller giving up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientFin {
    /// A half-close: the request is whole, answer it (the fixture target,
    /// plain endpoints, and by default `firedrill proxy` and `defend`); a
    /// client that hung up is noticed when the answer is written.
    HalfClose,
    /// A hang-up: the call in flight is dropped at once (the defense line,
    /// so that a breaker probe whose client left frees its slot; the fault
    /// proxy, so that a blackholed request its client gave up on is
    /// recorded), as nginx does for a proxied request.
    #[default]
    HangUp,
}

/// Serves HTTP/1.1 on one accepted connection with `service` until the
/// client closes it or `shutdown` fires (then gracefully: the request in
/// flight finishes, keep-alive ends). Every HTTP server of firedrill (the
/// proxy's HTTP mode, the fixture target, the defense line, /metrics)
/// serves its connections through this.
pub async fn serve_http<I, S, E>(io: I, service: S, fin: ClientFin, mut shutdown: ShutdownSignal)
where
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
    let served = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .keep_alive(true)
        .half_close(fin == ClientFin::HalfClose)
        .serve_connection(hyper_util::rt::TokioIo::new(io), service)
        // A 101 hands the connection to whoever took its upgrade
        // (`upgrade::tunnel`).
        .with_upgrades();
    tokio::pin!(served);
    let mut shutting_down = false;
    let result = loop {
        tokio::select! {
            biased;
            r = served.as_mut() => break r,
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
                serve_http(stream, service, ClientFin::HalfClose, shutdown).await;
            }
        },
        shutdown,
        Duration::from_millis(100),
    )
    .await
}
