//! The transition journal: one JSON line per breaker transition.

use super::{Exporter, RunReport};

/// `journal.jsonl`.
#[derive(Debug)]
pub struct Journal;

impl Exporter for Journal {
    fn file_name(&self) -> &'static str {
        "journal.jsonl"
    }

    fn render(&self, report: &RunReport) -> std::io::Result<Vec<u8>> {
        let mut out = String::new();
        let end = report.timeline.duration;
        for t in &report.timeline.transitions {
            let mut line = t.to_json_line();
            // A call still in flight at the end moved the breaker after it.
            if t.at >= end && line.ends_with('}') {
                line.pop();
                line.push_str(",\"after_end\":true}");
            }
            out.push_str(&line);
            out.push('\n');
        }
        Ok(out.into_bytes())
    }
}
