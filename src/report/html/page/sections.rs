//! The page's text sections around the timeline: the header with the
//! run's facts, the expectations, and the transition journal.

use std::fmt::Write;

use super::super::picture::Picture;
use super::format::{esc, time, utc};

/// The page's head: the name, the verdict, the run's facts, links to
/// the report's files, and the warnings.
pub(super) fn header(h: &mut String, p: &Picture, verdict: &str) {
    let f = &p.facts;
    let _ = write!(
        h,
        "<header>\n<h1>{}</h1>\n<p class=\"verdict {verdict}\" id=\"verdict\">{}</p>\n",
        esc(&f.experiment),
        esc(&verdict.replace('_', " ").to_uppercase())
    );
    lead(h, p);
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
    if !f.not_drilled.is_empty() {
        let _ = write!(
            h,
            "<details class=\"warning\" id=\"not-drilled\"><summary>Not drilled: {} keys of the imported files (the verdict is about the rest)</summary><ul>",
            f.not_drilled.len()
        );
        for n in &f.not_drilled {
            let _ = write!(h, "<li>{}</li>", esc(n));
        }
        h.push_str("</ul></details>\n");
    }
    h.push_str("</header>\n");
}

/// What stopped a run that did not complete, in a sentence under the
/// verdict (nothing for one that completed).
fn lead(h: &mut String, p: &Picture) {
    let f = &p.facts;
    let at = time(f.duration_ms);
    match f.ending.kind.as_str() {
        "not_healthy" => {
            let _ = write!(
                h,
                "<div class=\"lead\" id=\"lead\">Not healthy before injection: the steady state \
                 failed over the warm-up, so no fault was injected and the run stopped at {at}; \
                 the experiment's expectations were not judged.<ul>"
            );
            for failed in &f.ending.failed {
                let _ = write!(h, "<li>{}</li>", esc(failed));
            }
            h.push_str("</ul></div>\n");
        }
        "halted" => {
            let seen = f.ending.seen.as_deref().map(|s| format!(" ({})", esc(s)));
            let _ = writeln!(
                h,
                "<p class=\"lead\" id=\"lead\">Halted at {at} by <code>{}</code>{}: every fault was \
                 removed and the load stopped. The expectations were judged on the {at} it ran; \
                 the run fails because it was halted.</p>",
                esc(f.ending.condition.as_deref().unwrap_or("a halt condition")),
                seen.unwrap_or_default()
            );
        }
        "interrupted" => {
            let _ = writeln!(
                h,
                "<p class=\"lead\" id=\"lead\">Interrupted at {at}: every fault was removed and the \
                 load stopped. The expectations were judged on the {at} it ran.</p>"
            );
        }
        _ => {}
    }
    if !f.inconclusive.is_empty() {
        h.push_str(
            "<div class=\"lead\" id=\"inconclusive\">Inconclusive: the evidence cannot carry \
             every verdict, so those are neither passed nor failed:<ul>",
        );
        for finding in &f.inconclusive {
            let _ = write!(h, "<li>{}</li>", esc(&finding.to_string()));
        }
        h.push_str("</ul></div>\n");
    }
}

