//! A system under test that is not firedrill's: the user's service (where
//! load goes), its breakers as firedrill infers them, and the dependencies
//! it calls, each through a fault proxy on a fixed address the service is
//! configured with.
//!
//! ```yaml
//! system:
//!   url: http://127.0.0.1:8080          # the service: load goes here (or https:// with tls:)
//!   breakers:                           # its breakers, inferred black-box
//!     inventory: { dependency: inventory, routes: [stock] }
//!   correlation: { headers: [x-request-id, traceparent] }   # the default; or `none`
//! dependencies:
//!   inventory:
//!     listen: 127.0.0.1:19001           # the service calls this
//!     upstream: http://127.0.0.1:9000   # or builtin: { routes: [...] }
//! ```

use indexmap::IndexMap;
use serde::{Deserialize, Deserializer};

use crate::clock::Duration;
use crate::http::endpoint::Endpoint;
use crate::http::headers::{TRACEPARENT, X_REQUEST_ID};
use crate::schema::deserialize_checked;
use crate::schema::units::Dur;
use crate::target::TargetRoute;
use crate::tls::{TlsClient, TlsOptions};

/// The user's service.
#[derive(Debug, Clone)]
pub struct SystemSpec {
    /// Where the load goes (`http://` or `https://`, perhaps with a path
    /// prefix).
    pub service: Service,
    /// Its breakers, inferred from what reaches its dependencies; named
    /// for expectations (`breaker NAME ...`).
    pub breakers: IndexMap<String, InferredBreaker>,
    /// The headers each load request carries its id in, for the service to
    /// pass on to its dependencies (empty: `correlation: none`).
    pub correlation: Vec<http::HeaderName>,
    /// The file names its correlation headers (`correlation: { headers:
    /// ... }`): the service is said to pass the ids on, so the evidence
    /// gate expects the calls to carry them.
    pub correlation_declared: bool,
}

/// A breaker of the user's service, inferred black-box.
#[derive(Debug, Clone)]
pub struct InferredBreaker {
    /// The dependency whose arrivals reveal it.
    pub dependency: String,
    /// The load routes whose requests use it (empty: every route).
    pub routes: Vec<String>,
    /// Only arrivals whose path matches this glob count (none: all of the
    /// dependency's).
    pub path: Option<crate::fault::HttpMatch>,
    /// The dependency through which the service holding this breaker is
    /// reached: only the requests that reached it count.
    pub via: Option<String>,
    /// A silence longer than this while the service is called means open
    /// (default: derived from the load rate).
    pub gap: Option<Duration>,
    /// Trial calls the breaker admits in half-open (default 1, as opossum
    /// and pybreaker; resilience4j's `permitted_calls_in_half_open`).
    pub probes: u32,
    /// The service's configured wait in open, if known: lets expectations
    /// say `half_opens within wait_in_open ± 500ms after opening`.
    pub wait_in_open: Option<Duration>,
    /// Where the service reports the breaker's state itself, shown beside
    /// the inferred one.
    pub reported: Option<crate::experiment::blackbox::reported::ReportedSource>,
}

/// One dependency of the service: a fault proxy on `listen` in front of
/// `upstream`.
#[derive(Debug, Clone)]
pub struct DependencySpec {
    /// Its name: faults and inferred breakers refer to it.
    pub name: String,
    /// `host:port` the proxy listens on (the service is configured to call
    /// it).
    pub listen: String,
    /// What the proxy forwards to.
    pub upstream: Upstream,
    /// firedrill's defense line between the service and this dependency's
    /// fault proxy (it then listens on `listen`), or none.
    pub defense: Option<crate::defense::DefenseConfig>,
}

/// Where a dependency proxy forwards.
#[derive(Debug, Clone)]
pub enum Upstream {
    /// A real service, over HTTP or HTTPS.
    Url(Service),
    /// The embedded fixture server with these routes.
    Builtin(Vec<TargetRoute>),
    /// The fault proxy is an agent's, on another host.
    Agent(super::agent::Agent),
}

/// A real service firedrill calls (`target.url`, a dependency's
/// `upstream`): where it is and how to speak TLS to it.
#[derive(Debug, Clone)]
pub struct Service {
    /// The key its settings sit under: `target`, `system` or
    /// `dependencies.NAME`.
    pub at: String,
    /// Its URL: scheme, host and port, path prefix.
    pub endpoint: Endpoint,
    /// `tls:` as written (files relative to the experiment file).
    pub tls: TlsOptions,
    /// The TLS client read from `tls` when the experiment file is loaded
    /// (`https://` only); none until then.
    pub client: Option<TlsClient>,
}

