//! Reading an experiment file: parse it, then check what the schema
//! cannot (faults that need TCP, halt conditions and expectations against
//! the experiment's names); every error names file, line, column and key.

use std::path::Path;

use super::config::Experiment;
use super::config::halt::HaltCondition;
use crate::proxy::ProxyMode;
use crate::schema::overrides::Override;
use crate::schema::{self, LoadError, SchemaError, Segment};
use crate::tls::{TlsClient, TlsKeys};
use crate::trace::Trace;

/// An experiment with its halt conditions and expectations checked.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The experiment.
    pub experiment: Experiment,
    /// Its halt conditions, parsed.
    pub halts: Vec<HaltCondition>,
    /// Its halt sentences read from Prometheus (`alert NAME firing`,
    /// `query Q OP VALUE`), parsed.
    pub prom_halts: Vec<super::prometheus::halt::PromHalt>,
    /// Its expectations, parsed and checked against its names.
    pub expectations: Vec<super::expect::names::Checked>,
    /// Its steady-state checks, windowed by the fault timeline.
    pub steady: Option<super::expect::steady::SteadyState>,
    /// The toxic each fault of a dependency behind an agent is applied
    /// as, by fault name.
    pub remote: std::collections::BTreeMap<String, serde_json::Value>,
}

/// Reads, parses and checks an experiment file; every error names file,
/// line, column and key.
pub fn load(path: &Path) -> Result<Loaded, LoadError> {
    load_with(path, &[])
}

/// As [`load`], then again with `overrides` applied (`--set`, a sweep's
/// point): the file must be valid as written, and an override that makes
/// it invalid is named with the key and what was expected.
pub fn load_with(path: &Path, overrides: &[Override]) -> Result<Loaded, LoadError> {
    let text = schema::read_text(path)?;
    load_text_with(&path.display().to_string(), &text, overrides)
}

/// As [`load_with`], from `text` already read from `file` (a sweep reads
/// its file once for all its points).
pub fn load_text_with(file: &str, text: &str, overrides: &[Override]) -> Result<Loaded, LoadError> {
    let loaded = load_text(file, text)?;
    if overrides.is_empty() {
        return Ok(loaded);
    }
    let set: Vec<String> = overrides.iter().map(|o| format!("--set {o}")).collect();
    let changed = schema::overrides::apply(text, overrides).map_err(LoadError::Override)?;
    load_text(file, &changed).map_err(|e| {
        let without_place = |e: SchemaError| match e.key.is_empty() {
            true => e.message,
            false => format!("{}: {}", e.key, e.message),
        };
        let why = match e {
            LoadError::Invalid(e) => without_place(e),
            LoadError::Problems(all) => {
                let all: Vec<String> = all.into_iter().map(without_place).collect();
                all.join("; ")
            }
            other => other.to_string(),
        };
        LoadError::Override(format!("{file} with {}: {why}", set.join(" ")))
    })
}

