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

/// Serves the API on `listener` until `shutdown` fires; then stops every
/// proxy.
pub async fn serve(listener: TcpListener, api: Arc<Api>, mut shutdown: ShutdownSignal) {
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
        let api = api.clone();
        connections.spawn(async move {
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
        });
    }
    drop(listener);
    connections.abort_all();
    reaper.abort();
    api.registry.stop_all().await;
}
