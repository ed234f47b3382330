//! Maps method and path to a registry operation, and its result to
//! Toxiproxy's status codes and bodies.

use bytes::Bytes;
use http::{Method, StatusCode};
use serde::de::DeserializeOwned;

use super::error::ApiError;
use super::json::Folded;
use super::proxy::ProxyInput;
use super::state::Api;
use crate::metrics::{Exposition, MetricSource};

/// The Toxiproxy API version reported by `GET /version`: clients compare
/// it with 2.6.0 to choose PATCH over POST for updates, and this server
/// answers the API of Toxiproxy 2.12.
pub const TOXIPROXY_API_VERSION: &str = "2.12.0";

/// A successful answer.
#[derive(Debug)]
pub enum Reply {
    /// JSON with a status.
    Json(StatusCode, String),
    /// No body (204).
    Empty,
    /// A body of another type.
    Text(&'static str, String),
}

/// A body as Toxiproxy's Go decoder reads it (see [`super::json`]).
fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let Folded(value) = serde_json::from_slice(body).map_err(ApiError::bad_body)?;
    serde_json::from_value(value).map_err(ApiError::bad_body)
}

fn json<T: serde::Serialize>(status: StatusCode, value: &T) -> Result<Reply, ApiError> {
    serde_json::to_string(value)
        .map(|s| Reply::Json(status, s))
        .map_err(|e| ApiError::internal(e.to_string()))
}

fn not_allowed() -> ApiError {
    ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "method not allowed")
}

