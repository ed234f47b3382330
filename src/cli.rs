//! The command line: clap definitions, and one function per subcommand.
//!
//! Exit codes (documented in the README): 0 ok, 1 an expectation failed,
//! 2 invalid input or arguments, 3 the run itself failed, 130 interrupted.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use crate::fault::FaultFile;
use crate::schema::{self, LoadError, SchemaError, Segment};

/// Exit code: everything held.
pub const EXIT_OK: u8 = 0;
/// Exit code: an expectation failed.
pub const EXIT_ASSERTION: u8 = 1;
/// Exit code: invalid input (file or arguments).
pub const EXIT_INVALID: u8 = 2;
/// Exit code: the run itself failed (port in use, upstream unresolvable).
pub const EXIT_RUNTIME: u8 = 3;
/// Exit code: interrupted by Ctrl-C or SIGTERM.
pub const EXIT_INTERRUPTED: u8 = 130;

/// firedrill: inject faults, drive load through a defense line, and assert
/// that it held.
#[derive(Debug, Parser)]
#[command(name = "firedrill", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check a fault file without running anything.
    Validate {
        /// The YAML file.
        file: PathBuf,
        /// Also check that every fault works in this proxy mode.
        #[arg(long, value_enum)]
        mode: Option<Mode>,
    },
}

/// Proxy mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Byte streams: every fault that acts on a connection.
    Tcp,
    /// HTTP/1.1: per-request faults, status injection.
    Http,
}

/// A failure of a subcommand, with the exit code it maps to.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad input: exit 2.
    #[error("{0}")]
    Invalid(String),
    /// The run failed: exit 3.
    #[error("{0}")]
    Runtime(String),
}

impl CliError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Invalid(_) => EXIT_INVALID,
            CliError::Runtime(_) => EXIT_RUNTIME,
        }
    }
}

impl From<LoadError> for CliError {
    fn from(e: LoadError) -> Self {
        CliError::Invalid(e.to_string())
    }
}

impl From<SchemaError> for CliError {
    fn from(e: SchemaError) -> Self {
        CliError::Invalid(e.to_string())
    }
}

/// Runs the parsed command line and returns the process exit code.
pub fn run(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Command::Validate { file, mode } => validate(&file, mode),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::from(err.exit_code())
        }
    }
}

/// Loads a fault file and checks every fault against `mode`.
pub fn load_faults(path: &Path, mode: Option<Mode>) -> Result<FaultFile, CliError> {
    let file = path.display().to_string();
    let text = schema::read_text(path)?;
    let faults: FaultFile = schema::from_yaml_str(&file, &text)?;
    let Some(mode) = mode else {
        return Ok(faults);
    };
    for (i, fault) in faults.faults.iter().enumerate() {
        let (fits, mode_name, needed) = match mode {
            Mode::Tcp => (fault.kind.works_in_tcp(), "tcp", "http"),
            Mode::Http => (fault.kind.works_in_http(), "http", "tcp"),
        };
        if !fits {
            let kind = fault.kind.key();
            let at = [
                Segment::Key("faults".to_string()),
                Segment::Index(i),
                Segment::Key(kind.to_string()),
            ];
            let message = format!("`{kind}` needs --mode {needed}, but --mode is {mode_name}");
            return Err(SchemaError::at(&file, &text, &at, message).into());
        }
    }
    Ok(faults)
}

fn validate(path: &Path, mode: Option<Mode>) -> Result<u8, CliError> {
    let file = load_faults(path, mode)?;
    println!("ok: {}: {} fault(s)", path.display(), file.faults.len());
    Ok(EXIT_OK)
}
