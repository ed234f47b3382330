//! What the caller gets: a good response passed on (and kept for stale
//! serving), or the fallbacks in order — stale, backup, static — and
//! otherwise the failed response or a clear error.

use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use super::{DefenseLine, Route};
use crate::clock::{self, Duration};
use crate::defense::fallback::{self, FALLBACK_HEADER, MAX_CACHED_BODY};
use crate::http::body::{BoxBody, boxed, full};
use crate::http::client::Upstream;

impl DefenseLine {
    /// Passes a good response on, keeping a copy for stale serving.
    pub(super) async fn deliver(
        &self,
        route: &Route,
        key: &str,
        resp: Response<Incoming>,
    ) -> Response<BoxBody> {
        // A gRPC answer is not kept: its status rides in trailers a kept
        // body would lose.
        let keep = resp.status().is_success() && !crate::http::grpc::is_grpc(resp.headers());
        let Some(cache) = route.stale.as_ref().filter(|_| keep) else {
            return resp.map(boxed);
        };
        let small = http_body::Body::size_hint(resp.body())
            .upper()
            .is_some_and(|n| n <= MAX_CACHED_BODY as u64);
        if !small {
            return resp.map(boxed);
        }
        let (parts, body) = resp.into_parts();
        match body.collect().await {
            Ok(collected) => {
                let bytes: Bytes = collected.to_bytes();
                cache.store(
                    key,
                    clock::now(),
                    parts.status,
                    &parts.headers,
                    bytes.clone(),
                );
                Response::from_parts(parts, full(bytes))
            }
            Err(_) => fallback::error_response(StatusCode::BAD_GATEWAY, "upstream-error", None),
        }
    }

    /// What the caller gets instead: stale, backup, static, the failed
    /// response itself, or a clear error.
    pub(super) async fn fall_back(
        &self,
        route: &Route,
        key: &str,
        failed: Option<Response<BoxBody>>,
        reason: &'static str,
        retry_after: Option<Duration>,
    ) -> Response<BoxBody> {
        if let Some(resp) = route
            .stale
            .as_ref()
            .and_then(|c| c.serve(key, clock::now()))
        {
            return resp;
        }
        if let Some(backup) = &route.backup
            && let Some(resp) = self.call_backup(route, backup, key).await
        {
            return resp;
        }
        if let Some(s) = route
            .fallback
            .as_ref()
            .and_then(|f| f.static_response.as_ref())
        {
            return fallback::static_response(s);
        }
        match failed {
            Some(resp) => resp,
            None => {
                let status = if reason == "timeout" || reason == "request-timeout" {
                    StatusCode::GATEWAY_TIMEOUT
                } else {
                    StatusCode::SERVICE_UNAVAILABLE
                };
                fallback::error_response(status, reason, retry_after)
            }
        }
    }

    async fn call_backup(
        &self,
        route: &Route,
        backup: &Arc<dyn Upstream>,
        key: &str,
    ) -> Option<Response<BoxBody>> {
        let (method, path) = key.split_once(' ')?;
        let req = Request::builder()
            .method(method)
            .uri(path)
            .body(full(Bytes::new()))
            .ok()?;
        let sent = backup.send(req);
        let resp = match route.timeout {
            Some(t) => tokio::time::timeout(t, sent).await.ok()?.ok()?,
            None => sent.await.ok()?,
        };
        if resp.status().is_server_error() {
            return None;
        }
        let mut resp = resp.map(boxed);
        resp.headers_mut()
            .insert(FALLBACK_HEADER, http::HeaderValue::from_static("backup"));
        Some(resp)
    }
}