impl Service {
    /// Reads the URL at `key` and its `tls:` beside it (`at`); `tls` is
    /// for `https://` URLs only.
    pub(super) fn read(
        key: &str,
        url: &str,
        at: &str,
        tls: Option<TlsOptions>,
    ) -> Result<Service, String> {
        let endpoint = Endpoint::parse(key, url)?;
        if tls.is_some() && !endpoint.https {
            return Err(format!(
                "{at}.tls: `{url}` is plain HTTP; tls applies to https:// URLs only"
            ));
        }
        Ok(Service {
            at: at.to_string(),
            endpoint,
            tls: tls.unwrap_or_default(),
            client: None,
        })
    }

    /// The warning for a service whose certificate is not verified.
    pub fn warning(&self) -> Option<String> {
        self.tls.insecure_skip_verify.then(|| {
            crate::tls::insecure_warning(
                &format!("{}.tls.insecure_skip_verify", self.at),
                &self.endpoint.url(),
            )
        })
    }
}

/// `system:` as written.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSystem {
    /// The service under test (needs `clock: real`): the load is sent
    /// here. `http://host:port`, `https://host[:port]`, `h2c://host:port`
    /// (HTTP/2 without TLS: a gRPC server), optionally with a path prefix
    /// put before every request path, or `host:port`.
    #[schemars(regex(
        pattern = r"^(((https?|h2c)://[^/:?#]+(:[0-9]+)?(/[^?#]*)?)|([^/:]+:[0-9]+))$"
    ))]
    url: String,
    /// TLS towards an `https://` service: `ca_file`, `client_cert` and
    /// `client_key` (PEM, relative to this file), `insecure_skip_verify`.
    #[serde(default)]
    tls: Option<TlsOptions>,
    /// The service's breakers, inferred from what reaches its
    /// dependencies, by name.
    #[serde(default)]
    breakers: IndexMap<String, InferredBreaker>,
    /// The headers each load request carries its id in (`x-request-id`,
    /// W3C `traceparent`), so that a call the service passes them on to
    /// is paired with its request: `{ headers: [...] }`, or `none`
    /// (default: both).
    #[serde(default)]
    correlation: Option<Correlation>,
}

/// `system.correlation`: `none`, or `{ headers: [NAME, ...] }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Correlation(Vec<http::HeaderName>);

/// `system.correlation` as a mapping.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawCorrelation {
    /// The header names, at least one: `traceparent` carries
    /// `00-<trace id>-<parent id>-01`, any other the 32-hex trace id.
    headers: Vec<String>,
}

impl TryFrom<RawCorrelation> for Correlation {
    type Error = String;

    fn try_from(raw: RawCorrelation) -> Result<Self, String> {
        if raw.headers.is_empty() {
            return Err(
                "headers: empty: name at least one header, or write `correlation: none`"
                    .to_string(),
            );
        }
        let mut names: Vec<http::HeaderName> = Vec::new();
        for (i, name) in raw.headers.iter().enumerate() {
            let header = http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("headers[{i}]: `{name}` is not a header name"))?;
            let reserved = ["host", "content-length", "transfer-encoding", "connection"];
            if reserved.contains(&header.as_str()) || header.as_str().starts_with("x-firedrill-") {
                return Err(format!(
                    "headers[{i}]: `{name}` is not free for ids: use x-request-id, traceparent or a header of your own"
                ));
            }
            if names.contains(&header) {
                return Err(format!("headers[{i}]: `{name}` is named twice"));
            }
            names.push(header);
        }
        Ok(Correlation(names))
    }
}

impl<'de> Deserialize<'de> for Correlation {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Correlation;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("`none` or { headers: [x-request-id, traceparent] }")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Correlation, E> {
                match v {
                    "none" => Ok(Correlation(Vec::new())),
                    _ => Err(E::invalid_value(serde::de::Unexpected::Str(v), &self)),
                }
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Correlation, A::Error> {
                let raw =
                    RawCorrelation::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Correlation::try_from(raw).map_err(serde::de::Error::custom)
            }
        }
        d.deserialize_any(Visit)
    }
}

impl schemars::JsonSchema for Correlation {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Correlation".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let map = generator.subschema_for::<RawCorrelation>();
        schemars::json_schema!({
            "description": "`none`, or the headers each load request carries its id in.",
            "anyOf": [{ "const": "none" }, map]
        })
    }
}

