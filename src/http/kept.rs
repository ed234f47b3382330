//! An HTTP/1.1 client that keeps its connections itself, for `firedrill
//! defend`'s plain `http://` dependencies: a request takes a connection
//! that hyper says is ready (or dials one, whose connection task is the
//! only task it spawns), and the connection is offered to the next request
//! as soon as its response head is back. hyper-util's pooled client spawns
//! a task per request to return a connection to its pool and rebuilds each
//! request's URI; this one does neither.
//!
//! Drills keep [`super::client::HttpUpstream`]: which connection a request
//! takes decides which connection-level faults it meets, and their reports
//! stay as they were.

use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use http::header::HOST;
use http::{HeaderValue, Request, Response, Uri};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;

use super::body::BoxBody;
use super::client::{BoxFuture, SendError, Upstream};
use super::endpoint::Rewrite;
use crate::net::Connector;

/// An HTTP/1.1 client over `connector` with connections of its own.
pub struct KeptUpstream<C: Connector> {
    /// What it dials through.
    connector: Arc<C>,
    /// The `Host` header of a request that has none.
    host: HeaderValue,
    /// The path prefix and `Host` of a user's service.
    rewrite: Rewrite,
    /// Every open connection not taken by a request, most recent last (a
    /// connection whose response body is still being read is here too,
    /// not ready yet), with the event loop's thread that drives it: a
    /// request takes only a connection of its own loop ([`crate::loops`]),
    /// so no request wakes another thread.
    kept: Mutex<Vec<(ThreadId, SendRequest<BoxBody>)>>,
}

impl<C: Connector> std::fmt::Debug for KeptUpstream<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeptUpstream")
            .field("host", &self.host)
            .finish()
    }
}

impl<C: Connector> KeptUpstream<C> {
    /// A client for the dependency reached through `connector`; `authority`
    /// is what goes in the `Host` header of a request without one.
    /// `None` when `authority` cannot be a header value, or `rewrite` asks
    /// for HTTP/2 or TLS (those stay on the pooled client).
    pub fn new(connector: Arc<C>, authority: &str, rewrite: Rewrite) -> Option<KeptUpstream<C>> {
        if rewrite.http2() || rewrite.tls() {
            return None;
        }
        Some(KeptUpstream {
            connector,
            host: HeaderValue::from_str(authority).ok()?,
            rewrite,
            kept: Mutex::new(Vec::new()),
        })
    }

    /// This loop's most recent ready connection; closed ones are let go
    /// on the way.
    fn take_ready(&self) -> Option<SendRequest<BoxBody>> {
        let here = std::thread::current().id();
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.retain(|(_, c)| !c.is_closed());
        let ready = kept
            .iter()
            .rposition(|(on, c)| *on == here && c.is_ready())?;
        Some(kept.remove(ready).1)
    }

    /// Offers `connection` to this loop's next requests.
    fn keep(&self, connection: SendRequest<BoxBody>) {
        let here = std::thread::current().id();
        self.kept
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((here, connection));
    }

    /// A new connection; its dispatcher runs in a task of its own.
    async fn dial(&self) -> Result<SendRequest<BoxBody>, SendError> {
        let stream = self.connector.connect().await.map_err(SendError::connect)?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(SendError::connect)?;
        tokio::spawn(async move {
            // The connection's end (closed, broken) reaches the request
            // that was on it; nothing is left to tell here. A `101` hands
            // the connection to whoever upgrades (a WebSocket tunnel).
            let _ = connection.with_upgrades().await;
        });
        Ok(sender)
    }

    /// Sends `req` on a ready connection, or on a new one. A request a
    /// reused connection could not take (closed between the check and the
    /// send, before anything was written) goes once more on a new one.
    async fn exchange(&self, mut req: Request<BoxBody>) -> Result<Response<Incoming>, SendError> {
        let mut reused = self.take_ready();
        loop {
            let fresh = reused.is_none();
            let mut connection = match reused.take() {
                Some(c) => c,
                None => self.dial().await?,
            };
            match connection.try_send_request(req).await {
                Ok(resp) => {
                    self.keep(connection);
                    return Ok(resp);
                }
                Err(mut failed) => match failed.take_message() {
                    Some(unsent) if !fresh => req = unsent,
                    _ => return Err(SendError::broken(failed.into_error())),
                },
            }
        }
    }
}

impl<C: Connector> Upstream for KeptUpstream<C> {
    fn send(
        &self,
        mut req: Request<BoxBody>,
    ) -> BoxFuture<'_, Result<Response<Incoming>, SendError>> {
        self.rewrite.prepare(&mut req);
        if req.uri().scheme().is_some() {
            let path = req.uri().path_and_query().map_or("/", |p| p.as_str());
            if let Ok(origin) = path.parse::<Uri>() {
                *req.uri_mut() = origin;
            }
        }
        req.headers_mut()
            .entry(HOST)
            .or_insert_with(|| self.host.clone());
        Box::pin(self.exchange(req))
    }
}

#[cfg(test)]
#[path = "kept_tests.rs"]
mod tests;
