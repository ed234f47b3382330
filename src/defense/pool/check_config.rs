//! The `health_check:` of a pool: NGINX Plus's active checks, a `GET uri`
//! to every server every `interval`, and what a passing answer looks like.

use http::HeaderName;
use indexmap::IndexMap;
use regex::Regex;
use serde::{Deserialize, Deserializer};

use crate::clock::Duration;
use crate::fault::matcher::regex_problem;
use crate::schema::deserialize_checked;
use crate::schema::units::Dur;

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
    /// A server starts out of rotation until it passes (NGINX Plus
    /// `mandatory`); else it starts in and leaves after `fails` failures.
    pub mandatory: bool,
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
    /// A regex the body must not match (NGINX Plus `body !~`).
    pub body_not: Option<Regex>,
}

impl Default for HealthMatch {
    fn default() -> Self {
        HealthMatch {
            status: vec![(200, 399)],
            headers: Vec::new(),
            body: None,
            body_not: None,
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
        if let Some(regex) = &self.body_not
            && regex.is_match(&String::from_utf8_lossy(body))
        {
            return Some(format!("body matches `{regex}`"));
        }
        None
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
    #[serde(default = "super::config::one")]
    #[schemars(range(min = 1))]
    fails: u32,
    /// Consecutive passed checks that bring it back (default 1).
    #[serde(default = "super::config::one")]
    #[schemars(range(min = 1))]
    passes: u32,
    /// What a passing answer looks like (default: status 200-399).
    #[serde(default, rename = "match")]
    matcher: Option<RawHealthMatch>,
    /// A server starts out of rotation until it passes `passes` checks
    /// (default true, NGINX Plus `mandatory`); false: it starts in
    /// rotation and leaves after `fails` failed checks (NGINX Plus without
    /// `mandatory`).
    #[serde(default = "yes")]
    mandatory: bool,
}

fn yes() -> bool {
    true
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
    /// A regex the body must not match (NGINX Plus `body !~`).
    #[serde(default)]
    body_not: Option<String>,
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
            mandatory: raw.mandatory,
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
    let body = body_regex("body", raw.body)?;
    let body_not = body_regex("body_not", raw.body_not)?;
    Ok(HealthMatch {
        status,
        headers,
        body,
        body_not,
    })
}

/// The regex of `match.<key>`, compiled.
fn body_regex(key: &str, pattern: Option<String>) -> Result<Option<Regex>, String> {
    pattern
        .map(|pattern| {
            Regex::new(&pattern).map_err(|e| {
                format!(
                    "match.{key}: invalid regex `{pattern}`: {}",
                    regex_problem(&e)
                )
            })
        })
        .transpose()
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

impl<'de> Deserialize<'de> for HealthCheckConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_checked::<D, RawHealthCheck, HealthCheckConfig>(d)
    }
}

crate::schema_via!(HealthCheckConfig, RawHealthCheck, "HealthCheck");