/// Parses and checks an experiment's text, read from `file`. Every problem
/// of the checks across fields (names, windows, phases) is reported, and
/// once it parses, every problem the later checks find: faults that need
/// TCP, halt conditions, expectations.
pub fn load_text(file: &str, text: &str) -> Result<Loaded, LoadError> {
    let mut experiment: Experiment = read_experiment(file, text)?;
    crate::fault::recordings::load_recordings(&mut experiment.faults, file, text, "faults")?;
    load_arrivals(&mut experiment, file, text)?;
    load_messages(&mut experiment, file, text)?;
    load_tls(&mut experiment, file, text)?;
    let at = |key: &str, i: usize, message: String| {
        SchemaError::at(
            file,
            text,
            &[Segment::Key(key.to_string()), Segment::Index(i)],
            message,
        )
    };
    let mut problems: Vec<SchemaError> = ProxyMode::Http
        .misfits(&experiment.faults)
        .map(|misfit| {
            let message = format!(
                "`{}` works in {} mode only; an experiment's faults act on HTTP requests",
                misfit.kind,
                misfit.needed.name()
            );
            misfit.error(file, text, message)
        })
        .collect();
    let routes = super::expect::names::names(&experiment).routes;
    let mut halts = Vec::new();
    let mut prom_halts = Vec::new();
    for (i, h) in experiment.halt.iter().enumerate() {
        if super::prometheus::halt::is_prometheus_halt(h) {
            match super::prometheus::halt::parse(h, &experiment) {
                Ok(h) => prom_halts.push(h),
                Err(e) => problems.push(at("halt", i, e)),
            }
            continue;
        }
        match h.parse::<HaltCondition>() {
            Ok(h) if !routes.contains(&h.route) => {
                let name = super::expect::ast::Name {
                    text: h.route.clone(),
                    column: h.route_column,
                };
                let message = super::expect::check::unknown("route", &name, &routes);
                problems.push(at("halt", i, message));
            }
            Ok(h) => halts.push(h),
            Err(e) => problems.push(at("halt", i, e)),
        }
    }
    let (expectations, bad) = super::expect::names::check_all(&experiment);
    problems.extend(bad.into_iter().map(|(i, e)| at("expect", i, e)));
    let names = super::expect::names::names(&experiment);
    let steady =
        super::expect::steady::SteadyState::check(&experiment, &names).unwrap_or_else(|bad| {
            problems.extend(bad.into_iter().map(|(i, e)| at("steady_state", i, e)));
            None
        });
    let remote = remote_toxics(&experiment, file, text, &mut problems);
    if let Some(locust) = &mut experiment.locust {
        let folder = Path::new(file).parent().unwrap_or(Path::new(""));
        locust.locustfile_path = folder.join(&locust.locustfile);
        if !locust.locustfile_path.is_file() {
            let at = [
                Segment::Key("load".to_string()),
                Segment::Key("locust".to_string()),
                Segment::Key("locustfile".to_string()),
            ];
            let message = format!(
                "{}: no such file (relative to this file)",
                locust.locustfile_path.display()
            );
            problems.push(SchemaError::at(file, text, &at, message));
        }
    }
    schema::all_problems(problems)?;
    Ok(Loaded {
        experiment,
        halts,
        prom_halts,
        expectations,
        steady,
        remote,
    })
}

/// The toxic of each fault whose dependency is behind an agent, and a
/// problem for each such fault the agent cannot apply (naming the agent),
/// each breaker inferred from a Toxiproxy agent's dependency (it keeps no
/// records), and correlation headers an agent does not record.
fn remote_toxics(
    experiment: &Experiment,
    file: &str,
    text: &str,
    problems: &mut Vec<SchemaError>,
) -> std::collections::BTreeMap<String, serde_json::Value> {
    use super::config::Upstream;
    let agents: std::collections::BTreeMap<&str, &super::config::agent::Agent> = experiment
        .dependencies
        .iter()
        .filter_map(|d| match &d.upstream {
            Upstream::Agent(agent) => Some((d.name.as_str(), agent)),
            _ => None,
        })
        .collect();
    let mut toxics = std::collections::BTreeMap::new();
    if agents.is_empty() {
        return toxics;
    }
    let at = |path: Vec<Segment>, message: String| SchemaError::at(file, text, &path, message);
    let key = |k: &str| Segment::Key(k.to_string());
    let document: Option<serde_json::Value> = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text)
        .ok()
        .and_then(|v| serde_json::to_value(v).ok());
    for (i, fault) in experiment.faults.iter().enumerate() {
        let Some(agent) = fault.dependency.as_deref().and_then(|d| agents.get(d)) else {
            continue;
        };
        let place = vec![key("faults"), Segment::Index(i)];
        let named = |why: String| format!("{why} ({} at {})", agent.at, agent.api);
        if fault.manual {
            problems.push(at(place, named("at: manual is opened on this machine; a fault on an agent's dependency needs its window in the file".to_string())));
            continue;
        }
        let raw = document
            .as_ref()
            .and_then(|d| d.get("faults")?.get(i))
            .cloned()
            .unwrap_or_default();
        match crate::agent::toxic::toxic_for(fault, &raw, agent.kind) {
            Ok(toxic) => {
                toxics.insert(fault.name.clone(), toxic);
            }
            Err(why) => problems.push(at(place, named(why))),
        }
    }
    if let Some(system) = &experiment.system {
        for (name, breaker) in &system.breakers {
            if agents
                .get(breaker.dependency.as_str())
                .is_some_and(|a| a.kind == crate::agent::AgentKind::Toxiproxy)
            {
                problems.push(at(
                    vec![key("system"), key("breakers"), key(name), key("dependency")],
                    format!("`{}` is behind a Toxiproxy agent, which keeps no request records: breaker {name} cannot be inferred from it (run firedrill server there)", breaker.dependency),
                ));
            }
        }
        let defaults = [
            crate::http::headers::X_REQUEST_ID,
            crate::http::headers::TRACEPARENT,
        ];
        if system
            .correlation
            .iter()
            .any(|h| !defaults.contains(&h.as_str()))
        {
            problems.push(at(
                vec![key("system"), key("correlation")],
                "an agent records only x-request-id and traceparent: correlate with those across hosts".to_string(),
            ));
        }
    }
    toxics
}

