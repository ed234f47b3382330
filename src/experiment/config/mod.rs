//! The experiment file: name, seed, duration, clock, target, defense, load,
//! fault timeline, expectations, halt conditions, phases. Unknown keys are
//! errors; defaults live here.

use serde::{Deserialize, Deserializer};

use crate::clock::Duration;
use crate::defense::DefenseConfig;
use crate::fault::Fault;
use crate::schema::deserialize_checked;
use crate::schema::units::Dur;

pub use instances::BuiltinTarget;
pub use load::{ArrivalReplay, Arrivals, LoadRoute};
use raw::RawExperiment;
pub use system::{DependencySpec, InferredBreaker, Service, SystemSpec, Upstream};

pub mod agent;
mod build;
mod checks;
pub mod halt;
pub mod instances;
mod load;
pub mod locust;
pub mod message;
pub mod prometheus;
mod raw;
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
    /// The load and firedrill's own hops speak HTTP/2 (h2c).
    pub http2: bool,
    /// Where its runs are recorded (a SQLite path as written, or a
    /// PostgreSQL URL).
    pub history: Option<String>,
    /// The user's own service, when it (not firedrill's defense line) is
    /// the system under test.
    pub system: Option<SystemSpec>,
    /// The service's dependencies, each behind its own fault proxy.
    pub dependencies: Vec<DependencySpec>,
    /// `load: external`: no generated traffic; judged from what the
    /// dependency proxies saw.
    pub external_load: bool,
    /// `load: { locust: ... }`: Locust drives the load; `load` holds its
    /// routes (which send nothing themselves).
    pub locust: Option<locust::LocustSpec>,
    /// Prometheus servers `query` sentences are judged by, checked for
    /// reachability before the clock starts.
    pub prometheus: Vec<prometheus::PrometheusSource>,
    /// The named PromQL queries `query` sentences refer to.
    pub queries: Vec<prometheus::PromQuery>,
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
            Upstream::Builtin(_) | Upstream::Agent(_) => None,
        });
        target.into_iter().chain(upstreams)
    }

    /// Every dependency's agent, to fill in what is read after parsing
    /// (its TLS client).
    pub fn agents_mut(&mut self) -> impl Iterator<Item = &mut agent::Agent> {
        self.dependencies
            .iter_mut()
            .filter_map(|d| match &mut d.upstream {
                Upstream::Agent(agent) => Some(agent),
                _ => None,
            })
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
                Upstream::Builtin(_) | Upstream::Agent(_) => None,
            });
        target.into_iter().chain(upstreams)
    }

    /// How the load's ids ride in the headers a user's service passes on
    /// to its dependencies (none without `system:` or with `correlation:
    /// none`).
    pub fn correlation(&self) -> Option<crate::http::headers::Correlation> {
        self.system
            .as_ref()
            .filter(|s| !s.correlation.is_empty())
            .map(|s| crate::http::headers::Correlation {
                headers: s.correlation.clone(),
                seed: self.seed,
            })
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

/// The longest experiment (24 hours): a game day, not a soak test.
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

impl<'de> Deserialize<'de> for Experiment {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_checked::<D, RawExperiment, Experiment>(d)
    }
}

crate::schema_via!(Experiment, RawExperiment, "Experiment");
