//! The `x-firedrill-*` headers: how the load generator, the defense line
//! and the fault proxy tell each other what happened to a request.

/// The load generator's sequence number of a request, carried through the
/// defense line and the fault proxy so the report can join them.
pub const REQUEST_ID_HEADER: &str = "x-firedrill-request-id";
/// Header naming the fallback that answered: `stale`, `static`, `backup`.
pub const FALLBACK_HEADER: &str = "x-firedrill-fallback";
/// Header naming why the defense answered instead of the dependency.
pub const REASON_HEADER: &str = "x-firedrill-reason";
/// Header naming the fault that answered instead of the dependency; only
/// a configured fault sets it.
pub const FAULT_HEADER: &str = "x-firedrill-fault";
/// Header naming why the fault proxy answered itself though no fault
/// decided it (`upstream-unreachable`, `upstream-error`): the proxy's own
/// 502, never to be mistaken for an injected fault.
pub const ERROR_HEADER: &str = "x-firedrill-error";

/// Which fallback served a response.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum FallbackKind {
    /// The last good response for the same request.
    Stale,
    /// The backup upstream.
    Backup,
    /// The configured static response.
    Static,
    /// The user's own service's fallback, recognised by the load route's
    /// `fallback` rule (header, status, body).
    Service,
}

impl FallbackKind {
    /// Every kind, in the order expectations list them.
    pub const ALL: [FallbackKind; 4] = [
        FallbackKind::Stale,
        FallbackKind::Static,
        FallbackKind::Backup,
        FallbackKind::Service,
    ];

    /// The kind a `x-firedrill-fallback` header value names.
    pub fn from_header(value: &str) -> Option<FallbackKind> {
        match value {
            "stale" => Some(FallbackKind::Stale),
            "backup" => Some(FallbackKind::Backup),
            "static" => Some(FallbackKind::Static),
            "service" => Some(FallbackKind::Service),
            _ => None,
        }
    }

    /// The header value.
    pub fn as_str(self) -> &'static str {
        match self {
            FallbackKind::Stale => "stale",
            FallbackKind::Backup => "backup",
            FallbackKind::Static => "static",
            FallbackKind::Service => "service",
        }
    }
}
