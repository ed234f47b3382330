//! Every request through a user's service's dependency proxies, one JSON
//! line each, as `firedrill proxy --record` writes them: time, dependency,
//! method, path, status or injected fault, latency, bytes, whether it
//! reached the upstream. Only for experiments with `system`.

use super::{Exporter, RunReport};

/// `dependencies.jsonl`.
#[derive(Debug)]
pub struct Dependencies;

impl Exporter for Dependencies {
    fn file_name(&self) -> &'static str {
        "dependencies.jsonl"
    }

    fn render(&self, report: &RunReport) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        for record in &report.timeline.dependency_requests {
            serde_json::to_writer(&mut out, record).map_err(std::io::Error::other)?;
            out.push(b'\n');
        }
        Ok(out)
    }

    fn applies(&self, report: &RunReport) -> bool {
        report.system_under_test
    }
}
