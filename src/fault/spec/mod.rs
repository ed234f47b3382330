//! The fault catalogue as data: what a fault does, which traffic it matches,
//! how likely it is, and when it is active.

use serde::{Deserialize, Deserializer};

use super::matcher::HttpMatch;
use super::window::Window;
use crate::schema::deserialize_checked;
use crate::schema::units::Percent;

mod kinds;
mod params;
mod raw;

pub use self::kinds::{FaultKind, KINDS, KindInfo, Modes, kind_keys};
pub use self::params::{
    Bandwidth, Cut, CutFields, GrpcFault, Latency, LimitData, NoParameters, Per, Slicer,
    SlicerFields, SlowClose, StatusFault,
};
pub use self::raw::RawFault;

/// A fault file: the list of faults a proxy injects. Experiments reuse the
/// same fault entries under their `faults:` key.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping with a `faults:` list")]
#[schemars(title = "firedrill fault file")]
pub struct FaultFile {
    /// The faults, in the order they are evaluated (at most 1000).
    #[schemars(length(max = crate::fault::MAX_FAULTS))]
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

impl<'de> Deserialize<'de> for Fault {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_checked::<D, RawFault, Fault>(d)
    }
}

#[cfg(test)]
mod tests;
