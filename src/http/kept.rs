//! An HTTP/1.1 client that keeps its connections itself, for `firedrill
//! defend`'s plain `http://` dependencies: a request takes a free
//! connection of its own event loop (or dials one) and drives it in its
//! own task ([`super::driven`]: no task per connection, none per request);
//! the connection is offered to the next request when the response's body
//! has been read. hyper-util's pooled client spawns a task per connection
//! and one per request to return a connection to its pool, and rebuilds
//! each request's URI; this one does none of that.
//!
//! Drills keep [`super::client::HttpUpstream`]: which connection a request
//! takes decides which connection-level faults it meets, and their reports
//! stay as they were.

use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use http::header::HOST;
use http::{HeaderValue, Request, Response, Uri};
use hyper_util::rt::TokioIo;

use super::body::BoxBody;
use super::client::{BoxFuture, SendError, Upstream};
use super::driven::{Driven, Home};
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
    /// Every open connection no request has (the free ones, most
    /// recent last), with the event loop's thread that drives it: a request
    /// takes only a connection of its own loop ([`crate::loops`]), so no
    /// request wakes another thread.
    kept: Kept,
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
            kept: Kept::default(),
        })
    }

    /// This loop's most recent free connection; closed ones are let go
    /// on the way.
    fn take_free(&self) -> Option<Driven> {
        let here = std::thread::current().id();
        let mut kept = self.kept.lock();
        kept.retain(|(_, c)| !c.is_closed());
        let free = kept.iter().rposition(|(on, _)| *on == here)?;
        Some(kept.remove(free).1)
    }

    /// A new connection, driven by the requests that use it.
    async fn dial(&self) -> Result<Driven, SendError> {
        let stream = self.connector.connect().await.map_err(SendError::connect)?;
        Driven::handshake(TokioIo::new(stream))
            .await
            .map_err(SendError::connect)
    }

    /// Sends `req` on a free connection, or on a new one. A request a
    /// reused connection could not take (closed before anything was
    /// written) goes once more on a new one.
    async fn exchange(&self, mut req: Request<BoxBody>) -> Result<Response<BoxBody>, SendError> {
        let mut reused = self.take_free();
        loop {
            let fresh = reused.is_none();
            let mut connection = match reused.take() {
                Some(c) => c,
                None => self.dial().await?,
            };
            let sent = match connection.ready().await {
                Ok(()) => connection.send(req).await,
                Err(err) => Err((Some(req), err)),
            };
            match sent {
                Ok(resp) => return Ok(connection.carry(resp, self.kept.clone())),
                Err((Some(unsent), _)) if !fresh => req = unsent,
                Err((_, err)) => return Err(SendError::broken(err)),
            }
        }
    }
}

/// The free connections of a [`KeptUpstream`], each with the thread of the
/// event loop that drives it.
#[derive(Clone, Default)]
struct Kept(Arc<Mutex<Vec<(ThreadId, Driven)>>>);

impl Kept {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(ThreadId, Driven)>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Home for Kept {
    /// Offers `connection` to this loop's next requests.
    fn put_back(&self, connection: Driven) {
        let here = std::thread::current().id();
        self.lock().push((here, connection));
    }
}

impl<C: Connector> Upstream for KeptUpstream<C> {
    fn send(
        &self,
        mut req: Request<BoxBody>,
    ) -> BoxFuture<'_, Result<Response<BoxBody>, SendError>> {
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
