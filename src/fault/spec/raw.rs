//! A fault entry as written in YAML, before the one-kind check, and its
//! checking into a [`Fault`]: exactly one kind, a window, a name.

use serde::{Deserialize, Deserializer};

use super::Fault;
use super::kinds::{FaultKind, KINDS, kind_keys};
use super::params::{
    Bandwidth, Cut, GrpcFault, Latency, LimitData, NoParameters, Slicer, SlowClose, StatusFault,
};
use crate::fault::matcher::HttpMatch;
use crate::fault::replay::Replay;
use crate::fault::window::{Pattern, Window};
use crate::schema::units::{Dur, Percent, Start};

/// Reads a kind's parameters even when the key has no value, so `latency:`
/// alone is reported as missing its `delay` instead of as no kind at all.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// A fault entry as written, before the one-kind check: exactly one of the
/// kind keys (`latency`, `status`, `reset`, `close`, `blackhole`, `refuse`,
/// `bandwidth`, `slow_close`, `slicer`, `limit_data`, `replay`, `grpc`,
/// `goaway`)
/// with its parameters, plus when, where and how often.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("oneOf" = kind_one_of()))]
pub struct RawFault {
    /// Name in logs, reports and expectations (default: the kind); unique
    /// within a file.
    pub(super) name: Option<String>,
    /// Chance that a matching request (HTTP) or connection (TCP) is hit
    /// (default 100%, seeded).
    #[serde(default = "all")]
    pub(super) probability: Percent,
    /// Which HTTP requests it applies to: a path glob, or a mapping of
    /// method, path and headers (default: all).
    #[serde(default, rename = "match")]
    pub(super) matcher: HttpMatch,
    /// Window start, from the proxy's or run's start (default `0s`), or
    /// `manual` (experiments run with `--control`).
    #[serde(default = "at_zero")]
    pub(super) at: Start,
    /// Window length (default: until the end).
    #[serde(default, rename = "for")]
    pub(super) for_: Option<Dur>,
    /// Inside the window: active for `down`, inactive for `up`, repeating.
    #[serde(default)]
    pub(super) pattern: Option<Pattern>,
    /// HTTP: hit only a request after this long without one (a cold start).
    #[serde(default)]
    pub(super) after_idle: Option<Dur>,
    /// Experiments with `dependencies`: the dependency whose proxy applies
    /// it (may be left out when there is one).
    #[serde(default)]
    pub(super) dependency: Option<String>,
    /// Experiments whose built-in target has `instances`: the instance
    /// whose proxy applies it (default: every instance).
    #[serde(default)]
    pub(super) instance: Option<String>,
    // The kind fields: last, one per row of `KINDS`, in its order (tested).
    /// Kind: delay data (TCP) or the request/response (HTTP).
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Latency")]
    pub(super) latency: Option<Latency>,
    /// Kind (HTTP only): answer with this status instead of calling the
    /// target.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "StatusFault")]
    pub(super) status: Option<StatusFault>,
    /// Kind: close with RST, before the response or after some bytes.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Cut")]
    pub(super) reset: Option<Cut>,
    /// Kind: close with FIN, before the response or truncating it.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Cut")]
    pub(super) close: Option<Cut>,
    /// Kind: accept and never answer, like a hung server.
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "crate::schema::json::no_parameters")]
    pub(super) blackhole: Option<NoParameters>,
    /// Kind: refuse connections (the listener is closed; probability must
    /// be 100%).
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "crate::schema::json::no_parameters")]
    pub(super) refuse: Option<NoParameters>,
    /// Kind: limit throughput.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Bandwidth")]
    pub(super) bandwidth: Option<Bandwidth>,
    /// Kind (TCP only): hold the close back.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "SlowClose")]
    pub(super) slow_close: Option<SlowClose>,
    /// Kind (TCP only): cut data into small pieces with pauses.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Slicer")]
    pub(super) slicer: Option<Slicer>,
    /// Kind (TCP only): close the connection after this many bytes.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "LimitData")]
    pub(super) limit_data: Option<LimitData>,
    /// Kind (HTTP only): answer as a recorded trace did, bucket by bucket
    /// (status mix, latency, resets and hangs, drawn with the seed).
    #[serde(default, deserialize_with = "crate::schema::file_or_mapping")]
    #[schemars(schema_with = "crate::schema::json::file_or::<crate::fault::replay::Replay>")]
    pub(super) replay: Option<Replay>,
    /// Kind (HTTP only): fail a gRPC call at once with this status
    /// (trailers-only, as a server does).
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "GrpcFault")]
    pub(super) grpc: Option<GrpcFault>,
    /// Kind (HTTP only): end the client's connection gracefully once the
    /// requests in flight are answered (HTTP/2: GOAWAY, HTTP/1.1:
    /// `Connection: close`); the request itself passes.
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "crate::schema::json::no_parameters")]
    pub(super) goaway: Option<NoParameters>,
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
        if let FaultKind::Close(cut) = &kind
            && cut.code.is_some()
        {
            return Err(
                "close.code: a close ends an HTTP/2 stream cleanly; give the error code to a reset"
                    .to_string(),
            );
        }
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
