//! `firedrill history`: the trend of every figure across the runs a
//! history keeps, as a table, CSV or JSON.

use super::exit::{CliError, EXIT_OK};
use super::stdout::out;
use crate::history::trend::{self, Format};
use crate::history::{Filter, History, Location};

/// The flags of `firedrill history`.
#[derive(Debug, Clone, clap::Args)]
pub struct HistoryArgs {
    /// The history: a SQLite file or a `postgres://` URL.
    #[arg(
        long,
        env = "FIREDRILL_HISTORY",
        hide_env_values = true,
        value_name = "DB"
    )]
    pub history: Option<String>,
    /// Only this experiment's runs.
    #[arg(long, value_name = "NAME")]
    pub experiment: Option<String>,
    /// Only the last N runs (of the experiment, with --experiment).
    #[arg(long, value_name = "N")]
    pub last: Option<usize>,
    /// How to print the trend.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Also draw the trend page, DIR/trend.html: a small chart per figure,
    /// every run a point linking to its report.html.
    #[arg(long, value_name = "DIR")]
    pub html: Option<std::path::PathBuf>,
}

/// Prints the trend; exit 0, or 3 when the history cannot be read.
pub fn history(args: &HistoryArgs) -> Result<u8, CliError> {
    let Some(location) = args.history.as_deref().filter(|h| !h.is_empty()) else {
        return Err(CliError::invalid(
            "--history: which history? give --history DB (a SQLite file or a postgres:// URL) or FIREDRILL_HISTORY",
        ));
    };
    let mut history =
        History::open_existing(&Location::parse(location)).map_err(CliError::runtime)?;
    let runs = history
        .runs(&Filter {
            experiment: args.experiment.clone(),
            last: args.last,
        })
        .map_err(CliError::runtime)?;
    if let Some(dir) = &args.html {
        let page = crate::history::page::write(dir, &runs).map_err(|e| {
            CliError::runtime(e).context(format!("--html {}: cannot write", dir.display()))
        })?;
        eprintln!("trend page: {}", page.display());
    }
    out!("{}", trend::render(&runs, args.format));
    Ok(EXIT_OK)
}
