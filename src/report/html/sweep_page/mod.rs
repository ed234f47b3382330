//! `sweep.html`: a sweep on one page — one row per point with its pass/fail
//! matrix and key figures, each linked to its own reports (every seed's),
//! and a chart of one figure against the varied values ([`chart`]: bars,
//! or a heat map for two varied paths). Self-contained like report.html;
//! the table wraps its headers and scrolls within its own box on a narrow
//! screen.

use std::fmt::Write;

use super::page::{CSS, esc};
use crate::report::sweep::metric::FIGURES;
use crate::report::sweep::{Metric, Point, Sweep};

mod chart;

/// The page, charting `metric`.
pub fn render(s: &Sweep, metric: Metric) -> String {
    let mut h = String::with_capacity(32 * 1024);
    let runs = s.points.first().map_or(0, |p| p.runs.len());
    let _ = write!(
        h,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>sweep of {name}</title>\n<style>\n{CSS}\
         td.pass {{ color: #00573f; }} td.fail {{ color: #8a2c00; font-weight: 700; }}\n\
         .points {{ overflow-x: auto; max-width: 100%; border: 1px solid #eee; }}\n\
         .points table {{ width: auto; min-width: 100%; }}\n\
         .points th {{ vertical-align: bottom; }}\n\
         .points td {{ white-space: nowrap; }} .points td.runs {{ white-space: normal; min-width: 4em; }}\n\
         .points td.runs a {{ margin-right: 6px; }} .points small {{ color: #555; }}\n\
         .chart-box {{ max-width: 900px; }}\n\
         @media (max-width: 1100px) {{ .points th, .points td {{ padding: 3px 4px; }}\n\
         .points small {{ display: block; }} }}\n\
         </style>\n</head>\n<body>\n<header>\n<h1>sweep of {name}</h1>\n\
         <p class=\"description\">{points} points × {runs} seed(s), in virtual time; varied: {varied}.</p>\n{partial}\
         <nav class=\"files\">Files: <a href=\"sweep.json\">sweep.json</a></nav>\n</header>\n",
        name = esc(&s.experiment),
        points = s.points.len(),
        varied = esc(&s.varied.join(", ")),
        partial = match s.partial {
            true =>
                "<p class=\"partial\"><strong>partial</strong>: the sweep was interrupted; only the points done are shown.</p>\n",
            false => "",
        },
    );
    chart::chart(&mut h, s, metric);
    h.push_str(
        "<section id=\"points\">\n<h2>Points</h2>\n<div class=\"points\"><table>\n<thead><tr>",
    );
    for v in &s.varied {
        let _ = write!(
            h,
            "<th>{}</th>",
            breakable(v.rsplit('.').next().unwrap_or(v))
        );
    }
    for i in 1..=s.expectations.len() {
        let _ = write!(h, "<th>E{i}</th>");
    }
    for m in FIGURES {
        let _ = write!(h, "<th>{}</th>", breakable(m.name()));
    }
    h.push_str("<th>report</th></tr></thead>\n<tbody>\n");
    for p in &s.points {
        h.push_str("<tr class=\"point\">");
        for v in &p.values {
            let _ = write!(h, "<td>{}</td>", esc(v));
        }
        for e in 0..s.expectations.len() {
            let held = p.runs.iter().filter(|r| r.verdicts[e]).count();
            let all = held == p.runs.len();
            let text = if p.runs.len() == 1 {
                if all { "pass" } else { "FAIL" }.to_string()
            } else {
                format!("{held}/{}", p.runs.len())
            };
            let _ = write!(
                h,
                "<td class=\"{}\">{text}</td>",
                if all { "pass" } else { "fail" }
            );
        }
        for m in FIGURES {
            let (mean, sd) = m.spread(&p.runs);
            let _ = if p.runs.len() > 1 {
                write!(h, "<td>{mean:.1} <small>± {sd:.1}</small></td>")
            } else {
                write!(h, "<td>{}</td>", (mean * 10.0).round() / 10.0)
            };
        }
        let _ = writeln!(h, "<td class=\"runs\">{}</td></tr>", links(p));
    }
    h.push_str("</tbody>\n</table></div>\n</section>\n<section id=\"legend\">\n<h2>Expectations</h2>\n<ul>\n");
    for (i, e) in s.expectations.iter().enumerate() {
        let _ = writeln!(h, "<li>E{}: <code>{}</code></li>", i + 1, esc(e));
    }
    h.push_str("</ul>\n</section>\n</body>\n</html>\n");
    h
}

/// A column name, escaped, that may break after `_` and at spaces.
fn breakable(name: &str) -> String {
    esc(name).replace('_', "_<wbr>")
}

/// A point's reports: `report`, or with several seeds one link per seed.
fn links(p: &Point) -> String {
    if p.runs.len() <= 1 {
        return format!("<a href=\"{}/report.html\">report</a>", esc(&p.dir));
    }
    p.runs
        .iter()
        .map(|r| {
            format!(
                "<a href=\"{}/seed-{}/report.html\">seed {}</a>",
                esc(&p.dir),
                r.seed,
                r.seed
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Writes `sweep.json` and `sweep.html` (charting `metric`) into `dir`,
/// beside the points' folders.
pub fn write_summary(
    dir: &std::path::Path,
    sweep: &Sweep,
    metric: Metric,
) -> Result<(), crate::report::sweep::SweepError> {
    let write = |name: &str, bytes: Vec<u8>| {
        let path = dir.join(name);
        std::fs::create_dir_all(dir)
            .and_then(|()| std::fs::write(&path, bytes))
            .map_err(|e| crate::report::sweep::SweepError::Run(format!("{}: {e}", path.display())))
    };
    let mut json = serde_json::to_vec_pretty(sweep)
        .map_err(|e| crate::report::sweep::SweepError::Run(e.to_string()))?;
    json.push(b'\n');
    write("sweep.json", json)?;
    write("sweep.html", render(sweep, metric).into_bytes())
}
