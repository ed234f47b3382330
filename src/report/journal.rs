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
        for t in &report.timeline.transitions {
            out.push_str(&t.to_json_line());
            out.push('\n');
        }
        Ok(out.into_bytes())
    }
}
