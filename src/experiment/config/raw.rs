//! An experiment file as written: every key with its default, before the
//! checks that build on each other turn it into an [`super::Experiment`].

use indexmap::IndexMap;
use serde::Deserialize;

use super::load::LoadSection;
use super::system::{RawDependency, RawSystem};
use super::{BuiltinTarget, ClockKind, PhaseSpec};
use crate::defense::DefenseConfig;
use crate::fault::{Fault, MAX_FAULTS};
use crate::schema::units::Dur;

/// A firedrill experiment: the target, the defense line in front of it, the
/// load sent through it, the fault timeline, and what must hold.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "firedrill experiment")]
pub(super) struct RawExperiment {
    /// Shown in reports; also the JUnit suite name.
    pub(super) name: String,
    /// What the drill proves, for people reading the report.
    #[serde(default)]
    pub(super) description: Option<String>,
    /// Seed of every random decision of the run (`--seed` overrides it).
    #[serde(default = "one")]
    pub(super) seed: u64,
    /// How long load is sent, e.g. `60s`: more than `0s`, at most `24h`.
    pub(super) duration: Dur,
    /// `virtual` (in memory, paused time: fast, deterministic) or `real`
    /// (loopback sockets, wall time); `--clock` overrides it.
    #[serde(default)]
    pub(super) clock: ClockKind,
    /// The dependency: the built-in fixture server (default) or a URL.
    #[serde(default)]
    pub(super) target: Option<RawTarget>,
    /// The user's own service as the system under test: the load goes to
    /// `url`; its breakers are inferred from what reaches `dependencies`.
    #[serde(default)]
    pub(super) system: Option<RawSystem>,
    /// The service's dependencies by name, each a fault proxy on a fixed
    /// `listen` address in front of a real `upstream` or the `builtin`
    /// fixture server.
    #[serde(default)]
    pub(super) dependencies: IndexMap<String, RawDependency>,
    /// The built-in defense line (as `firedrill defend --config`), or none;
    /// with `system`, it stands in front of the service.
    #[serde(default)]
    pub(super) defense: Option<DefenseConfig>,
    /// Load routes, sent open-loop (at least one), or `external`: no
    /// generated traffic (live traffic or another load tool), judged from
    /// what the dependency proxies saw.
    pub(super) load: LoadSection,
    /// The fault timeline, as in a fault file (at most 1000 faults, each
    /// starting before the end of the run).
    #[serde(default)]
    #[schemars(length(max = MAX_FAULTS))]
    pub(super) faults: Vec<Fault>,
    /// Expectations judged on the recorded run, one sentence each; names
    /// of breakers (defense routes), faults, load routes and phases are
    /// checked by `firedrill validate`.
    #[serde(default)]
    #[schemars(schema_with = "crate::experiment::expect::schema")]
    pub(super) expect: Vec<String>,
    /// Steady state: expectations without a window (`route A success >=
    /// 99%`) that must hold over the warm-up before the first fault, checked
    /// when it would start (if they fail, no fault is injected: exit 4), and
    /// again after the last fault ends.
    #[serde(default)]
    #[schemars(schema_with = "crate::experiment::expect::schema")]
    pub(super) steady_state: Vec<String>,
    /// Halt conditions: abort the drill (faults removed, partial report,
    /// exit 1) when one holds; checked every second.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::json::halt_conditions")]
    pub(super) halt: Vec<String>,
    /// Named spans of the run, for `in phase P` windows.
    #[serde(default)]
    pub(super) phases: Vec<PhaseSpec>,
    /// Requests in flight at most (default 10000); beyond it requests are
    /// shed and counted.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub(super) max_in_flight: Option<u32>,
    /// Whether the load and firedrill's own hops (defense line, fault
    /// proxy, built-in target) speak HTTP/2 (h2c) instead of HTTP/1.1
    /// (default: HTTP/2 when a load route is a gRPC call). A user's
    /// service or target is spoken to as its URL says (`h2c://`,
    /// `https://` with ALPN).
    #[serde(default)]
    pub(super) http2: Option<bool>,
    /// Where every run of this experiment is recorded: a SQLite file
    /// (relative to this file's folder; created on first use) or a
    /// `postgres://` URL. `--history` and `FIREDRILL_HISTORY` override it.
    #[serde(default)]
    pub(super) history: Option<String>,
    /// Prometheus servers by name, for `query` sentences (needs `clock:
    /// real`): `url`, `headers` or `bearer_token` (from a variable),
    /// `timeout`, `scrape_interval`.
    #[serde(default)]
    pub(super) prometheus: IndexMap<String, super::prometheus::RawSource>,
    /// PromQL queries by name, each sent as written to a `prometheus:`
    /// source: `query NAME max during FAULT <= 300ms` judges one.
    #[serde(default)]
    pub(super) queries: IndexMap<String, super::prometheus::RawQuery>,
}

/// The default seed.
fn one() -> u64 {
    1
}

/// The dependency: exactly one of `builtin` and `url` (with `tls` for an
/// `https://` url).
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("oneOf" = [{ "required": ["builtin"] }, { "required": ["url"] }]))]
pub(super) struct RawTarget {
    /// The embedded fixture server, with routes answered before its fixed
    /// ones (`/health`, `/status/{code}`, `/delay/{duration}`, ...), or
    /// several `instances` of it.
    #[serde(default)]
    pub(super) builtin: Option<BuiltinTarget>,
    /// A real service (needs `clock: real`): `http://host:port`,
    /// `https://host[:port]`, optionally with a path prefix put before
    /// every request path (`https://host/api`), or `host:port`.
    #[serde(default)]
    #[schemars(regex(pattern = r"^((https?://[^/:?#]+(:[0-9]+)?(/[^?#]*)?)|([^/:]+:[0-9]+))$"))]
    pub(super) url: Option<String>,
    /// TLS towards an `https://` url: `ca_file`, `client_cert` and
    /// `client_key` (PEM, relative to this file), `insecure_skip_verify`.
    #[serde(default)]
    pub(super) tls: Option<crate::tls::TlsOptions>,
}
