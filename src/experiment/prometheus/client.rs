//! Calls to one Prometheus server's HTTP API (`/api/v1/...`): plain HTTP
//! through firedrill's own pooled client, the source's headers and bearer
//! token on every request, each answer awaited at most the source's
//! timeout. Errors carry Prometheus's own message (`{"error": ...}`).

use std::sync::Arc;

use http::{Method, Request};
use http_body_util::BodyExt;

use crate::experiment::config::prometheus::PrometheusSource;
use crate::http::client::{HttpUpstream, Upstream};
use crate::net::TcpConnector;

/// A client of one source.
pub struct PromClient {
    /// Pooled HTTP/1.1 towards the server.
    http: HttpUpstream<TcpConnector>,
    /// The source: its URL's path prefix, headers, token, timeout.
    source: PrometheusSource,
    /// The path prefix of the URL (`/prometheus`), empty for none.
    prefix: String,
}

impl std::fmt::Debug for PromClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromClient")
            .field("url", &self.source.url)
            .finish_non_exhaustive()
    }
}

/// One series of a `query_range` answer: its labels and its samples
/// (Unix seconds, value).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// `{job="checkout", le="0.3"}` as Prometheus wrote the labels.
    pub labels: String,
    /// The samples, in time order.
    pub samples: Vec<(f64, f64)>,
}

impl PromClient {
    /// A client of `source`, its address resolved now.
    pub async fn new(source: &PrometheusSource) -> Result<PromClient, String> {
        let rest = source.url.strip_prefix("http://").unwrap_or(&source.url);
        let (authority, prefix) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].to_string()),
            None => (rest, String::new()),
        };
        let dial = if authority.contains(':') {
            authority.to_string()
        } else {
            format!("{authority}:80")
        };
        let addr = crate::net::resolve(&dial)
            .await
            .map_err(|e| format!("{}: cannot resolve: {e}", source.url))?;
        Ok(PromClient {
            http: HttpUpstream::new(Arc::new(TcpConnector { addr }), authority),
            source: source.clone(),
            prefix,
        })
    }

    /// `GET /api/v1/status/buildinfo`: Prometheus answers, and lets the
    /// drill in (its headers and token are accepted). Its version, or why
    /// not.
    pub async fn check(&self) -> Result<String, String> {
        let data = self.api("/api/v1/status/buildinfo").await?;
        Ok(data
            .get("version")
            .and_then(|v| v.as_str())
            .unwrap_or("unknown")
            .to_string())
    }

    /// `query_range` of `promql` from `start` to `end` (Unix seconds) at
    /// `step` seconds: every series with its samples; an error in
    /// Prometheus's own words.
    pub async fn query_range(
        &self,
        promql: &str,
        start: f64,
        end: f64,
        step: f64,
    ) -> Result<Vec<Series>, String> {
        let path = format!(
            "/api/v1/query_range?query={}&start={start:.3}&end={end:.3}&step={step}",
            encode(promql)
        );
        let data = self.api(&path).await?;
        let kind = data.get("resultType").and_then(|v| v.as_str());
        if kind != Some("matrix") {
            return Err(format!(
                "Prometheus answered a {} result, expected a range of samples",
                kind.unwrap_or("missing")
            ));
        }
        let result = data
            .get("result")
            .and_then(|r| r.as_array())
            .cloned()
            .unwrap_or_default();
        Ok(result.iter().map(series).collect())
    }

    /// An instant `query` of `promql` at Prometheus's now: each series'
    /// labels and value.
    pub async fn query(&self, promql: &str) -> Result<Vec<(String, f64)>, String> {
        let data = self
            .api(&format!("/api/v1/query?query={}", encode(promql)))
            .await?;
        let result = data
            .get("result")
            .and_then(|r| r.as_array())
            .cloned()
            .unwrap_or_default();
        Ok(result
            .iter()
            .filter_map(|v| {
                let labels = series(v).labels;
                let x = v.get("value")?.get(1)?.as_str()?.parse::<f64>().ok()?;
                Some((labels, x))
            })
            .collect())
    }

    /// `GET path`: the answer's `data` when its status is `success`, or
    /// Prometheus's `error` (or the status and body) when not.
    async fn api(&self, path: &str) -> Result<serde_json::Value, String> {
        let mut req = Request::builder()
            .method(Method::GET)
            .uri(format!("{}{path}", self.prefix));
        for (name, value) in &self.source.headers {
            req = req.header(name.as_str(), value.as_str());
        }
        if let Some(token) = &self.source.bearer_token {
            req = req.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let req = req
            .body(crate::http::full(String::new()))
            .map_err(|e| e.to_string())?;
        let answer = async {
            let resp = self
                .http
                .send(req)
                .await
                .map_err(|e| crate::agent::client::chain(&e))?;
            let (parts, body) = resp.into_parts();
            let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
            Ok::<_, String>((parts.status, body))
        };
        let (status, body) = tokio::time::timeout(self.source.timeout, answer)
            .await
            .map_err(|_| {
                format!(
                    "no answer within {}",
                    crate::schema::units::Dur(self.source.timeout)
                )
            })??;
        let json: Option<serde_json::Value> = serde_json::from_slice(&body).ok();
        match json {
            Some(v) if v.get("status").and_then(|s| s.as_str()) == Some("success") => {
                Ok(v.get("data").cloned().unwrap_or_default())
            }
            Some(v) if v.get("error").is_some() => Err(format!(
                "Prometheus: {}",
                v.get("error").and_then(|e| e.as_str()).unwrap_or_default()
            )),
            _ => Err(format!(
                "HTTP {status}, not Prometheus's API: {}",
                String::from_utf8_lossy(&body)
                    .trim()
                    .chars()
                    .take(200)
                    .collect::<String>()
            )),
        }
    }
}

/// One series of a matrix.
fn series(v: &serde_json::Value) -> Series {
    let labels = v
        .get("metric")
        .and_then(|m| m.as_object())
        .map(|m| {
            let pairs: Vec<String> = m.iter().map(|(k, v)| format!("{k}={}", v)).collect();
            format!("{{{}}}", pairs.join(", "))
        })
        .unwrap_or_else(|| "{}".to_string());
    let samples = v
        .get("values")
        .and_then(|s| s.as_array())
        .map(|values| {
            values
                .iter()
                .filter_map(|pair| {
                    let t = pair.get(0)?.as_f64()?;
                    let x = pair.get(1)?.as_str()?.parse::<f64>().ok()?;
                    Some((t, x))
                })
                .collect()
        })
        .unwrap_or_default();
    Series { labels, samples }
}

/// `text` percent-encoded for a query string (unreserved bytes kept).
fn encode(text: &str) -> String {
    crate::http::grpc::percent_encoded(text, |b| b.is_ascii_alphanumeric() || b"-_.~".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::encode;

    #[test]
    fn promql_is_percent_encoded_whole_so_prometheus_gets_it_as_written() {
        assert_eq!(
            encode("rate(x{a=\"b c\"}[5s]) > 0.3"),
            "rate%28x%7Ba%3D%22b%20c%22%7D%5B5s%5D%29%20%3E%200.3"
        );
    }
}
