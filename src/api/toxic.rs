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
    Bandwidth, Cut, Latency, LimitData, Modes, SlicerFields, SlowClose, StatusFault,
};
use crate::fault::{Direction, Fault, FaultKind, HttpMatch, Window};
use crate::proxy::ProxyMode;
use crate::schema::units::{ByteSize, Dur, ErrorStatus, Percent, Rate};

/// A toxic type: its name, its attributes with their defaults, and the
/// proxy modes it works in.
#[derive(Debug, Clone, Copy)]
pub struct ToxicType {
    /// The `type` a client sends, e.g. `latency`.
    pub name: &'static str,
    /// The attribute names with their defaults (Toxiproxy's: zero).
    pub attributes: &'static [(&'static str, Attribute)],
    /// `http_*` types act on HTTP requests; the byte-stream ones on TCP.
    pub modes: Modes,
}

/// An attribute's default value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attribute {
    /// A whole number.
    Number(u64),
    /// A string.
    Text(&'static str),
}

impl Attribute {
    /// The default as JSON.
    pub fn value(self) -> Value {
        match self {
            Attribute::Number(n) => Value::from(n),
            Attribute::Text(s) => Value::from(s),
        }
    }
}

const ZERO: Attribute = Attribute::Number(0);

/// The toxic types this server knows, Toxiproxy's first, then firedrill's
/// HTTP-level ones (which need a proxy in `http` mode).
pub const TYPES: &[ToxicType] = &[
    ToxicType {
        name: "latency",
        attributes: &[("latency", ZERO), ("jitter", ZERO)],
        modes: Modes::Both,
    },
    ToxicType {
        name: "bandwidth",
        attributes: &[("rate", ZERO)],
        modes: Modes::Both,
    },
    ToxicType {
        name: "slow_close",
        attributes: &[("delay", ZERO)],
        modes: Modes::TcpOnly,
    },
    ToxicType {
        name: "timeout",
        attributes: &[("timeout", ZERO)],
        modes: Modes::Both,
    },
    ToxicType {
        name: "reset_peer",
        attributes: &[("timeout", ZERO)],
        modes: Modes::Both,
    },
    ToxicType {
        name: "slicer",
        attributes: &[
            ("average_size", ZERO),
            ("size_variation", ZERO),
            ("delay", ZERO),
        ],
        modes: Modes::TcpOnly,
    },
    ToxicType {
        name: "limit_data",
        attributes: &[("bytes", ZERO)],
        modes: Modes::TcpOnly,
    },
    ToxicType {
        name: "noop",
        attributes: &[],
        modes: Modes::Both,
    },
    ToxicType {
        name: "http_status",
        attributes: &[
            ("code", Attribute::Number(503)),
            ("body", Attribute::Text("")),
        ],
        modes: Modes::HttpOnly,
    },
    ToxicType {
        name: "http_latency",
        attributes: &[("latency", ZERO), ("jitter", ZERO)],
        modes: Modes::HttpOnly,
    },
];

/// The row of [`TYPES`] named `name`.
fn toxic_type(name: &str) -> Option<&'static ToxicType> {
    TYPES.iter().find(|t| t.name == name)
}

/// A toxic as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Toxic {
    /// Unique within its proxy; default `<type>_<stream>`.
    pub name: String,
    /// The name of one of [`TYPES`].
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

