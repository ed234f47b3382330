//! Fallbacks: the last good response (stale), a canned response (static),
//! and the clear error when there is none. Every fallback is marked.

use std::collections::BTreeMap;
use std::sync::Mutex;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode};
use http_body_util::BodyExt;

use super::config::StaticResponse;
use crate::clock::{Duration, Instant};
use crate::http::body::{BoxBody, full};

pub use crate::http::headers::{FALLBACK_HEADER, FallbackKind, REASON_HEADER};

/// A response kept for serving stale.
#[derive(Debug, Clone)]
struct Cached {
    /// When it was stored.
    at: Instant,
    /// Its status.
    status: StatusCode,
    /// Its headers.
    headers: HeaderMap,
    /// Its body.
    body: Bytes,
}

/// Last good response per request key, bounded in entries.
#[derive(Debug)]
pub struct StaleCache {
    /// How old a response may be and still be served.
    max_stale: Duration,
    /// Entries by request key (method and path with query).
    entries: Mutex<BTreeMap<String, Cached>>,
}

/// Entries kept at most; the oldest go first.
const MAX_ENTRIES: usize = 10_000;

/// Largest body kept for serving stale.
pub const MAX_CACHED_BODY: usize = 1024 * 1024;

impl StaleCache {
    /// An empty cache.
    pub fn new(max_stale: Duration) -> StaleCache {
        StaleCache {
            max_stale,
            entries: Mutex::new(BTreeMap::new()),
        }
    }

    /// Stores a good response.
    pub fn store(
        &self,
        key: &str,
        now: Instant,
        status: StatusCode,
        headers: &HeaderMap,
        body: Bytes,
    ) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= MAX_ENTRIES && !entries.contains_key(key) {
            let oldest = entries
                .iter()
                .min_by_key(|(_, c)| c.at)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                entries.remove(&k);
            }
        }
        entries.insert(
            key.to_string(),
            Cached {
                at: now,
                status,
                headers: headers.clone(),
                body,
            },
        );
    }

    /// The stored response for `key` if younger than `max_stale`, marked.
    pub fn serve(&self, key: &str, now: Instant) -> Option<Response<BoxBody>> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let cached = entries.get(key)?;
        let age = now.saturating_duration_since(cached.at);
        if age > self.max_stale {
            return None;
        }
        let mut resp = Response::new(full(cached.body.clone()));
        *resp.status_mut() = cached.status;
        *resp.headers_mut() = cached.headers.clone();
        resp.headers_mut()
            .insert(FALLBACK_HEADER, HeaderValue::from_static("stale"));
        resp.headers_mut()
            .insert(http::header::AGE, HeaderValue::from(age.as_secs()));
        Some(resp)
    }
}

/// The configured static response, marked.
pub fn static_response(config: &StaticResponse) -> Response<BoxBody> {
    let mut resp = match config.grpc_status {
        Some(status) => crate::http::grpc::failed_call(status, &config.body),
        None => {
            let mut resp = Response::new(full(config.body.clone()));
            *resp.status_mut() = StatusCode::from_u16(config.status).unwrap_or(StatusCode::OK);
            resp
        }
    };
    for (k, v) in &config.headers {
        if let (Ok(k), Ok(v)) = (
            http::HeaderName::from_bytes(k.as_bytes()),
            HeaderValue::from_str(v),
        ) {
            resp.headers_mut().append(k, v);
        }
    }
    resp.headers_mut()
        .insert(FALLBACK_HEADER, HeaderValue::from_static("static"));
    resp
}

/// The answer when nothing else can be served: never an empty success.
pub fn error_response(
    status: StatusCode,
    reason: &'static str,
    retry_after: Option<Duration>,
) -> Response<BoxBody> {
    let mut resp = Response::new(full(format!("firedrill defense: {reason}\n")));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(REASON_HEADER, HeaderValue::from_static(reason));
    if let Some(wait) = retry_after {
        resp.headers_mut().insert(
            http::header::RETRY_AFTER,
            HeaderValue::from(wait.as_secs().max(1)),
        );
    }
    resp
}

