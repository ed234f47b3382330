//! The fault catalogue as data: what a fault does, which traffic it matches,
//! how likely it is, and when it is active.

use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::matcher::HttpMatch;
use super::window::Window;
use crate::schema::deserialize_checked;
use crate::schema::units::{ByteSize, Dur, ErrorStatus, Percent, Rate, Start};

/// A fault file: the list of faults a proxy injects. Experiments reuse the
/// same fault entries under their `faults:` key.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping with a `faults:` list")]
#[schemars(title = "firedrill fault file")]
pub struct FaultFile {
    /// The faults, in the order they are evaluated (at most 1000).
    #[schemars(length(max = super::MAX_FAULTS))]
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
    /// In an experiment with dependencies: the one whose proxy applies it.
    pub dependency: Option<String>,
    /// In an experiment whose built-in target runs several instances: the
    /// one whose proxy applies it (none: every instance's).
    pub instance: Option<String>,
    /// `at: manual`: the window opens and closes when a person says so
    /// (`firedrill run --control`); `window` then gives only its length.
    pub manual: bool,
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
    /// Answer as a recording did, second by second (HTTP only).
    Replay(super::replay::Replay),
}

impl FaultKind {
    /// This kind's row in [`KINDS`]: its key and the proxy modes it acts in.
    pub fn info(&self) -> &'static KindInfo {
        KINDS
            .iter()
            .find(|row| (row.is)(self))
            .expect("every fault kind has a row in KINDS")
    }

    /// The YAML key of this kind.
    pub fn key(&self) -> &'static str {
        self.info().key
    }

    /// Whether the kind acts in TCP mode (`status` needs HTTP).
    pub fn works_in_tcp(&self) -> bool {
        self.info().modes.tcp()
    }

    /// Whether the kind acts in HTTP mode (the byte-stream faults need TCP).
    pub fn works_in_http(&self) -> bool {
        self.info().modes.http()
    }
}

/// The proxy modes something acts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Modes {
    /// TCP and HTTP.
    Both,
    /// TCP only: it acts on the byte stream.
    TcpOnly,
    /// HTTP only: it acts on requests and responses.
    HttpOnly,
}

impl Modes {
    /// Whether it acts in TCP mode.
    pub const fn tcp(self) -> bool {
        !matches!(self, Modes::HttpOnly)
    }

    /// Whether it acts in HTTP mode.
    pub const fn http(self) -> bool {
        !matches!(self, Modes::TcpOnly)
    }
}

/// One fault kind: a row of [`KINDS`].
#[derive(Debug, Clone, Copy)]
pub struct KindInfo {
    /// The key that names the kind in a fault entry, e.g. `latency`.
    pub key: &'static str,
    /// The proxy modes the kind acts in.
    pub modes: Modes,
    /// Whether a [`FaultKind`] is this kind.
    is: fn(&FaultKind) -> bool,
    /// Takes this kind's parameters out of an entry as written, if present.
    take: fn(&mut RawFault) -> Option<FaultKind>,
}

/// Every fault kind, in the order of [`RawFault`]'s kind fields: the one
/// list of kind names and their proxy modes, read by `key`, `works_in_*`,
/// the loader, its messages and the schema (tests fail until they agree).
pub const KINDS: &[KindInfo] = &[
    KindInfo {
        key: "latency",
        modes: Modes::Both,
        is: |k| matches!(k, FaultKind::Latency(_)),
        take: |r| r.latency.take().map(FaultKind::Latency),
    },
    KindInfo {
        key: "status",
        modes: Modes::HttpOnly,
        is: |k| matches!(k, FaultKind::Status(_)),
        take: |r| r.status.take().map(FaultKind::Status),
    },
    KindInfo {
        key: "reset",
        modes: Modes::Both,
        is: |k| matches!(k, FaultKind::Reset(_)),
        take: |r| r.reset.take().map(FaultKind::Reset),
    },
    KindInfo {
        key: "close",
        modes: Modes::Both,
        is: |k| matches!(k, FaultKind::Close(_)),
        take: |r| r.close.take().map(FaultKind::Close),
    },
    KindInfo {
        key: "blackhole",
        modes: Modes::Both,
        is: |k| matches!(k, FaultKind::Blackhole),
        take: |r| r.blackhole.take().map(|_| FaultKind::Blackhole),
    },
    KindInfo {
        key: "refuse",
        modes: Modes::Both,
        is: |k| matches!(k, FaultKind::Refuse),
        take: |r| r.refuse.take().map(|_| FaultKind::Refuse),
    },
    KindInfo {
        key: "bandwidth",
        modes: Modes::Both,
        is: |k| matches!(k, FaultKind::Bandwidth(_)),
        take: |r| r.bandwidth.take().map(FaultKind::Bandwidth),
    },
    KindInfo {
        key: "slow_close",
        modes: Modes::TcpOnly,
        is: |k| matches!(k, FaultKind::SlowClose(_)),
        take: |r| r.slow_close.take().map(FaultKind::SlowClose),
    },
    KindInfo {
        key: "slicer",
        modes: Modes::TcpOnly,
        is: |k| matches!(k, FaultKind::Slicer(_)),
        take: |r| r.slicer.take().map(FaultKind::Slicer),
    },
    KindInfo {
        key: "limit_data",
        modes: Modes::TcpOnly,
        is: |k| matches!(k, FaultKind::LimitData(_)),
        take: |r| r.limit_data.take().map(FaultKind::LimitData),
    },
    KindInfo {
        key: "replay",
        modes: Modes::HttpOnly,
        is: |k| matches!(k, FaultKind::Replay(_)),
        take: |r| r.replay.take().map(FaultKind::Replay),
    },
];

