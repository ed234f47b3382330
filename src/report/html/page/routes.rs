//! The routes' figures over the run, in the words every view counts
//! requests with, and those words defined under the table (from
//! [`crate::experiment::vocabulary`], as the README's legend is).

use std::fmt::Write;

use super::esc;
use crate::experiment::vocabulary::{
    ERRORS, FALLBACK, REJECTED, REQUESTS, SUCCESS, TERMS, TIMEOUTS, Term,
};
use crate::report::html::picture::Picture;

/// The table of routes and the legend of its words; nothing for a run
/// that sent no load of its own.
pub(super) fn routes(h: &mut String, p: &Picture) {
    let routes = &p.facts.routes;
    if routes.is_empty() {
        return;
    }
    h.push_str("<section id=\"routes\">\n<h2>Routes</h2>\n<table>\n<thead><tr><th>route</th>");
    for term in [REQUESTS, SUCCESS, FALLBACK, ERRORS, REJECTED, TIMEOUTS] {
        let _ = write!(
            h,
            "<th><abbr title=\"{}\">{}</abbr></th>",
            esc(term.meaning),
            term.word
        );
    }
    h.push_str("<th>p50</th><th>p99</th></tr></thead>\n<tbody>\n");
    for r in routes {
        let errors = r
            .errors_pct
            .unwrap_or_else(|| (100.0 - r.success_pct).max(0.0));
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{:.1}%</td><td>{:.1}%</td><td>{:.1}%</td>\
             <td>{:.1}%</td><td>{}</td><td>{:.1}ms</td><td>{:.1}ms</td></tr>",
            esc(&r.route),
            r.requests,
            r.success_pct,
            r.fallback_pct,
            errors,
            r.rejected_pct,
            r.timeouts,
            r.latency_ms.p50,
            r.latency_ms.p99
        );
    }
    h.push_str("</tbody>\n</table>\n");
    for r in routes.iter().filter(|r| !r.grpc_statuses.is_empty()) {
        let statuses: Vec<String> = r
            .grpc_statuses
            .iter()
            .map(|(name, n)| format!("<code>{}</code> {n}", esc(name)))
            .collect();
        let _ = writeln!(
            h,
            "<p class=\"grpc-statuses\">{}: gRPC statuses {}</p>",
            esc(&r.route),
            statuses.join(", ")
        );
    }
    h.push_str("<dl class=\"words\" id=\"words\">\n");
    for term in TERMS {
        let _ = writeln!(h, "<dt>{}</dt><dd>{}.</dd>", term.word, meaning_html(term));
    }
    h.push_str("</dl>\n</section>\n");
}

/// A word's meaning as HTML: its `code` spans as `<code>`.
fn meaning_html(term: Term) -> String {
    esc(term.meaning)
        .split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 {
                format!("<code>{part}</code>")
            } else {
                part.to_string()
            }
        })
        .collect()
}
