//! Calls to an agent's API over plain HTTP, each with a timeout and timed
//! against the agent's clock ([`ClockSample`]).

use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;

use super::clock::ClockSample;
use crate::clock::{self, Duration, Instant};
use crate::http::client::{HttpUpstream, Upstream};
use crate::net::TcpConnector;
use crate::tls::{ServiceConnector, TlsClient, TlsKeys, TlsOptions};

/// The header a firedrill agent stamps every answer with
/// ([`crate::api::server::TIME_HEADER`]).
const TIME_HEADER: &str = crate::api::server::TIME_HEADER;

/// The longest wait for one answer.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// A call that failed, as the report and errors say it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AgentError(pub String);

/// An answer and its timing.
#[derive(Debug)]
pub struct Answer {
    /// The status.
    pub status: StatusCode,
    /// The whole body.
    pub body: Bytes,
    /// The call, timed.
    pub sample: ClockSample,
}

impl Answer {
    /// The body as JSON, or why not.
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, AgentError> {
        serde_json::from_slice(&self.body)
            .map_err(|e| AgentError(format!("an answer that is not the API's JSON: {e}")))
    }

    /// The error the agent gave (`{"error": ...}`), or the body.
    pub fn error_text(&self) -> String {
        serde_json::from_slice::<serde_json::Value>(&self.body)
            .ok()
            .and_then(|v| v.get("error")?.as_str().map(str::to_string))
            .unwrap_or_else(|| String::from_utf8_lossy(&self.body).trim().to_string())
    }
}

/// A client of one agent's API.
pub struct AgentClient {
    /// Pooled HTTP/1.1 towards the API, over TLS for `https://`.
    http: HttpUpstream<ServiceConnector>,
    /// `host:port` of the API, for messages.
    api: String,
    /// `Authorization: Bearer`, if any.
    token: Option<String>,
    /// The drill's start: call times count from it.
    start: Instant,
}

impl std::fmt::Debug for AgentClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentClient")
            .field("api", &self.api)
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .finish_non_exhaustive()
    }
}

impl AgentClient {
    /// A client of the API at `api` (`http://host:port`, or `https://`
    /// with `tls`: the system's roots when none), resolved now.
    pub async fn new(
        api: &str,
        token: Option<String>,
        tls: Option<TlsClient>,
        start: Instant,
    ) -> Result<AgentClient, AgentError> {
        let (authority, https) = match api.strip_prefix("https://") {
            Some(authority) => (authority, true),
            None => (api.strip_prefix("http://").unwrap_or(api), false),
        };
        let addr = crate::net::resolve(authority)
            .await
            .map_err(|e| AgentError(format!("{api}: cannot resolve: {e}")))?;
        let tls = match (https, tls) {
            (false, _) => None,
            (true, Some(client)) => Some(client),
            (true, None) => Some(
                TlsClient::load(
                    &TlsOptions::default(),
                    std::path::Path::new(""),
                    TlsKeys::yaml("agent.tls"),
                )
                .map_err(|e| AgentError(format!("{api}: {}", e.message)))?,
            ),
        };
        let host = authority
            .rsplit_once(':')
            .map_or(authority, |(host, _)| host);
        let connector = ServiceConnector::new(TcpConnector { addr }, tls.map(|c| (c, host)))
            .map_err(|e| AgentError(format!("{api}: {e}")))?;
        if https {
            // The handshake once, so that a refused one says why (a CA not
            // trusted, an expired certificate, no client certificate).
            connector
                .probe()
                .await
                .map_err(|e| AgentError(format!("{api}: {e}")))?;
        }
        Ok(AgentClient {
            http: HttpUpstream::new(Arc::new(connector), authority),
            api: api.to_string(),
            token,
            start,
        })
    }

