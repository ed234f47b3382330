//! The experiment file: name, seed, duration, clock, target, defense, load,
//! fault timeline, expectations, halt conditions, phases. Unknown keys are
//! errors; defaults live here.

use indexmap::IndexMap;
use serde::{Deserialize, Deserializer};

use crate::clock::Duration;
use crate::defense::DefenseConfig;
use crate::fault::Fault;
use crate::fault::MAX_FAULTS;
use crate::schema::deserialize_checked;
use crate::schema::units::Dur;

pub use instances::BuiltinTarget;
pub use system::{DependencySpec, InferredBreaker, Service, SystemSpec, Upstream};
use system::{RawDependency, RawSystem};

mod checks;
pub mod instances;
pub mod system;

/// A parsed experiment; the expectations are still text here (see
/// [`crate::experiment::file::load`] for the checked form).
#[derive(Debug, Clone)]
pub struct Experiment {
    /// Shown in reports; also the JUnit suite name.
    pub name: String,
    /// What the drill proves, for people reading the report.
    pub description: Option<String>,
    /// Seed of every random decision of the run.
    pub seed: u64,
    /// How long load is sent.
    pub duration: Duration,
    /// Virtual (in-memory, paused time) or real (sockets, wall time).
    pub clock: ClockKind,
    /// What the faults and the defense line stand in front of.
    pub target: TargetSpec,
    /// The built-in defense line, or none.
    pub defense: Option<DefenseConfig>,
    /// Load routes.
    pub load: Vec<LoadRoute>,
    /// The fault timeline.
    pub faults: Vec<Fault>,
    /// Expectations, as written.
    pub expect: Vec<String>,
    /// Steady-state expectations, as written: checked before the first
    /// fault and after the last.
    pub steady_state: Vec<String>,
    /// Halt conditions, as written.
    pub halt: Vec<String>,
    /// Named spans of the run.
    pub phases: Vec<PhaseSpec>,
    /// Requests in flight at most; beyond it requests are shed and counted.
    pub max_in_flight: u32,
    /// The user's own service, when it (not firedrill's defense line) is
    /// the system under test.
    pub system: Option<SystemSpec>,
    /// The service's dependencies, each behind its own fault proxy.
    pub dependencies: Vec<DependencySpec>,
    /// `load: external`: no generated traffic; judged from what the
    /// dependency proxies saw.
    pub external_load: bool,
}

/// Which clock a run uses.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ClockKind {
    /// In-memory transports, paused auto-advancing time: fast, deterministic.
    #[default]
    Virtual,
    /// Real sockets on loopback (or a real target), wall time.
    Real,
}

impl ClockKind {
    /// Its name in files and output: `virtual` or `real`.
    pub fn name(self) -> &'static str {
        match self {
            ClockKind::Virtual => "virtual",
            ClockKind::Real => "real",
        }
    }
}

impl Experiment {
    /// Every real service firedrill calls: `target.url` or the service
    /// under test (`system.url`), then the dependencies' upstreams.
    pub fn services(&self) -> impl Iterator<Item = &Service> {
        let target = match (&self.target, &self.system) {
            (_, Some(system)) => Some(&system.service),
            (TargetSpec::Url(service), None) => Some(service),
            (TargetSpec::Builtin(_), None) => None,
        };
        let upstreams = self.dependencies.iter().filter_map(|d| match &d.upstream {
            Upstream::Url(service) => Some(service),
            Upstream::Builtin(_) => None,
        });
        target.into_iter().chain(upstreams)
    }

    /// [`Experiment::services`], to fill in what is read after parsing.
    pub fn services_mut(&mut self) -> impl Iterator<Item = &mut Service> {
        let target = match (&mut self.target, &mut self.system) {
            (_, Some(system)) => Some(&mut system.service),
            (TargetSpec::Url(service), None) => Some(service),
            (TargetSpec::Builtin(_), None) => None,
        };
        let upstreams = self
            .dependencies
            .iter_mut()
            .filter_map(|d| match &mut d.upstream {
                Upstream::Url(service) => Some(service),
                Upstream::Builtin(_) => None,
            });
        target.into_iter().chain(upstreams)
    }

