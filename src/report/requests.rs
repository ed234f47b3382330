//! Every request of the run, one JSON line each: what the client saw, what
//! the defense line did, and how often it reached the dependency.

use serde::Serialize;

use super::{Exporter, RunReport, ms};
use crate::experiment::timeline::RequestRecord;

/// `requests.jsonl`.
#[derive(Debug)]
pub struct Requests;

/// A request with its times in milliseconds.
#[derive(Serialize)]
struct Line<'a> {
    /// Sent, milliseconds since the start.
    sent_ms: f64,
    /// Time to the response head, milliseconds.
    latency_ms: Option<f64>,
    /// The rest, as recorded.
    #[serde(flatten)]
    record: &'a RequestRecord,
}

impl Exporter for Requests {
    fn file_name(&self) -> &'static str {
        "requests.jsonl"
    }

    fn render(&self, report: &RunReport) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        for record in &report.timeline.requests {
            let line = Line {
                sent_ms: ms(record.sent),
                latency_ms: record.latency.map(ms),
                record,
            };
            serde_json::to_writer(&mut out, &line).map_err(std::io::Error::other)?;
            out.push(b'\n');
        }
        Ok(out)
    }
}
