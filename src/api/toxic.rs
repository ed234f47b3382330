//! Toxics as Toxiproxy's API writes them (`{name, type, stream, toxicity,
//! attributes}`), checked and mapped onto firedrill's faults.
//!
//! Where firedrill does better than Toxiproxy 2.12 (all 400s):
//! * `toxicity` outside 0..1 is refused (Toxiproxy takes any number);
//! * `slicer` with `average_size` 0 is refused (Toxiproxy's slicer crashes),
//!   and so is a `size_variation` not below `average_size`;
//! * `bandwidth` with `rate` 0 is refused (Toxiproxy stalls the stream);
//! * an unknown attribute is refused, so a typo (`delay` on `latency`) is not
//!   silently a zero-delay toxic.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::error::ApiError;
use crate::clock::Duration;
use crate::fault::spec::{
    Bandwidth, Cut, Latency, LimitData, SlicerFields, SlowClose, StatusFault,
};
use crate::fault::{Direction, Fault, FaultKind, HttpMatch, Window};
use crate::proxy::ProxyMode;
use crate::schema::units::{ByteSize, Dur, ErrorStatus, Percent, Rate};

/// The toxic types this server knows, Toxiproxy's first, then firedrill's
/// HTTP-level ones (which need a proxy in `http` mode).
pub const TYPES: &[&str] = &[
    "latency",
    "bandwidth",
    "slow_close",
    "timeout",
    "reset_peer",
    "slicer",
    "limit_data",
    "noop",
    "http_status",
    "http_latency",
];

/// A toxic as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Toxic {
    /// Unique within its proxy; default `<type>_<stream>`.
    pub name: String,
    /// One of [`TYPES`].
    #[serde(rename = "type")]
    pub kind: String,
    /// `upstream` (client to target) or `downstream` (default).
    pub stream: String,
    /// Chance, 0 to 1, that a connection (or HTTP request) is hit.
    pub toxicity: f64,
    /// The type's parameters, every one shown with its value.
    pub attributes: Map<String, Value>,
}

/// A toxic as a client sends it; absent fields take Toxiproxy's defaults.
#[derive(Debug, Default, Deserialize)]
pub struct ToxicInput {
    /// See [`Toxic::name`].
    #[serde(default)]
    pub name: Option<String>,
    /// See [`Toxic::kind`].
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// See [`Toxic::stream`].
    #[serde(default)]
    pub stream: Option<String>,
    /// See [`Toxic::toxicity`].
    #[serde(default)]
    pub toxicity: Option<f64>,
    /// See [`Toxic::attributes`].
    #[serde(default)]
    pub attributes: Option<Map<String, Value>>,
}

/// What an update may change: attributes (merged key by key) and toxicity.
#[derive(Debug, Default, Deserialize)]
pub struct ToxicUpdate {
    /// Attributes to overwrite; others keep their value.
    #[serde(default)]
    pub attributes: Option<Map<String, Value>>,
    /// New toxicity.
    #[serde(default)]
    pub toxicity: Option<f64>,
}

/// Each type with its attributes and their defaults.
type AttributeTable = Vec<(&'static str, Vec<(&'static str, Value)>)>;

/// The attribute names of a type with their defaults (Toxiproxy's: zero).
fn defaults(kind: &str) -> Option<&'static [(&'static str, Value)]> {
    use std::sync::LazyLock;
    static TABLE: LazyLock<AttributeTable> = LazyLock::new(|| {
        let z = || Value::from(0);
        vec![
            ("latency", vec![("latency", z()), ("jitter", z())]),
            ("bandwidth", vec![("rate", z())]),
            ("slow_close", vec![("delay", z())]),
            ("timeout", vec![("timeout", z())]),
            ("reset_peer", vec![("timeout", z())]),
            (
                "slicer",
                vec![
                    ("average_size", z()),
                    ("size_variation", z()),
                    ("delay", z()),
                ],
            ),
            ("limit_data", vec![("bytes", z())]),
            ("noop", vec![]),
            (
                "http_status",
                vec![("code", Value::from(503)), ("body", Value::from(""))],
            ),
            ("http_latency", vec![("latency", z()), ("jitter", z())]),
        ]
    });
    TABLE
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, attrs)| attrs.as_slice())
}

impl Toxic {
    /// A new toxic from a client's input, checked against `mode`.
    pub fn create(input: ToxicInput, mode: ProxyMode) -> Result<Toxic, ApiError> {
        let kind = input.kind.unwrap_or_default();
        let Some(known) = defaults(&kind) else {
            return Err(ApiError::invalid_type());
        };
        let stream = input.stream.unwrap_or_else(|| "downstream".to_string());
        if stream != "upstream" && stream != "downstream" {
            return Err(ApiError::invalid_stream());
        }
        let name = match input.name {
            Some(n) if !n.is_empty() => n,
            _ => format!("{kind}_{stream}"),
        };
        let mut attributes: Map<String, Value> = known
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        let toxic = Toxic {
            name,
            kind,
            stream,
            toxicity: 1.0,
            attributes: Map::new(),
        };
        merge(
            &mut attributes,
            input.attributes.unwrap_or_default(),
            &toxic.kind,
        )?;
        let toxic = Toxic {
            attributes,
            toxicity: input.toxicity.unwrap_or(1.0),
            ..toxic
        };
        toxic.faults(mode)?;
        Ok(toxic)
    }

