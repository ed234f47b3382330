//! The fault catalogue as data: what a fault does, which traffic it matches,
//! how likely it is, and when it is active.

use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::matcher::HttpMatch;
use super::window::Window;
use crate::schema::deserialize_checked;
use crate::schema::units::{ByteSize, Dur, ErrorStatus, Percent, Rate};

/// A fault file: the list of faults a proxy injects. Experiments reuse the
/// same fault entries under their `faults:` key.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping with a `faults:` list")]
#[schemars(title = "firedrill fault file")]
pub struct FaultFile {
    /// The faults, in the order they are evaluated.
    pub faults: Vec<Fault>,
}

/// Which way through the proxy a fault acts.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
#[schemars(with = "DirectionName")]
pub enum Direction {
    /// Client to target: the request (`request` is accepted as an alias).
    #[serde(alias = "request")]
    Upstream,
    /// Target to client: the response (`response` is accepted as an alias).
    #[default]
    #[serde(alias = "response")]
    Downstream,
}

/// The words `direction:` accepts: the serde aliases as values of their own.
#[derive(schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)] // Only its schema is used.
enum DirectionName {
    /// Client to target: the request.
    Upstream,
    /// Same as `upstream`.
    Request,
    /// Target to client: the response (default).
    Downstream,
    /// Same as `downstream`.
    Response,
}

/// One fault: a kind with its parameters, plus when, where and how often.
#[derive(Debug, Clone)]
pub struct Fault {
    /// Name used in logs, reports and expectations.
    pub name: String,
    /// What the fault does.
    pub kind: FaultKind,
    /// Chance that a matching request (HTTP) or connection (TCP) is hit.
    pub probability: Percent,
    /// Which HTTP requests it applies to (TCP mode: every connection).
    pub matcher: HttpMatch,
    /// When it is active, relative to the proxy's start.
    pub window: Window,
    /// HTTP: hit only a request that comes after at least this long without
    /// a matching request (a cold start: idle connection pools, caches).
    pub after_idle: Option<crate::clock::Duration>,
}

/// What a fault does.
#[derive(Debug, Clone, PartialEq)]
pub enum FaultKind {
    /// Delay data (TCP) or the request/response (HTTP).
    Latency(Latency),
    /// Answer with this status instead of calling the target (HTTP only).
    Status(StatusFault),
    /// Close with RST.
    Reset(Cut),
    /// Close cleanly with FIN (before the response, or truncating it).
    Close(Cut),
    /// Accept and never answer.
    Blackhole,
    /// Refuse new connections while active.
    Refuse,
    /// Limit throughput.
    Bandwidth(Bandwidth),
    /// Delay the close of a connection (TCP only).
    SlowClose(SlowClose),
    /// Cut data into small pieces with delays (TCP only).
    Slicer(Slicer),
    /// Close the connection after this many bytes (TCP only).
    LimitData(LimitData),
}

impl FaultKind {
    /// The YAML key of this kind.
    pub fn key(&self) -> &'static str {
        match self {
            FaultKind::Latency(_) => "latency",
            FaultKind::Status(_) => "status",
            FaultKind::Reset(_) => "reset",
            FaultKind::Close(_) => "close",
            FaultKind::Blackhole => "blackhole",
            FaultKind::Refuse => "refuse",
            FaultKind::Bandwidth(_) => "bandwidth",
            FaultKind::SlowClose(_) => "slow_close",
            FaultKind::Slicer(_) => "slicer",
            FaultKind::LimitData(_) => "limit_data",
        }
    }

    /// Whether the kind acts in TCP mode (`status` needs HTTP).
    pub fn works_in_tcp(&self) -> bool {
        !matches!(self, FaultKind::Status(_))
    }

    /// Whether the kind acts in HTTP mode (the byte-stream faults need TCP).
    pub fn works_in_http(&self) -> bool {
        !matches!(
            self,
            FaultKind::SlowClose(_) | FaultKind::Slicer(_) | FaultKind::LimitData(_)
        )
    }
}

/// Parameters of `latency`.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping with delay, jitter, direction, e.g. `{ delay: 100ms }`"
)]
pub struct Latency {
    /// The fixed delay.
    pub delay: Dur,
    /// Uniform jitter, plus or minus (the delay never goes below zero).
    #[serde(default)]
    pub jitter: Dur,
    /// `downstream`/`response` (default) or `upstream`/`request`.
    #[serde(default)]
    pub direction: Direction,
}

/// Parameters of `status`.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping with code, body, headers, e.g. `{ code: 503 }`"
)]
pub struct StatusFault {
    /// The HTTP status, 400 to 599.
    pub code: ErrorStatus,
    /// The response body.
    #[serde(default)]
    pub body: String,
    /// Extra response headers, in order.
    #[serde(default)]
    pub headers: indexmap::IndexMap<String, String>,
}

/// Where `reset` and `close` cut the connection.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Cut {
    /// See [`CutFields::after_bytes`].
    pub after_bytes: Option<ByteSize>,
    /// See [`CutFields::after`].
    pub after: Option<Dur>,
}

