//! The `pools:` section of the defense line: named upstream pools, their
//! servers, balancing, passive failure tracking, active health checks and
//! slow start, with NGINX's defaults.

use http::HeaderName;
use indexmap::IndexMap;
use regex::Regex;
use serde::{Deserialize, Deserializer};

use crate::clock::Duration;
use crate::fault::matcher::regex_problem;
use crate::schema::deserialize_checked;
use crate::schema::units::{Dur, Percent};

pub use super::outlier::OutlierConfig;

/// One pool: several servers of the same dependency.
#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// Its servers, primaries and backups, in the order written.
    pub servers: Vec<ServerConfig>,
    /// How a server is chosen among the healthy primaries.
    pub balance: Balance,
    /// Failed attempts within `fail_timeout` that take a server out (0 =
    /// passive tracking off).
    pub max_fails: u32,
    /// The window of `max_fails`, and how long the server stays out.
    pub fail_timeout: Duration,
    /// Active health checks, if any.
    pub health_check: Option<HealthCheckConfig>,
    /// How long a returning server's weight takes to ramp to full (zero:
    /// at once).
    pub slow_start: Duration,
    /// Envoy's outlier detection instead of NGINX's `max_fails`, if set.
    pub outlier_detection: Option<OutlierConfig>,
}

/// How a server is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Balance {
    /// Smooth weighted round robin (NGINX's).
    #[default]
    RoundRobin,
    /// Fewest calls in flight for its weight; ties by round robin.
    LeastConn,
}

/// Where a server is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum ServerTarget {
    /// A network address, `host:port` or `http://host:port`.
    Address(String),
    /// A built-in target instance of an experiment, by name.
    Instance(String),
}

/// One server of a pool.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// Its name in reports, the journal and metrics.
    pub name: String,
    /// Where it is.
    pub target: ServerTarget,
    /// Its share of the calls relative to the others (at least 1).
    pub weight: u32,
    /// Used only when every primary is out.
    pub backup: bool,
}

/// Active health checks: a `GET uri` to every server every `interval`.
#[derive(Debug, Clone)]
pub struct HealthCheckConfig {
    /// The path checked.
    pub uri: String,
    /// Time between two checks of a server.
    pub interval: Duration,
    /// How long a check may take before it counts as failed.
    pub timeout: Duration,
    /// Consecutive failed checks that take a server out.
    pub fails: u32,
    /// Consecutive passed checks that bring it back (or in, at start).
    pub passes: u32,
    /// What a passing answer looks like.
    pub matcher: HealthMatch,
}

/// What a passing health-check answer looks like: every condition holds.
#[derive(Debug, Clone)]
pub struct HealthMatch {
    /// Status ranges, inclusive; the status must be in one of them.
    pub status: Vec<(u16, u16)>,
    /// Headers whose value must match a regex.
    pub headers: Vec<(HeaderName, Regex)>,
    /// A regex the body must match.
    pub body: Option<Regex>,
}

impl Default for HealthMatch {
    fn default() -> Self {
        HealthMatch {
            status: vec![(200, 399)],
            headers: Vec::new(),
            body: None,
        }
    }
}

impl HealthMatch {
    /// Whether `status` is accepted.
    pub fn status_passes(&self, status: u16) -> bool {
        self.status
            .iter()
            .any(|&(low, high)| low <= status && status <= high)
    }

    /// Why the answer fails the check, or `None` when it passes.
    pub fn failure(&self, status: u16, headers: &http::HeaderMap, body: &[u8]) -> Option<String> {
        if !self.status_passes(status) {
            return Some(format!("status {status}"));
        }
        for (name, regex) in &self.headers {
            let value = headers.get(name).and_then(|v| v.to_str().ok());
            if !value.is_some_and(|v| regex.is_match(v)) {
                return Some(format!("header {name} does not match `{regex}`"));
            }
        }
        if let Some(regex) = &self.body
            && !regex.is_match(&String::from_utf8_lossy(body))
        {
            return Some(format!("body does not match `{regex}`"));
        }
        None
    }
}

