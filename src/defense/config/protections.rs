//! The protections a route holds besides its breaker and bulkhead: the
//! rate limit, the retries and the fallbacks, each as the engine takes it
//! and as the YAML writes it (read through a raw form that checks it).

use indexmap::IndexMap;
use serde::{Deserialize, Deserializer};

use crate::clock::Duration;
use crate::schema::deserialize_checked;
use crate::schema::units::{Dur, Percent};

/// A rate limit: `per_second` requests, counted by `model`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimitConfig {
    /// Requests per second.
    pub per_second: f64,
    /// How passes are counted.
    pub model: RateModel,
}

/// How a rate limit counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateModel {
    /// A token bucket refilled at the rate, holding at most this many.
    TokenBucket {
        /// Bucket size.
        burst: u32,
    },
    /// Sentinel's QPS flow rule: the passes of the last second, counted
    /// in this many equal buckets of the run's clock; a request passes
    /// while they stay below the rate.
    Buckets {
        /// Buckets per second (divides 1000).
        buckets: u32,
    },
}

/// Retries with exponential backoff and seeded jitter.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryConfig {
    /// Attempts in all, the first included (>= 1).
    pub attempts: u32,
    /// Wait before the second attempt; doubles each time.
    pub backoff: Duration,
    /// Ceiling of the wait.
    pub max_backoff: Duration,
    /// Share of the wait that is random (full jitter at 100 %).
    pub jitter: Percent,
    /// Methods that may be retried.
    pub methods: Vec<http::Method>,
    /// The gRPC statuses a gRPC call is retried on, whatever its method
    /// (gRPC's `retryableStatusCodes`).
    pub grpc_statuses: Vec<crate::schema::units::GrpcError>,
}

/// Fallbacks, tried in order: stale, backup, static; without any, a 503
/// with the reason.
#[derive(Debug, Clone, Default)]
pub struct FallbackConfig {
    /// Serve the last good response for the same request if younger than
    /// this.
    pub stale: Option<Duration>,
    /// Another upstream, `host:port` or `http://host:port`.
    pub backup: Option<String>,
    /// A canned degraded response.
    pub static_response: Option<StaticResponse>,
}

/// A configured response.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StaticResponse {
    /// Status (default 200: a degraded but successful answer).
    #[serde(default = "ok_status")]
    #[schemars(range(min = 100, max = 599))]
    pub status: u16,
    /// Headers, in order.
    #[serde(default)]
    pub headers: IndexMap<String, String>,
    /// Body; to a gRPC caller, the message of an answer with status OK.
    #[serde(default)]
    pub body: String,
    /// Fail a gRPC call with this status instead (a name such as
    /// `NOT_FOUND`, or a number; `body` is its `grpc-message`), as a server
    /// does at once (trailers-only).
    #[serde(default)]
    pub grpc_status: Option<crate::schema::units::GrpcError>,
}

fn ok_status() -> u16 {
    200
}

/// A rate limit: a token bucket, or Sentinel's buckets of the last second.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawRateLimit {
    /// Requests per second, e.g. `100/s`.
    #[schemars(schema_with = "crate::schema::json::request_rate")]
    rate: String,
    /// `token_bucket` (default): tokens refilled at the rate, up to
    /// `burst` saved. `buckets`: Sentinel's QPS flow rule, the passes of
    /// the last second counted in `buckets` buckets.
    #[serde(default)]
    model: Option<RawRateModel>,
    /// Bucket size of a token bucket (default: one second's worth).
    #[serde(default)]
    burst: Option<u32>,
    /// Buckets per second of the `buckets` model (default 2, Sentinel's;
    /// must divide 1000).
    #[serde(default)]
    buckets: Option<u32>,
}

/// The counting model of a rate limit.
#[derive(Deserialize, schemars::JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum RawRateModel {
    /// Tokens refilled continuously at the rate.
    TokenBucket,
    /// The passes of the last second, in equal buckets (Sentinel).
    Buckets,
}

impl TryFrom<RawRateLimit> for RateLimitConfig {
    type Error = String;

    fn try_from(raw: RawRateLimit) -> Result<Self, String> {
        let number = raw
            .rate
            .trim()
            .strip_suffix("/s")
            .unwrap_or(raw.rate.trim());
        let per_second: f64 = number
            .trim()
            .parse()
            .ok()
            .filter(|r: &f64| *r > 0.0 && r.is_finite())
            .ok_or_else(|| {
                format!(
                    "rate: invalid rate `{}`: expected requests per second such as `100/s`",
                    raw.rate
                )
            })?;
        let model = match raw.model.unwrap_or(RawRateModel::TokenBucket) {
            RawRateModel::TokenBucket => {
                if raw.buckets.is_some() {
                    return Err("buckets: only the `buckets` model counts in buckets; a token bucket takes `burst`".to_string());
                }
                RateModel::TokenBucket {
                    burst: raw.burst.unwrap_or(per_second.ceil() as u32).max(1),
                }
            }
            RawRateModel::Buckets => {
                if raw.burst.is_some() {
                    return Err("burst: the `buckets` model saves nothing up (a request passes while the passes of the last second stay below the rate); leave burst out".to_string());
                }
                let buckets = raw.buckets.unwrap_or(2);
                if buckets == 0 || 1000 % buckets != 0 {
                    return Err(format!(
                        "buckets: {buckets} does not divide a second into whole milliseconds: expected a divisor of 1000 such as 2 (Sentinel's default), 4, 5 or 10"
                    ));
                }
                RateModel::Buckets { buckets }
            }
        };
        Ok(RateLimitConfig { per_second, model })
    }
}