/// `reset`/`close` as written.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping with after_bytes or after, or `{}`"
)]
pub struct CutFields {
    /// Cut after this many bytes of the response have gone through (a
    /// truncated body); absent: before the response.
    #[serde(default)]
    pub after_bytes: Option<ByteSize>,
    /// TCP: cut this long after the connection opens (Toxiproxy's
    /// `reset_peer` timeout).
    #[serde(default)]
    pub after: Option<Dur>,
}

/// Parameters of `bandwidth`.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping with rate, direction, e.g. `{ rate: 100KB/s }`"
)]
pub struct Bandwidth {
    /// The cap, e.g. `100KB/s` (1 KB = 1000 bytes).
    pub rate: Rate,
    /// Which way the cap applies.
    #[serde(default)]
    pub direction: Direction,
}

/// Parameters of `slow_close`.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping with delay, direction, e.g. `{ delay: 2s }`"
)]
pub struct SlowClose {
    /// How long to hold the close back.
    pub delay: Dur,
    /// Which side's close is held back.
    #[serde(default)]
    pub direction: Direction,
}

/// Parameters of `slicer`, checked: `average_size` at least 1,
/// `size_variation` below it.
#[derive(Debug, Clone, PartialEq)]
pub struct Slicer(pub SlicerFields);

/// `slicer` as written.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping with average_size, size_variation, delay, direction"
)]
pub struct SlicerFields {
    /// Average slice size in bytes (must be at least 1).
    pub average_size: ByteSize,
    /// Slices vary by up to this many bytes either way.
    #[serde(default)]
    pub size_variation: ByteSize,
    /// Pause between slices.
    #[serde(default)]
    pub delay: Dur,
    /// Which way data is sliced.
    #[serde(default)]
    pub direction: Direction,
}

/// Parameters of `limit_data`.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping with bytes, direction, e.g. `{ bytes: 64KB }`"
)]
pub struct LimitData {
    /// Bytes let through before the connection is closed.
    pub bytes: ByteSize,
    /// Which way bytes are counted.
    #[serde(default)]
    pub direction: Direction,
}

/// The parameters of a kind that takes none: `blackhole: {}`, or the key
/// with no value (`- blackhole:`). Any key inside is rejected.
#[derive(Debug, Clone, Default)]
pub struct NoParameters {}

/// `NoParameters` as a mapping, so serde reports an unknown key at the key.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoFields {}

impl<'de> Deserialize<'de> for NoParameters {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = NoParameters;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("nothing or `{}`: this kind takes no parameters")
            }
            fn visit_unit<E: de::Error>(self) -> Result<NoParameters, E> {
                Ok(NoParameters {})
            }
            fn visit_none<E: de::Error>(self) -> Result<NoParameters, E> {
                Ok(NoParameters {})
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<NoParameters, A::Error> {
                NoFields::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(NoParameters {})
            }
        }
        d.deserialize_any(V)
    }
}

/// Reads a kind's parameters even when the key has no value, so `latency:`
/// alone is reported as missing its `delay` instead of as no kind at all.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// A fault entry as written, before the one-kind check: exactly one of the
/// kind keys (`latency`, `status`, `reset`, `close`, `blackhole`, `refuse`,
/// `bandwidth`, `slow_close`, `slicer`, `limit_data`) with its parameters,
/// plus when, where and how often.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("oneOf" = kind_one_of()))]
pub struct RawFault {
    /// Name in logs, reports and expectations (default: the kind); unique
    /// within a file.
    name: Option<String>,
    /// Chance that a matching request (HTTP) or connection (TCP) is hit
    /// (default 100%, seeded).
    #[serde(default = "all")]
    probability: Percent,
    /// Which HTTP requests it applies to: a path glob, or a mapping of
    /// method, path and headers (default: all).
    #[serde(default, rename = "match")]
    matcher: HttpMatch,
    /// Window start, from the proxy's or run's start (default `0s`).
    #[serde(default)]
    at: Dur,
    /// Window length (default: until the end).
    #[serde(default, rename = "for")]
    for_: Option<Dur>,
    /// Inside the window: active for `down`, inactive for `up`, repeating.
    #[serde(default)]
    pattern: Option<super::window::Pattern>,
    /// HTTP: hit only a request after this long without one (a cold start).
    #[serde(default)]
    after_idle: Option<Dur>,
    /// Kind: delay data (TCP) or the request/response (HTTP).
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Latency")]
    latency: Option<Latency>,
    /// Kind (HTTP only): answer with this status instead of calling the
    /// target.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "StatusFault")]
    status: Option<StatusFault>,
    /// Kind: close with RST, before the response or after some bytes.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Cut")]
    reset: Option<Cut>,
    /// Kind: close with FIN, before the response or truncating it.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Cut")]
    close: Option<Cut>,
    /// Kind: accept and never answer, like a hung server.
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "crate::schema::json::no_parameters")]
    blackhole: Option<NoParameters>,
    /// Kind: refuse connections (the listener is closed; probability must
    /// be 100%).
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "crate::schema::json::no_parameters")]
    refuse: Option<NoParameters>,
    /// Kind: limit throughput.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Bandwidth")]
    bandwidth: Option<Bandwidth>,
    /// Kind (TCP only): hold the close back.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "SlowClose")]
    slow_close: Option<SlowClose>,
    /// Kind (TCP only): cut data into small pieces with pauses.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Slicer")]
    slicer: Option<Slicer>,
    /// Kind (TCP only): close the connection after this many bytes.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "LimitData")]
    limit_data: Option<LimitData>,
}

