//! The client side towards a dependency: an HTTP/1.1 client with a
//! connection pool over any [`Connector`], so the same code calls real
//! sockets and in-memory pipes (the defense line, the load generator, the
//! experiment's wiring).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Request, Response, Uri};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::body::{BoxBody, BoxError};
use crate::net::{Connector, Transport};

/// A boxed future, for the object-safe [`Upstream`].
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Sends requests to one dependency.
pub trait Upstream: Send + Sync + 'static {
    /// Sends `req` (origin-form URI) and returns the response head.
    fn send(&self, req: Request<BoxBody>) -> BoxFuture<'_, Result<Response<Incoming>, SendError>>;
}

/// Why a request got no response head: the dependency could not be
/// reached, or the exchange broke.
#[derive(Debug)]
pub struct SendError {
    /// The connection could not be opened (the request never left).
    connect: bool,
    /// What went wrong.
    cause: BoxError,
}

impl SendError {
    /// The connection could not be opened.
    pub fn connect(cause: impl Into<BoxError>) -> SendError {
        SendError {
            connect: true,
            cause: cause.into(),
        }
    }

    /// The connection broke (or the exchange failed) after it was open.
    pub fn broken(cause: impl Into<BoxError>) -> SendError {
        SendError {
            connect: false,
            cause: cause.into(),
        }
    }

    /// Whether the connection could not be opened.
    pub fn is_connect(&self) -> bool {
        self.connect
    }
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.cause.fmt(f)
    }
}

impl std::error::Error for SendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause.source()
    }
}

impl From<hyper_util::client::legacy::Error> for SendError {
    fn from(error: hyper_util::client::legacy::Error) -> SendError {
        SendError {
            connect: error.is_connect(),
            cause: Box::new(error),
        }
    }
}

/// A server's request handler, called in-process (no HTTP/1.1 in between):
/// in virtual time the load generator calls firedrill's defense line
/// through it.
pub trait Handler: Send + Sync + 'static {
    /// Answers `req` (origin-form URI, the headers as the server's HTTP
    /// side would hand them over) as the server would.
    fn answer(&self, req: Request<BoxBody>) -> BoxFuture<'_, Response<BoxBody>>;
}

/// A pooled HTTP/1.1 client (HTTP/2 towards an `h2c://` service) that
/// always dials through one connector.
pub struct HttpUpstream<C: Connector> {
    /// The pooled client.
    client: Client<Dial<C>, BoxBody>,
    /// What it dials through.
    dial: Dial<C>,
    /// `scheme://authority` put in front of each request's path.
    base: String,
    /// The path prefix and `Host` of a user's service (none by default).
    rewrite: super::endpoint::Rewrite,
}

impl<C: Connector> std::fmt::Debug for HttpUpstream<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpUpstream")
            .field("base", &self.base)
            .finish()
    }
}

impl<C: Connector> HttpUpstream<C> {
    /// A client for the dependency reached through `connector`; `authority`
    /// is what goes in the `Host` header.
    pub fn new(connector: Arc<C>, authority: &str) -> HttpUpstream<C> {
        let dial = Dial(connector);
        HttpUpstream {
            client: pooled(dial.clone(), false),
            dial,
            base: format!("http://{authority}"),
            rewrite: Default::default(),
        }
    }

    /// The same client, rewriting every request for a user's service (its
    /// path prefix, its `Host`, HTTP/2 for an `h2c://` one).
    pub fn rewriting(mut self, rewrite: super::endpoint::Rewrite) -> HttpUpstream<C> {
        if rewrite.http2() {
            self.client = pooled(self.dial.clone(), true);
        }
        // An HTTP/2 connection ALPN chose carries the scheme as `:scheme`.
        if rewrite.tls() {
            self.base = self.base.replacen("http://", "https://", 1);
        }
        self.rewrite = rewrite;
        self
    }
}

impl<C: Connector> Upstream for HttpUpstream<C> {
    fn send(
        &self,
        mut req: Request<BoxBody>,
    ) -> BoxFuture<'_, Result<Response<Incoming>, SendError>> {
        self.rewrite.prepare(&mut req);
        let path = req
            .uri()
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/");
        if let Ok(uri) = format!("{}{}", self.base, path).parse::<Uri>() {
            *req.uri_mut() = uri;
        }
        let sent = self.client.request(req);
        Box::pin(async move { Ok(sent.await?) })
    }
}

/// The pooled client over `dial`: HTTP/1.1, or HTTP/2 from the first
/// byte (prior knowledge).
fn pooled<C: Connector>(dial: Dial<C>, http2: bool) -> Client<Dial<C>, BoxBody> {
    Client::builder(TokioExecutor::new())
        .timer(TokioTimer::new())
        .pool_timer(TokioTimer::new())
        .pool_max_idle_per_host(usize::MAX)
        .http2_only(http2)
        .build(dial)
}

/// The connector as a `tower::Service<Uri>` for hyper-util's client.
struct Dial<C>(Arc<C>);

impl<C> Clone for Dial<C> {
    fn clone(&self) -> Self {
        Dial(self.0.clone())
    }
}

impl<C: Connector> tower_service::Service<Uri> for Dial<C> {
    type Response = TokioIo<Pooled<C::Stream>>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _uri: Uri) -> Self::Future {
        let connector = self.0.clone();
        Box::pin(async move {
            let stream = connector
                .connect()
                .await
                .map_err(|e| -> BoxError { Box::new(e) })?;
            Ok(TokioIo::new(Pooled(stream)))
        })
    }
}

/// A pooled stream: any transport, told to hyper-util as a plain connection.
struct Pooled<S>(S);

impl<S: Transport> Connection for Pooled<S> {
    fn connected(&self) -> Connected {
        // An `https://` service whose ALPN chose `h2` is spoken to in
        // HTTP/2 on that connection.
        if self.0.alpn_h2() {
            Connected::new().negotiated_h2()
        } else {
            Connected::new()
        }
    }
}

impl<S: Transport> AsyncRead for Pooled<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: Transport> AsyncWrite for Pooled<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

/// `host:port` from `host:port` or `http://host:port[/]`.
pub fn authority(upstream: &str) -> &str {
    upstream
        .strip_prefix("http://")
        .unwrap_or(upstream)
        .trim_end_matches('/')
}
