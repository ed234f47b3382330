//! `firedrill schema`: prints the JSON Schema of a file format.

use clap::ValueEnum;

use super::exit::{CliError, EXIT_OK};
use super::stdout::out;
use crate::json_schema::Format;

/// The formats `firedrill schema` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchemaFormat {
    /// Experiment files (`firedrill run`).
    Experiment,
    /// Fault files (`firedrill proxy --faults`).
    Faults,
    /// Defense configs (`firedrill defend --config`).
    Defense,
}

impl From<SchemaFormat> for Format {
    fn from(format: SchemaFormat) -> Self {
        match format {
            SchemaFormat::Experiment => Format::Experiment,
            SchemaFormat::Faults => Format::Faults,
            SchemaFormat::Defense => Format::Defense,
        }
    }
}

/// The flags of `firedrill schema`.
#[derive(Debug, Clone, clap::Args)]
pub struct SchemaArgs {
    /// Which format.
    #[arg(value_enum, default_value = "experiment")]
    pub format: SchemaFormat,
}

/// Prints the schema of `--format` on stdout.
pub fn print(args: &SchemaArgs) -> Result<u8, CliError> {
    out!("{}", Format::from(args.format).render());
    Ok(EXIT_OK)
}