/// Parses the experiment, its `defense.import` written out first; an
/// error in the written-out text is put back at its place in `text`.
fn read_experiment(file: &str, text: &str) -> Result<Experiment, LoadError> {
    use crate::defense::import::expand::{Holder, expand, relocate};
    match expand(file, text, Holder::Experiment)? {
        None => schema::from_yaml_all(file, text),
        Some(expanded) => schema::from_yaml_all(file, &expanded).map_err(|e| relocate(e, text)),
    }
}

/// Reads the recordings `load[].replay` names: the route sends at their
/// arrival times, divided by the speed.
fn load_arrivals(experiment: &mut Experiment, file: &str, text: &str) -> Result<(), LoadError> {
    for (i, route) in experiment.load.iter_mut().enumerate() {
        let Some(replay) = &route.replay else {
            continue;
        };
        let at = [
            Segment::Key("load".to_string()),
            Segment::Index(i),
            Segment::Key("replay".to_string()),
            Segment::Key("file".to_string()),
        ];
        let trace = Trace::read_named(file, text, &at, &replay.file, replay.format)?;
        route.recorded = Some(trace.arrivals().map(|t| t.div_f64(replay.speed)).collect());
    }
    Ok(())
}

/// Encodes the gRPC messages `load[].message.json` gives with their
/// descriptor sets (relative to the experiment file) into each route's
/// body; a problem is an error at its key (`request`, `message.json`,
/// `message.descriptors`).
fn load_messages(experiment: &mut Experiment, file: &str, text: &str) -> Result<(), LoadError> {
    use super::config::message::{Place, encode};
    let base = Path::new(file).parent().unwrap_or(Path::new(""));
    for (i, route) in experiment.load.iter_mut().enumerate() {
        let Some((json, descriptors)) = route.json_message.take() else {
            continue;
        };
        let path = base.join(&descriptors);
        let shown = path.display().to_string();
        let bytes = encode(&json, &path, &shown, &route.path).map_err(|(place, message)| {
            let mut at = vec![Segment::Key("load".to_string()), Segment::Index(i)];
            at.extend(
                match place {
                    Place::Request => &["request"][..],
                    Place::Descriptors => &["message", "descriptors"],
                    Place::Json => &["message", "json"],
                }
                .iter()
                .map(|k| Segment::Key(k.to_string())),
            );
            SchemaError::at(file, text, &at, message)
        })?;
        route.body = crate::http::grpc::frame(&bytes);
    }
    Ok(())
}

/// Reads the TLS settings of every `https://` service (certificates and
/// keys relative to the experiment file) into its client; a file that
/// cannot be used is an error at its key (`target.tls.ca_file`).
fn load_tls(experiment: &mut Experiment, file: &str, text: &str) -> Result<(), LoadError> {
    let base = Path::new(file).parent().unwrap_or(Path::new(""));
    // The client of the `tls:` under `at` (a dotted key path), or the
    // error at its key.
    let load = |tls: &crate::tls::TlsOptions, at: &str| {
        TlsClient::load(tls, base, TlsKeys::yaml(&format!("{at}.tls"))).map_err(|e| {
            let mut path: Vec<Segment> =
                at.split('.').map(|k| Segment::Key(k.to_string())).collect();
            path.extend([
                Segment::Key("tls".to_string()),
                Segment::Key(e.field.to_string()),
            ]);
            SchemaError::at(file, text, &path, e.message)
        })
    };
    for service in experiment.services_mut().filter(|s| s.endpoint.https) {
        service.client = Some(load(&service.tls, &service.at)?);
    }
    for agent in experiment
        .agents_mut()
        .filter(|a| a.api.starts_with("https://"))
    {
        agent.client = Some(load(&agent.tls, &agent.at)?);
    }
    Ok(())
}
