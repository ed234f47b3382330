//! The `defense:` section: the same YAML for `firedrill defend --config`
//! and for experiments. Routes group the protections of the requests they
//! match; defaults live here and nowhere else.

use indexmap::IndexMap;
use serde::{Deserialize, Deserializer};

mod protections;

pub use protections::{FallbackConfig, RateLimitConfig, RateModel, RetryConfig, StaticResponse};

use super::breaker::BreakerConfig;
use super::pool::config::PoolConfig;
use crate::clock::Duration;
use crate::fault::HttpMatch;
use crate::schema::deserialize_checked;
use crate::schema::units::Dur;

/// The whole defense line.
#[derive(Debug, Clone, Default)]
pub struct DefenseConfig {
    /// Per-attempt timeout for routes that set none.
    pub timeout: Option<Duration>,
    /// Outer deadline of one client request, retries included.
    pub request_timeout: Option<Duration>,
    /// Calls in flight across all routes (a server's workers); full: reject
    /// at once with 503.
    pub max_concurrent: Option<u32>,
    /// Token bucket in front of everything.
    pub rate_limit: Option<RateLimitConfig>,
    /// Routes, first match wins.
    pub routes: IndexMap<String, RouteConfig>,
    /// Upstream pools by name; a route with `pool:` calls one.
    pub pools: IndexMap<String, PoolConfig>,
    /// The keys of imported files the drill does not cover, one line each
    /// (`key (file:line): why: ...`), for the report: a verdict never looks
    /// broader than it is.
    pub not_drilled: Vec<String>,
}

impl DefenseConfig {
    /// The routes with a breaker: `(breaker name, its config, its path
    /// glob)`, in route order.
    pub fn breakers(
        &self,
    ) -> impl Iterator<Item = (&str, &super::breaker::BreakerConfig, Option<&str>)> {
        self.routes.iter().filter_map(|(name, route)| {
            let breaker = route.breaker.as_ref()?;
            Some((name.as_str(), breaker, route.matcher.path_glob()))
        })
    }
}

/// The protections of one route (partition).
#[derive(Debug, Clone)]
pub struct RouteConfig {
    /// Which requests belong to the route.
    pub matcher: HttpMatch,
    /// Per-attempt timeout (overrides the line's).
    pub timeout: Option<Duration>,
    /// Concurrent calls of this route.
    pub bulkhead: Option<BulkheadConfig>,
    /// The route's circuit breaker, named after the route.
    pub breaker: Option<BreakerConfig>,
    /// Retries of idempotent requests.
    pub retry: Option<RetryConfig>,
    /// What the caller gets when a call is rejected or fails.
    pub fallback: Option<FallbackConfig>,
    /// Token bucket of this route.
    pub rate_limit: Option<RateLimitConfig>,
    /// The pool this route's calls go to instead of the line's upstream.
    pub pool: Option<String>,
    /// NGINX's way of retrying: a failed attempt passed on at once to a
    /// pool server not tried yet (`proxy_next_upstream`).
    pub next_upstream: Option<NextUpstream>,
}

/// What passes a request on to the next server of the route's pool, and
/// what counts as a failed attempt there, as NGINX's `proxy_next_upstream`
/// (`ngx_http_upstream_next`, `ngx_http_upstream_test_next`): a connection
/// error or a timeout always counts against the server's `max_fails`, and
/// is passed on when listed; a listed status is passed on (and counts,
/// except 403 and 404) while attempts remain, and is the answer, counted
/// as a success, on the last one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextUpstream {
    /// Pass on a connection error (refused, reset, broken).
    pub error: bool,
    /// Pass on a timeout.
    pub timeout: bool,
    /// Pass on these statuses (500, 502, 503, 504, 403, 404, 429).
    pub statuses: Vec<u16>,
    /// Attempts in all, the first included; 0: one per server of the pool
    /// (`proxy_next_upstream_tries 0`).
    pub tries: u32,
    /// Pass on POST, PATCH and LOCK too once they were sent (a connection
    /// error passes them on anyway: nothing was sent).
    pub non_idempotent: bool,
}

impl NextUpstream {
    /// The statuses `proxy_next_upstream` can name.
    pub const STATUSES: [u16; 7] = [500, 502, 503, 504, 403, 404, 429];
}

/// A counting limit on concurrent calls.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkheadConfig {
    /// Calls in flight at most.
    #[schemars(range(min = 1))]
    pub max_concurrent: u32,
    /// How long a call may wait for a slot; `0s` (default) rejects at once.
    #[serde(default)]
    pub max_wait: Dur,
}

