//! Each kind's parameters, as written and checked: latency, status, the
//! cuts (`reset`, `close`), bandwidth, slow_close, slicer, limit_data, and
//! the kinds that take none.

use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::Direction;
use crate::schema::deserialize_checked;
use crate::schema::units::{ByteSize, Dur, ErrorStatus, GrpcError, Rate};

/// Parameters of `latency`.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping with delay, jitter, direction, per, e.g. `{ delay: 100ms }`"
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
    /// HTTP: what waits: the request or the response as a whole (`call`,
    /// the default), or each gRPC message of that direction (`message`).
    #[serde(default)]
    pub per: Per,
}

/// What a latency fault holds in HTTP mode.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Per {
    /// The request (before it is forwarded) or the response (before its
    /// head is returned).
    #[default]
    Call,
    /// Each message of a gRPC call in that direction: held `delay` after
    /// it came whole, or after the message before it left, whichever is
    /// later (a stream of N messages takes at least N delays); the head
    /// and trailers are not held. Another request is held as a call.
    Message,
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

/// Parameters of `grpc`: fail a gRPC call at once with this status, as a
/// server does (HTTP 200, `grpc-status` and `grpc-message` in the headers,
/// no body).
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping with status, message, e.g. `{ status: UNAVAILABLE }`"
)]
pub struct GrpcFault {
    /// The gRPC status: a name (`UNAVAILABLE`) or a number (1 to 16).
    pub status: GrpcError,
    /// The `grpc-message` (percent-encoded on the wire).
    #[serde(default)]
    pub message: String,
}

/// Where `reset` and `close` cut the connection.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Cut {
    /// See [`CutFields::after_bytes`].
    pub after_bytes: Option<ByteSize>,
    /// See [`CutFields::after`].
    pub after: Option<Dur>,
    /// See [`CutFields::code`].
    pub code: Option<crate::schema::units::H2Error>,
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
    /// `reset` in HTTP mode: the error code of the RST_STREAM that ends an
    /// HTTP/2 client's stream (`REFUSED_STREAM`, `CANCEL`, ... or 0 to 13;
    /// default `INTERNAL_ERROR`); an HTTP/1.1 client's connection is reset
    /// as without it.
    #[serde(default)]
    pub code: Option<crate::schema::units::H2Error>,
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

crate::schema_via!(Cut, CutFields, "Cut");
crate::schema_via!(Slicer, SlicerFields, "Slicer");

impl TryFrom<CutFields> for Cut {
    type Error = String;
    fn try_from(raw: CutFields) -> Result<Self, String> {
        if raw.after_bytes.is_some() && raw.after.is_some() {
            return Err("after: give either after_bytes or after, not both".to_string());
        }
        Ok(Cut {
            after_bytes: raw.after_bytes,
            after: raw.after,
            code: raw.code,
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
