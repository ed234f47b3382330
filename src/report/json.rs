//! The JSON report: the [`RunReport`](super::RunReport), pretty-printed.

use super::{Exporter, RunReport};

/// `report.json`.
#[derive(Debug)]
pub struct Json;

impl Exporter for Json {
    fn file_name(&self) -> &'static str {
        "report.json"
    }

    fn render(&self, report: &RunReport) -> std::io::Result<Vec<u8>> {
        let mut bytes = serde_json::to_vec_pretty(report).map_err(std::io::Error::other)?;
        bytes.push(b'\n');
        Ok(bytes)
    }
}