    /// Sends `method path` with `body` (JSON), waits at most
    /// [`CALL_TIMEOUT`] for the whole answer.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<Answer, AgentError> {
        let body = body.map(|b| ("application/json", b.to_string()));
        self.send(method, path, body).await
    }

    /// Sends `method path` with `body` (its content type and text), waits
    /// at most [`CALL_TIMEOUT`] for the whole answer.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<(&'static str, String)>,
    ) -> Result<Answer, AgentError> {
        let fail = |why: String| AgentError(format!("{method} {}{path}: {why}", self.api));
        let mut req = Request::builder().method(method.clone()).uri(path);
        if let Some(token) = &self.token {
            req = req.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let (content_type, body) = body.unwrap_or(("", String::new()));
        if !content_type.is_empty() {
            req = req.header(http::header::CONTENT_TYPE, content_type);
        }
        let req = req
            .body(crate::http::full(body))
            .map_err(|e| fail(e.to_string()))?;
        let sent = self.elapsed();
        let local_sent = clock::unix_micros();
        let answer = async {
            let resp = self.http.send(req).await.map_err(|e| chain(&e))?;
            let (parts, body) = resp.into_parts();
            let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
            Ok::<_, String>((parts, body))
        };
        let (parts, body) = tokio::time::timeout(CALL_TIMEOUT, answer)
            .await
            .map_err(|_| {
                fail(format!(
                    "no answer within {}",
                    crate::schema::units::Dur(CALL_TIMEOUT)
                ))
            })?
            .map_err(fail)?;
        let received = self.elapsed();
        let local_received = clock::unix_micros();
        let header = |name| parts.headers.get(name).and_then(|v| v.to_str().ok());
        let exact = header(TIME_HEADER).and_then(|v| v.parse::<u64>().ok());
        let date = header(http::header::DATE.as_str())
            .and_then(httpdate_seconds)
            .map(|s| s * 1_000_000 + 500_000);
        Ok(Answer {
            status: parts.status,
            body,
            sample: ClockSample {
                sent,
                received,
                agent_us: exact.or(date),
                coarse: exact.is_none() && date.is_some(),
                local_us: local_sent / 2 + local_received / 2,
            },
        })
    }

    fn elapsed(&self) -> Duration {
        clock::now().saturating_duration_since(self.start)
    }
}

/// An error with every cause under it: `client error (Connect): tcp
/// connect error: Connection refused (os error 111)`.
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        let next = c.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        cause = c.source();
    }
    text
}

/// Seconds since the Unix epoch of an HTTP date (`Tue, 01 Dec 2026
/// 10:00:00 GMT`, the only form servers send).
fn httpdate_seconds(date: &str) -> Option<u64> {
    let parts: Vec<&str> = date.split_whitespace().collect();
    let [_, day, month, year, time, "GMT"] = parts[..] else {
        return None;
    };
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = months.iter().position(|m| *m == month)? as u64 + 1;
    let (day, year): (u64, u64) = (day.parse().ok()?, year.parse().ok()?);
    let hms: Vec<u64> = time
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [h, m, s] = hms[..] else {
        return None;
    };
    // Days from the epoch to the date (Howard Hinnant's days_from_civil).
    let (y, mo) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y / 400;
    let yoe = y - era * 400;
    let doy = (153 * mo + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = (era * 146_097 + doe).checked_sub(719_468)?;
    Some(days * 86_400 + h * 3600 + m * 60 + s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_http_date_is_read_as_seconds_since_the_epoch() {
        assert_eq!(httpdate_seconds("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(
            httpdate_seconds("Tue, 01 Dec 2026 10:00:01 GMT"),
            Some(1_796_119_201)
        );
        assert_eq!(
            httpdate_seconds("Sun, 29 Feb 2032 23:59:59 GMT"),
            Some(1_961_711_999)
        );
        assert_eq!(httpdate_seconds("yesterday"), None);
        assert_eq!(httpdate_seconds("Tue, 01 Foo 2026 10:00:01 GMT"), None);
    }
}