/// The keys that name a fault kind, for messages and the schema's "exactly
/// one kind" rule.
pub const KINDS: [&str; 10] = [
    "latency",
    "status",
    "reset",
    "close",
    "blackhole",
    "refuse",
    "bandwidth",
    "slow_close",
    "slicer",
    "limit_data",
];

/// `oneOf` with one `required: [kind]` per kind: exactly one kind key.
fn kind_one_of() -> serde_json::Value {
    KINDS
        .iter()
        .map(|kind| serde_json::json!({ "required": [kind] }))
        .collect()
}

fn all() -> Percent {
    Percent::ALL
}

crate::schema_via!(Fault, RawFault, "Fault");
crate::schema_via!(Cut, CutFields, "Cut");
crate::schema_via!(Slicer, SlicerFields, "Slicer");

impl TryFrom<RawFault> for Fault {
    type Error = String;

    fn try_from(raw: RawFault) -> Result<Self, String> {
        let mut kinds: Vec<FaultKind> = Vec::new();
        kinds.extend(raw.latency.map(FaultKind::Latency));
        kinds.extend(raw.status.map(FaultKind::Status));
        kinds.extend(raw.reset.map(FaultKind::Reset));
        kinds.extend(raw.close.map(FaultKind::Close));
        kinds.extend(raw.blackhole.map(|_| FaultKind::Blackhole));
        kinds.extend(raw.refuse.map(|_| FaultKind::Refuse));
        kinds.extend(raw.bandwidth.map(FaultKind::Bandwidth));
        kinds.extend(raw.slow_close.map(FaultKind::SlowClose));
        kinds.extend(raw.slicer.map(FaultKind::Slicer));
        kinds.extend(raw.limit_data.map(FaultKind::LimitData));
        let kind = match kinds.len() {
            1 => kinds.remove(0),
            0 => {
                return Err(format!(
                    "a fault needs exactly one kind: one of {}",
                    KINDS.join(", ")
                ));
            }
            _ => {
                let names: Vec<&str> = kinds.iter().map(FaultKind::key).collect();
                // Reported at the second kind, the first one too many.
                return Err(format!(
                    "{}: a fault has exactly one kind, found {}: split it into one fault per kind",
                    names[1],
                    names.join(" and ")
                ));
            }
        };
        if kind == FaultKind::Refuse && raw.probability != Percent::ALL {
            return Err(
                "probability: refuse acts on the listener, so its probability must be 100% (leave it out)"
                    .to_string(),
            );
        }
        let window = Window::new(raw.at.get(), raw.for_.map(Dur::get), raw.pattern)?;
        let name = raw.name.unwrap_or_else(|| kind.key().to_string());
        if name.trim().is_empty() {
            return Err("name: a fault name cannot be empty".to_string());
        }
        let after_idle = raw.after_idle.map(Dur::get);
        if after_idle == Some(crate::clock::Duration::ZERO) {
            return Err("after_idle: must be longer than 0s".to_string());
        }
        Ok(Fault {
            name,
            kind,
            probability: raw.probability,
            matcher: raw.matcher,
            window,
            after_idle,
        })
    }
}

impl TryFrom<CutFields> for Cut {
    type Error = String;
    fn try_from(raw: CutFields) -> Result<Self, String> {
        if raw.after_bytes.is_some() && raw.after.is_some() {
            return Err("after: give either after_bytes or after, not both".to_string());
        }
        Ok(Cut {
            after_bytes: raw.after_bytes,
            after: raw.after,
        })
    }
}

impl TryFrom<SlicerFields> for Slicer {
    type Error = String;
    fn try_from(raw: SlicerFields) -> Result<Self, String> {
        if raw.average_size.0 == 0 {
            return Err(
                "average_size: must be at least 1 byte (Toxiproxy crashes on 0; firedrill refuses it)"
                    .to_string(),
            );
        }
        if raw.size_variation.0 >= raw.average_size.0 {
            return Err(format!(
                "size_variation: must be smaller than average_size ({} bytes)",
                raw.average_size.0
            ));
        }
        Ok(Slicer(raw))
    }
}

impl<'de> Deserialize<'de> for Cut {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_checked::<D, CutFields, Cut>(d)
    }
}

impl<'de> Deserialize<'de> for Slicer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_checked::<D, SlicerFields, Slicer>(d)
    }
}

impl<'de> Deserialize<'de> for Fault {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_checked::<D, RawFault, Fault>(d)
    }
}
