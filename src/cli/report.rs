//! `firedrill report DIR`: draws `report.html` again from the files of a
//! finished run.

use std::path::PathBuf;

use super::exit::{CliError, EXIT_OK};
use super::stdout::outln;
use crate::report::html::draw_dir;

/// The flags of `firedrill report`.
#[derive(Debug, Clone, clap::Args)]
pub struct ReportArgs {
    /// A report directory (`firedrill run --report-dir DIR`): reads
    /// report.json, requests.jsonl and dependencies.jsonl, writes
    /// report.html.
    pub dir: PathBuf,
}

/// Draws the page and prints its path. A missing or unreadable file is bad
/// input (exit 2), as is one whose content is not what firedrill writes.
pub fn report(args: &ReportArgs) -> Result<u8, CliError> {
    let page = draw_dir(&args.dir).map_err(CliError::invalid)?;
    outln!("{}", page.display());
    Ok(EXIT_OK)
}
