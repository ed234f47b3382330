//! Every request through a user's service's dependency proxies, one JSON
//! line each, as `firedrill proxy --record` writes them: time, dependency,
//! method, path, status or injected fault, latency, bytes, whether it
//! reached the upstream. Only for experiments with `system`.

use std::io::Write;

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
        self.write_masked(report, &mut out)?;
        Ok(out)
    }

    /// One line at a time, each masked: the calls of a long run stay on
    /// disk until written.
    fn write_masked(&self, report: &RunReport, out: &mut dyn Write) -> std::io::Result<()> {
        let mut failed = None;
        let mut line = Vec::new();
        report.timeline.each_dependency_request(&mut |record| {
            if failed.is_some() {
                return;
            }
            line.clear();
            let written = serde_json::to_writer(&mut line, record)
                .map_err(std::io::Error::other)
                .and_then(|()| {
                    line.push(b'\n');
                    out.write_all(&super::masked(std::mem::take(&mut line)))
                });
            failed = written.err();
        });
        // A call that could not be read back from disk is a file short of
        // lines: an error, not a quiet gap.
        let unread = report.timeline.kept.as_ref().and_then(|k| k.error());
        failed.or(unread).map_or(Ok(()), Err)
    }

    fn applies(&self, report: &RunReport) -> bool {
        report.system_under_test
    }
}