/// A named upstream pool (NGINX's `upstream` block): routes with `pool:`
/// send their calls to its servers instead of the line's upstream.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawPool {
    /// The servers, primaries and backups (at least one primary).
    servers: Vec<ServerConfig>,
    /// `round_robin` (smooth weighted, default) or `least_conn`.
    #[serde(default)]
    balance: Balance,
    /// Failed attempts within `fail_timeout` that take a server out for
    /// `fail_timeout` (default 1, or 0 with `outlier_detection`; 0 =
    /// passive tracking off).
    #[serde(default)]
    max_fails: Option<u32>,
    /// Window of `max_fails` and time out of rotation (default `10s`).
    #[serde(default = "ten_seconds")]
    fail_timeout: Dur,
    /// Active health checks; a server starts out of rotation until it
    /// passes them.
    #[serde(default)]
    health_check: Option<HealthCheckConfig>,
    /// A returning server's weight ramps from zero to full over this
    /// (default `0`: at once).
    #[serde(default)]
    slow_start: Dur,
    /// Envoy's passive ejection (consecutive 5xx or gateway failures, out
    /// for a growing time, returned by interval sweeps) instead of
    /// `max_fails`.
    #[serde(default)]
    outlier_detection: Option<OutlierConfig>,
}

fn one() -> u32 {
    1
}

fn ten_seconds() -> Dur {
    Dur(Duration::from_secs(10))
}

impl TryFrom<RawPool> for PoolConfig {
    type Error = String;

    fn try_from(raw: RawPool) -> Result<Self, String> {
        if raw.servers.is_empty() {
            return Err("servers: a pool needs at least one server".to_string());
        }
        if raw.servers.iter().all(|s| s.backup) {
            return Err(
                "servers: every server is a backup: expected at least one primary (backup: false)"
                    .to_string(),
            );
        }
        for (i, server) in raw.servers.iter().enumerate() {
            if let Some(first) = raw.servers[..i].iter().position(|s| s.name == server.name) {
                return Err(format!(
                    "servers[{i}]: the server name `{}` is taken by servers[{first}]: expected unique names (set name:)",
                    server.name
                ));
            }
        }
        let max_fails = match (raw.max_fails, &raw.outlier_detection) {
            (Some(n), Some(_)) if n > 0 => {
                return Err("max_fails: NGINX's max_fails and Envoy's outlier_detection are two passive ejections: give one (max_fails: 0 with outlier_detection)".to_string());
            }
            (_, Some(_)) if raw.health_check.is_some() => {
                return Err("outlier_detection: with health_check it is not modelled (Envoy returns an ejected host on a passed active check): give one of them".to_string());
            }
            (n, Some(_)) => n.unwrap_or(0),
            (n, None) => n.unwrap_or(1),
        };
        if raw.fail_timeout.get() == Duration::ZERO && max_fails > 0 {
            return Err("fail_timeout: must be longer than 0s".to_string());
        }
        Ok(PoolConfig {
            servers: raw.servers,
            balance: raw.balance,
            max_fails,
            fail_timeout: raw.fail_timeout.get(),
            health_check: raw.health_check,
            slow_start: raw.slow_start.get(),
            outlier_detection: raw.outlier_detection,
        })
    }
}

/// One server: `address:` (for `firedrill defend`) or `instance:` (a
/// built-in target instance in an experiment).
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawServer {
    /// A network address, `host:port` or `http://host:port`.
    #[serde(default)]
    address: Option<String>,
    /// A built-in target instance (experiments); its name is the server's.
    #[serde(default)]
    instance: Option<String>,
    /// Name in reports and metrics (default: the address or instance).
    #[serde(default)]
    name: Option<String>,
    /// Share of the calls relative to the others (default 1).
    #[serde(default = "one")]
    #[schemars(range(min = 1))]
    weight: u32,
    /// Used only when every primary is out (default false).
    #[serde(default)]
    backup: bool,
}

impl TryFrom<RawServer> for ServerConfig {
    type Error = String;

    fn try_from(raw: RawServer) -> Result<Self, String> {
        if raw.weight == 0 {
            return Err("weight: must be at least 1".to_string());
        }
        let target = match (raw.address, raw.instance) {
            (Some(_), Some(_)) => {
                return Err("give either address or instance, not both".to_string());
            }
            (None, None) => {
                return Err("give address (host:port) or instance (a target instance)".to_string());
            }
            (Some(a), None) if a.trim().is_empty() => {
                return Err("address: must not be empty".to_string());
            }
            (None, Some(i)) if i.trim().is_empty() => {
                return Err("instance: must not be empty".to_string());
            }
            (Some(a), None) => ServerTarget::Address(a),
            (None, Some(i)) => ServerTarget::Instance(i),
        };
        let name = match (&target, raw.name) {
            (ServerTarget::Instance(i), Some(n)) if &n != i => {
                return Err(format!(
                    "name: an instance server is named after its instance (`{i}`): leave name out"
                ));
            }
            (_, Some(n)) if n.trim().is_empty() => {
                return Err("name: must not be empty".to_string());
            }
            (_, Some(n)) => n,
            (ServerTarget::Address(a) | ServerTarget::Instance(a), None) => a.clone(),
        };
        Ok(ServerConfig {
            name,
            target,
            weight: raw.weight,
            backup: raw.backup,
        })
    }
}

