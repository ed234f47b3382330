//! The transition journal: one JSON line per breaker transition and per
//! pool health change, in time order (a transition first at one instant).

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
        let mut health = report.timeline.health.iter().peekable();
        let mut line = |at, mut line: String| {
            // A call still in flight at the end moved the breaker after it.
            if at >= end && line.ends_with('}') {
                line.pop();
                line.push_str(",\"after_end\":true}");
            }
            out.push_str(&line);
            out.push('\n');
        };
        for t in &report.timeline.transitions {
            while let Some(h) = health.next_if(|h| h.at < t.at) {
                line(h.at, h.to_json_line());
            }
            line(t.at, t.to_json_line());
        }
        for h in health {
            line(h.at, h.to_json_line());
        }
        Ok(out.into_bytes())
    }
}