    /// This toxic with `update` applied, checked against `mode`.
    pub fn updated(&self, update: ToxicUpdate, mode: ProxyMode) -> Result<Toxic, ApiError> {
        let mut next = self.clone();
        merge(
            &mut next.attributes,
            update.attributes.unwrap_or_default(),
            &self.kind,
        )?;
        if let Some(t) = update.toxicity {
            next.toxicity = t;
        }
        next.faults(mode)?;
        Ok(next)
    }

    /// The firedrill faults this toxic stands for (none for `noop`; two for
    /// a `timeout` with a time: swallow data, then close).
    pub fn faults(&self, mode: ProxyMode) -> Result<Vec<Fault>, ApiError> {
        if !(0.0..=1.0).contains(&self.toxicity) || !self.toxicity.is_finite() {
            return Err(ApiError::invalid(format!(
                "toxicity: must be from 0 to 1, got {}",
                self.toxicity
            )));
        }
        let probability = Percent::new(self.toxicity * 100.0).unwrap_or(Percent::ALL);
        let direction = if self.stream == "upstream" {
            Direction::Upstream
        } else {
            Direction::Downstream
        };
        let http_only = self.kind.starts_with("http_");
        match (mode, http_only) {
            (ProxyMode::Tcp, true) => {
                return Err(ApiError::invalid(format!(
                    "type: {} acts on HTTP requests; create the proxy with \"mode\": \"http\"",
                    self.kind
                )));
            }
            (ProxyMode::Http, false)
                if matches!(self.kind.as_str(), "slow_close" | "slicer" | "limit_data") =>
            {
                return Err(ApiError::invalid(format!(
                    "type: {} acts on byte streams; it needs a proxy in tcp mode",
                    self.kind
                )));
            }
            _ => {}
        }
        let ms = |key: &str| self.number(key).map(Duration::from_millis);
        let kinds: Vec<FaultKind> = match self.kind.as_str() {
            "latency" | "http_latency" => vec![FaultKind::Latency(Latency {
                delay: Dur(ms("latency")?),
                jitter: Dur(ms("jitter")?),
                direction,
            })],
            "bandwidth" => {
                let rate = Rate::from_kb_per_second(self.number("rate")? as f64)
                    .ok_or_else(|| ApiError::invalid("attributes.rate: must be at least 1 KB/s"))?;
                vec![FaultKind::Bandwidth(Bandwidth { rate, direction })]
            }
            "slow_close" => vec![FaultKind::SlowClose(SlowClose {
                delay: Dur(ms("delay")?),
                direction,
            })],
            "timeout" => {
                let after = ms("timeout")?;
                let mut kinds = vec![FaultKind::Blackhole];
                if !after.is_zero() {
                    kinds.push(FaultKind::Close(Cut {
                        after_bytes: None,
                        after: Some(Dur(after)),
                    }));
                }
                kinds
            }
            "reset_peer" => {
                let after = ms("timeout")?;
                vec![FaultKind::Reset(Cut {
                    after_bytes: None,
                    after: (!after.is_zero()).then_some(Dur(after)),
                })]
            }
            "slicer" => {
                let fields = SlicerFields {
                    average_size: ByteSize(self.number("average_size")?),
                    size_variation: ByteSize(self.number("size_variation")?),
                    delay: Dur(Duration::from_micros(self.number("delay")?)),
                    direction,
                };
                let slicer = fields
                    .try_into()
                    .map_err(|e: String| ApiError::invalid(format!("attributes.{e}")))?;
                vec![FaultKind::Slicer(slicer)]
            }
            "limit_data" => vec![FaultKind::LimitData(LimitData {
                bytes: ByteSize(self.number("bytes")?),
                direction,
            })],
            "noop" => vec![],
            "http_status" => {
                let code = self.number("code")?;
                if !(400..=599).contains(&code) {
                    return Err(ApiError::invalid(format!(
                        "attributes.code: must be from 400 to 599, got {code}"
                    )));
                }
                let body = match self.attributes.get("body") {
                    Some(Value::String(s)) => s.clone(),
                    _ => return Err(ApiError::invalid("attributes.body: must be a string")),
                };
                vec![FaultKind::Status(StatusFault {
                    code: ErrorStatus(code as u16),
                    body,
                    headers: indexmap::IndexMap::new(),
                })]
            }
            _ => return Err(ApiError::invalid_type()),
        };
        let many = kinds.len() > 1;
        Ok(kinds
            .into_iter()
            .map(|kind| Fault {
                name: if many && kind != FaultKind::Blackhole {
                    format!("{}#{}", self.name, kind.key())
                } else {
                    self.name.clone()
                },
                kind,
                probability,
                matcher: HttpMatch::default(),
                window: Window::default(),
                after_idle: None,
            })
            .collect())
    }

