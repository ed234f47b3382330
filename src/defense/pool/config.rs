//! The `pools:` section of the defense line: named upstream pools, their
//! servers, balancing, passive failure tracking, active health checks and
//! slow start, with NGINX's defaults.

use serde::{Deserialize, Deserializer};

use crate::clock::Duration;
use crate::schema::deserialize_checked;
use crate::schema::units::{Dur, Percent};

pub use super::check_config::{HealthCheckConfig, HealthMatch};
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

impl PoolConfig {
    /// Server `index`'s `max_fails`: its own, else the pool's; 0 in a
    /// pool of one server, which NGINX never takes out on failures (its
    /// round robin's `single` peer: one server and no backup).
    pub fn max_fails_of(&self, index: usize) -> u32 {
        if self.servers.len() == 1 {
            return 0;
        }
        self.servers[index].max_fails.unwrap_or(self.max_fails)
    }

    /// Server `index`'s `fail_timeout`: its own, else the pool's.
    pub fn fail_timeout_of(&self, index: usize) -> Duration {
        self.servers[index]
            .fail_timeout
            .unwrap_or(self.fail_timeout)
    }

    /// Whether any server tracks failures passively.
    pub fn tracks_passively(&self) -> bool {
        (0..self.servers.len()).any(|i| self.max_fails_of(i) > 0)
    }
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
    /// Its own `max_fails`, where it differs from the pool's (NGINX keeps
    /// it per server).
    pub max_fails: Option<u32>,
    /// Its own `fail_timeout`, where it differs from the pool's.
    pub fail_timeout: Option<Duration>,
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

pub(super) fn one() -> u32 {
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
        for (i, server) in raw.servers.iter().enumerate() {
            if raw.outlier_detection.is_some() && server.max_fails.is_some_and(|n| n > 0) {
                return Err(format!(
                    "servers[{i}].max_fails: NGINX's max_fails and Envoy's outlier_detection are two passive ejections: give one"
                ));
            }
            let fails = server.max_fails.unwrap_or(max_fails);
            if server.fail_timeout.is_some_and(|t| t.is_zero()) && fails > 0 {
                return Err(format!("servers[{i}].fail_timeout: must be longer than 0s"));
            }
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
    /// This server's own `max_fails` (default: the pool's), as NGINX's
    /// `server ... max_fails=N`.
    #[serde(default)]
    max_fails: Option<u32>,
    /// This server's own `fail_timeout` (default: the pool's).
    #[serde(default)]
    fail_timeout: Option<Dur>,
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
            max_fails: raw.max_fails,
            fail_timeout: raw.fail_timeout.map(Dur::get),
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

crate::schema_via!(PoolConfig, RawPool, "Pool");
crate::schema_via!(ServerConfig, RawServer, "PoolServer");
crate::schema_via!(OutlierConfig, RawOutlier, "OutlierDetection");

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