/// The defense line in front of the dependency: line-wide limits, then
/// routes (first match wins), each with its own protections.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "firedrill defense line")]
struct RawDefense {
    /// Per-attempt timeout for routes that set none.
    #[serde(default)]
    timeout: Option<Dur>,
    /// Outer deadline of one client request, retries included; longer than
    /// every per-attempt timeout.
    #[serde(default)]
    request_timeout: Option<Dur>,
    /// Calls in flight across all routes (a server's workers); full: 503 at
    /// once.
    #[serde(default)]
    #[schemars(range(min = 1))]
    max_concurrent: Option<u32>,
    /// Token bucket in front of everything.
    #[serde(default)]
    rate_limit: Option<RateLimitConfig>,
    /// Routes by name, first match wins; a route's breaker is named after
    /// it in expectations.
    #[serde(default)]
    routes: IndexMap<String, RawRoute>,
    /// Upstream pools by name (NGINX's `upstream`): several servers of the
    /// dependency, health-checked; a route with `pool:` calls one.
    #[serde(default)]
    pools: IndexMap<String, PoolConfig>,
    /// Settings a team already runs, imported (docs/import.md): each route
    /// takes the instance of its name (or of its `instance:`), its own
    /// keys laid over the imported ones; imported pools join `pools`.
    /// Written out when the file is read, so never seen here.
    #[serde(default)]
    import: Option<RawImport>,
    /// Written by `import:`: each key of the imported files the drill does
    /// not cover (`key (file:line): why: ...`), carried into the report.
    #[serde(default)]
    not_drilled: Vec<String>,
}

/// `import:` — a file per format, paths relative to the file that names
/// them.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("minProperties" = 1))]
// Its fields are the schema's description: `defense::import::expand`
// reads the mapping itself before this type sees the file.
#[allow(dead_code)]
struct RawImport {
    /// resilience4j's Spring Boot configuration (`application.yml` or
    /// `.properties`).
    #[serde(default)]
    resilience4j: Option<ImportFiles>,
    /// Sentinel rules JSON (degrade and flow rules).
    #[serde(default)]
    sentinel: Option<ImportFiles>,
    /// NGINX configuration (`upstream` blocks, the locations proxying to
    /// them).
    #[serde(default)]
    nginx: Option<ImportFiles>,
    /// opossum options JSON.
    #[serde(default)]
    opossum: Option<ImportFiles>,
    /// Envoy YAML: clusters and the routes sending to them.
    #[serde(default)]
    envoy: Option<ImportFiles>,
    /// Istio DestinationRule YAML (its host's trafficPolicy).
    #[serde(default)]
    istio: Option<ImportFiles>,
    /// The target instance each imported pool server's address stands for
    /// (`"10.0.1.11:8080": a`), in an experiment whose built-in target has
    /// instances.
    #[serde(default)]
    servers: IndexMap<String, String>,
    /// Refuse an imported key firedrill does not drill, instead of listing
    /// it under `not_drilled` (`firedrill import --strict`).
    #[serde(default)]
    strict: bool,
}

/// One file, or several of one format (Sentinel's degrade and flow rules
/// are often kept apart).
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum ImportFiles {
    /// One file.
    One(String),
    /// Several, read in order.
    Many(Vec<String>),
}

/// The protections of one route.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawRoute {
    /// Which requests belong to the route (default: all).
    #[serde(rename = "match", default)]
    matcher: HttpMatch,
    /// Per-attempt timeout (overrides the line's).
    #[serde(default)]
    timeout: Option<Dur>,
    /// A limit on this route's concurrent calls.
    #[serde(default)]
    bulkhead: Option<BulkheadConfig>,
    /// The route's circuit breaker.
    #[serde(default)]
    breaker: Option<BreakerConfig>,
    /// Retries of idempotent requests, with exponential backoff.
    #[serde(default)]
    retry: Option<RetryConfig>,
    /// What the caller gets when a call is rejected or fails.
    #[serde(default)]
    fallback: Option<FallbackConfig>,
    /// Token bucket of this route.
    #[serde(default)]
    rate_limit: Option<RateLimitConfig>,
    /// Send this route's calls to a pool of `pools` instead of the line's
    /// upstream.
    #[serde(default)]
    pool: Option<String>,
    /// With `pool`: NGINX's `proxy_next_upstream`, passing a failed attempt
    /// on at once to a server not tried yet (instead of `retry`).
    #[serde(default)]
    next_upstream: Option<RawNextUpstream>,
    /// The imported instance this route takes (default: the one of the
    /// route's name), with `import:`.
    #[serde(default)]
    instance: Option<String>,
}

impl TryFrom<RawDefense> for DefenseConfig {
    type Error = String;

