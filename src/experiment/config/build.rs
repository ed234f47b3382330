//! The checks of an experiment that build on each other, in order: the
//! target, the load, the system under test and its dependencies, the
//! breakers' names, the faults' instances and dependencies. The first
//! problem stops the build (the ones that stand alone are in `checks`).

use super::load::{LoadSection, RawLoad};
use super::raw::{RawExperiment, RawTarget};
use super::system::{self, RawDependency, RawSystem};
use super::{BuiltinTarget, ClockKind, DependencySpec, Experiment, Service, SystemSpec};
use super::{TargetSpec, checks, instances};
use crate::defense::DefenseConfig;
use crate::fault::Fault;

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
    let target = target(raw.target, raw.clock)?;
    let (load, external_load, locust) = load(raw.load)?;
    let route_names: Vec<String> = load.iter().map(|l| l.name.clone()).collect();
    let under_test = UnderTest {
        has_target,
        clock: raw.clock,
        external_load,
    };
    let (system, dependencies) = under_test.system(raw.system, raw.dependencies, &route_names)?;
    unique_breaker_names(raw.defense.as_ref(), &dependencies, system.as_ref())?;
    let mut faults = raw.faults;
    let instance_names = match &target {
        TargetSpec::Builtin(builtin) if system.is_none() => builtin.names(),
        _ => Vec::new(),
    };
    instances::check_fault_instances(&faults, &instance_names)?;
    assign_dependencies(&mut faults, &dependencies)?;
    if locust.is_some() && system.is_none() {
        return Err(
            "load.locust: needs `system` (Locust loads your own service, at system.url)"
                .to_string(),
        );
    }
    let grpc_load = load.iter().any(|route| route.grpc);
    let (prometheus, queries) = super::prometheus::read(raw.prometheus, raw.queries, raw.clock)?;
    Ok(Experiment {
        name: raw.name,
        description: raw.description,
        seed: raw.seed,
        duration: raw.duration.get(),
        clock: raw.clock,
        target,
        defense: raw.defense,
        load,
        faults,
        expect: raw.expect,
        steady_state: raw.steady_state,
        halt: raw.halt,
        phases: raw.phases,
        max_in_flight: raw.max_in_flight.unwrap_or(10_000).max(1),
        http2: raw.http2.unwrap_or(grpc_load),
        history: raw.history.filter(|h| !h.is_empty()),
        system,
        dependencies,
        external_load,
        locust,
        prometheus,
        queries,
    })
}

/// `target:`: the fixture server (also when absent) or a real URL, which
/// needs the real clock.
fn target(raw: Option<RawTarget>, clock: ClockKind) -> Result<TargetSpec, String> {
    Ok(match raw {
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
            if clock == ClockKind::Virtual {
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
    })
}

/// `load:`: the routes (at least one), whether the traffic is external,
/// and Locust's settings when it drives the load.
#[allow(clippy::type_complexity)]
fn load(
    section: LoadSection,
) -> Result<
    (
        Vec<super::LoadRoute>,
        bool,
        Option<super::locust::LocustSpec>,
    ),
    String,
> {
    let (load, external_load, locust) = match section {
        LoadSection::External => (Vec::new(), true, None),
        LoadSection::Routes(routes) => (
            routes.into_iter().map(|r: RawLoad| r.0).collect(),
            false,
            None,
        ),
        LoadSection::Locust(raw) => {
            let (spec, routes) = super::locust::read(raw)?;
            (routes, false, Some(spec))
        }
    };
    if load.is_empty() && !external_load {
        return Err("load: an experiment needs at least one load route".to_string());
    }
    Ok((load, external_load, locust))
}

/// What the checks of `system:` need to know of the rest of the file.
struct UnderTest {
    /// The file has a `target:`.
    has_target: bool,
    /// The experiment's clock.
    clock: ClockKind,
    /// `load: external`.
    external_load: bool,
}

impl UnderTest {
    /// `system:` and `dependencies:`: a user's own service needs the real
    /// clock and no `target:`; dependencies and external load need a
    /// system.
    fn system(
        &self,
        raw: Option<RawSystem>,
        dependencies: indexmap::IndexMap<String, RawDependency>,
        route_names: &[String],
    ) -> Result<(Option<SystemSpec>, Vec<DependencySpec>), String> {
        match raw {
            Some(raw) => {
                if self.has_target {
                    return Err("system: give either system (your own service) or target (firedrill's fixture or a URL behind the built-in defense), not both".to_string());
                }
                if self.clock == ClockKind::Virtual {
                    return Err(
                        "system: your own service needs `clock: real` (this experiment's clock is virtual)"
                            .to_string(),
                    );
                }
                let (system, deps) = system::read(raw, dependencies, route_names)?;
                Ok((Some(system), deps))
            }
            None if !dependencies.is_empty() => {
                Err("dependencies: need `system` (the service that calls them)".to_string())
            }
            None if self.external_load => Err(
                "load: `external` needs `system` (the service the outside traffic reaches)"
                    .to_string(),
            ),
            None => Ok((None, Vec::new())),
        }
    }
}

/// Every breaker's name is its own: the defense line's, each dependency's
/// line's and the service's inferred ones (expectations name breakers).
fn unique_breaker_names(
    defense: Option<&DefenseConfig>,
    dependencies: &[DependencySpec],
    system: Option<&SystemSpec>,
) -> Result<(), String> {
    let mut breaker_names = std::collections::BTreeSet::new();
    let own = defense.into_iter().flat_map(|d| {
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
    let inferred = system.into_iter().flat_map(|s| {
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
    Ok(())
}

/// Each fault's dependency: the only one when there is one and the fault
/// names none; a known one when it names one; one it must name when there
/// are several.
fn assign_dependencies(
    faults: &mut [Fault],
    dependencies: &[DependencySpec],
) -> Result<(), String> {
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
    Ok(())
}
