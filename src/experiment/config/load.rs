//! `load:` in an experiment: the routes sent open-loop (rate, arrivals,
//! ramp, replayed arrival times, the client's timeout, how to tell the
//! service's fallback), or `external`.

use indexmap::IndexMap;
use serde::{Deserialize, Deserializer};

use super::message::Message;
use crate::clock::Duration;
use crate::schema::deserialize_checked;
use crate::schema::units::Dur;

/// One load route: a request sent open-loop at a rate.
#[derive(Debug, Clone)]
pub struct LoadRoute {
    /// Name in expectations and reports.
    pub name: String,
    /// Method.
    pub method: http::Method,
    /// Path with query.
    pub path: String,
    /// Extra headers (a gRPC route's `content-type` and `te` included).
    pub headers: IndexMap<String, String>,
    /// Body (a gRPC route's: its message, framed).
    pub body: bytes::Bytes,
    /// A gRPC call (`request: grpc /package.Service/Method`): its outcome
    /// is the answer's `grpc-status`.
    pub grpc: bool,
    /// A gRPC message written as JSON, and its descriptor set's path as
    /// written: encoded into `body` once the file is read.
    pub json_message: Option<(serde_json::Value, String)>,
    /// Requests per second (unused when `recorded` sends).
    pub rate: f64,
    /// `replay:` as written: send at a recording's arrival times.
    pub replay: Option<ArrivalReplay>,
    /// The recording's arrival times, scaled by its speed, once read.
    pub recorded: Option<std::sync::Arc<[Duration]>>,
    /// Arrival process.
    pub arrivals: Arrivals,
    /// Linear ramp from 0 to `rate` over this long.
    pub ramp: Duration,
    /// The client's own timeout per request.
    pub timeout: Duration,
    /// When the route starts sending.
    pub from: Duration,
    /// How long it sends (default: to the end).
    pub length: Option<Duration>,
    /// How to recognise the user's service's fallback (none: the defense
    /// line's `x-firedrill-fallback` header).
    pub fallback: Option<crate::experiment::blackbox::classify::FallbackRule>,
    /// The statuses that count as success for this route (none: 2xx and
    /// 3xx).
    pub success: Option<Vec<crate::defense::breaker::StatusPattern>>,
}

impl LoadRoute {
    /// A route named `name` that firedrill does not send itself (its
    /// requests come from elsewhere: Locust): `GET`, no path, no rate,
    /// timeout 60 s, everything else empty.
    pub fn sent_elsewhere(name: String) -> LoadRoute {
        LoadRoute {
            name,
            method: http::Method::GET,
            path: String::new(),
            headers: Default::default(),
            body: Default::default(),
            grpc: false,
            json_message: None,
            rate: 0.0,
            replay: None,
            recorded: None,
            arrivals: Default::default(),
            ramp: Duration::ZERO,
            timeout: Duration::from_secs(60),
            from: Duration::ZERO,
            length: None,
            fallback: None,
            success: None,
        }
    }
}

/// `load[].replay`: a recording whose arrival times the route sends at.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping with file, format, speed, e.g. `{ file: incident.log, format: nginx }`"
)]
pub struct ArrivalReplay {
    /// The recording, relative to the experiment file.
    pub file: String,
    /// `requests`, `record`, `nginx` or `envoy` (see the `replay` fault);
    /// default: told from the recording's first line.
    #[serde(default)]
    pub format: Option<crate::trace::TraceFormat>,
    /// Play the recording this many times as fast (default 1; 2 sends the
    /// same requests in half the time).
    #[serde(default = "normal_speed")]
    pub speed: f64,
}

fn normal_speed() -> f64 {
    1.0
}

impl crate::schema::FromFile for ArrivalReplay {
    fn from_file(file: &str) -> Result<Self, String> {
        Ok(ArrivalReplay {
            file: file.to_string(),
            format: None,
            speed: normal_speed(),
        })
    }
}

/// How arrivals are spaced.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// Exponential gaps (seeded).
    #[default]
    Poisson,
    /// Evenly spaced.
    Constant,
}

/// A load route as read, checked.
pub(super) struct RawLoad(pub(super) LoadRoute);