    /// A warning for each service whose TLS certificate is not verified
    /// (`insecure_skip_verify`): printed at start and kept in the report.
    pub fn tls_warnings(&self) -> Vec<String> {
        self.services().filter_map(Service::warning).collect()
    }
}

/// The dependency.
#[derive(Debug, Clone)]
pub enum TargetSpec {
    /// The embedded fixture server: its routes, perhaps several instances.
    Builtin(BuiltinTarget),
    /// A real service over HTTP or HTTPS (real clock only).
    Url(Service),
}

/// One load route: a request sent open-loop at a rate.
#[derive(Debug, Clone)]
pub struct LoadRoute {
    /// Name in expectations and reports.
    pub name: String,
    /// Method.
    pub method: http::Method,
    /// Path with query.
    pub path: String,
    /// Extra headers.
    pub headers: IndexMap<String, String>,
    /// Body.
    pub body: String,
    /// Requests per second (unused when `recorded` sends).
    pub rate: f64,
    /// `replay:` as written: send at a recording's arrival times.
    pub replay: Option<ArrivalReplay>,
    /// The recording's arrival times, scaled by its speed, once read.
    pub recorded: Option<std::sync::Arc<[Duration]>>,
    /// Arrival process.
    pub arrivals: Arrivals,
    /// Linear ramp from 0 to `rate` over this long.
    pub ramp: Duration,
    /// The client's own timeout per request.
    pub timeout: Duration,
    /// When the route starts sending.
    pub from: Duration,
    /// How long it sends (default: to the end).
    pub length: Option<Duration>,
    /// How to recognise the user's service's fallback (none: the defense
    /// line's `x-firedrill-fallback` header).
    pub fallback: Option<crate::experiment::blackbox::classify::FallbackRule>,
    /// The statuses that count as success for this route (none: 2xx and
    /// 3xx).
    pub success: Option<Vec<crate::defense::breaker::StatusPattern>>,
}

/// `load[].replay`: a recording whose arrival times the route sends at.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping with file, format, speed, e.g. `{ file: incident.log, format: nginx }`"
)]
pub struct ArrivalReplay {
    /// The recording, relative to the experiment file.
    pub file: String,
    /// `requests`, `record`, `nginx` or `envoy` (see the `replay` fault);
    /// default: told from the recording's first line.
    #[serde(default)]
    pub format: Option<crate::trace::TraceFormat>,
    /// Play the recording this many times as fast (default 1; 2 sends the
    /// same requests in half the time).
    #[serde(default = "normal_speed")]
    pub speed: f64,
}

fn normal_speed() -> f64 {
    1.0
}

impl crate::schema::FromFile for ArrivalReplay {
    fn from_file(file: &str) -> Result<Self, String> {
        Ok(ArrivalReplay {
            file: file.to_string(),
            format: None,
            speed: normal_speed(),
        })
    }
}

/// How arrivals are spaced.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// Exponential gaps (seeded).
    #[default]
    Poisson,
    /// Evenly spaced.
    Constant,
}

/// A named span of the run (`in phase P` in expectations); `to` after
/// `from`.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PhaseSpec {
    /// Its name.
    pub name: String,
    /// Start.
    pub from: Dur,
    /// End.
    pub to: Dur,
}

