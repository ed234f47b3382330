//! `trend.html`: the history on one page. Per experiment, one small chart
//! per figure (runs on the x axis in the order they were recorded, the
//! figure on the y axis), every run a point that links to its own
//! report.html, the runs that did not pass marked; then the runs as a
//! table, with each sentence's state in each run (held, failed, seed, not
//! judged). Self-contained like report.html: inline CSS and SVG, no script.

use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

use super::read::StoredRun;
use super::trend::{STATES, experiments, figure_names, number, sentences, state_in};
use crate::report::html::page::{CSS, esc};

/// Chart size, in SVG units.
const W: f64 = 300.0;
const H: f64 = 120.0;
/// Room for the axis labels.
const LEFT: f64 = 48.0;
const BOTTOM: f64 = 18.0;
const TOP: f64 = 8.0;
const RIGHT: f64 = 8.0;

/// The page for `runs`, whose links are relative to `dir` (where the page
/// is written).
pub fn render(runs: &[StoredRun], dir: &Path) -> String {
    let mut h = String::with_capacity(64 * 1024);
    let names = experiments(runs);
    let _ = write!(
        h,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>drill history</title>\n<style>\n{CSS}\
         .trends {{ display: grid; grid-template-columns: repeat(auto-fill, minmax(300px, 1fr)); gap: 12px; }}\n\
         .trends figure {{ margin: 0; border: 1px solid #eee; padding: 4px; }}\n\
         .trends figcaption {{ font-size: 13px; overflow-wrap: anywhere; }}\n\
         svg.trend {{ width: 100%; height: auto; }}\n\
         svg.trend polyline {{ fill: none; stroke: #2f5d8a; stroke-width: 1.5; }}\n\
         svg.trend circle.run {{ fill: #2f5d8a; }} svg.trend circle.failed {{ fill: #c0392b; stroke: #5a0f07; }}\n\
         svg.trend text {{ font-size: 10px; fill: #555; }} svg.trend line.axis {{ stroke: #bbb; }}\n\
         svg.trend polyline.limit {{ stroke: #b8860b; stroke-dasharray: 4 3; }} svg.trend circle.limit {{ fill: #b8860b; }}\n\
         td.failed, td.state-failed {{ color: #8a2c00; font-weight: 700; }} .runs {{ overflow-x: auto; }}\n\
         td.state-seed, td.state-skip {{ color: #6b5a00; }}\n\
         </style>\n</head>\n<body>\n<header>\n<h1>drill history</h1>\n\
         <p class=\"description\">{} run(s) of {} experiment(s); a red point is a run that did not pass; \
         each point links to its run's report.</p>\n</header>\n",
        runs.len(),
        names.len()
    );
    if runs.is_empty() {
        h.push_str("<p>No runs recorded.</p>\n");
    }
    for (i, name) in names.iter().enumerate() {
        let these: Vec<&StoredRun> = runs.iter().filter(|r| r.experiment == *name).collect();
        let _ = writeln!(
            h,
            "<section class=\"experiment\" id=\"experiment-{i}\">\n<h2>{}</h2>\n<div class=\"trends\">",
            esc(name)
        );
        for figure in figure_names(&these) {
            chart(&mut h, figure, &these, dir);
        }
        h.push_str("</div>\n");
        table(&mut h, &these, dir);
        h.push_str("</section>\n");
    }
    h.push_str("</body>\n</html>\n");
    h
}

/// One figure across `runs`: a line through the runs that have it, a
/// point per run (red when it did not pass) linking to its report.
fn chart(h: &mut String, figure: &str, runs: &[&StoredRun], dir: &Path) {
    let points: Vec<(usize, f64, &StoredRun)> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.figures.get(figure).map(|v| (i, *v, *r)))
        .filter(|(_, v, _)| v.is_finite())
        .collect();
    let limits = limits(figure, runs);
    let unit = unit(figure, runs);
    let with_unit = |v: f64| match unit {
        Some("%") => format!("{}%", number(v)),
        Some(u) => format!("{} {u}", number(v)),
        None => number(v),
    };
    let (lo, hi) = points
        .iter()
        .map(|p| p.1)
        .chain(limits.iter().map(|l| l.1))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    let (lo, hi) = if lo == hi {
        (lo - 1.0, hi + 1.0)
    } else {
        (lo, hi)
    };
    let n = runs.len().max(2) - 1;
    let x = |i: usize| LEFT + (W - LEFT - RIGHT) * i as f64 / n as f64;
    let y = |v: f64| TOP + (H - TOP - BOTTOM) * (1.0 - (v - lo) / (hi - lo));
    let _ = write!(
        h,
        "<figure class=\"figure\" data-figure=\"{}\"><figcaption>{}</figcaption>\
         <svg class=\"trend\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"{} across {} runs\">\
         <line class=\"axis\" x1=\"{LEFT}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\"/>\
         <text x=\"{tx}\" y=\"{ty_hi}\" text-anchor=\"end\">{}</text>\
         <text x=\"{tx}\" y=\"{ty_lo}\" text-anchor=\"end\">{}</text>\
         <text x=\"{LEFT}\" y=\"{H}\">#{}</text><text x=\"{r}\" y=\"{H}\" text-anchor=\"end\">#{}</text>",
        esc(figure),
        esc(&match unit {
            Some(u) => format!("{figure} ({u})"),
            None => figure.to_string(),
        }),
        esc(figure),
        runs.len(),
        with_unit(hi),
        with_unit(lo),
        runs.first().map_or(0, |r| r.id),
        runs.last().map_or(0, |r| r.id),
        b = H - BOTTOM,
        r = W - RIGHT,
        tx = LEFT - 4.0,
        ty_hi = TOP + 8.0,
        ty_lo = H - BOTTOM,
    );
    let line: Vec<String> = points
        .iter()
        .map(|(i, v, _)| format!("{:.1},{:.1}", x(*i), y(*v)))
        .collect();
    let _ = write!(h, "<polyline points=\"{}\"/>", line.join(" "));
    if !limits.is_empty() {
        let half = (W - LEFT - RIGHT) / (2.0 * n as f64);
        limit_steps(h, &limits, &x, &y, half, &with_unit);
    }
    for (i, v, run) in &points {
        let class = if run.passed { "run" } else { "run failed" };
        let title = format!(
            "#{} seed {} {}: {}",
            run.id,
            run.seed,
            run.verdict,
            with_unit(*v)
        );
        let dot = format!(
            "<circle class=\"{class}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"3.5\"><title>{}</title></circle>",
            x(*i),
            y(*v),
            esc(&title)
        );
        match report_link(run, dir) {
            Some(href) => {
                let _ = write!(h, "<a href=\"{}\">{dot}</a>", esc(&href));
            }
            None => h.push_str(&dot),
        }
    }
    h.push_str("</svg></figure>\n");
}

/// The limit each run's sentence was judged against: a dashed step
/// `half` a run's spacing either side of each run that had one (`x` and
/// `y` place a run and a value), each step named on hover with `shown`.
fn limit_steps(
    h: &mut String,
    limits: &[(usize, f64, &StoredRun)],
    x: &dyn Fn(usize) -> f64,
    y: &dyn Fn(f64) -> f64,
    half: f64,
    shown: &dyn Fn(f64) -> String,
) {
    let steps: Vec<String> = limits
        .iter()
        .flat_map(|(i, v, _)| {
            [
                format!("{:.1},{:.1}", (x(*i) - half).max(LEFT), y(*v)),
                format!("{:.1},{:.1}", (x(*i) + half).min(W - RIGHT), y(*v)),
            ]
        })
        .collect();
    let _ = write!(
        h,
        "<polyline class=\"limit\" points=\"{}\"/>",
        steps.join(" ")
    );
    for (i, v, run) in limits {
        let _ = write!(
            h,
            "<circle class=\"limit\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"2\"><title>#{} judged against {}</title></circle>",
            x(*i),
            y(*v),
            run.id,
            esc(&shown(*v))
        );
    }
}

/// The limit a sentence judged `figure` against, by run: (its index in
/// `runs`, the limit, the run).
fn limits<'r>(figure: &str, runs: &[&'r StoredRun]) -> Vec<(usize, f64, &'r StoredRun)> {
    runs.iter()
        .enumerate()
        .filter_map(|(i, r)| {
            r.expectations
                .iter()
                .find(|e| e.figure_key.as_deref() == Some(figure))
                .and_then(|e| e.figure_limit)
                .filter(|v| v.is_finite())
                .map(|v| (i, v, *r))
        })
        .collect()
}

/// The unit of `figure`: as its sentence kept it, else as its name says
/// (`..._ms`, `..._pct`); none for a count or a number.
fn unit<'r>(figure: &str, runs: &[&'r StoredRun]) -> Option<&'r str> {
    let kept = runs.iter().find_map(|r| {
        r.expectations
            .iter()
            .find(|e| e.figure_key.as_deref() == Some(figure))
            .and_then(|e| e.figure_unit.as_deref())
    });
    kept.or_else(|| {
        if figure.ends_with("_ms") {
            Some("ms")
        } else if figure.ends_with("_pct") {
            Some("%")
        } else {
            None
        }
    })
}

/// The runs: id, when, seed, build, verdict, each sentence's state, the
/// sentences that failed (by column, the text on hover), report; then the
/// sentences the state columns stand for.
fn table(h: &mut String, runs: &[&StoredRun], dir: &Path) {
    let sentences = sentences(runs);
    h.push_str(
        "<div class=\"runs\"><table>\n<thead><tr><th>run</th><th>recorded</th><th>seed</th>\
         <th>clock</th><th>build</th><th>verdict</th>",
    );
    for (i, sentence) in sentences.iter().enumerate() {
        let _ = write!(h, "<th title=\"{}\">expect {}</th>", esc(sentence), i + 1);
    }
    h.push_str("<th>failed</th><th>report</th></tr></thead>\n<tbody>\n");
    for r in runs {
        let states: String = sentences
            .iter()
            .map(|s| {
                let mark = state_in(r, s);
                format!("<td class=\"state-{}\">{mark}</td>", mark.to_lowercase())
            })
            .collect();
        // The sentences that failed in this run, by their column, each
        // with its text on hover.
        let failed: Vec<String> = sentences
            .iter()
            .enumerate()
            .filter(|(_, s)| state_in(r, s) == "FAILED")
            .map(|(i, s)| format!("<span title=\"{}\">expect {}</span>", esc(s), i + 1))
            .collect();
        let report = report_link(r, dir).map_or(String::new(), |href| {
            format!("<a href=\"{}\">report</a>", esc(&href))
        });
        let _ = writeln!(
            h,
            "<tr class=\"run\"><td>#{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td class=\"{}\">{}</td>{states}<td class=\"failed-sentences\">{}</td><td>{report}</td></tr>",
            r.id,
            esc(r.started_at.as_deref().unwrap_or(&r.recorded_at)),
            esc(&r.seed),
            esc(&r.clock),
            esc(&r.build),
            if r.passed { "passed" } else { "failed" },
            esc(&r.verdict.replace('_', " ")),
            failed.join(", "),
        );
    }
    h.push_str("</tbody>\n</table></div>\n");
    if !sentences.is_empty() {
        h.push_str("<ol class=\"sentences\">\n");
        for (i, sentence) in sentences.iter().enumerate() {
            let _ = writeln!(
                h,
                "<li value=\"{}\">expect {}: <code>{}</code></li>",
                i + 1,
                i + 1,
                esc(sentence)
            );
        }
        let _ = writeln!(h, "</ol>\n<p class=\"hint\">{}</p>", esc(STATES));
    }
}

/// The run's report.html, relative to `dir` when both are absolute paths.
fn report_link(run: &StoredRun, dir: &Path) -> Option<String> {
    let report = Path::new(run.report_dir.as_deref()?).join("report.html");
    let dir = std::path::absolute(dir).ok()?;
    Some(match relative(&report, &dir) {
        Some(path) => path.to_string_lossy().into_owned(),
        None => report.to_string_lossy().into_owned(),
    })
}

/// `to` as seen from `from` (both absolute): `../runs/7/report.html`.
fn relative(to: &Path, from: &Path) -> Option<PathBuf> {
    if !to.is_absolute() || !from.is_absolute() {
        return None;
    }
    let to: Vec<Component> = to.components().collect();
    let from: Vec<Component> = from.components().collect();
    let common = to.iter().zip(&from).take_while(|(a, b)| a == b).count();
    let mut path = PathBuf::new();
    for _ in common..from.len() {
        path.push("..");
    }
    for c in &to[common..] {
        path.push(c);
    }
    Some(path)
}

/// Writes `trend.html` into `dir` (created when missing); its path.
pub fn write(dir: &Path, runs: &[StoredRun]) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join("trend.html");
    std::fs::write(&path, render(runs, dir))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_is_linked_relative_to_the_page() {
        assert_eq!(
            relative(Path::new("/ci/runs/7/report.html"), Path::new("/ci/trend")),
            Some(PathBuf::from("../runs/7/report.html"))
        );
        assert_eq!(
            relative(Path::new("/ci/trend/7/report.html"), Path::new("/ci/trend")),
            Some(PathBuf::from("7/report.html"))
        );
        assert_eq!(
            relative(Path::new("runs/report.html"), Path::new("/ci")),
            None
        );
    }
}
