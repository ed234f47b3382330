//! `firedrill validate`: checks a fault file, a defense config or an
//! experiment (told apart by their top-level keys) without running it.

use std::path::{Path, PathBuf};

use super::exit::{CliError, EXIT_OK};
use super::stdout::outln;
use crate::fault::FaultFile;
use crate::fault::{MAX_FAULTS, fault_path};
use crate::proxy::ProxyMode;
use crate::schema::{self, LoadError, SchemaError};

/// Loads a fault file and checks every fault works in `mode`, the `--mode`
/// flag; without one, in the proxy's default mode, tcp (what `firedrill
/// proxy` would run it in).
pub fn load_faults(path: &Path, mode: Option<ProxyMode>) -> Result<FaultFile, LoadError> {
    faults_from_text(&path.display().to_string(), &schema::read_text(path)?, mode)
}

/// As [`load_faults`], from `text` already read from `file`.
fn faults_from_text(
    file: &str,
    text: &str,
    mode: Option<ProxyMode>,
) -> Result<FaultFile, LoadError> {
    let mut faults: FaultFile = schema::from_yaml_str(file, text)?;
    if let Some(message) = crate::fault::too_many_faults(&faults.faults) {
        let at = fault_path(MAX_FAULTS, None);
        return Err(SchemaError::at(file, text, &at, message).into());
    }
    let dependencies = faults
        .faults
        .iter()
        .enumerate()
        .filter(|(_, f)| f.dependency.is_some());
    let mut problems: Vec<SchemaError> = dependencies
        .map(|(i, _)| {
            let message = "names an experiment's dependency; a fault file's faults apply to the proxy that loads it";
            SchemaError::at(file, text, &fault_path(i, Some("dependency")), message)
        })
        .collect();
    problems.extend(faults.faults.iter().enumerate().filter(|(_, f)| f.instance.is_some()).map(|(i, _)| {
        let message = "names an instance of an experiment's built-in target; a fault file's faults apply to the proxy that loads it";
        SchemaError::at(file, text, &fault_path(i, Some("instance")), message)
    }));
    problems.extend(faults.faults.iter().enumerate().filter(|(_, f)| f.manual).map(|(i, _)| {
        let message = "manual: only an experiment run with --control starts a manual fault; a fault file's windows are times";
        SchemaError::at(file, text, &fault_path(i, Some("at")), message)
    }));
    let checked = mode.unwrap_or(ProxyMode::DEFAULT);
    problems.extend(checked.misfits(&faults.faults).map(|misfit| {
        let (kind, needed) = (misfit.kind, misfit.needed.name());
        let message = match mode {
            Some(mode) => format!(
                "`{kind}` needs --mode {needed}, but --mode is {}",
                mode.name()
            ),
            None => format!(
                "`{kind}` needs --mode {needed}: without --mode a proxy runs in {} mode",
                checked.name()
            ),
        };
        misfit.error(file, text, message)
    }));
    schema::all_problems(problems)?;
    crate::fault::recordings::load_recordings(&mut faults.faults, file, text, "faults")?;
    Ok(faults)
}

/// What kind of file `validate` was given, told by its top-level keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FileKind {
    /// `faults:` only.
    Faults,
    /// The `defense:` section's keys (`routes`, `timeout`, ...).
    Defense,
    /// An experiment (`name`, `duration`, `load`, `expect`, ...).
    Experiment,
}

/// The kind of `text` (read from `file`), once it is well-formed YAML.
fn detect_kind(file: &str, text: &str) -> Result<FileKind, SchemaError> {
    const EXPERIMENT_KEYS: [&str; 4] = ["load", "expect", "duration", "name"];
    const DEFENSE_KEYS: [&str; 7] = [
        "import",
        "routes",
        "timeout",
        "request_timeout",
        "max_concurrent",
        "rate_limit",
        "pools",
    ];
    let has_any =
        |keys: &[String], wanted: &[&str]| keys.iter().any(|k| wanted.contains(&k.as_str()));
    Ok(match schema::top_level_keys(file, text)? {
        Some(keys) if has_any(&keys, &EXPERIMENT_KEYS) => FileKind::Experiment,
        Some(keys) if has_any(&keys, &DEFENSE_KEYS) => FileKind::Defense,
        _ => FileKind::Faults,
    })
}

/// The flags of `firedrill validate`.
#[derive(Debug, Clone, clap::Args)]
pub struct ValidateArgs {
    /// The YAML file.
    pub file: PathBuf,
    /// The proxy mode a fault file's faults must work in: tcp when not
    /// given, as for `firedrill proxy` (an experiment's faults always run
    /// in http mode).
    #[arg(long, value_enum)]
    pub mode: Option<ProxyMode>,
}

/// Checks the file and prints what it holds.
pub fn validate(args: &ValidateArgs) -> Result<u8, CliError> {
    let (path, mode) = (args.file.as_path(), args.mode);
    let text = schema::read_text(path)?;
    match detect_kind(&path.display().to_string(), &text)? {
        FileKind::Faults => {
            let file = faults_from_text(&path.display().to_string(), &text, mode)?;
            outln!("ok: {}: {} fault(s)", path.display(), file.faults.len());
        }
        FileKind::Defense => {
            let config =
                crate::defense::import::expand::load_defense(&path.display().to_string(), &text)?;
            outln!(
                "ok: {}: defense line with {} route(s)",
                path.display(),
                config.routes.len()
            );
        }
        FileKind::Experiment => {
            if mode.is_some() {
                return Err(CliError::invalid(
                    "--mode: applies to fault files; an experiment's faults always run in http mode",
                ));
            }
            let loaded = crate::experiment::file::load_text(&path.display().to_string(), &text)?;
            outln!(
                "ok: {}: experiment \"{}\" with {} expectation(s)",
                path.display(),
                loaded.experiment.name,
                loaded.expectations.len()
            );
        }
    }
    Ok(EXIT_OK)
}