/// A firedrill experiment: the target, the defense line in front of it, the
/// load sent through it, the fault timeline, and what must hold.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "firedrill experiment")]
struct RawExperiment {
    /// Shown in reports; also the JUnit suite name.
    name: String,
    /// What the drill proves, for people reading the report.
    #[serde(default)]
    description: Option<String>,
    /// Seed of every random decision of the run (`--seed` overrides it).
    #[serde(default = "one")]
    seed: u64,
    /// How long load is sent, e.g. `60s`: more than `0s`, at most `24h`.
    duration: Dur,
    /// `virtual` (in memory, paused time: fast, deterministic) or `real`
    /// (loopback sockets, wall time); `--clock` overrides it.
    #[serde(default)]
    clock: ClockKind,
    /// The dependency: the built-in fixture server (default) or a URL.
    #[serde(default)]
    target: Option<RawTarget>,
    /// The user's own service as the system under test: the load goes to
    /// `url`; its breakers are inferred from what reaches `dependencies`.
    #[serde(default)]
    system: Option<RawSystem>,
    /// The service's dependencies by name, each a fault proxy on a fixed
    /// `listen` address in front of a real `upstream` or the `builtin`
    /// fixture server.
    #[serde(default)]
    dependencies: IndexMap<String, RawDependency>,
    /// The built-in defense line (as `firedrill defend --config`), or none;
    /// with `system`, it stands in front of the service.
    #[serde(default)]
    defense: Option<DefenseConfig>,
    /// Load routes, sent open-loop (at least one), or `external`: no
    /// generated traffic (live traffic or another load tool), judged from
    /// what the dependency proxies saw.
    load: LoadSection,
    /// The fault timeline, as in a fault file (at most 1000 faults, each
    /// starting before the end of the run).
    #[serde(default)]
    #[schemars(length(max = MAX_FAULTS))]
    faults: Vec<Fault>,
    /// Expectations judged on the recorded run, one sentence each; names
    /// of breakers (defense routes), faults, load routes and phases are
    /// checked by `firedrill validate`.
    #[serde(default)]
    #[schemars(schema_with = "crate::experiment::expect::schema")]
    expect: Vec<String>,
    /// Steady state: expectations without a window (`route A success >=
    /// 99%`) that must hold over the warm-up before the first fault, checked
    /// when it would start (if they fail, no fault is injected: exit 4), and
    /// again after the last fault ends.
    #[serde(default)]
    #[schemars(schema_with = "crate::experiment::expect::schema")]
    steady_state: Vec<String>,
    /// Halt conditions: abort the drill (faults removed, partial report,
    /// exit 1) when one holds; checked every second.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::json::halt_conditions")]
    halt: Vec<String>,
    /// Named spans of the run, for `in phase P` windows.
    #[serde(default)]
    phases: Vec<PhaseSpec>,
    /// Requests in flight at most (default 10000); beyond it requests are
    /// shed and counted.
    #[serde(default)]
    #[schemars(range(min = 1))]
    max_in_flight: Option<u32>,
}

fn one() -> u64 {
    1
}

/// The dependency: exactly one of `builtin` and `url` (with `tls` for an
/// `https://` url).
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("oneOf" = [{ "required": ["builtin"] }, { "required": ["url"] }]))]
struct RawTarget {
    /// The embedded fixture server, with routes answered before its fixed
    /// ones (`/health`, `/status/{code}`, `/delay/{duration}`, ...), or
    /// several `instances` of it.
    #[serde(default)]
    builtin: Option<BuiltinTarget>,
    /// A real service (needs `clock: real`): `http://host:port`,
    /// `https://host[:port]`, optionally with a path prefix put before
    /// every request path (`https://host/api`), or `host:port`.
    #[serde(default)]
    #[schemars(regex(pattern = r"^((https?://[^/:?#]+(:[0-9]+)?(/[^?#]*)?)|([^/:]+:[0-9]+))$"))]
    url: Option<String>,
    /// TLS towards an `https://` url: `ca_file`, `client_cert` and
    /// `client_key` (PEM, relative to this file), `insecure_skip_verify`.
    #[serde(default)]
    tls: Option<crate::tls::TlsOptions>,
}

/// The longest experiment (24 hours): a game day, not a soak test.
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

impl TryFrom<RawExperiment> for Experiment {
    type Error = String;