    fn try_from(raw: RawDefense) -> Result<Self, String> {
        if raw.import.is_some() {
            return Err("import: is read in an experiment's defense (and its dependencies') or at the top of a defense file".to_string());
        }
        if raw.max_concurrent == Some(0) {
            return Err("max_concurrent: must be at least 1".to_string());
        }
        let outer = raw.request_timeout.map(Dur::get);
        if outer == Some(Duration::ZERO) {
            return Err("request_timeout: must be longer than 0s".to_string());
        }
        let line_timeout = raw.timeout.map(Dur::get);
        check_inner_timeout("timeout", line_timeout, outer)?;
        let mut routes = IndexMap::new();
        for (name, route) in raw.routes {
            let key = format!("routes.{name}");
            check_inner_timeout(
                &format!("{key}.timeout"),
                route.timeout.map(Dur::get),
                outer,
            )?;
            if route.instance.is_some() {
                return Err(format!(
                    "{key}.instance: names an imported instance, but nothing is imported here: add import: {{ FORMAT: FILE }} beside routes"
                ));
            }
            if let Some(b) = route.bulkhead
                && b.max_concurrent == 0
            {
                return Err(format!("{key}.bulkhead.max_concurrent: must be at least 1"));
            }
            if let Some(pool) = &route.pool
                && !raw.pools.contains_key(pool)
            {
                return Err(unknown_pool(&key, pool, &raw.pools));
            }
            let next_upstream = match route.next_upstream {
                None => None,
                Some(_) if route.pool.is_none() => {
                    return Err(format!(
                        "{key}.next_upstream: passes a call on to another server of the route's pool: set pool:"
                    ));
                }
                Some(_) if route.retry.is_some() => {
                    return Err(format!(
                        "{key}.next_upstream: give retry or next_upstream, not both (each decides when an attempt is sent again)"
                    ));
                }
                Some(raw) => Some(
                    raw.into_config()
                        .map_err(|m| format!("{key}.next_upstream.{m}"))?,
                ),
            };
            let breaker = route.breaker.map(|mut b| {
                if b.name.is_empty() {
                    b.name = name.clone();
                }
                b
            });
            routes.insert(
                name,
                RouteConfig {
                    matcher: route.matcher,
                    timeout: route.timeout.map(Dur::get),
                    bulkhead: route.bulkhead,
                    breaker,
                    retry: route.retry,
                    fallback: route.fallback,
                    rate_limit: route.rate_limit,
                    pool: route.pool,
                    next_upstream,
                },
            );
        }
        Ok(DefenseConfig {
            timeout: line_timeout,
            request_timeout: outer,
            max_concurrent: raw.max_concurrent,
            rate_limit: raw.rate_limit,
            routes,
            pools: raw.pools,
            not_drilled: raw.not_drilled,
        })
    }
}

/// `next_upstream:` as written.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawNextUpstream {
    /// What passes an attempt on: `error`, `timeout`, `http_500`,
    /// `http_502`, `http_503`, `http_504`, `http_403`, `http_404`,
    /// `http_429` (NGINX's words; default `[error, timeout]`, NGINX's).
    #[serde(default = "error_timeout")]
    on: Vec<String>,
    /// Attempts in all, the first included (default 0: one per server).
    #[serde(default)]
    tries: u32,
    /// Pass on POST, PATCH and LOCK too once sent (default false).
    #[serde(default)]
    non_idempotent: bool,
}

fn error_timeout() -> Vec<String> {
    vec!["error".to_string(), "timeout".to_string()]
}

impl RawNextUpstream {
    fn into_config(self) -> Result<NextUpstream, String> {
        let mut next = NextUpstream {
            error: false,
            timeout: false,
            statuses: Vec::new(),
            tries: self.tries,
            non_idempotent: self.non_idempotent,
        };
        for word in &self.on {
            let status = word
                .strip_prefix("http_")
                .and_then(|c| c.parse::<u16>().ok());
            match (word.as_str(), status) {
                ("error", _) => next.error = true,
                ("timeout", _) => next.timeout = true,
                (_, Some(code)) if NextUpstream::STATUSES.contains(&code) => {
                    next.statuses.push(code)
                }
                _ => {
                    return Err(format!(
                        "on: unknown `{word}`: expected error, timeout, http_500, http_502, http_503, http_504, http_403, http_404 or http_429"
                    ));
                }
            }
        }
        Ok(next)
    }
}

/// The error for route `key` naming a pool `name` that `pools` lacks.
fn unknown_pool(key: &str, name: &str, pools: &IndexMap<String, PoolConfig>) -> String {
    let known: Vec<String> = pools.keys().map(|k| format!("`{k}`")).collect();
    let expected = if known.is_empty() {
        "no pools are defined (add one under pools:)".to_string()
    } else {
        format!("expected one of {}", known.join(", "))
    };
    format!("{key}.pool: unknown pool `{name}`: {expected}")
}

/// An inner (per-attempt) timeout must be shorter than the outer deadline,
/// or the inner work is wasted.
fn check_inner_timeout(
    key: &str,
    inner: Option<Duration>,
    outer: Option<Duration>,
) -> Result<(), String> {
    if inner == Some(Duration::ZERO) {
        return Err(format!("{key}: must be longer than 0s"));
    }
    if let (Some(inner), Some(outer)) = (inner, outer)
        && inner >= outer
    {
        return Err(format!(
            "{key}: the per-attempt timeout ({}) must be shorter than request_timeout ({}), or the inner work is wasted",
            Dur(inner),
            Dur(outer)
        ));
    }
    Ok(())
}

impl<'de> Deserialize<'de> for DefenseConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_checked::<D, RawDefense, DefenseConfig>(d)
    }
}

crate::schema_via!(DefenseConfig, RawDefense, "DefenseConfig");