/// A load route: one request sent open-loop at a rate (arrivals never wait
/// for responses).
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("oneOf" = [{ "required": ["rate"] }, { "required": ["replay"] }]))]
struct LoadFields {
    /// Name in expectations (`route NAME ...`), halt conditions and reports;
    /// unique.
    name: String,
    /// `METHOD /path[?query]`, e.g. `GET /inventory/sku-1`, or `grpc
    /// /package.Service/Method` for a gRPC call.
    #[schemars(schema_with = "crate::schema::json::request_line")]
    request: String,
    /// A gRPC route's request message: its bytes as protobuf encodes them
    /// (`{ hex: 0a05736b752d31 }` or `{ base64: CgVza3UtMQ== }`), or JSON
    /// with the descriptor set that defines the method's input type (`{
    /// json: { sku: sku-1 }, descriptors: inventory.desc }`); default:
    /// empty, every field at its default.
    #[serde(default)]
    message: Option<super::message::GrpcMessage>,
    /// Requests per second, e.g. `50/s` (give `rate` or `replay`).
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::json::request_rate")]
    rate: Option<String>,
    /// Send at the arrival times of a recording instead of at a rate: its
    /// path, or `{ file, format, speed }`.
    #[serde(default, deserialize_with = "crate::schema::file_or_mapping")]
    #[schemars(schema_with = "crate::schema::json::file_or::<ArrivalReplay>")]
    replay: Option<ArrivalReplay>,
    /// `poisson` (exponential gaps, seeded; default) or `constant`.
    #[serde(default)]
    arrivals: Arrivals,
    /// Linear ramp from 0 to `rate` over this long (default `0s`).
    #[serde(default)]
    ramp: Dur,
    /// The client's own timeout per request, more than `0s` (default
    /// `10s`).
    #[serde(default)]
    timeout: Option<Dur>,
    /// Extra request headers.
    #[serde(default)]
    headers: IndexMap<String, String>,
    /// Request body.
    #[serde(default)]
    body: String,
    /// When the route starts sending (default `0s`).
    #[serde(default)]
    from: Dur,
    /// How long it sends (default: to the end).
    #[serde(default, rename = "for")]
    length: Option<Dur>,
    /// How to recognise the fallback of your own service (header, status,
    /// body); without it, the defense line's `x-firedrill-fallback` header.
    #[serde(default)]
    fallback: Option<crate::experiment::blackbox::classify::FallbackRule>,
    /// The statuses that count as success, e.g. `[200, 204]` or `[2xx]`
    /// (default: 2xx and 3xx).
    #[serde(default)]
    #[schemars(length(min = 1))]
    success: Option<Vec<crate::defense::breaker::StatusPattern>>,
}

impl TryFrom<LoadFields> for RawLoad {
    type Error = String;

    fn try_from(raw: LoadFields) -> Result<Self, String> {
        let (method, path) = raw.request.split_once(' ').ok_or_else(|| {
            format!(
                "request: `{}`: expected METHOD /path, e.g. `GET /inventory/sku-1`",
                raw.request
            )
        })?;
        let grpc = method == "grpc";
        let method = if grpc {
            http::Method::POST
        } else {
            http::Method::from_bytes(method.as_bytes())
                .map_err(|_| format!("request: invalid method `{method}`"))?
        };
        let path = path.trim();
        if grpc && (path.contains('?') || path.trim_start_matches('/').split('/').count() != 2) {
            return Err(format!(
                "request: `grpc {path}`: expected /package.Service/Method, e.g. `grpc /inventory.Inventory/Get`"
            ));
        }
        let (body, headers, pending) = if grpc {
            grpc_request(&raw)?
        } else {
            if raw.message.is_some() {
                return Err("message: only a gRPC route (`request: grpc /package.Service/Method`) sends a message; use `body:`".to_string());
            }
            (
                bytes::Bytes::from(raw.body.clone()),
                raw.headers.clone(),
                None,
            )
        };
        if !path.starts_with('/') || path.parse::<http::uri::PathAndQuery>().is_err() {
            return Err(format!(
                "request: invalid path `{path}`: expected /path[?query]"
            ));
        }
        let rate = match (&raw.rate, &raw.replay) {
            (Some(rate), None) => parse_rate(rate)?,
            (None, Some(replay)) => {
                if !(replay.speed > 0.0 && replay.speed <= 1000.0) {
                    return Err(format!(
                        "replay.speed: {}: expected a factor above 0, up to 1000",
                        replay.speed
                    ));
                }
                if !raw.ramp.get().is_zero() || raw.arrivals != Arrivals::default() {
                    return Err("replay: the recording sets the arrival times; leave out `ramp` and `arrivals`".to_string());
                }
                0.0
            }
            (Some(_), Some(_)) => {
                return Err("replay: give either `rate` or `replay`, not both".to_string());
            }
            (None, None) => {
                return Err(
                    "missing field `rate` (e.g. `50/s`), or `replay` (a recording's arrival times)"
                        .to_string(),
                );
            }
        };
        for name in raw.headers.keys() {
            http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("headers: invalid header name `{name}`"))?;
        }
        if raw.timeout.is_some_and(|t| t.get().is_zero()) {
            return Err(
                "timeout: must be longer than 0s: every request would time out before it is sent"
                    .to_string(),
            );
        }
        Ok(RawLoad(LoadRoute {
            name: raw.name,
            method,
            path: path.to_string(),
            headers,
            body,
            grpc,
            json_message: pending,
            rate,
            replay: raw.replay,
            recorded: None,
            arrivals: raw.arrivals,
            ramp: raw.ramp.get(),
            timeout: raw.timeout.map(Dur::get).unwrap_or(Duration::from_secs(10)),
            from: raw.from.get(),
            length: raw.length.map(Dur::get),
            fallback: raw.fallback,
            success: raw.success,
        }))
    }
}

