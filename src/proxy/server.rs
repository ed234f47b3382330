//! The accept loop shared by both modes: refuses connections while a
//! `refuse` fault is active (re-checked when the fault list is replaced), hands each connection to a handler task, and
//! shuts down gracefully (in-flight connections get a grace period).

use std::future::Future;
use std::sync::Arc;

use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::clock::{self, Duration};
use crate::fault::FaultPlan;
use crate::net::Acceptor;

/// Tells connection handlers that the proxy is shutting down.
#[derive(Debug, Clone)]
pub struct ShutdownSignal(watch::Receiver<bool>);

impl ShutdownSignal {
    /// A signal and the trigger that fires it.
    pub fn new() -> (watch::Sender<bool>, ShutdownSignal) {
        let (tx, rx) = watch::channel(false);
        (tx, ShutdownSignal(rx))
    }

    /// Waits until shutdown starts (at once if it already has, or if the
    /// trigger is gone).
    pub async fn wait(&mut self) {
        let _ = self.0.wait_for(|stop| *stop).await;
    }

    /// Whether shutdown has started.
    pub fn is_set(&self) -> bool {
        *self.0.borrow()
    }
}

/// Runs the accept loop until `shutdown` fires, then gives in-flight
/// connections up to `grace` to finish and aborts the rest.
///
/// Returns an error only if the listener cannot be rebound after a `refuse`
/// window.
pub async fn serve<A, H, F>(
    mut acceptor: A,
    plan: Arc<FaultPlan>,
    handler: H,
    mut shutdown: ShutdownSignal,
    grace: Duration,
) -> std::io::Result<()>
where
    A: Acceptor,
    H: Fn(A::Stream, ShutdownSignal) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    let mut connections = JoinSet::new();
    // The fault list may be replaced at runtime (a `refuse` added).
    let mut changes = plan.subscribe();
    loop {
        while connections.try_join_next().is_some() {}
        let (refusing, next_change) = plan.refusing();
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
            _ = changes.changed() => continue,
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

/// Serves HTTP/1.1 on one accepted connection with `service` until the
/// client closes it or `shutdown` fires (then gracefully: the request in
/// flight finishes, keep-alive ends). Every HTTP server of firedrill (the
/// proxy's HTTP mode, the fixture target, the defense line, /metrics)
/// serves its connections through this.
///
/// `alongside` is polled in the same task until the connection ends: the
/// HTTP proxy drives its upstream connection there, so a request and its
/// forwarded copy never wake another task; the other servers pass
/// `std::future::pending()`.
pub async fn serve_http<I, S, E>(
    io: I,
    service: S,
    mut shutdown: ShutdownSignal,
    alongside: impl std::future::Future<Output = ()> + Send,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    S: hyper::service::Service<
            http::Request<hyper::body::Incoming>,
            Response = http::Response<crate::proxy::http::body::ProxyBody>,
            Error = E,
        > + Send
        + 'static,
    S::Future: Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    let served = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .keep_alive(true)
        .serve_connection(hyper_util::rt::TokioIo::new(io), service);
    tokio::pin!(served, alongside);
    let mut alongside_done = false;
    let mut shutting_down = false;
    let result = loop {
        tokio::select! {
            biased;
            r = served.as_mut() => break r,
            _ = &mut alongside, if !alongside_done => alongside_done = true,
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
