//! Reading an experiment file: parse it, then check what the schema
//! cannot (faults that need TCP, halt conditions and expectations against
//! the experiment's names); every error names file, line, column and key.

use std::path::Path;

use super::config::Experiment;
use super::halt::HaltCondition;
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
    /// Its expectations, parsed and checked against its names.
    pub expectations: Vec<super::judge::Checked>,
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
    let file = path.display().to_string();
    let text = schema::read_text(path)?;
    let loaded = load_text(&file, &text)?;
    if overrides.is_empty() {
        return Ok(loaded);
    }
    let set: Vec<String> = overrides.iter().map(|o| format!("--set {o}")).collect();
    let changed = schema::overrides::apply(&text, overrides).map_err(LoadError::Override)?;
    load_text(&file, &changed).map_err(|e| {
        let why = match e {
            LoadError::Invalid(e) if e.key.is_empty() => e.message,
            LoadError::Invalid(e) => format!("{}: {}", e.key, e.message),
            other => other.to_string(),
        };
        LoadError::Override(format!("{file} with {}: {why}", set.join(" ")))
    })
}

/// Parses and checks an experiment's text, read from `file`.
fn load_text(file: &str, text: &str) -> Result<Loaded, LoadError> {
    let (file, text) = (file.to_string(), text.to_string());
    let mut experiment: Experiment = schema::from_yaml_str(&file, &text)?;
    crate::fault::replay::load_recordings(&mut experiment.faults, &file, &text, "faults")?;
    load_arrivals(&mut experiment, &file, &text)?;
    load_tls(&mut experiment, &file, &text)?;
    if let Some(misfit) = ProxyMode::Http.first_misfit(&experiment.faults) {
        let message = format!(
            "`{}` works in {} mode only; an experiment's faults act on HTTP requests",
            misfit.kind,
            misfit.needed.name()
        );
        return Err(misfit.error(&file, &text, message).into());
    }
    let at = |key: &str, i: usize, message: String| -> LoadError {
        SchemaError::at(
            &file,
            &text,
            &[Segment::Key(key.to_string()), Segment::Index(i)],
            message,
        )
        .into()
    };
    let halts = experiment
        .halt
        .iter()
        .enumerate()
        .map(|(i, h)| h.parse::<HaltCondition>().map_err(|e| at("halt", i, e)))
        .collect::<Result<Vec<_>, _>>()?;
    let routes = super::judge::names(&experiment).routes;
    for (i, h) in halts.iter().enumerate() {
        if !routes.contains(&h.route) {
            let name = super::expect::ast::Name {
                text: h.route.clone(),
                column: h.route_column,
            };
            let message = super::expect::check::unknown("route", &name, &routes);
            return Err(at("halt", i, message));
        }
    }
    let expectations = super::judge::check_all(&experiment).map_err(|(i, e)| at("expect", i, e))?;
    Ok(Loaded {
        experiment,
        halts,
        expectations,
    })
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

/// Reads the TLS settings of every `https://` service (certificates and
/// keys relative to the experiment file) into its client; a file that
/// cannot be used is an error at its key (`target.tls.ca_file`).
fn load_tls(experiment: &mut Experiment, file: &str, text: &str) -> Result<(), LoadError> {
    let base = Path::new(file).parent().unwrap_or(Path::new(""));
    for service in experiment.services_mut().filter(|s| s.endpoint.https) {
        let keys = TlsKeys::yaml(&format!("{}.tls", service.at));
        let client = TlsClient::load(&service.tls, base, keys).map_err(|e| {
            let mut at: Vec<Segment> = service
                .at
                .split('.')
                .map(|k| Segment::Key(k.to_string()))
                .collect();
            at.extend([
                Segment::Key("tls".to_string()),
                Segment::Key(e.field.to_string()),
            ]);
            SchemaError::at(file, text, &at, e.message)
        })?;
        service.client = Some(client);
    }
    Ok(())
}