/// `50/s` or `50` as requests per second, from above 0 to 100000.
fn parse_rate(text: &str) -> Result<f64, String> {
    let number = text.trim().strip_suffix("/s").unwrap_or(text.trim()).trim();
    number
        .parse()
        .ok()
        .filter(|r: &f64| *r > 0.0 && *r <= 100_000.0)
        .ok_or_else(|| format!("rate: invalid rate `{text}`: expected requests per second from >0 to 100000, e.g. `50/s`"))
}

/// A gRPC route's body (its message, framed), its headers (`content-type`
/// and `te` added), and its message still as JSON when it was written so:
/// JSON is encoded once the descriptor set is read (`file::load_messages`);
/// until then the message is empty.
#[allow(clippy::type_complexity)]
fn grpc_request(
    raw: &LoadFields,
) -> Result<
    (
        bytes::Bytes,
        IndexMap<String, String>,
        Option<(serde_json::Value, String)>,
    ),
    String,
> {
    if !raw.body.is_empty() {
        return Err(
            "body: a gRPC route sends `message:` (its bytes in hex or base64, or JSON), not a body"
                .to_string(),
        );
    }
    let mut headers = raw.headers.clone();
    for (name, value) in [("content-type", "application/grpc"), ("te", "trailers")] {
        if !headers.keys().any(|k| k.eq_ignore_ascii_case(name)) {
            headers.insert(name.to_string(), value.to_string());
        }
    }
    Ok(
        match raw.message.as_ref().map(|m| m.checked()).transpose()? {
            Some(Message::Bytes(bytes)) => (crate::http::grpc::frame(&bytes), headers, None),
            Some(Message::Json { json, descriptors }) => (
                crate::http::grpc::frame(&[]),
                headers,
                Some((json, descriptors)),
            ),
            None => (crate::http::grpc::frame(&[]), headers, None),
        },
    )
}

impl<'de> Deserialize<'de> for RawLoad {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_checked::<D, LoadFields, RawLoad>(d)
    }
}

crate::schema_via!(RawLoad, LoadFields, "LoadRoute");

/// `load:` — routes, or `external`.
pub(super) enum LoadSection {
    /// No generated traffic.
    External,
    /// Open-loop routes.
    Routes(Vec<RawLoad>),
    /// Locust drives it.
    Locust(super::locust::RawLocust),
}

impl<'de> Deserialize<'de> for LoadSection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = LoadSection;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of load routes, `external`, or { locust: ... }")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<LoadSection, E> {
                if v == "external" {
                    Ok(LoadSection::External)
                } else {
                    Err(E::custom(format!(
                        "`{v}`: expected a list of load routes, or `external`"
                    )))
                }
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<LoadSection, A::Error> {
                Vec::<RawLoad>::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
                    .map(LoadSection::Routes)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<LoadSection, A::Error> {
                super::locust::RawLocustLoad::deserialize(
                    serde::de::value::MapAccessDeserializer::new(map),
                )
                .map(|l| LoadSection::Locust(l.locust))
            }
        }
        d.deserialize_any(Visitor)
    }
}

impl schemars::JsonSchema for LoadSection {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Load".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let routes = generator.subschema_for::<Vec<RawLoad>>();
        let locust = generator.subschema_for::<super::locust::RawLocustLoad>();
        schemars::json_schema!({
            "description": "Load routes, sent open-loop (at least one), `external`, or `{ locust: ... }` (Locust drives the load).",
            "anyOf": [
                { "const": "external" },
                { "allOf": [routes], "type": "array", "minItems": 1 },
                locust,
            ],
        })
    }
}
