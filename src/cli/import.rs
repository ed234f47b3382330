//! `firedrill import FORMAT FILE`: prints the defense line a resilience4j,
//! Sentinel, NGINX, Envoy, Istio or opossum configuration amounts to, every value
//! commented with the source key it came from, and the keys it does not
//! drill listed with why (refused instead with `--strict`).

use std::path::PathBuf;

use clap::ValueEnum;

use super::exit::{CliError, EXIT_OK};
use super::stdout::out;
use crate::defense::import::{self, Format};

/// The formats `firedrill import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImportFormat {
    /// resilience4j's Spring Boot configuration: `application.yml` or
    /// `application.properties`.
    Resilience4j,
    /// Sentinel rules JSON: degrade rules and flow rules.
    Sentinel,
    /// NGINX configuration: `upstream` blocks and the locations that
    /// `proxy_pass` to them.
    Nginx,
    /// opossum options JSON (the breaker itself is refused: not modelled).
    Opossum,
    /// Envoy YAML: clusters (endpoints, circuit_breakers) and the routes
    /// that send to them.
    Envoy,
    /// Istio DestinationRule YAML: its trafficPolicy's connectionPool,
    /// outlierDetection and loadBalancer, as the Envoy cluster Istio
    /// generates from it.
    Istio,
}

impl From<ImportFormat> for Format {
    fn from(format: ImportFormat) -> Self {
        match format {
            ImportFormat::Resilience4j => Format::Resilience4j,
            ImportFormat::Sentinel => Format::Sentinel,
            ImportFormat::Nginx => Format::Nginx,
            ImportFormat::Opossum => Format::Opossum,
            ImportFormat::Envoy => Format::Envoy,
            ImportFormat::Istio => Format::Istio,
        }
    }
}

/// The flags of `firedrill import`.
#[derive(Debug, Clone, clap::Args)]
pub struct ImportArgs {
    /// The format of FILE.
    #[arg(value_enum)]
    pub format: ImportFormat,
    /// The configuration file.
    pub file: PathBuf,
    /// Import only this instance (repeatable; default: every instance).
    #[arg(long = "instance", value_name = "NAME")]
    pub instances: Vec<String>,
    /// Refuse the file when it has a key firedrill does not drill, instead
    /// of listing it under "not drilled".
    #[arg(long)]
    pub strict: bool,
    /// An application exception class and what it is raised for
    /// (`com.shop.StockException=503`; a status, `4xx`, `5xx`, `timeout`
    /// or `connection`, several with commas), for resilience4j's
    /// `recordExceptions`, `ignoreExceptions` and `retryExceptions`
    /// (repeatable).
    #[arg(long = "exception", value_name = "CLASS=OUTCOME")]
    pub exceptions: Vec<String>,
}

/// Prints the imported defense configuration on stdout.
pub fn run(args: &ImportArgs) -> Result<u8, CliError> {
    let format = Format::from(args.format);
    let mut options = import::Options::strict(args.strict);
    for written in &args.exceptions {
        options.add_exception(written).map_err(CliError::invalid)?;
    }
    let imported = import::import_file(format, &args.file, &args.instances, &options)?;
    out!(
        "{}",
        imported.render(format, &args.file.display().to_string())
    );
    Ok(EXIT_OK)
}
