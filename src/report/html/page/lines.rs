//! A route's latency over time: p50 and p99 as steps, each bucket's value
//! held across the bucket (so a step rises where its bucket starts, never
//! before), with y-axis ticks and each bucket's values on hover.

use std::fmt::Write;

use super::super::picture::{Bucket, Picture, RouteTrack};
use super::format::row_with;
use super::format::{latency, time};

/// A round top for an axis whose values reach `max`, and its step: 1, 2
/// or 5 times a power of ten, four steps at most.
pub(super) fn nice_top(max: f64) -> (f64, f64) {
    let max = if max > 0.0 { max } else { 1.0 };
    let power = 10f64.powf((max / 4.0).log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|s| (max / s).ceil() <= 4.0)
        .unwrap_or(10.0 * power);
    ((max / step).ceil() * step, step)
}

/// Tick labels down a track's left edge, 0 to `top` every `step`, each
/// as `label` writes it; `top` sits at the top of the track.
pub(super) fn yticks(top: f64, step: f64, label: impl Fn(f64) -> String) -> String {
    let mut out = String::from("<div class=\"yticks\" aria-hidden=\"true\">");
    let mut v = 0.0;
    while v <= top + step / 1000.0 {
        let y = 100.0 - v / top * 100.0;
        let edge = if v == 0.0 {
            " bottom"
        } else if (top - v).abs() < step / 1000.0 {
            " top"
        } else {
            ""
        };
        let _ = write!(
            out,
            "<span class=\"ytick{edge}\" style=\"top:{y:.1}%\">{}</span>",
            label(v)
        );
        v += step;
    }
    out.push_str("</div>");
    out
}

/// The step path of one percentile over the buckets, in the latency
/// SVG's coordinates (x 0 to 1000 across the axis, y 0 to 100 down).
fn steps(p: &Picture, r: &RouteTrack, top: f64, pick: fn(&Bucket) -> Option<f64>) -> String {
    let x = |ms: f64| ms / p.axis_ms * 1000.0;
    let mut d = String::new();
    let mut joined = false;
    for (i, b) in r.buckets.iter().enumerate() {
        let (Some((at, end)), Some(v)) = (p.bucket_span(i), pick(b)) else {
            joined = false;
            continue;
        };
        let y = 100.0 - v / top * 98.0;
        if joined {
            let _ = write!(d, " V{y:.2} H{:.2}", x(end));
        } else {
            let _ = write!(d, " M{:.2},{y:.2} H{:.2}", x(at), x(end));
        }
        joined = true;
    }
    d
}

/// Per route: the p50 and p99 steps under gridlines at the ticks, an
/// invisible hover target per bucket with its values, and the ticks.
pub(super) fn latency_row(h: &mut String, p: &Picture, r: &RouteTrack) {
    let max = r
        .buckets
        .iter()
        .filter_map(|b| b.p99)
        .fold(0.0_f64, f64::max);
    let (top, step) = nice_top(max);
    let mut svg = String::from(
        "<svg viewBox=\"0 0 1000 100\" preserveAspectRatio=\"none\" width=\"100%\" height=\"100%\">",
    );
    let mut v = step;
    while v < top - step / 1000.0 {
        let y = 100.0 - v / top * 98.0;
        let _ = write!(
            svg,
            "<line class=\"grid\" vector-effect=\"non-scaling-stroke\" x1=\"0\" x2=\"1000\" y1=\"{y:.2}\" y2=\"{y:.2}\"/>"
        );
        v += step;
    }
    for (class, pick) in [
        ("line-p50", (|b| b.p50) as fn(&Bucket) -> Option<f64>),
        ("line-p99", |b| b.p99),
    ] {
        let _ = write!(
            svg,
            "<path class=\"step {class}\" vector-effect=\"non-scaling-stroke\" d=\"{}\"/>",
            steps(p, r, top, pick).trim_start()
        );
    }
    for (i, b) in r.buckets.iter().enumerate() {
        let (Some((at, end)), Some(p50), Some(p99)) = (p.bucket_span(i), b.p50, b.p99) else {
            continue;
        };
        let _ = write!(
            svg,
            "<rect class=\"hover\" x=\"{:.2}\" width=\"{:.2}\" y=\"0\" height=\"100\">\
             <title>{}–{}: p50 {}, p99 {}</title></rect>",
            at / p.axis_ms * 1000.0,
            (end - at) / p.axis_ms * 1000.0,
            time(at),
            time(end),
            latency(p50),
            latency(p99)
        );
    }
    svg.push_str("</svg>");
    row_with(
        h,
        "latency-row",
        &r.name,
        &format!("latency p50/p99 per {}", time(p.bucket_ms)),
        60,
        &svg,
        &yticks(top, step, latency),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_top_of_an_axis_is_a_round_number_a_few_steps_up() {
        assert_eq!(nice_top(96.0), (100.0, 50.0));
        assert_eq!(nice_top(20.0), (20.0, 5.0));
        assert_eq!(nice_top(501.0), (600.0, 200.0));
        assert_eq!(nice_top(3.0), (3.0, 1.0));
        assert_eq!(nice_top(0.0), (1.0, 0.5));
    }

    #[test]
    fn ticks_run_from_zero_at_the_bottom_to_the_top() {
        let t = yticks(100.0, 50.0, |v| format!("{v}"));
        assert_eq!(
            t,
            "<div class=\"yticks\" aria-hidden=\"true\">\
             <span class=\"ytick bottom\" style=\"top:100.0%\">0</span>\
             <span class=\"ytick\" style=\"top:50.0%\">50</span>\
             <span class=\"ytick top\" style=\"top:0.0%\">100</span></div>"
        );
    }
}