/// A breaker of the user's service, inferred from the arrivals at one
/// dependency while the service is being called.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawInferred {
    /// The dependency (a key of `dependencies`) whose arrivals reveal it.
    dependency: String,
    /// Load routes whose requests use it (default: every route).
    #[serde(default)]
    routes: Vec<String>,
    /// Only arrivals at paths matching this glob count (default: all).
    #[serde(default)]
    path: Option<crate::fault::HttpMatch>,
    /// The breaker is in a service deeper in the system, reached through
    /// this dependency: only the requests that reached it count (a request
    /// turned away before it, by a fault or a breaker in front, never gave
    /// this breaker a chance). Needs `correlation`.
    #[serde(default)]
    via: Option<String>,
    /// A silence at the dependency longer than this while the service is
    /// called means open (default: derived from the load rate).
    #[serde(default)]
    gap: Option<Dur>,
    /// Trial calls the breaker admits in half-open (default 1).
    #[serde(default)]
    #[schemars(range(min = 1))]
    probes: Option<u32>,
    /// The service's own wait in open, if known (for timing expectations).
    #[serde(default)]
    wait_in_open: Option<Dur>,
    /// Where the service reports this breaker's state itself, shown in the
    /// report beside the inferred transitions: `{ events: FILE }` (JSON
    /// lines `{"at_ms", "from", "to"}`) or `{ prometheus: { url, name } }`
    /// (resilience4j's `resilience4j_circuitbreaker_state` or
    /// opossum-prometheus's `circuit{name,event}` counter).
    #[serde(default)]
    reported: Option<crate::experiment::blackbox::reported::ReportedSource>,
}

impl TryFrom<RawInferred> for InferredBreaker {
    type Error = String;

    fn try_from(raw: RawInferred) -> Result<Self, String> {
        if raw.probes == Some(0) {
            return Err("probes: must be at least 1".to_string());
        }
        if raw.gap.is_some_and(|g| g.get().is_zero()) {
            return Err("gap: must be longer than 0s".to_string());
        }
        if raw.via.as_ref() == Some(&raw.dependency) {
            return Err(format!(
                "via: `{}` is the breaker's own dependency: name the one in front of it",
                raw.dependency
            ));
        }
        Ok(InferredBreaker {
            via: raw.via,
            dependency: raw.dependency,
            routes: raw.routes,
            path: raw.path,
            gap: raw.gap.map(Dur::get),
            probes: raw.probes.unwrap_or(1),
            wait_in_open: raw.wait_in_open.map(Dur::get),
            reported: raw.reported,
        })
    }
}

impl<'de> Deserialize<'de> for InferredBreaker {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_checked::<D, RawInferred, InferredBreaker>(d)
    }
}

crate::schema_via!(InferredBreaker, RawInferred, "InferredBreaker");

/// A dependency as written.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDependency {
    /// `host:port` the fault proxy listens on; configure the service to
    /// call it. With `agent:`, on the agent's host (to create its proxy).
    #[serde(default)]
    #[schemars(regex(pattern = r"^[^/]+:[0-9]+$"))]
    listen: Option<String>,
    /// The real dependency: `http://host:port`, `https://host[:port]`,
    /// optionally with a path prefix put before every request path
    /// (`https://host/api`), or `host:port`.
    #[serde(default)]
    #[schemars(regex(pattern = r"^((https?://[^/:?#]+(:[0-9]+)?(/[^?#]*)?)|([^/:]+:[0-9]+))$"))]
    upstream: Option<String>,
    /// TLS towards an `https://` upstream: `ca_file`, `client_cert` and
    /// `client_key` (PEM, relative to this file), `insecure_skip_verify`.
    #[serde(default)]
    tls: Option<TlsOptions>,
    /// Or the embedded fixture server with these routes.
    #[serde(default)]
    builtin: Option<RawBuiltinRoutes>,
    /// firedrill's defense line between the service and this dependency
    /// (as `firedrill defend --config`): it listens on `listen`, in front
    /// of the fault proxy. Its breakers are named after its routes.
    #[serde(default)]
    defense: Option<crate::defense::DefenseConfig>,
    /// The fault proxy runs on another host, as `firedrill server` or a
    /// real Toxiproxy, driven through its API: `{ api, proxy, token,
    /// lease, kind }`.
    #[serde(default)]
    agent: Option<super::agent::RawAgent>,
}

/// The fixture server's routes.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBuiltinRoutes {
    /// Routes by path, each with its latency, status and body.
    #[serde(default)]
    pub(super) routes: Vec<TargetRoute>,
}

