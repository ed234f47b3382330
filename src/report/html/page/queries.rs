//! A row per query a sentence judged: its series over the run as lines
//! under the fault and breaker bands, in the unit of the sentence's bound,
//! the windows it was judged over marked behind them, and each point's
//! value on hover. A query Prometheus would not answer says why instead.

use std::fmt::Write;

use super::super::picture::Picture;
use super::format::{esc, row_with, time};
use super::lines::{nice_top, yticks};

/// One row per query of the report.
pub(super) fn query_rows(h: &mut String, p: &Picture) {
    let x = |ms: f64| ms / p.axis_ms * 1000.0;
    for q in &p.facts.queries {
        let max = q
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|(_, v)| *v))
            .fold(0.0_f64, f64::max);
        let (top, step) = nice_top(max);
        let y = |v: f64| 100.0 - v.max(0.0) / top * 98.0;
        let mut svg = String::from(
            "<svg viewBox=\"0 0 1000 100\" preserveAspectRatio=\"none\" width=\"100%\" height=\"100%\">",
        );
        for (a, b) in &q.judged_ms {
            let _ = write!(
                svg,
                "<rect class=\"query-judged\" x=\"{:.2}\" width=\"{:.2}\" y=\"0\" height=\"100\">\
                 <title>judged {}–{}</title></rect>",
                x(*a),
                x(*b) - x(*a),
                time(*a),
                time(*b)
            );
        }
        for (i, s) in q.series.iter().enumerate() {
            let points: Vec<String> = s
                .points
                .iter()
                .map(|(at, v)| format!("{:.2},{:.2}", x(*at), y(*v)))
                .collect();
            let _ = write!(
                svg,
                "<polyline class=\"query-line q{}\" vector-effect=\"non-scaling-stroke\" points=\"{}\">\
                 <title>{}</title></polyline>",
                i % 4,
                points.join(" "),
                esc(&s.labels)
            );
            for (at, v) in &s.points {
                let _ = write!(
                    svg,
                    "<circle class=\"query-point\" cx=\"{:.2}\" cy=\"{:.2}\" r=\"6\">\
                     <title>{} {}: {}{}</title></circle>",
                    x(*at),
                    y(*v),
                    esc(&s.labels),
                    time(*at),
                    crate::experiment::expect::verdict::ratio(*v),
                    esc(&q.unit)
                );
            }
        }
        svg.push_str("</svg>");
        let mut note = format!("{} on {}", q.promql, q.source);
        if !q.unit.is_empty() {
            let _ = write!(note, ", in {}", q.unit);
        }
        let extra = match &q.error {
            Some(e) => format!("<div class=\"query-error\">not drawn: {}</div>", esc(e)),
            None if q.series.is_empty() => {
                "<div class=\"query-error\">Prometheus returned no samples over the run</div>"
                    .to_string()
            }
            None => {
                let unit = q.unit.clone();
                yticks(top, step, move |v| {
                    format!("{}{unit}", crate::experiment::expect::verdict::ratio(v))
                })
            }
        };
        row_with(
            h,
            "query-row",
            &format!("query {}", q.name),
            &note,
            60,
            &svg,
            &extra,
        );
    }
}