/// The kind keys, in the order of [`KINDS`].
pub fn kind_keys() -> impl Iterator<Item = &'static str> {
    KINDS.iter().map(|row| row.key)
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
    /// Set only by the control plane, for Toxiproxy's stream-bound toxics
    /// (never in YAML): the cut holds this stream, so nothing more passes
    /// that way, and the other stream flows. `reset` (`reset_peer`) is armed
    /// by the stream's first data or its end and resets both sides `after`
    /// later (at once without); `close` (`timeout`) holds the stream from
    /// the start and closes the connection when the stream ends, when the
    /// fault is removed, or `after` after it began acting on the connection
    /// (never without).
    pub stream: Option<Direction>,
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
    /// The cap, e.g. `100KB/s` (1 KB = 1000 bytes): N bytes take N / rate.
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
    /// Average slice size in bytes (must be at least 1): as Toxiproxy, a
    /// chunk is halved until no slice is longer than average + variation.
    pub average_size: ByteSize,
    /// Each cut moves by up to this many bytes either way.
    #[serde(default)]
    pub size_variation: ByteSize,
    /// Pause after each slice.
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
/// `bandwidth`, `slow_close`, `slicer`, `limit_data`, `replay`) with its
/// parameters,
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
    /// Window start, from the proxy's or run's start (default `0s`), or
    /// `manual` (experiments run with `--control`).
    #[serde(default = "at_zero")]
    at: Start,
    /// Window length (default: until the end).
    #[serde(default, rename = "for")]
    for_: Option<Dur>,
    /// Inside the window: active for `down`, inactive for `up`, repeating.
    #[serde(default)]
    pattern: Option<super::window::Pattern>,
    /// HTTP: hit only a request after this long without one (a cold start).
    #[serde(default)]
    after_idle: Option<Dur>,
    /// Experiments with `dependencies`: the dependency whose proxy applies
    /// it (may be left out when there is one).
    #[serde(default)]
    dependency: Option<String>,
    /// Experiments whose built-in target has `instances`: the instance
    /// whose proxy applies it (default: every instance).
    #[serde(default)]
    instance: Option<String>,
    // The kind fields: last, one per row of `KINDS`, in its order (tested).
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
    /// Kind (HTTP only): answer as a recorded trace did, bucket by bucket
    /// (status mix, latency, resets and hangs, drawn with the seed).
    #[serde(default, deserialize_with = "crate::schema::file_or_mapping")]
    #[schemars(schema_with = "crate::schema::json::file_or::<super::replay::Replay>")]
    replay: Option<super::replay::Replay>,
}

/// `oneOf` with one `required: [kind]` per kind: exactly one kind key.
fn kind_one_of() -> serde_json::Value {
    kind_keys()
        .map(|kind| serde_json::json!({ "required": [kind] }))
        .collect()
}

fn all() -> Percent {
    Percent::ALL
}

fn at_zero() -> Start {
    Start::At(Dur::default())
}

crate::schema_via!(Fault, RawFault, "Fault");
crate::schema_via!(Cut, CutFields, "Cut");
crate::schema_via!(Slicer, SlicerFields, "Slicer");

impl TryFrom<RawFault> for Fault {
    type Error = String;

    fn try_from(mut raw: RawFault) -> Result<Self, String> {
        let mut kinds: Vec<FaultKind> = KINDS
            .iter()
            .filter_map(|row| (row.take)(&mut raw))
            .collect();
        let kind = match kinds.len() {
            1 => kinds.remove(0),
            0 => {
                return Err(format!(
                    "a fault needs exactly one kind: one of {}",
                    kind_keys().collect::<Vec<_>>().join(", ")
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
        let (at, manual) = match raw.at {
            Start::At(at) => (at.get(), false),
            Start::Manual => (crate::clock::Duration::ZERO, true),
        };
        let window = Window::new(at, raw.for_.map(Dur::get), raw.pattern)?;
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
            dependency: raw.dependency,
            instance: raw.instance,
            manual,
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
            stream: None,
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

#[cfg(test)]
#[path = "spec_tests.rs"]
mod tests;