    /// Every problem of the checks that stand alone (names, duration,
    /// fault windows, phases), and the first of those that build on each
    /// other (target, system, dependencies, breakers), one line each.
    fn try_from(raw: RawExperiment) -> Result<Self, String> {
        let mut problems = checks::standalone_problems(&raw);
        match build(raw) {
            Ok(experiment) if problems.is_empty() => Ok(experiment),
            Ok(_) => Err(problems.join("\n")),
            Err(problem) => {
                problems.push(problem);
                Err(problems.join("\n"))
            }
        }
    }
}

/// The experiment from its parts, or the first problem of the checks that
/// build on each other.
fn build(raw: RawExperiment) -> Result<Experiment, String> {
    let has_target = raw.target.is_some();
    let target = match raw.target {
        None => TargetSpec::Builtin(BuiltinTarget::default()),
        Some(RawTarget {
            builtin: Some(b),
            url: None,
            tls: None,
        }) => TargetSpec::Builtin(b),
        Some(RawTarget {
            builtin: None,
            url: Some(u),
            tls,
        }) => {
            let u = Service::read("target.url", &u, "target", tls)?;
            if raw.clock == ClockKind::Virtual {
                return Err(
                        "target.url: a real target needs `clock: real` (this experiment's clock is virtual)"
                            .to_string(),
                    );
            }
            TargetSpec::Url(u)
        }
        Some(RawTarget {
            builtin: Some(_),
            tls: Some(_),
            ..
        }) => return Err("target.tls: applies to an https:// url, not builtin".to_string()),
        Some(_) => return Err("target: give exactly one of builtin, url".to_string()),
    };
    let (load, external_load) = match raw.load {
        LoadSection::External => (Vec::new(), true),
        LoadSection::Routes(routes) => (routes, false),
    };
    if load.is_empty() && !external_load {
        return Err("load: an experiment needs at least one load route".to_string());
    }
    let route_names: Vec<String> = load.iter().map(|l| l.0.name.clone()).collect();
    let (system, dependencies) = match raw.system {
        Some(system) => {
            if has_target {
                return Err("system: give either system (your own service) or target (firedrill's fixture or a URL behind the built-in defense), not both".to_string());
            }
            if raw.clock == ClockKind::Virtual {
                return Err(
                        "system: your own service needs `clock: real` (this experiment's clock is virtual)"
                            .to_string(),
                    );
            }
            let (system, deps) = system::read(system, raw.dependencies, &route_names)?;
            (Some(system), deps)
        }
        None if !raw.dependencies.is_empty() => {
            return Err("dependencies: need `system` (the service that calls them)".to_string());
        }
        None if external_load => {
            return Err(
                "load: `external` needs `system` (the service the outside traffic reaches)"
                    .to_string(),
            );
        }
        None => (None, Vec::new()),
    };
    let mut breaker_names = std::collections::BTreeSet::new();
    let own = raw.defense.iter().flat_map(|d| {
        d.breakers()
            .map(|(n, ..)| ("defense.routes".to_string(), n.to_string()))
    });
    let per_dependency = dependencies.iter().flat_map(|dep| {
        dep.defense.iter().flat_map(move |d| {
            d.breakers().map(move |(n, ..)| {
                (
                    format!("dependencies.{}.defense.routes", dep.name),
                    n.to_string(),
                )
            })
        })
    });
    let inferred = system.iter().flat_map(|s| {
        s.breakers
            .keys()
            .map(|n| ("system.breakers".to_string(), n.clone()))
    });
    for (at, name) in own.chain(per_dependency).chain(inferred) {
        if !breaker_names.insert(name.clone()) {
            return Err(format!(
                "{at}.{name}: the breaker name `{name}` is used by another breaker; expectations name breakers, so each needs its own"
            ));
        }
    }
    let mut faults = raw.faults;
    let instance_names = match &target {
        TargetSpec::Builtin(builtin) if system.is_none() => builtin.names(),
        _ => Vec::new(),
    };
    instances::check_fault_instances(&faults, &instance_names)?;
    let dependency_names: Vec<&str> = dependencies.iter().map(|d| d.name.as_str()).collect();
    for (i, f) in faults.iter_mut().enumerate() {
        match (&f.dependency, dependency_names.as_slice()) {
            (None, []) => {}
            (None, [only]) => f.dependency = Some(only.to_string()),
            (None, _) => {
                return Err(format!(
                    "faults[{i}]: name the dependency it applies to: one of {}",
                    dependency_names.join(", ")
                ));
            }
            (Some(d), names) if !names.contains(&d.as_str()) => {
                return Err(format!(
                    "faults[{i}].dependency: unknown dependency `{d}`: expected one of {}",
                    system::one_of(names)
                ));
            }
            (Some(_), _) => {}
        }
    }
    Ok(Experiment {
        name: raw.name,
        description: raw.description,
        seed: raw.seed,
        duration: raw.duration.get(),
        clock: raw.clock,
        target,
        defense: raw.defense,
        load: load.into_iter().map(|l| l.0).collect(),
        faults,
        expect: raw.expect,
        steady_state: raw.steady_state,
        halt: raw.halt,
        phases: raw.phases,
        max_in_flight: raw.max_in_flight.unwrap_or(10_000).max(1),
        system,
        dependencies,
        external_load,
    })
}