/// Reads `system:` and `dependencies:` and checks them against each other
/// and against the load routes.
pub(super) fn read(
    system: RawSystem,
    dependencies: IndexMap<String, RawDependency>,
    routes: &[String],
) -> Result<(SystemSpec, Vec<DependencySpec>), String> {
    let service = Service::read("system.url", &system.url, "system", system.tls)?;
    let mut deps = Vec::new();
    for (name, raw) in dependencies {
        let key = format!("dependencies.{name}");
        for (field, addr) in [("listen", &raw.listen), ("upstream", &raw.upstream)] {
            if let Some(refusal) = addr.as_deref().and_then(crate::net::spaced) {
                return Err(format!("{key}.{field}: {refusal}"));
            }
        }
        if let Some(agent) = raw.agent {
            deps.push(remote(
                &key,
                name,
                raw.listen,
                raw.upstream,
                agent,
                raw.tls,
                raw.builtin.is_some(),
                raw.defense.is_some(),
            )?);
            continue;
        }
        let Some(listen) = raw.listen else {
            return Err(format!(
                "{key}.listen: missing: the host:port the fault proxy listens on (the service calls it), e.g. 127.0.0.1:19001"
            ));
        };
        let upstream = match (raw.upstream, raw.builtin) {
            (Some(u), None) => Upstream::Url(Service::read(
                &format!("{key}.upstream"),
                &u,
                &key,
                raw.tls,
            )?),
            (None, Some(_)) if raw.tls.is_some() => {
                return Err(format!(
                    "{key}.tls: applies to an https:// upstream, not builtin"
                ));
            }
            (None, Some(b)) => Upstream::Builtin(b.routes),
            _ => return Err(format!("{key}: give exactly one of upstream, builtin")),
        };
        check_listen(&key, &listen)?;
        deps.push(DependencySpec {
            name,
            listen,
            upstream,
            defense: raw.defense,
        });
    }
    let names: Vec<&str> = deps.iter().map(|d| d.name.as_str()).collect();
    for (breaker, b) in &system.breakers {
        if let Some(via) = &b.via
            && !names.contains(&via.as_str())
        {
            return Err(format!(
                "system.breakers.{breaker}.via: unknown dependency `{via}`: expected one of {}",
                one_of(&names)
            ));
        }
        if b.via.is_some() && system.correlation.as_ref().is_some_and(|c| c.0.is_empty()) {
            return Err(format!(
                "system.breakers.{breaker}.via: needs the load's ids passed on (correlation), not `correlation: none`"
            ));
        }
        if !names.contains(&b.dependency.as_str()) {
            return Err(format!(
                "system.breakers.{breaker}.dependency: unknown dependency `{}`: expected one of {}",
                b.dependency,
                one_of(&names)
            ));
        }
        for r in &b.routes {
            if !routes.contains(r) {
                return Err(format!(
                    "system.breakers.{breaker}.routes: unknown load route `{r}`: expected one of {}",
                    one_of(&routes.iter().map(String::as_str).collect::<Vec<_>>())
                ));
            }
        }
    }
    Ok((
        SystemSpec {
            service,
            breakers: system.breakers,
            correlation_declared: system.correlation.as_ref().is_some_and(|c| !c.0.is_empty()),
            correlation: system.correlation.map_or_else(
                || {
                    [X_REQUEST_ID, TRACEPARENT]
                        .map(http::HeaderName::from_static)
                        .to_vec()
                },
                |c| c.0,
            ),
        },
        deps,
    ))
}

/// `listen` at `key` is `host:port`.
fn check_listen(key: &str, listen: &str) -> Result<(), String> {
    let port_ok = listen
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
    if !port_ok {
        return Err(format!(
            "{key}.listen: `{listen}`: expected host:port, e.g. 127.0.0.1:19001"
        ));
    }
    Ok(())
}

/// A dependency whose fault proxy is an agent's: what runs on this
/// machine (a fixture server, TLS, a defense line) cannot go with it.
#[allow(clippy::too_many_arguments)]
fn remote(
    key: &str,
    name: String,
    listen: Option<String>,
    upstream: Option<String>,
    agent: super::agent::RawAgent,
    tls: Option<TlsOptions>,
    builtin: bool,
    defense: bool,
) -> Result<DependencySpec, String> {
    let local = [
        (
            builtin,
            "builtin",
            "a fixture server runs on this machine; an agent's proxy forwards to a real upstream",
        ),
        (
            tls.is_some(),
            "tls",
            "an agent's proxy speaks no TLS upstream",
        ),
        (
            defense,
            "defense",
            "firedrill's defense line runs on this machine, not on the agent's host",
        ),
    ];
    if let Some((_, what, why)) = local.iter().find(|(given, _, _)| *given) {
        return Err(format!("{key}.{what}: {why}: drop it, or drop agent"));
    }
    if let Some(listen) = &listen {
        check_listen(key, listen)?;
    }
    let agent = super::agent::read(
        &format!("{key}.agent"),
        &name,
        agent,
        listen.clone(),
        upstream,
    )?;
    Ok(DependencySpec {
        name,
        listen: listen.unwrap_or_default(),
        upstream: Upstream::Agent(agent),
        defense: None,
    })
}

/// `a, b, c`, or a note that there are none.
pub(super) fn one_of(names: &[&str]) -> String {
    if names.is_empty() {
        "(none declared)".to_string()
    } else {
        names.join(", ")
    }
}