/// A path segment with its `%XX` escapes decoded, as Go's `net/http`
/// decodes Toxiproxy's paths (so `/proxies/with%20space` names the proxy
/// `with space`). Decoded per segment, so `%2F` stays inside a name.
pub fn decode_segment(segment: &str) -> Result<String, ApiError> {
    let invalid = || {
        ApiError::invalid(format!(
            "path segment {segment:?}: invalid percent-encoding"
        ))
    };
    let raw = segment.as_bytes();
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'%' {
            let hex = raw
                .get(i + 1..i + 3)
                .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
                .ok_or_else(invalid)?;
            let digit = |d: u8| (d as char).to_digit(16).unwrap_or(0) as u8;
            out.push(digit(hex[0]) * 16 + digit(hex[1]));
            i += 3;
        } else {
            out.push(raw[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| invalid())
}

/// The body of `POST /proxies/NAME/lease`.
#[derive(Debug, serde::Deserialize)]
struct LeaseInput {
    /// Milliseconds from now.
    lease_ms: Option<u64>,
}

/// `since` and `limit` of `GET /proxies/NAME/records?since=N&limit=M`.
fn records_query(query: Option<&str>) -> Result<(u64, usize), ApiError> {
    let (mut since, mut limit) = (0, super::journal::PAGE);
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let number = || {
            value.parse::<u64>().map_err(|_| {
                ApiError::invalid(format!("{key}: must be a whole number, got {value:?}"))
            })
        };
        match key {
            "since" => since = number()?,
            "limit" => limit = number()?.min(super::journal::PAGE as u64) as usize,
            _ => {
                return Err(ApiError::invalid(format!(
                    "{key}: unknown query parameter (records takes since and limit)"
                )));
            }
        }
    }
    Ok((since, limit))
}

/// firedrill's extensions for a drill on another host: a proxy's request
/// records, and the renewal of its leased toxics; `None` for any other
/// path.
async fn agent_route(
    api: &Api,
    method: &Method,
    segments: &[&str],
    query: Option<&str>,
    body: &[u8],
) -> Option<Result<Reply, ApiError>> {
    let registry = &api.registry;
    let ok = StatusCode::OK;
    Some(match (segments, method) {
        (["proxies", name, "records"], &Method::GET) => match records_query(query) {
            Ok((since, limit)) => match registry.records(name, since, limit).await {
                Ok(page) => json(ok, &page),
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        },
        (["proxies", _, "records"], _) => Err(not_allowed()),
        (["proxies", name, "lease"], &Method::POST) => renew(api, name, body).await,
        (["proxies", _, "lease"], _) => Err(not_allowed()),
        _ => return None,
    })
}

/// `POST /proxies/NAME/lease {"lease_ms": N}`: the proxy's leased toxics,
/// now held for N ms more.
async fn renew(api: &Api, name: &str, body: &[u8]) -> Result<Reply, ApiError> {
    let input: LeaseInput = parse(body)?;
    let lease = input
        .lease_ms
        .ok_or_else(|| ApiError::missing("lease_ms"))?;
    let toxics = api
        .registry
        .renew_lease(name, crate::clock::Duration::from_millis(lease))
        .await?;
    json(
        StatusCode::OK,
        &serde_json::json!({ "toxics": toxics, "lease_ms": lease }),
    )
}

/// Answers one request whose body has been read and checked.
pub async fn route(
    api: &Api,
    method: &Method,
    path: &str,
    query: Option<&str>,
    body: Bytes,
) -> Result<Reply, ApiError> {
    let decoded = path
        .trim_matches('/')
        .split('/')
        .map(decode_segment)
        .collect::<Result<Vec<String>, ApiError>>()?;
    let segments: Vec<&str> = decoded.iter().map(String::as_str).collect();
    let registry = &api.registry;
    let ok = StatusCode::OK;
    if let Some(answer) = agent_route(api, method, &segments, query, &body).await {
        return answer;
    }
    match (segments.as_slice(), method) {
        (["version"], &Method::GET) => Ok(Reply::Text(
            "application/json;charset=utf-8",
            format!(
                "{{\"version\": \"{TOXIPROXY_API_VERSION}\", \"firedrill\": \"{}\"}}\n",
                env!("CARGO_PKG_VERSION")
            ),
        )),
        (["version"], _) => Err(not_allowed()),
        (["metrics"], &Method::GET) => {
            let mut out = Exposition::default();
            for proxy in registry.metrics().await {
                proxy.collect(&mut out);
            }
            api.metrics.collect(&mut out);
            Ok(Reply::Text(
                "text/plain; version=0.0.4; charset=utf-8",
                out.render(),
            ))
        }
        (["metrics"], _) => Err(not_allowed()),
        (["reset"], &Method::POST) => registry.reset().await.map(|_| Reply::Empty),
        (["reset"], _) => Err(not_allowed()),
        (["proxies"], &Method::GET) => json(ok, &registry.list().await),
        (["proxies"], &Method::POST) => {
            let input: ProxyInput = parse(&body)?;
            json(StatusCode::CREATED, &registry.create(input).await?)
        }
        (["proxies"], _) => Err(not_allowed()),
        (["populate"], &Method::POST) => {
            // Toxiproxy answers every populate with the proxies it made,
            // errors too: `{"error", "status", "proxies"}`.
            let (proxies, result) = match parse::<Vec<ProxyInput>>(&body) {
                Ok(inputs) => registry.populate(inputs).await,
                Err(e) => (Vec::new(), Err(e)),
            };
            let mut answer = serde_json::json!({ "proxies": proxies });
            let status = match result {
                Ok(()) => StatusCode::CREATED,
                Err(e) => {
                    answer["error"] = e.message.into();
                    answer["status"] = e.status.as_u16().into();
                    e.status
                }
            };
            json(status, &answer)
        }
        (["populate"], _) => Err(not_allowed()),
        (["proxies", name], m) => match *m {
            Method::GET => json(ok, &registry.get(name).await?),
            Method::POST | Method::PATCH => json(ok, &registry.update(name, parse(&body)?).await?),
            Method::DELETE => registry.delete(name).await.map(|_| Reply::Empty),
            _ => Err(not_allowed()),
        },
        (["proxies", name, "toxics"], m) => match *m {
            Method::GET => json(ok, &registry.toxics(name).await?),
            Method::POST => {
                // 404 for an unknown proxy comes before a body complaint.
                registry.exists(name).await?;
                json(ok, &registry.add_toxic(name, parse(&body)?).await?)
            }
            _ => Err(not_allowed()),
        },
        (["proxies", name, "toxics", toxic], m) => match *m {
            Method::GET => json(ok, &registry.toxic(name, toxic).await?),
            Method::POST | Method::PATCH => {
                registry.toxic(name, toxic).await?;
                json(
                    ok,
                    &registry.update_toxic(name, toxic, parse(&body)?).await?,
                )
            }
            Method::DELETE => registry
                .delete_toxic(name, toxic)
                .await
                .map(|_| Reply::Empty),
            _ => Err(not_allowed()),
        },
        _ => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no such endpoint: {path}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::guard::{BODY_LIMIT, Guard};

    async fn call(api: &Api, method: Method, path: &str, body: &str) -> Result<Reply, ApiError> {
        let (path, query) = match path.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (path, None),
        };
        route(api, &method, path, query, Bytes::from(body.to_string())).await
    }

    #[tokio::test]
    async fn field_names_match_case_insensitively_and_the_last_duplicate_wins_as_in_go() {
        let api = Api::new(Guard::new(None, BODY_LIMIT), 1);
        let body = r#"{"NAME":"first","Name":"a","Upstream":"127.0.0.1:9","ENABLED":true,"enabled":false}"#;
        let Reply::Json(status, made) = call(&api, Method::POST, "/proxies", body).await.unwrap()
        else {
            panic!("a JSON answer");
        };
        assert_eq!(status, StatusCode::CREATED);
        let made: serde_json::Value = serde_json::from_str(&made).unwrap();
        assert_eq!(
            (&made["name"], &made["upstream"], &made["enabled"]),
            (&"a".into(), &"127.0.0.1:9".into(), &false.into())
        );
        let toxic = r#"{"Type":"latency","stream":"downstream","STREAM":"UpStream","Attributes":{"LATENCY":5,"latency":7,"Jitter":1}}"#;
        let Reply::Json(_, t) = call(&api, Method::POST, "/proxies/a/toxics", toxic)
            .await
            .unwrap()
        else {
            panic!("a JSON answer");
        };
        let t: serde_json::Value = serde_json::from_str(&t).unwrap();
        assert_eq!(t["stream"], "UpStream");
        assert_eq!(
            t["attributes"],
            serde_json::json!({"latency": 7, "jitter": 1})
        );
        let patch = r#"{"attributes":{"latency":1,"LATENCY":9},"Toxicity":0.5}"#;
        let Reply::Json(_, t) = call(
            &api,
            Method::PATCH,
            "/proxies/a/toxics/latency_UpStream",
            patch,
        )
        .await
        .unwrap() else {
            panic!("a JSON answer");
        };
        let t: serde_json::Value = serde_json::from_str(&t).unwrap();
        assert_eq!(
            (&t["attributes"]["latency"], &t["toxicity"]),
            (&9.into(), &0.5.into())
        );
        api.registry.stop_all().await;
    }

    #[test]
    fn path_segments_decode_percent_escapes_and_refuse_broken_ones() {
        assert_eq!(decode_segment("with%20space").unwrap(), "with space");
        assert_eq!(decode_segment("a%2Fb%c3%a9").unwrap(), "a/bé");
        assert_eq!(decode_segment("plain").unwrap(), "plain");
        for broken in ["%", "%2", "%zz", "%+1", "%ff"] {
            let e = decode_segment(broken).unwrap_err();
            assert_eq!(e.status, http::StatusCode::BAD_REQUEST, "{broken}");
        }
    }
}