impl<'de> Deserialize<'de> for Experiment {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_checked::<D, RawExperiment, Experiment>(d)
    }
}

/// A load route as read, checked.
struct RawLoad(LoadRoute);

/// A load route: one request sent open-loop at a rate (arrivals never wait
/// for responses).
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("oneOf" = [{ "required": ["rate"] }, { "required": ["replay"] }]))]
struct LoadFields {
    /// Name in expectations (`route NAME ...`), halt conditions and reports;
    /// unique.
    name: String,
    /// `METHOD /path[?query]`, e.g. `GET /inventory/sku-1`.
    #[schemars(schema_with = "crate::schema::json::request_line")]
    request: String,
    /// Requests per second, e.g. `50/s` (give `rate` or `replay`).
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::json::request_rate")]
    rate: Option<String>,
    /// Send at the arrival times of a recording instead of at a rate: its
    /// path, or `{ file, format, speed }`.
    #[serde(default, deserialize_with = "crate::schema::file_or_mapping")]
    #[schemars(schema_with = "crate::schema::json::file_or::<ArrivalReplay>")]
    replay: Option<ArrivalReplay>,
    /// `poisson` (exponential gaps, seeded; default) or `constant`.
    #[serde(default)]
    arrivals: Arrivals,
    /// Linear ramp from 0 to `rate` over this long (default `0s`).
    #[serde(default)]
    ramp: Dur,
    /// The client's own timeout per request, more than `0s` (default
    /// `10s`).
    #[serde(default)]
    timeout: Option<Dur>,
    /// Extra request headers.
    #[serde(default)]
    headers: IndexMap<String, String>,
    /// Request body.
    #[serde(default)]
    body: String,
    /// When the route starts sending (default `0s`).
    #[serde(default)]
    from: Dur,
    /// How long it sends (default: to the end).
    #[serde(default, rename = "for")]
    length: Option<Dur>,
    /// How to recognise the fallback of your own service (header, status,
    /// body); without it, the defense line's `x-firedrill-fallback` header.
    #[serde(default)]
    fallback: Option<crate::experiment::blackbox::classify::FallbackRule>,
    /// The statuses that count as success, e.g. `[200, 204]` or `[2xx]`
    /// (default: 2xx and 3xx).
    #[serde(default)]
    #[schemars(length(min = 1))]
    success: Option<Vec<crate::defense::breaker::StatusPattern>>,
}

impl TryFrom<LoadFields> for RawLoad {
    type Error = String;

