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

/// The largest number attribute: Go's `int64` (Toxiproxy's `int` on 64-bit
/// builds too).
pub const ATTRIBUTE_MAX: u64 = i64::MAX as u64;

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
    // Any fault an experiment can write, as its entry in JSON (or YAML)
    // without timing: what a drill on another host applies here.
    ToxicType {
        name: "http_fault",
        attributes: &[("spec", Attribute::Text(""))],
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
    /// firedrill's extension: the toxic is removed by the server this many
    /// milliseconds from now unless the lease is renewed
    /// (`POST /proxies/NAME/lease`); none: it stays until deleted.
    #[serde(default)]
    pub lease_ms: Option<u64>,
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
        // Kept as sent, as Toxiproxy keeps it; read case-insensitively
        // (stream.ParseDirection lowercases it).
        let stream = input.stream.unwrap_or_else(|| "downstream".to_string());
        parse_stream(&stream)?;
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
        let probability = self.probability()?;
        let direction = parse_stream(&self.stream)?;
        self.check_mode(mode)?;
        if self.kind == "http_fault" {
            return self.spec_fault(probability).map(|f| vec![f]);
        }
        let kinds = self.kinds(mode, direction)?;
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

    /// `http_fault`: the fault its `spec` writes, as an experiment's `faults:`
    /// entry without timing (the toxic is active while it exists), named
    /// after the toxic, hitting `toxicity` of the requests its own
    /// `probability` picks.
    fn spec_fault(&self, toxicity: Percent) -> Result<Fault, ApiError> {
        let Some(Value::String(spec)) = self.attributes.get("spec") else {
            return Err(ApiError::invalid("attributes.spec: must be a string"));
        };
        if spec.trim().is_empty() {
            return Err(ApiError::invalid(
                "attributes.spec: empty: give a fault entry, e.g. {\"status\": {\"code\": 503}}",
            ));
        }
        let fault: Fault = crate::schema::from_yaml_str("attributes.spec", spec).map_err(|e| {
            let key = if e.key.is_empty() {
                String::new()
            } else {
                format!(".{}", e.key)
            };
            ApiError::invalid(format!("attributes.spec{key}: {}", e.message))
        })?;
        let timed = fault.window != Window::default() || fault.manual;
        let placed = fault.dependency.is_some() || fault.instance.is_some();
        if timed || placed {
            return Err(ApiError::invalid(
                "attributes.spec: at, for, pattern, dependency and instance are the drill's: a toxic's fault is active from its creation until it is deleted",
            ));
        }
        if let Some(misfit) = ProxyMode::Http.misfits(std::slice::from_ref(&fault)).next() {
            return Err(ApiError::invalid(format!(
                "attributes.spec: `{}` works in {} mode only",
                misfit.kind,
                misfit.needed.name()
            )));
        }
        let probability =
            Percent::new(fault.probability.percent() * toxicity.fraction()).unwrap_or(Percent::ALL);
        Ok(Fault {
            name: self.name.clone(),
            probability,
            ..fault
        })
    }

    /// The toxicity as a fault's probability; refused outside 0..1.
    fn probability(&self) -> Result<Percent, ApiError> {
        if !(0.0..=1.0).contains(&self.toxicity) || !self.toxicity.is_finite() {
            return Err(ApiError::invalid(format!(
                "toxicity: must be from 0 to 1, got {}",
                self.toxicity
            )));
        }
        Ok(Percent::new(self.toxicity * 100.0).unwrap_or(Percent::ALL))
    }

    /// Refuses an unknown type, and a type that does not act in `mode`.
    fn check_mode(&self, mode: ProxyMode) -> Result<(), ApiError> {
        let Some(toxic_type) = toxic_type(&self.kind) else {
            return Err(ApiError::invalid_type());
        };
        match (mode, toxic_type.modes) {
            (ProxyMode::Tcp, Modes::HttpOnly) => Err(ApiError::invalid(format!(
                "type: {} acts on HTTP requests; create the proxy with \"mode\": \"http\"",
                self.kind
            ))),
            (ProxyMode::Http, Modes::TcpOnly) => Err(ApiError::invalid(format!(
                "type: {} acts on byte streams; it needs a proxy in tcp mode",
                self.kind
            ))),
            _ => Ok(()),
        }
    }

    /// The fault kinds the type and its attributes map onto, acting in
    /// `direction` where the kind has one.
    fn kinds(&self, mode: ProxyMode, direction: Direction) -> Result<Vec<FaultKind>, ApiError> {
        let ms = |key: &str| self.number(key).map(Duration::from_millis);
        Ok(match self.kind.as_str() {
            "latency" | "http_latency" => vec![FaultKind::Latency(Latency {
                delay: Dur(ms("latency")?),
                jitter: Dur(ms("jitter")?),
                direction,
                per: Default::default(),
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
            "timeout" | "reset_peer" => self.cut_kinds(mode, direction)?,
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
            "http_status" => vec![FaultKind::Status(self.status()?)],
            _ => return Err(ApiError::invalid_type()),
        })
    }

    /// `timeout` and `reset_peer`. TCP: Toxiproxy's own semantics
    /// (toxics/timeout.go, toxics/reset_peer.go), bound to the toxic's
    /// stream. HTTP mode has no streams to hold: per request, hold (then
    /// close) or reset.
    fn cut_kinds(&self, mode: ProxyMode, direction: Direction) -> Result<Vec<FaultKind>, ApiError> {
        let after = Duration::from_millis(self.number("timeout")?);
        let after = (!after.is_zero()).then_some(Dur(after));
        let reset = self.kind == "reset_peer";
        Ok(match mode {
            ProxyMode::Tcp => {
                let cut = Cut {
                    after_bytes: None,
                    after,
                    code: None,
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
        })
    }

    /// `http_status`: a code from 400 to 599 and a string body.
    fn status(&self) -> Result<StatusFault, ApiError> {
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
        Ok(StatusFault {
            code: ErrorStatus(code as u16),
            body,
            headers: indexmap::IndexMap::new(),
        })
    }

    /// A whole number attribute from 0 to [`ATTRIBUTE_MAX`]: Toxiproxy's
    /// are Go `int`/`int64`, and Go's JSON decoder refuses a larger number
    /// with 400 `bad request body: ...`, as this does. Negative numbers,
    /// which Go takes, are refused too (no toxic means anything by them).
    fn number(&self, key: &str) -> Result<u64, ApiError> {
        let Some(v) = self.attributes.get(key) else {
            return Ok(0);
        };
        match v.as_u64() {
            Some(n) if n <= ATTRIBUTE_MAX => Ok(n),
            Some(_) => Err(ApiError::bad_body(format!(
                "attributes.{key}: {v} does not fit Toxiproxy's int64 (at most {ATTRIBUTE_MAX})"
            ))),
            None => Err(ApiError::invalid(format!(
                "attributes.{key}: must be a whole number from 0 to {ATTRIBUTE_MAX}, got {v}"
            ))),
        }
    }
}

/// The direction a `stream` names, in any case, as Toxiproxy's
/// `stream.ParseDirection` reads it.
fn parse_stream(stream: &str) -> Result<Direction, ApiError> {
    match stream.to_lowercase().as_str() {
        "upstream" => Ok(Direction::Upstream),
        "downstream" => Ok(Direction::Downstream),
        _ => Err(ApiError::invalid_stream()),
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
#[path = "toxic_tests.rs"]
mod tests;
