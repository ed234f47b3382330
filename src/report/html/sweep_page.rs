//! `sweep.html`: a sweep on one page — one row per point with its pass/fail
//! matrix and key figures, each linked to its own report, and a chart of
//! one figure against the varied values. Self-contained like report.html.

use std::fmt::Write;

use super::page::{CSS, esc};
use crate::report::sweep::{Figures, Sweep};

/// A figure of a run the chart can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Share answered 2xx/3xx, percent.
    Success,
    /// Share answered by a fallback, percent.
    Fallback,
    /// Share turned away, percent.
    Rejected,
    /// Transitions to open.
    Opens,
    /// Failed probes.
    HalfOpenToOpen,
    /// The largest route p99, milliseconds.
    P99,
}

impl std::str::FromStr for Metric {
    type Err = String;

    /// `success`, `fallback`, `rejected`, `opens`, `half-open-to-open`,
    /// `p99`.
    fn from_str(s: &str) -> Result<Metric, String> {
        Ok(match s {
            "success" => Metric::Success,
            "fallback" => Metric::Fallback,
            "rejected" => Metric::Rejected,
            "opens" => Metric::Opens,
            "half-open-to-open" => Metric::HalfOpenToOpen,
            "p99" => Metric::P99,
            _ => {
                return Err(format!(
                    "`{s}`: expected success, fallback, rejected, opens, half-open-to-open or p99"
                ));
            }
        })
    }
}

impl Metric {
    /// Its name on the page.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Success => "success %",
            Metric::Fallback => "fallback %",
            Metric::Rejected => "rejected %",
            Metric::Opens => "opens",
            Metric::HalfOpenToOpen => "half_open -> open",
            Metric::P99 => "p99 ms",
        }
    }

    /// Its value in one run.
    pub fn of(self, f: &Figures) -> f64 {
        match self {
            Metric::Success => f.success_pct,
            Metric::Fallback => f.fallback_pct,
            Metric::Rejected => f.rejected_pct,
            Metric::Opens => f.opens as f64,
            Metric::HalfOpenToOpen => f.half_open_to_open as f64,
            Metric::P99 => f.p99_ms,
        }
    }
}

/// Mean and standard deviation of a figure over a point's runs.
fn spread(runs: &[Figures], metric: Metric) -> (f64, f64) {
    let n = runs.len().max(1) as f64;
    let mean = runs.iter().map(|r| metric.of(r)).sum::<f64>() / n;
    let var = runs
        .iter()
        .map(|r| (metric.of(r) - mean).powi(2))
        .sum::<f64>()
        / n;
    (mean, var.sqrt())
}

const FIGURES: [Metric; 6] = [
    Metric::Opens,
    Metric::HalfOpenToOpen,
    Metric::Success,
    Metric::Fallback,
    Metric::Rejected,
    Metric::P99,
];

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
         td {{ white-space: nowrap; }} .points {{ overflow-x: auto; }} .chart-box {{ max-width: 900px; }}\n\
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
    chart(&mut h, s, metric);
    h.push_str(
        "<section id=\"points\">\n<h2>Points</h2>\n<div class=\"points\"><table>\n<thead><tr>",
    );
    for v in &s.varied {
        let _ = write!(h, "<th>{}</th>", esc(v.rsplit('.').next().unwrap_or(v)));
    }
    for i in 1..=s.expectations.len() {
        let _ = write!(h, "<th>E{i}</th>");
    }
    for m in FIGURES {
        let _ = write!(h, "<th>{}</th>", esc(m.name()));
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
            let (mean, sd) = spread(&p.runs, m);
            let _ = if p.runs.len() > 1 {
                write!(h, "<td>{mean:.1} ± {sd:.1}</td>")
            } else {
                write!(h, "<td>{}</td>", (mean * 10.0).round() / 10.0)
            };
        }
        let first = match p.runs.first() {
            Some(r) if p.runs.len() > 1 => format!("{}/seed-{}/report.html", p.dir, r.seed),
            _ => format!("{}/report.html", p.dir),
        };
        let _ = writeln!(h, "<td><a href=\"{}\">report</a></td></tr>", esc(&first));
    }
    h.push_str("</tbody>\n</table></div>\n</section>\n<section id=\"legend\">\n<h2>Expectations</h2>\n<ul>\n");
    for (i, e) in s.expectations.iter().enumerate() {
        let _ = writeln!(h, "<li>E{}: <code>{}</code></li>", i + 1, esc(e));
    }
    h.push_str("</ul>\n</section>\n</body>\n</html>\n");
    h
}

/// Bars of `metric` per point (mean, with the spread as a whisker), the
/// points' values under them.
fn chart(h: &mut String, s: &Sweep, metric: Metric) {
    let (w, top, bottom, left) = (800.0, 20.0, 200.0, 50.0);
    let values: Vec<(f64, f64)> = s.points.iter().map(|p| spread(&p.runs, metric)).collect();
    let max = values
        .iter()
        .map(|(m, sd)| m + sd)
        .fold(0.0_f64, f64::max)
        .max(1e-9);
    let n = values.len().max(1) as f64;
    let slot = (w - left) / n;
    let y = |v: f64| bottom - v / max * (bottom - top);
    let _ = write!(
        h,
        "<section id=\"chart\">\n<h2>{} by point</h2>\n<div class=\"chart-box\">\
         <svg viewBox=\"0 0 {w} 250\" width=\"100%\" role=\"img\" aria-label=\"{} by point\">\
         <line x1=\"{left}\" y1=\"{bottom}\" x2=\"{w}\" y2=\"{bottom}\" stroke=\"#555\"/>\
         <text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"end\">{}</text>\
         <text x=\"{}\" y=\"{bottom}\" font-size=\"12\" text-anchor=\"end\">0</text>",
        esc(metric.name()),
        esc(metric.name()),
        left - 6.0,
        top + 4.0,
        (max * 10.0).round() / 10.0,
        left - 6.0,
    );
    for (i, ((mean, sd), p)) in values.iter().zip(&s.points).enumerate() {
        let x = left + slot * i as f64 + slot * 0.15;
        let bw = slot * 0.7;
        let _ = write!(
            h,
            "<g class=\"bar\"><rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{bw:.1}\" height=\"{:.1}\" fill=\"#0072B2\">\
             <title>{}: {mean:.1} ± {sd:.1}</title></rect>",
            y(*mean),
            bottom - y(*mean),
            esc(&p.values.join(", ")),
        );
        if *sd > 0.0 {
            let cx = x + bw / 2.0;
            let _ = write!(
                h,
                "<line x1=\"{cx:.1}\" x2=\"{cx:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#000\"/>",
                y(mean + sd),
                y((mean - sd).max(0.0))
            );
        }
        let _ = write!(
            h,
            "<text x=\"{:.1}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">{}</text></g>",
            x + bw / 2.0,
            bottom + 16.0,
            esc(&p.values.join(", ")),
        );
    }
    let _ = write!(
        h,
        "<text x=\"{:.1}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\" fill=\"#555\">{}</text>",
        left + (w - left) / 2.0,
        bottom + 36.0,
        esc(&s.varied.join(", "))
    );
    h.push_str("</svg></div>\n</section>\n");
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