    fn try_from(raw: LoadFields) -> Result<Self, String> {
        let (method, path) = raw.request.split_once(' ').ok_or_else(|| {
            format!(
                "request: `{}`: expected METHOD /path, e.g. `GET /inventory/sku-1`",
                raw.request
            )
        })?;
        let method = http::Method::from_bytes(method.as_bytes())
            .map_err(|_| format!("request: invalid method `{method}`"))?;
        let path = path.trim();
        if !path.starts_with('/') || path.parse::<http::uri::PathAndQuery>().is_err() {
            return Err(format!(
                "request: invalid path `{path}`: expected /path[?query]"
            ));
        }
        let rate = match (&raw.rate, &raw.replay) {
            (Some(rate), None) => parse_rate(rate)?,
            (None, Some(replay)) => {
                if !(replay.speed > 0.0 && replay.speed <= 1000.0) {
                    return Err(format!(
                        "replay.speed: {}: expected a factor above 0, up to 1000",
                        replay.speed
                    ));
                }
                if !raw.ramp.get().is_zero() || raw.arrivals != Arrivals::default() {
                    return Err("replay: the recording sets the arrival times; leave out `ramp` and `arrivals`".to_string());
                }
                0.0
            }
            (Some(_), Some(_)) => {
                return Err("replay: give either `rate` or `replay`, not both".to_string());
            }
            (None, None) => {
                return Err(
                    "missing field `rate` (e.g. `50/s`), or `replay` (a recording's arrival times)"
                        .to_string(),
                );
            }
        };
        for name in raw.headers.keys() {
            http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("headers: invalid header name `{name}`"))?;
        }
        if raw.timeout.is_some_and(|t| t.get().is_zero()) {
            return Err(
                "timeout: must be longer than 0s: every request would time out before it is sent"
                    .to_string(),
            );
        }
        Ok(RawLoad(LoadRoute {
            name: raw.name,
            method,
            path: path.to_string(),
            headers: raw.headers,
            body: raw.body,
            rate,
            replay: raw.replay,
            recorded: None,
            arrivals: raw.arrivals,
            ramp: raw.ramp.get(),
            timeout: raw.timeout.map(Dur::get).unwrap_or(Duration::from_secs(10)),
            from: raw.from.get(),
            length: raw.length.map(Dur::get),
            fallback: raw.fallback,
            success: raw.success,
        }))
    }
}

/// `50/s` or `50` as requests per second, from above 0 to 100000.
fn parse_rate(text: &str) -> Result<f64, String> {
    let number = text.trim().strip_suffix("/s").unwrap_or(text.trim()).trim();
    number
        .parse()
        .ok()
        .filter(|r: &f64| *r > 0.0 && *r <= 100_000.0)
        .ok_or_else(|| format!("rate: invalid rate `{text}`: expected requests per second from >0 to 100000, e.g. `50/s`"))
}

impl<'de> Deserialize<'de> for RawLoad {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_checked::<D, LoadFields, RawLoad>(d)
    }
}

crate::schema_via!(Experiment, RawExperiment, "Experiment");
crate::schema_via!(RawLoad, LoadFields, "LoadRoute");

/// `load:` — routes, or `external`.
enum LoadSection {
    /// No generated traffic.
    External,
    /// Open-loop routes.
    Routes(Vec<RawLoad>),
}

impl<'de> Deserialize<'de> for LoadSection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = LoadSection;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of load routes, or `external`")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<LoadSection, E> {
                if v == "external" {
                    Ok(LoadSection::External)
                } else {
                    Err(E::custom(format!(
                        "`{v}`: expected a list of load routes, or `external`"
                    )))
                }
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<LoadSection, A::Error> {
                Vec::<RawLoad>::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
                    .map(LoadSection::Routes)
            }
        }
        d.deserialize_any(Visitor)
    }
}

impl schemars::JsonSchema for LoadSection {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Load".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let routes = generator.subschema_for::<Vec<RawLoad>>();
        schemars::json_schema!({
            "description": "Load routes, sent open-loop (at least one), or `external`.",
            "anyOf": [
                { "const": "external" },
                { "allOf": [routes], "type": "array", "minItems": 1 },
            ],
        })
    }
}