/// The line's own answer to a gRPC call, as a gRPC server would give it:
/// an [`error_response`] becomes a trailers-only answer whose status says
/// the same (a timeout DEADLINE_EXCEEDED, a rate limit RESOURCE_EXHAUSTED,
/// any other refusal UNAVAILABLE, which gRPC clients may retry), keeping
/// the reason header; a static fallback's body becomes the message of an
/// answer with status OK, keeping its headers; any other response (a gRPC
/// answer already, or a stale or backup one) passes as it is.
pub async fn for_grpc_caller(resp: Response<BoxBody>) -> Response<BoxBody> {
    if crate::http::grpc::is_grpc(resp.headers()) {
        return resp;
    }
    if resp
        .headers()
        .get(FALLBACK_HEADER)
        .is_some_and(|v| v == "static")
    {
        let (head, body) = resp.into_parts();
        let message = body
            .collect()
            .await
            .map(http_body_util::Collected::to_bytes)
            .unwrap_or_default();
        let mut answer = crate::http::grpc::answered_call(&message);
        for (name, value) in &head.headers {
            if name != http::header::CONTENT_TYPE && name != http::header::CONTENT_LENGTH {
                answer.headers_mut().append(name, value.clone());
            }
        }
        return answer;
    }
    let Some(reason) = resp
        .headers()
        .get(REASON_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
    else {
        return resp;
    };
    let status = match reason.as_str() {
        "timeout" | "request-timeout" => "DEADLINE_EXCEEDED",
        "rate-limited" => "RESOURCE_EXHAUSTED",
        _ => "UNAVAILABLE",
    };
    let status = status.parse().expect("a gRPC status name");
    let mut answer =
        crate::http::grpc::failed_call(status, &format!("firedrill defense: {reason}"));
    for name in [REASON_HEADER, http::header::RETRY_AFTER.as_str()] {
        if let Some(v) = resp.headers().get(name) {
            answer.headers_mut().insert(name, v.clone());
        }
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_line_answers_a_grpc_caller_with_the_grpc_status_its_reason_means() {
        let cases = [
            ("breaker-open", "14"),
            ("bulkhead-full", "14"),
            ("upstream-connect", "14"),
            ("timeout", "4"),
            ("request-timeout", "4"),
            ("rate-limited", "8"),
        ];
        for (reason, code) in cases {
            let resp = for_grpc_caller(error_response(
                StatusCode::SERVICE_UNAVAILABLE,
                reason,
                Some(Duration::from_secs(3)),
            ))
            .await;
            assert_eq!(resp.status(), 200, "{reason}");
            assert_eq!(resp.headers()["grpc-status"], code, "{reason}");
            assert_eq!(
                resp.headers()["grpc-message"],
                format!("firedrill defense: {reason}")
            );
            assert_eq!(resp.headers()[REASON_HEADER], reason);
            assert_eq!(resp.headers()[http::header::RETRY_AFTER], "3");
        }
        let upstream = Response::new(full("from the dependency"));
        assert!(
            !for_grpc_caller(upstream)
                .await
                .headers()
                .contains_key("grpc-status"),
            "an answer that is not the line's own passes as it is"
        );
    }

    #[tokio::test]
    async fn a_static_fallback_reaches_a_grpc_caller_as_its_message_or_as_its_grpc_status() {
        let mut config = StaticResponse {
            status: 200,
            headers: [("x-degraded".to_string(), "1".to_string())].into(),
            body: "empty".to_string(),
            grpc_status: None,
        };
        let answer = for_grpc_caller(static_response(&config)).await;
        assert!(crate::http::grpc::is_grpc(answer.headers()));
        assert_eq!(answer.headers()[FALLBACK_HEADER], "static");
        assert_eq!(answer.headers()["x-degraded"], "1");
        assert_eq!(crate::http::grpc::answered_status(&answer), None);
        let got = answer.into_body().collect().await.unwrap();
        assert_eq!(
            got.trailers().and_then(crate::http::grpc::status_in),
            Some(0)
        );
        assert_eq!(&got.to_bytes()[..], b"\0\0\0\0\x05empty");

        config.grpc_status = Some("NOT_FOUND".parse().unwrap());
        let failed = for_grpc_caller(static_response(&config)).await;
        assert_eq!(crate::http::grpc::answered_status(&failed), Some(5));
        assert_eq!(failed.headers()["grpc-message"], "empty");
        assert_eq!(failed.headers()[FALLBACK_HEADER], "static");
    }

    #[test]
    fn stale_serves_the_last_good_response_until_it_is_too_old() {
        let t0 = Instant::now();
        let cache = StaleCache::new(Duration::from_secs(60));
        assert!(cache.serve("GET /a", t0).is_none());
        cache.store(
            "GET /a",
            t0,
            StatusCode::OK,
            &HeaderMap::new(),
            Bytes::from_static(b"items"),
        );
        let resp = cache.serve("GET /a", t0 + Duration::from_secs(30)).unwrap();
        assert_eq!(resp.headers()[FALLBACK_HEADER], "stale");
        assert_eq!(resp.headers()[http::header::AGE], "30");
        assert!(cache.serve("GET /b", t0).is_none(), "another request key");
        assert!(
            cache
                .serve("GET /a", t0 + Duration::from_secs(61))
                .is_none(),
            "too old"
        );
    }

    #[test]
    fn error_response_names_the_reason_and_is_not_a_success() {
        let resp = error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            "breaker-open",
            Some(Duration::from_millis(2500)),
        );
        assert_eq!(resp.status(), 503);
        assert_eq!(resp.headers()[REASON_HEADER], "breaker-open");
        assert_eq!(resp.headers()[http::header::RETRY_AFTER], "2");
    }
}