    /// A whole, non-negative number attribute.
    fn number(&self, key: &str) -> Result<u64, ApiError> {
        match self.attributes.get(key) {
            Some(v) => v.as_u64().ok_or_else(|| {
                ApiError::invalid(format!(
                    "attributes.{key}: must be a whole number from 0 up, got {v}"
                ))
            }),
            None => Ok(0),
        }
    }
}

/// Overwrites `into` with `from`, refusing names the type does not have.
fn merge(
    into: &mut Map<String, Value>,
    from: Map<String, Value>,
    kind: &str,
) -> Result<(), ApiError> {
    let known = defaults(kind).unwrap_or(&[]);
    for (k, v) in from {
        if !known.iter().any(|(name, _)| *name == k) {
            let names: Vec<&str> = known.iter().map(|(n, _)| *n).collect();
            return Err(ApiError::invalid(format!(
                "attributes.{k}: unknown attribute of {kind} (it has: {})",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            )));
        }
        into.insert(k, v);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(json: &str) -> ToxicInput {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn defaults_follow_toxiproxy_name_stream_toxicity_and_zero_attributes() {
        let t = Toxic::create(input(r#"{"type":"latency"}"#), ProxyMode::Tcp).unwrap();
        assert_eq!(t.name, "latency_downstream");
        assert_eq!(t.stream, "downstream");
        assert_eq!(t.toxicity, 1.0);
        assert_eq!(
            serde_json::to_string(&t.attributes).unwrap(),
            r#"{"jitter":0,"latency":0}"#
        );
    }

    #[test]
    fn toxicity_outside_zero_to_one_and_zero_slicer_size_are_refused() {
        let e =
            Toxic::create(input(r#"{"type":"noop","toxicity":1.5}"#), ProxyMode::Tcp).unwrap_err();
        assert_eq!(e.message, "toxicity: must be from 0 to 1, got 1.5");
        let e = Toxic::create(
            input(r#"{"type":"slicer","attributes":{"average_size":0}}"#),
            ProxyMode::Tcp,
        )
        .unwrap_err();
        assert!(
            e.message
                .starts_with("attributes.average_size: must be at least 1 byte"),
            "{}",
            e.message
        );
    }

    #[test]
    fn timeout_with_a_time_is_a_blackhole_then_a_close_and_reset_peer_zero_resets_at_once() {
        let t = Toxic::create(
            input(r#"{"type":"timeout","attributes":{"timeout":500}}"#),
            ProxyMode::Tcp,
        )
        .unwrap();
        let f = t.faults(ProxyMode::Tcp).unwrap();
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].kind, FaultKind::Blackhole);
        assert_eq!(
            f[1].kind,
            FaultKind::Close(Cut {
                after_bytes: None,
                after: Some(Dur(Duration::from_millis(500)))
            })
        );
        let r = Toxic::create(input(r#"{"type":"reset_peer"}"#), ProxyMode::Tcp).unwrap();
        assert_eq!(
            r.faults(ProxyMode::Tcp).unwrap()[0].kind,
            FaultKind::Reset(Cut::default())
        );
    }

    #[test]
    fn update_merges_attributes_and_toxicity_and_keeps_the_rest() {
        let t = Toxic::create(
            input(r#"{"type":"latency","name":"lag","attributes":{"latency":100,"jitter":5}}"#),
            ProxyMode::Tcp,
        )
        .unwrap();
        let u: ToxicUpdate =
            serde_json::from_str(r#"{"attributes":{"latency":300},"toxicity":0.5}"#).unwrap();
        let n = t.updated(u, ProxyMode::Tcp).unwrap();
        assert_eq!(n.attributes["latency"], 300);
        assert_eq!(n.attributes["jitter"], 5);
        assert_eq!(n.toxicity, 0.5);
        assert_eq!((n.name.as_str(), n.kind.as_str()), ("lag", "latency"));
    }

    #[test]
    fn http_types_need_an_http_proxy_and_byte_stream_types_a_tcp_one() {
        let e = Toxic::create(input(r#"{"type":"http_status"}"#), ProxyMode::Tcp).unwrap_err();
        assert!(e.message.contains("\"mode\": \"http\""), "{}", e.message);
        let e = Toxic::create(
            input(r#"{"type":"slicer","attributes":{"average_size":10}}"#),
            ProxyMode::Http,
        )
        .unwrap_err();
        assert!(e.message.contains("tcp mode"), "{}", e.message);
        let ok = Toxic::create(
            input(r#"{"type":"http_status","attributes":{"code":502,"body":"x"}}"#),
            ProxyMode::Http,
        )
        .unwrap();
        assert_eq!(ok.faults(ProxyMode::Http).unwrap()[0].kind.key(), "status");
    }
}