impl<'de> Deserialize<'de> for RateLimitConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_checked::<D, RawRateLimit, RateLimitConfig>(d)
    }
}

/// Retries with exponential backoff and seeded jitter.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawRetry {
    /// Attempts in all, the first included (default 3; 1 = no retry).
    #[serde(default = "three")]
    #[schemars(range(min = 1))]
    attempts: u32,
    /// Wait before the second attempt; doubles each time (default `100ms`).
    #[serde(default = "hundred_ms")]
    backoff: Dur,
    /// Ceiling of the wait (default `10s`).
    #[serde(default)]
    max_backoff: Option<Dur>,
    /// Share of the wait that is random (default 50%).
    #[serde(default)]
    jitter: Option<Percent>,
    /// Methods that may be retried (default the idempotent GET, HEAD,
    /// OPTIONS, PUT, DELETE).
    #[serde(default)]
    methods: Option<Vec<String>>,
    /// Allow non-idempotent methods in `methods` (the dependency
    /// deduplicates).
    #[serde(default)]
    allow_non_idempotent: bool,
    /// The gRPC statuses a gRPC call is retried on, whatever its method
    /// (gRPC's own `retryableStatusCodes`; default `[UNAVAILABLE]`, which
    /// a connection error or a reset also is to a gRPC client; `[]`: gRPC
    /// calls are never retried).
    #[serde(default)]
    grpc_statuses: Option<Vec<crate::schema::units::GrpcError>>,
}

fn three() -> u32 {
    3
}

fn hundred_ms() -> Dur {
    Dur(Duration::from_millis(100))
}

impl TryFrom<RawRetry> for RetryConfig {
    type Error = String;

    fn try_from(raw: RawRetry) -> Result<Self, String> {
        if raw.attempts == 0 {
            return Err("attempts: must be at least 1 (1 = no retry)".to_string());
        }
        let names = raw.methods.unwrap_or_else(|| {
            ["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]
                .map(String::from)
                .to_vec()
        });
        let mut methods = Vec::new();
        for name in names {
            let method = http::Method::from_bytes(name.to_ascii_uppercase().as_bytes())
                .map_err(|_| format!("methods: invalid HTTP method `{name}`"))?;
            if !method.is_idempotent() && !raw.allow_non_idempotent {
                return Err(format!(
                    "methods: {method} is not idempotent, so a retry may apply it twice; \
                     set allow_non_idempotent: true if the dependency deduplicates"
                ));
            }
            methods.push(method);
        }
        let max_backoff = raw
            .max_backoff
            .map(Dur::get)
            .unwrap_or(Duration::from_secs(10));
        if max_backoff < raw.backoff.get() {
            return Err("max_backoff: must not be shorter than backoff".to_string());
        }
        Ok(RetryConfig {
            attempts: raw.attempts,
            backoff: raw.backoff.get(),
            max_backoff,
            jitter: raw.jitter.unwrap_or(Percent::new(50.0).expect("in range")),
            methods,
            grpc_statuses: raw
                .grpc_statuses
                .unwrap_or_else(|| vec!["UNAVAILABLE".parse().expect("a gRPC status name")]),
        })
    }
}

impl<'de> Deserialize<'de> for RetryConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_checked::<D, RawRetry, RetryConfig>(d)
    }
}

/// Fallbacks, tried in order stale, backup, static; at least one.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("minProperties" = 1))]
struct RawFallback {
    /// Serve the last good response for the same request.
    #[serde(default)]
    stale: Option<RawStale>,
    /// Another upstream, `host:port` or `http://host:port`.
    #[serde(default)]
    backup: Option<String>,
    /// A canned degraded response.
    #[serde(default, rename = "static")]
    static_response: Option<StaticResponse>,
}

/// The stale-cache fallback.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawStale {
    /// Serve a cached answer only if younger than this, e.g. `5m`.
    max_stale: Dur,
}

impl TryFrom<RawFallback> for FallbackConfig {
    type Error = String;

    fn try_from(raw: RawFallback) -> Result<Self, String> {
        if let Some(s) = &raw.static_response
            && !(100..=599).contains(&s.status)
        {
            return Err(format!(
                "static.status: invalid status {}: expected 100 to 599",
                s.status
            ));
        }
        if raw.stale.is_none() && raw.backup.is_none() && raw.static_response.is_none() {
            return Err("give at least one of stale, backup, static".to_string());
        }
        Ok(FallbackConfig {
            stale: raw.stale.map(|s| s.max_stale.get()),
            backup: raw.backup,
            static_response: raw.static_response,
        })
    }
}

impl<'de> Deserialize<'de> for FallbackConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_checked::<D, RawFallback, FallbackConfig>(d)
    }
}

crate::schema_via!(RateLimitConfig, RawRateLimit, "RateLimit");
crate::schema_via!(RetryConfig, RawRetry, "Retry");
crate::schema_via!(FallbackConfig, RawFallback, "Fallback");