/// Envoy's `outlier_detection` of a cluster, its consecutive-error
/// ejection, with Envoy's defaults.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawOutlier {
    /// 5xx answers in a row that eject a server (default 5; 0 = off).
    #[serde(default = "five")]
    consecutive_5xx: u32,
    /// 502, 503 or 504 answers in a row that eject a server (default 0 =
    /// off, as Envoy enforces none by default).
    #[serde(default)]
    consecutive_gateway_failure: u32,
    /// Time between two sweeps that return servers (default `10s`).
    #[serde(default = "ten_seconds")]
    interval: Dur,
    /// Time out for a first ejection, times the ejections not yet worn off
    /// (default `30s`).
    #[serde(default = "thirty_seconds")]
    base_ejection_time: Dur,
    /// The longest time out (default `300s`, or `base_ejection_time` if
    /// longer).
    #[serde(default)]
    max_ejection_time: Option<Dur>,
    /// The largest share of servers out at once (default `10%`).
    #[serde(default = "ten_percent")]
    max_ejection_percent: Percent,
    /// Eject one server even when the share forbids it, if none is out
    /// (default false).
    #[serde(default)]
    always_eject_one_host: bool,
    /// Below this share of servers in rotation, calls go to every server
    /// (Envoy's `healthy_panic_threshold`, default `50%`; `0%` = never).
    #[serde(default = "fifty_percent")]
    panic_threshold: Percent,
}

fn five() -> u32 {
    5
}

fn thirty_seconds() -> Dur {
    Dur(Duration::from_secs(30))
}

fn ten_percent() -> Percent {
    Percent::new(10.0).expect("in range")
}

fn fifty_percent() -> Percent {
    Percent::new(50.0).expect("in range")
}

impl TryFrom<RawOutlier> for OutlierConfig {
    type Error = String;

    fn try_from(raw: RawOutlier) -> Result<Self, String> {
        let interval = raw.interval.get();
        if interval == Duration::ZERO {
            return Err("interval: must be longer than 0s".to_string());
        }
        let base = raw.base_ejection_time.get();
        if base == Duration::ZERO {
            return Err("base_ejection_time: must be longer than 0s".to_string());
        }
        let max = raw
            .max_ejection_time
            .map_or(base.max(Duration::from_secs(300)), Dur::get);
        if max < base {
            return Err(format!(
                "max_ejection_time: {} is shorter than base_ejection_time {}",
                Dur(max),
                Dur(base)
            ));
        }
        Ok(OutlierConfig {
            consecutive_5xx: raw.consecutive_5xx,
            consecutive_gateway_failure: raw.consecutive_gateway_failure,
            interval,
            base_ejection_time: base,
            max_ejection_time: max,
            max_ejection_percent: raw.max_ejection_percent,
            always_eject_one_host: raw.always_eject_one_host,
            panic_threshold: raw.panic_threshold,
        })
    }
}

/// Active health checks (NGINX Plus `health_check`, `mandatory`).
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawHealthCheck {
    /// The path checked with a GET (default `/health`).
    #[serde(default = "health_uri")]
    uri: String,
    /// Time between two checks of a server (default `5s`); the first runs
    /// at once.
    #[serde(default = "five_seconds")]
    interval: Dur,
    /// How long a check may take before it fails (default `1s`, at most
    /// the interval).
    #[serde(default)]
    timeout: Option<Dur>,
    /// Consecutive failed checks that take a server out (default 1).
    #[serde(default = "one")]
    #[schemars(range(min = 1))]
    fails: u32,
    /// Consecutive passed checks that bring it back (default 1).
    #[serde(default = "one")]
    #[schemars(range(min = 1))]
    passes: u32,
    /// What a passing answer looks like (default: status 200-399).
    #[serde(default, rename = "match")]
    matcher: Option<RawHealthMatch>,
}

fn health_uri() -> String {
    "/health".to_string()
}

fn five_seconds() -> Dur {
    Dur(Duration::from_secs(5))
}

/// Conditions on a health-check answer; all must hold.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawHealthMatch {
    /// Accepted statuses: `"200-399"` (default), `200`, or a list of
    /// codes and ranges.
    #[serde(default)]
    status: Option<RawStatuses>,
    /// Header name to a regex its value must match.
    #[serde(default)]
    header: IndexMap<String, String>,
    /// A regex the body must match.
    #[serde(default)]
    body: Option<String>,
}

/// One status or range, or a list of them.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
enum RawStatuses {
    /// One code or range.
    One(RawStatus),
    /// Several.
    Many(Vec<RawStatus>),
}

