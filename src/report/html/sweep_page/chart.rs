//! The chart of sweep.html: one figure against the points. Bars for one
//! varied path (or more than two); for two, a heat map with the first
//! path's values down and the second's across, each cell the figure's
//! mean (± spread with several seeds), shaded from light (low) to dark
//! (high) and labelled, so it reads without colour.

use std::fmt::Write;

use super::super::page::esc;
use crate::report::sweep::{Metric, Sweep};

/// The chart of `metric` over the sweep's points.
pub(super) fn chart(h: &mut String, s: &Sweep, metric: Metric) {
    let _ = write!(
        h,
        "<section id=\"chart\">\n<h2>{} by point</h2>\n<div class=\"chart-box\">",
        esc(metric.name())
    );
    if s.varied.len() == 2 {
        heat_map(h, s, metric);
    } else {
        bars(h, s, metric);
    }
    h.push_str("</div>\n</section>\n");
}

/// `12.5`, or `12.5 ± 0.3` with a spread.
fn figure(mean: f64, sd: f64, runs: usize) -> String {
    if runs > 1 {
        format!("{mean:.1} ± {sd:.1}")
    } else {
        format!("{}", (mean * 10.0).round() / 10.0)
    }
}

/// Bars of `metric` per point (mean, with the spread as a whisker), the
/// points' values under them.
fn bars(h: &mut String, s: &Sweep, metric: Metric) {
    let (w, top, bottom, left) = (800.0, 20.0, 200.0, 50.0);
    let values: Vec<(f64, f64)> = s.points.iter().map(|p| metric.spread(&p.runs)).collect();
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
        "<svg viewBox=\"0 0 {w} 250\" width=\"100%\" role=\"img\" aria-label=\"{} by point\">\
         <line x1=\"{left}\" y1=\"{bottom}\" x2=\"{w}\" y2=\"{bottom}\" stroke=\"#555\"/>\
         <text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"end\">{}</text>\
         <text x=\"{}\" y=\"{bottom}\" font-size=\"12\" text-anchor=\"end\">0</text>",
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
        "<text x=\"{:.1}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\" fill=\"#555\">{}</text></svg>",
        left + (w - left) / 2.0,
        bottom + 36.0,
        esc(&s.varied.join(", "))
    );
}

/// Each varied path's values, in the order the points first have them.
fn axis(s: &Sweep, at: usize) -> Vec<&str> {
    let mut values: Vec<&str> = Vec::new();
    for p in &s.points {
        if let Some(v) = p.values.get(at)
            && !values.contains(&v.as_str())
        {
            values.push(v);
        }
    }
    values
}

/// A shade from light (`t` = 0) to dark blue (`t` = 1), and the text
/// colour that reads on it.
fn shade(t: f64) -> (String, &'static str) {
    let (light, dark) = ([0xde, 0xeb, 0xf7], [0x08, 0x30, 0x6b]);
    let mix: Vec<String> = light
        .iter()
        .zip(dark)
        .map(|(l, d)| {
            let v = f64::from(*l) + (f64::from(d) - f64::from(*l)) * t.clamp(0.0, 1.0);
            format!("{:02x}", v.round() as u8)
        })
        .collect();
    (
        format!("#{}", mix.concat()),
        if t > 0.5 { "#fff" } else { "#111" },
    )
}

/// The width a character of a 12 px label takes at most (a lower-case
/// letter, a digit or `_` of the page's sans-serif), for the row labels' margin.
const LABEL_CHAR_PX: f64 = 8.0;

/// The heat map of a two-path sweep.
fn heat_map(h: &mut String, s: &Sweep, metric: Metric) {
    let (rows, columns) = (axis(s, 0), axis(s, 1));
    let name = |i: usize| s.varied[i].rsplit('.').next().unwrap_or(&s.varied[i]);
    // The row labels (the first path's name and values) sit right-aligned
    // left of the cells: the margin holds the longest whole.
    let longest = rows
        .iter()
        .map(|v| v.chars().count())
        .chain([name(0).chars().count() + 2])
        .max()
        .unwrap_or(0);
    let left = (longest as f64 * LABEL_CHAR_PX + 16.0).max(150.0);
    let (top, cell_w, cell_h) = (40.0, 110.0, 34.0);
    let means: Vec<f64> = s.points.iter().map(|p| metric.spread(&p.runs).0).collect();
    let low = means.iter().copied().reduce(f64::min).unwrap_or(0.0);
    let high = means.iter().copied().reduce(f64::max).unwrap_or(0.0);
    let w = left + cell_w * columns.len() as f64 + 10.0;
    let ht = top + cell_h * rows.len() as f64 + 30.0;
    let _ = write!(
        h,
        "<svg class=\"heat-map\" viewBox=\"0 0 {w} {ht}\" width=\"100%\" style=\"max-width: {w}px\" role=\"img\" \
         aria-label=\"{} by {} and {}\">\
         <text x=\"{}\" y=\"14\" font-size=\"12\" text-anchor=\"middle\" fill=\"#555\">{}</text>\
         <text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"end\" fill=\"#555\">{} ↓</text>",
        esc(metric.name()),
        esc(name(0)),
        esc(name(1)),
        left + cell_w * columns.len() as f64 / 2.0,
        esc(name(1)),
        left - 8.0,
        top - 8.0,
        esc(name(0)),
    );
    for (c, value) in columns.iter().enumerate() {
        let _ = write!(
            h,
            "<text x=\"{:.1}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">{}</text>",
            left + cell_w * (c as f64 + 0.5),
            top - 8.0,
            esc(value)
        );
    }
    for (r, value) in rows.iter().enumerate() {
        let _ = write!(
            h,
            "<text x=\"{}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"end\">{}</text>",
            left - 8.0,
            top + cell_h * (r as f64 + 0.6),
            esc(value)
        );
    }
    for (p, mean) in s.points.iter().zip(&means) {
        let (Some(r), Some(c)) = (
            rows.iter().position(|v| *v == p.values[0]),
            columns.iter().position(|v| *v == p.values[1]),
        ) else {
            continue;
        };
        let t = if high > low {
            (mean - low) / (high - low)
        } else {
            0.5
        };
        let (fill, ink) = shade(t);
        let (x, y) = (left + cell_w * c as f64, top + cell_h * r as f64);
        let (_, sd) = metric.spread(&p.runs);
        let text = figure(*mean, sd, p.runs.len());
        let _ = write!(
            h,
            "<g class=\"cell\"><rect class=\"cell\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{cell_w}\" height=\"{cell_h}\" \
             fill=\"{fill}\" stroke=\"#fff\"><title>{}: {text}</title></rect>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"13\" text-anchor=\"middle\" fill=\"{ink}\">{text}</text></g>",
            esc(&p.values.join(", ")),
            x + cell_w / 2.0,
            y + cell_h * 0.62,
        );
    }
    let _ = write!(
        h,
        "<text x=\"{left}\" y=\"{:.1}\" font-size=\"12\" fill=\"#555\">light: lowest ({}), dark: highest ({})</text></svg>",
        top + cell_h * rows.len() as f64 + 20.0,
        figure(low, 0.0, 1),
        figure(high, 0.0, 1),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shade_runs_from_light_to_dark_with_text_that_reads_on_it() {
        assert_eq!(shade(0.0), ("#deebf7".to_string(), "#111"));
        assert_eq!(shade(1.0), ("#08306b".to_string(), "#fff"));
        assert_eq!(shade(7.0), shade(1.0), "clamped");
    }
}
