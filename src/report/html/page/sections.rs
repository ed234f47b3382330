//! The page's text sections around the timeline: the header with the
//! run's facts, the expectations, and the transition journal.

use std::fmt::Write;

use super::super::picture::{Picture, TransitionFacts};
use super::format::{esc, time, utc};

/// The page's head: the name, the verdict, the run's facts, links to
/// the report's files, and the warnings.
pub(super) fn header(h: &mut String, p: &Picture, verdict: &str) {
    let f = &p.facts;
    let _ = write!(
        h,
        "<header>\n<h1>{}</h1>\n<p class=\"verdict {verdict}\" id=\"verdict\">{}</p>\n",
        esc(&f.experiment),
        verdict.to_uppercase()
    );
    if let Some(d) = &f.description {
        let _ = writeln!(h, "<p class=\"description\">{}</p>", esc(d.trim()));
    }
    let mut facts = vec![
        ("seed", f.seed.to_string()),
        ("clock", f.clock.clone()),
        (
            "version",
            f.version.clone().unwrap_or_else(|| "unknown".into()),
        ),
        (
            "started",
            f.started_at_unix_ms
                .map_or("time zero (virtual clock)".to_string(), utc),
        ),
        ("duration", time(f.duration_ms)),
    ];
    if let Some(planned) = f.planned_duration_ms {
        facts.push(("planned", time(planned)));
    }
    if let Some(c) = &f.ending.condition {
        facts.push(("halted by", c.clone()));
    }
    h.push_str("<dl class=\"facts\">");
    for (k, v) in facts {
        let _ = write!(h, "<div><dt>{k}</dt><dd>{}</dd></div>", esc(&v));
    }
    h.push_str("</dl>\n<nav class=\"files\">Files: ");
    for file in [
        "report.json",
        "junit.xml",
        "journal.jsonl",
        "requests.jsonl",
    ] {
        let _ = write!(h, "<a href=\"{file}\">{file}</a> ");
    }
    if !p.dependencies.is_empty() {
        h.push_str("<a href=\"dependencies.jsonl\">dependencies.jsonl</a>");
    }
    h.push_str("</nav>\n");
    for w in &f.warnings {
        let _ = writeln!(h, "<p class=\"warning\">{}</p>", esc(w));
    }
    h.push_str("</header>\n");
}

/// The expectations, each marked pass or fail, with the window it judged
/// for the page's script to mark on the timeline.
pub(super) fn verdicts(h: &mut String, p: &Picture) {
    h.push_str("<section id=\"expectations\">\n<h2>Expectations</h2>\n<p class=\"hint\">Select one to mark the time it judged.</p>\n<ol class=\"verdicts\">\n");
    for (i, v) in p.facts.verdicts.iter().enumerate() {
        let judged: Vec<String> = v
            .judged_ms
            .iter()
            .map(|(a, b)| format!("[{a},{b}]"))
            .collect();
        let (class, mark) = if v.passed {
            ("pass", "✓ pass")
        } else {
            ("fail", "✗ FAIL")
        };
        let _ = writeln!(
            h,
            "<li id=\"expect-{}\" class=\"{class}\" tabindex=\"0\" data-judged=\"[{}]\">\
             <span class=\"mark\">{mark}</span> <code>{}</code>\
             <div class=\"detail\"><span>expected: {}</span><span>seen: {}</span></div></li>",
            i + 1,
            judged.join(","),
            esc(&v.expectation),
            esc(&v.expected),
            esc(&v.seen)
        );
    }
    h.push_str("</ol>\n</section>\n");
}

/// Every breaker transition in time order: firedrill's, inferred, and
/// reported by the service.
pub(super) fn journal(h: &mut String, p: &Picture) {
    let mut rows: Vec<(f64, &str, &TransitionFacts, &str)> = Vec::new();
    for b in &p.facts.breakers {
        let source = if b.source.is_some() {
            "inferred"
        } else {
            "firedrill"
        };
        rows.extend(
            b.transitions
                .iter()
                .map(|t| (t.at_ms, b.name.as_str(), t, source)),
        );
        if let Some(reported) = &b.reported {
            rows.extend(
                reported
                    .iter()
                    .map(|t| (t.at_ms, b.name.as_str(), t, "reported")),
            );
        }
    }
    rows.sort_by(|a, b| a.0.total_cmp(&b.0));
    h.push_str("<section id=\"journal\">\n<h2>Transition journal</h2>\n");
    if rows.is_empty() {
        h.push_str("<p>No breaker changed state.</p>\n</section>\n");
        return;
    }
    h.push_str("<table>\n<thead><tr><th>at</th><th>breaker</th><th>from → to</th><th>source</th><th>reason</th></tr></thead>\n<tbody>\n");
    for (at, name, t, source) in rows {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{} → {}</td><td>{source}</td><td>{}</td></tr>",
            time(at),
            esc(name),
            esc(&t.from),
            esc(&t.to),
            esc(&t.reason)
        );
    }
    h.push_str("</tbody>\n</table>\n</section>\n");
}