/// A code (`200`) or an inclusive range (`"200-399"`).
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
enum RawStatus {
    /// A code.
    Code(u16),
    /// A code or range as text.
    Text(String),
}

impl TryFrom<RawHealthCheck> for HealthCheckConfig {
    type Error = String;

    fn try_from(raw: RawHealthCheck) -> Result<Self, String> {
        if !raw.uri.starts_with('/') || raw.uri.parse::<http::Uri>().is_err() {
            return Err(format!(
                "uri: invalid path `{}`: expected a path such as /health",
                raw.uri
            ));
        }
        let interval = raw.interval.get();
        if interval == Duration::ZERO {
            return Err("interval: must be longer than 0s".to_string());
        }
        let timeout = raw.timeout.map_or(Duration::from_secs(1), Dur::get);
        if timeout == Duration::ZERO {
            return Err("timeout: must be longer than 0s".to_string());
        }
        if raw.fails == 0 {
            return Err("fails: must be at least 1".to_string());
        }
        if raw.passes == 0 {
            return Err("passes: must be at least 1".to_string());
        }
        Ok(HealthCheckConfig {
            uri: raw.uri,
            interval,
            timeout: timeout.min(interval),
            fails: raw.fails,
            passes: raw.passes,
            matcher: raw
                .matcher
                .map(health_match)
                .transpose()?
                .unwrap_or_default(),
        })
    }
}

/// Compiles the conditions; errors name `match.<key>`.
fn health_match(raw: RawHealthMatch) -> Result<HealthMatch, String> {
    let status = match raw.status {
        None => vec![(200, 399)],
        Some(RawStatuses::One(s)) => {
            vec![status_range(&s).map_err(|e| format!("match.status: {e}"))?]
        }
        Some(RawStatuses::Many(list)) => {
            if list.is_empty() {
                return Err("match.status: expected at least one code or range".to_string());
            }
            let mut ranges = Vec::new();
            for (i, s) in list.iter().enumerate() {
                ranges.push(status_range(s).map_err(|e| format!("match.status[{i}]: {e}"))?);
            }
            ranges
        }
    };
    let mut headers = Vec::new();
    for (name, pattern) in raw.header {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("match.header: invalid header name `{name}`"))?;
        let regex = Regex::new(&pattern).map_err(|e| {
            format!(
                "match.header.{name}: invalid regex `{pattern}`: {}",
                regex_problem(&e)
            )
        })?;
        headers.push((header, regex));
    }
    let body = raw
        .body
        .map(|pattern| {
            Regex::new(&pattern).map_err(|e| {
                format!(
                    "match.body: invalid regex `{pattern}`: {}",
                    regex_problem(&e)
                )
            })
        })
        .transpose()?;
    Ok(HealthMatch {
        status,
        headers,
        body,
    })
}

/// `200` or `"200-399"` as an inclusive range.
fn status_range(raw: &RawStatus) -> Result<(u16, u16), String> {
    let text = match raw {
        RawStatus::Code(c) => c.to_string(),
        RawStatus::Text(t) => t.trim().to_string(),
    };
    let bad = || {
        format!(
            "invalid status `{text}`: expected a code from 100 to 599 or a range such as `200-399`"
        )
    };
    let code = |s: &str| {
        s.trim()
            .parse::<u16>()
            .ok()
            .filter(|c| (100..=599).contains(c))
            .ok_or_else(bad)
    };
    let (low, high) = match text.split_once('-') {
        Some((low, high)) => (code(low)?, code(high)?),
        None => (code(&text)?, code(&text)?),
    };
    if low > high {
        return Err(format!(
            "invalid range `{text}`: the first code must not be above the second"
        ));
    }
    Ok((low, high))
}

impl<'de> Deserialize<'de> for PoolConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_checked::<D, RawPool, PoolConfig>(d)
    }
}

impl<'de> Deserialize<'de> for ServerConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_checked::<D, RawServer, ServerConfig>(d)
    }
}

impl<'de> Deserialize<'de> for OutlierConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_checked::<D, RawOutlier, OutlierConfig>(d)
    }
}

impl<'de> Deserialize<'de> for HealthCheckConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_checked::<D, RawHealthCheck, HealthCheckConfig>(d)
    }
}

crate::schema_via!(PoolConfig, RawPool, "Pool");
crate::schema_via!(ServerConfig, RawServer, "PoolServer");
crate::schema_via!(HealthCheckConfig, RawHealthCheck, "HealthCheck");
crate::schema_via!(OutlierConfig, RawOutlier, "OutlierDetection");

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
