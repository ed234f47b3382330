//! What every request passes before it reaches a route: browsers are
//! refused (a web page must not flip faults with a cross-site request), a
//! configured bearer token is required, and bodies are size-limited.

use bytes::Bytes;
use http::StatusCode;
use http::request::Parts;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;

use super::error::ApiError;
use crate::clock::Duration;

/// Largest request body accepted (a populate of a few hundred proxies).
pub const BODY_LIMIT: usize = 64 * 1024;

/// Longest wait for a whole request body once its head arrived: the same
/// 30 s hyper gives the head, so a body shorter than its Content-Length
/// does not hold a connection forever.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// The checks configured for a server.
#[derive(Clone)]
pub struct Guard {
    /// Required as `Authorization: Bearer <token>`; `None`: no token.
    token: Option<String>,
    /// Largest body, in bytes.
    body_limit: usize,
    /// Longest wait for the whole body (408 past it).
    body_timeout: Duration,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token itself never reaches a log.
        f.debug_struct("Guard")
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .field("body_limit", &self.body_limit)
            .field("body_timeout", &self.body_timeout)
            .finish()
    }
}

/// Whether a host name or address given to `--host` is loopback.
pub fn host_is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

/// Whether an `Origin` header names a page served from loopback.
fn origin_is_loopback(origin: &str) -> bool {
    let Some((_, rest)) = origin.split_once("://") else {
        return false; // "null" and the like: a sandboxed or file page
    };
    let authority = rest.split('/').next().unwrap_or("");
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        authority.rsplit_once(':').map_or(authority, |(h, _)| h)
    };
    host_is_loopback(host)
}

/// Compares without stopping at the first different byte.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Guard {
    /// Checks with an optional token and a body limit; bodies time out
    /// after [`BODY_TIMEOUT`].
    pub fn new(token: Option<String>, body_limit: usize) -> Guard {
        Guard {
            token,
            body_limit,
            body_timeout: BODY_TIMEOUT,
        }
    }

    /// 403 for a browser, 401 without the token.
    pub fn admit(&self, parts: &Parts) -> Result<(), ApiError> {
        let header = |name: http::header::HeaderName| {
            parts
                .headers
                .get(name)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        };
        if header(http::header::USER_AGENT).is_some_and(|ua| ua.contains("Mozilla")) {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "User agent not allowed",
            ));
        }
        if let Some(origin) = header(http::header::ORIGIN)
            && !origin_is_loopback(&origin)
        {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                format!("origin not allowed: {origin} is not on loopback"),
            ));
        }
        if let Some(token) = &self.token {
            let given = header(http::header::AUTHORIZATION);
            let ok = given
                .as_deref()
                .and_then(|v| v.strip_prefix("Bearer "))
                .is_some_and(|t| same_secret(t.trim().as_bytes(), token.as_bytes()));
            if !ok {
                return Err(ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    "missing or wrong token: send Authorization: Bearer <token>",
                ));
            }
        }
        Ok(())
    }

    /// Reads the body, 413 past the limit (at once when Content-Length
    /// says so), 408 when it is not all there within the body timeout.
    pub async fn body(&self, parts: &Parts, body: Incoming) -> Result<Bytes, ApiError> {
        let too_large = || {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("request body larger than {} bytes", self.body_limit),
            )
        };
        let declared = parts
            .headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.body_limit as u64) {
            return Err(too_large());
        }
        let read = tokio::time::timeout(
            self.body_timeout,
            Limited::new(body, self.body_limit).collect(),
        );
        let Ok(collected) = read.await else {
            return Err(ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "request body not received within {}s",
                    self.body_timeout.as_secs_f64()
                ),
            ));
        };
        match collected {
            Ok(collected) => Ok(collected.to_bytes()),
            Err(err) if err.is::<http_body_util::LengthLimitError>() => Err(too_large()),
            Err(err) => Err(ApiError::bad_body(err)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_and_origins_are_told_apart_from_others() {
        for h in ["127.0.0.1", "localhost", "::1", "[::1]", "127.3.4.5"] {
            assert!(host_is_loopback(h), "{h}");
        }
        for h in ["0.0.0.0", "10.0.0.1", "example.com", "::"] {
            assert!(!host_is_loopback(h), "{h}");
        }
        assert!(origin_is_loopback("http://localhost:3000"));
        assert!(origin_is_loopback("http://[::1]:8080"));
        assert!(origin_is_loopback("http://127.0.0.1"));
        assert!(!origin_is_loopback("https://evil.example"));
        assert!(!origin_is_loopback("http://localhost.evil.example"));
        assert!(!origin_is_loopback("null"));
    }
}