/// Each inferred breaker's evidence, as the evidence gate read it.
pub(super) fn evidence(h: &mut String, p: &Picture) {
    let rows: Vec<_> = p
        .facts
        .breakers
        .iter()
        .filter_map(|b| Some((b, b.evidence.as_ref()?)))
        .collect();
    if rows.is_empty() {
        return;
    }
    h.push_str(
        "<section id=\"evidence\">\n<h2>Evidence</h2>\n<table class=\"evidence\">\
         <thead><tr><th>breaker</th><th>calls paired by id</th><th>requests reaching it</th>\
         <th>cut off by the end</th><th>calls outstanding</th><th>gaps</th></tr></thead><tbody>\n",
    );
    for (b, e) in rows {
        let share = |n: u64, of: u64| {
            if of == 0 {
                "–".to_string()
            } else {
                format!("{n} of {of} ({:.1}%)", n as f64 * 100.0 / of as f64)
            }
        };
        let paired = if e.ids_expected {
            share(e.paired, e.calls)
        } else {
            format!("by time ({} calls)", e.calls)
        };
        let gaps: Vec<String> = e
            .lost
            .iter()
            .chain(&e.contradicted)
            .map(|g| esc(g))
            .collect();
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{paired}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&b.name),
            share(e.requests_reached, e.requests),
            e.cut_off,
            e.outstanding,
            if gaps.is_empty() {
                "none".to_string()
            } else {
                gaps.join("<br>")
            }
        );
    }
    h.push_str("</tbody></table>\n</section>\n");
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
        let (class, mark) = match (&v.not_judged, &v.inconclusive, v.passed) {
            (Some(_), _, _) => ("skip", "– not judged"),
            (None, Some(_), _) => ("inconclusive", "? inconclusive"),
            (None, None, true) => ("pass", "✓ pass"),
            (None, None, false) => ("fail", "✗ FAIL"),
        };
        let weighed = format!(
            "<span>expected: {}</span><span>seen: {}</span>",
            esc(&v.expected),
            esc(&v.seen)
        );
        let detail = match (&v.not_judged, &v.inconclusive) {
            (Some(why), _) => format!("<span>not judged: {}</span>", esc(why)),
            (None, Some(why)) => format!("<span>inconclusive: {}</span>{weighed}", esc(why)),
            (None, None) => weighed,
        };
        let _ = writeln!(
            h,
            "<li id=\"expect-{}\" class=\"{class}\" tabindex=\"0\" data-judged=\"[{}]\">\
             <span class=\"mark\">{mark}</span> <code>{}</code>\
             <div class=\"detail\">{detail}</div></li>",
            i + 1,
            judged.join(","),
            esc(&v.expectation),
        );
    }
    h.push_str("</ol>\n</section>\n");
}

/// One line of the journal: when, what changed, from and to, who says so,
/// why.
struct Entry<'a> {
    at: f64,
    subject: String,
    from: &'a str,
    to: &'a str,
    source: &'static str,
    reason: &'a str,
}

/// Every breaker transition (firedrill's, inferred, and reported by the
/// service) and every pool server's health change, in time order.
pub(super) fn journal(h: &mut String, p: &Picture) {
    let mut rows: Vec<Entry> = Vec::new();
    for b in &p.facts.breakers {
        let source = if b.source.is_some() {
            "inferred"
        } else {
            "firedrill"
        };
        let reported = b.reported.iter().flatten().map(|t| (t, "reported"));
        for (t, source) in b.transitions.iter().map(|t| (t, source)).chain(reported) {
            rows.push(Entry {
                at: t.at_ms,
                subject: format!("breaker {}", b.name),
                from: &t.from,
                to: &t.to,
                source,
                reason: &t.reason,
            });
        }
    }
    for pool in &p.facts.pools {
        for server in &pool.servers {
            let mut from = if pool.starts_out {
                "not in rotation yet"
            } else {
                "in rotation"
            };
            for c in &server.changes {
                let to = if c.healthy { "in rotation" } else { "ejected" };
                rows.push(Entry {
                    at: c.at_ms,
                    subject: format!("pool {} instance {}", pool.name, server.name),
                    from,
                    to,
                    source: "health",
                    reason: &c.by,
                });
                from = to;
            }
        }
    }
    rows.sort_by(|a, b| a.at.total_cmp(&b.at));
    h.push_str("<section id=\"journal\">\n<h2>Transition journal</h2>\n");
    if rows.is_empty() {
        let what = if p.facts.pools.is_empty() {
            "No breaker changed state."
        } else {
            "No breaker changed state and no pool server changed health."
        };
        let _ = writeln!(h, "<p>{what}</p>\n</section>");
        return;
    }
    h.push_str("<table>\n<thead><tr><th>at</th><th>what</th><th>from → to</th><th>source</th><th>reason</th></tr></thead>\n<tbody>\n");
    for e in rows {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{} → {}</td><td>{}</td><td>{}</td></tr>",
            time(e.at),
            esc(&e.subject),
            esc(e.from),
            esc(e.to),
            e.source,
            esc(e.reason)
        );
    }
    h.push_str("</tbody>\n</table>\n</section>\n");
}
