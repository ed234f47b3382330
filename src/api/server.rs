//! The HTTP server of the control plane: hyper over a TCP listener, each
//! request guarded, routed, and answered with JSON; a stop signal ends the
//! accept loop and every proxy.

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;

use super::error::ApiError;
use super::routes::{Reply, route};
/// The state every request shares, reachable here too (it lives in
/// [`super::state`], below both the routes and the server).
pub use super::state::Api;
use crate::http::ShutdownSignal;

fn respond(
    status: StatusCode,
    content_type: Option<&'static str>,
    body: String,
) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    *resp.status_mut() = status;
    if let Some(ct) = content_type {
        resp.headers_mut()
            .insert(http::header::CONTENT_TYPE, HeaderValue::from_static(ct));
    }
    resp
}

fn error_response(err: &ApiError) -> Response<Full<Bytes>> {
    let mut resp = respond(err.status, Some("application/json"), err.body());
    if err.status == StatusCode::UNAUTHORIZED {
        resp.headers_mut().insert(
            http::header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer"),
        );
    }
    resp
}

/// Answers one request.
pub async fn handle(api: Arc<Api>, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let answer = async {
        api.guard.admit(&parts)?;
        let body = api.guard.body(&parts, body).await?;
        let (path, query) = (parts.uri.path(), parts.uri.query());
        route(&api, &parts.method, path, query, body).await
    }
    .await;
    tracing::debug!(method = %parts.method, path = parts.uri.path(), ok = answer.is_ok(), "api request");
    let mut response = match answer {
        Ok(Reply::Json(status, body)) => respond(status, Some("application/json"), body),
        Ok(Reply::Empty) => respond(StatusCode::NO_CONTENT, None, String::new()),
        Ok(Reply::Text(ct, body)) => respond(StatusCode::OK, Some(ct), body),
        Err(err) => error_response(&err),
    };
    // After the operation: a drill reads when its change took effect here,
    // and every answer measures the two clocks' offset.
    response
        .headers_mut()
        .insert(TIME_HEADER, HeaderValue::from(crate::clock::unix_micros()));
    response
}

/// firedrill's extension: every answer says when it was made, in
/// microseconds since the Unix epoch on this host's wall clock.
pub const TIME_HEADER: &str = "x-firedrill-time-us";

/// How long a client has to finish a TLS handshake.
const HANDSHAKE_TIMEOUT: crate::clock::Duration = crate::clock::Duration::from_secs(10);

/// Serves the API on `listener` until `shutdown` fires; then stops every
/// proxy. With `tls`, every connection first shakes hands (a client refused,
/// an untrusted or missing client certificate, is logged with the cause).
pub async fn serve(
    listener: TcpListener,
    api: Arc<Api>,
    tls: Option<Arc<rustls::ServerConfig>>,
    mut shutdown: ShutdownSignal,
) {
    let tls = tls.map(tokio_rustls::TlsAcceptor::from);
    let refused = Arc::new(crate::throttle::Throttle::new());
    let mut connections = tokio::task::JoinSet::new();
    let reaper = tokio::spawn({
        let api = api.clone();
        async move { api.registry.reap_leases().await }
    });
    loop {
        while connections.try_join_next().is_some() {}
        let accepted = tokio::select! {
            biased;
            _ = shutdown.wait() => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(err) => {
                static FAILED: crate::throttle::Throttle = crate::throttle::Throttle::new();
                crate::warn_throttled!(FAILED, %err, "api accept failed");
                crate::clock::sleep(crate::clock::Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (api, tls, refused) = (api.clone(), tls.clone(), refused.clone());
        connections.spawn(async move {
            let Some(tls) = tls else {
                return serve_api(api, stream).await;
            };
            let peer = stream.peer_addr().map(|a| a.to_string()).unwrap_or_default();
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.accept(stream)).await {
                Ok(Ok(stream)) => serve_api(api, stream).await,
                Ok(Err(err)) => {
                    crate::warn_throttled!(refused, %peer, %err, "api TLS handshake refused");
                }
                Err(_) => {
                    crate::warn_throttled!(refused, %peer, "api TLS handshake not finished within 10s");
                }
            }
        });
    }
    drop(listener);
    connections.abort_all();
    while connections.join_next().await.is_some() {}
    reaper.abort();
    api.registry.stop_all().await;
}

/// Serves the API's HTTP/1.1 on one connection.
async fn serve_api<S>(api: Arc<Api>, stream: S)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |req| {
        let api = api.clone();
        async move { Ok::<_, std::convert::Infallible>(handle(api, req).await) }
    });
    if let Err(err) = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .serve_connection(TokioIo::new(stream), service)
        .await
    {
        tracing::trace!(%err, "api connection ended with an error");
    }
}