impl Toxic {
    /// A new toxic from a client's input, checked against `mode`.
    pub fn create(input: ToxicInput, mode: ProxyMode) -> Result<Toxic, ApiError> {
        let kind = input.kind.unwrap_or_default();
        let Some(known) = toxic_type(&kind) else {
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
            .attributes
            .iter()
            .map(|(k, v)| (k.to_string(), v.value()))
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

    /// The firedrill faults this toxic stands for in `mode` (none for
    /// `noop`; in HTTP mode two for a `timeout` with a time: hold the
    /// request, then close).
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
        let Some(toxic_type) = toxic_type(&self.kind) else {
            return Err(ApiError::invalid_type());
        };
        match (mode, toxic_type.modes) {
            (ProxyMode::Tcp, Modes::HttpOnly) => {
                return Err(ApiError::invalid(format!(
                    "type: {} acts on HTTP requests; create the proxy with \"mode\": \"http\"",
                    self.kind
                )));
            }
            (ProxyMode::Http, Modes::TcpOnly) => {
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
            // TCP: Toxiproxy's own semantics (toxics/timeout.go,
            // toxics/reset_peer.go), bound to the toxic's stream. HTTP mode
            // has no streams to hold: per request, hold (then close) or
            // reset.
            "timeout" | "reset_peer" => {
                let after = ms("timeout")?;
                let after = (!after.is_zero()).then_some(Dur(after));
                let reset = self.kind == "reset_peer";
                match mode {
                    ProxyMode::Tcp => {
                        let cut = Cut {
                            after_bytes: None,
                            after,
                            stream: Some(direction),
                        };
                        vec![if reset {
                            FaultKind::Reset(cut)
                        } else {
                            FaultKind::Close(cut)
                        }]
                    }
                    ProxyMode::Http if reset => vec![FaultKind::Reset(Cut {
                        after,
                        ..Cut::default()
                    })],
                    ProxyMode::Http => {
                        let mut kinds = vec![FaultKind::Blackhole];
                        kinds.extend(after.map(|after| {
                            FaultKind::Close(Cut {
                                after: Some(after),
                                ..Cut::default()
                            })
                        }));
                        kinds
                    }
                }
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
                dependency: None,
                instance: None,
                manual: false,
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
    let known = toxic_type(kind).map_or(&[][..], |t| t.attributes);
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
    fn timeout_and_reset_peer_hold_their_stream_in_tcp_and_act_per_request_in_http() {
        let faults = |json: &str, mode| {
            let t = Toxic::create(input(json), mode).unwrap();
            let f = t.faults(mode).unwrap();
            f.into_iter().map(|f| f.kind).collect::<Vec<_>>()
        };
        let half_second = Some(Dur(Duration::from_millis(500)));
        assert_eq!(
            faults(
                r#"{"type":"timeout","stream":"upstream","attributes":{"timeout":500}}"#,
                ProxyMode::Tcp
            ),
            [FaultKind::Close(Cut {
                after_bytes: None,
                after: half_second,
                stream: Some(Direction::Upstream)
            })]
        );
        assert_eq!(
            faults(r#"{"type":"reset_peer"}"#, ProxyMode::Tcp),
            [FaultKind::Reset(Cut {
                after_bytes: None,
                after: None,
                stream: Some(Direction::Downstream)
            })]
        );
        assert_eq!(
            faults(
                r#"{"type":"timeout","attributes":{"timeout":500}}"#,
                ProxyMode::Http
            ),
            [
                FaultKind::Blackhole,
                FaultKind::Close(Cut {
                    after: half_second,
                    ..Cut::default()
                })
            ]
        );
        assert_eq!(
            faults(r#"{"type":"reset_peer"}"#, ProxyMode::Http),
            [FaultKind::Reset(Cut::default())]
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

    /// Attributes that make a toxic of `ty` valid where a zero default is
    /// refused.
    fn valid_attributes(ty: &ToxicType) -> Map<String, Value> {
        let json = match ty.name {
            "bandwidth" => r#"{"rate":1}"#,
            "slicer" => r#"{"average_size":1}"#,
            _ => "{}",
        };
        serde_json::from_str(json).unwrap()
    }

    /// Creates a toxic of `ty` with its defaults, made valid, in `mode`.
    fn create_default(ty: &ToxicType, mode: ProxyMode) -> Result<Toxic, ApiError> {
        let input = ToxicInput {
            kind: Some(ty.name.to_string()),
            attributes: Some(valid_attributes(ty)),
            ..ToxicInput::default()
        };
        Toxic::create(input, mode)
    }

    #[test]
    fn every_type_shows_exactly_its_table_attributes_with_their_defaults() {
        for ty in TYPES {
            let mode = if ty.modes.tcp() {
                ProxyMode::Tcp
            } else {
                ProxyMode::Http
            };
            let t = create_default(ty, mode).unwrap();
            let mut expected: Map<String, Value> = ty
                .attributes
                .iter()
                .map(|(k, v)| (k.to_string(), v.value()))
                .collect();
            expected.extend(valid_attributes(ty));
            assert_eq!(t.attributes, expected, "{}", ty.name);
            assert_eq!(t.attributes.len(), ty.attributes.len(), "{}", ty.name);
        }
        let t = Toxic::create(input(r#"{"type":"http_status"}"#), ProxyMode::Http).unwrap();
        assert_eq!(
            serde_json::to_string(&t.attributes).unwrap(),
            r#"{"body":"","code":503}"#
        );
    }

    #[test]
    fn every_type_converts_and_works_in_a_mode_exactly_when_its_table_row_says() {
        for ty in TYPES {
            for (mode, works) in [
                (ProxyMode::Tcp, ty.modes.tcp()),
                (ProxyMode::Http, ty.modes.http()),
            ] {
                let result = create_default(ty, mode);
                assert_eq!(result.is_ok(), works, "{} in {mode:?}: {result:?}", ty.name);
            }
        }
    }

    #[test]
    fn http_types_are_the_http_only_ones_and_the_others_need_tcp_when_their_faults_do() {
        for ty in TYPES {
            let http_type = ty.name.starts_with("http_");
            assert_eq!(http_type, ty.modes == Modes::HttpOnly, "{}", ty.name);
            if http_type {
                continue;
            }
            let faults = create_default(ty, ProxyMode::Tcp)
                .and_then(|t| t.faults(ProxyMode::Tcp))
                .unwrap();
            let in_http = faults.iter().all(|f| f.kind.works_in_http());
            assert_eq!(ty.modes.http(), in_http, "{}", ty.name);
        }
    }
}
