//! The timeline: one chart of tracks on a shared time axis — fault
//! windows, breaker states, each route's outcomes and latency, and each
//! dependency's arrivals — under a legend and the overlays that cross every
//! track.

use std::fmt::Write;

use super::super::picture::{Outcome, Picture, TransitionFacts, segments};
use super::format::{Axis, esc, tick_step, time};

/// The timeline section: the legend, then the chart with its overlays,
/// the axis, and a row per fault, breaker, route and dependency.
pub(super) fn timeline(h: &mut String, p: &Picture, axis: &Axis) {
    let _ = write!(h, "<section id=\"timeline\">\n<h2>Timeline</h2>\n");
    legend(h, p);
    h.push_str("<div class=\"chart\">\n");
    overlays(h, p, axis);
    axis_row(h, p, axis);
    fault_rows(h, p, axis);
    breaker_rows(h, p, axis);
    for r in &p.routes {
        route_rows(h, p, r, axis);
    }
    dependency_rows(h, p, axis);
    h.push_str("</div>\n</section>\n");
}

/// A row per fault: its windows as bands, each named.
fn fault_rows(h: &mut String, p: &Picture, axis: &Axis) {
    for fault in &p.facts.faults {
        let mut bands = String::new();
        for (a, b) in &fault.windows_ms {
            let _ = write!(
                bands,
                "<rect class=\"fault\" x=\"{}\" width=\"{}\" y=\"0\" height=\"100%\">\
                 <title>{} ({}) {}–{}</title></rect>\
                 <text class=\"seg\" x=\"{}\" dx=\"4\" y=\"15\">{}</text>",
                axis.pct(*a),
                axis.width(*a, *b),
                esc(&fault.name),
                esc(&fault.kind),
                time(*a),
                time(*b),
                axis.pct(*a),
                esc(&fault.name)
            );
        }
        row(
            h,
            "fault-row",
            &format!("fault {}", fault.name),
            &fault.kind,
            22,
            &bands,
        );
    }
}

/// A row per breaker with its states, and one more for the states the
/// service reported, if it did.
fn breaker_rows(h: &mut String, p: &Picture, axis: &Axis) {
    let f = &p.facts;
    for b in &f.breakers {
        let inferred = b.source.as_deref() == Some("inferred");
        let note = if inferred { "inferred" } else { "breaker" };
        let band = state_band(&b.transitions, f.duration_ms, axis);
        row(h, "breaker-row", &b.name, note, 24, &band);
        if let Some(reported) = &b.reported {
            let band = state_band(reported, f.duration_ms, axis);
            row(
                h,
                "breaker-row reported",
                &b.name,
                "reported by the service",
                24,
                &band,
            );
        }
    }
}

/// A row per dependency: per bucket, the arrivals that reached it and the
/// ones a fault answered, stacked.
fn dependency_rows(h: &mut String, p: &Picture, axis: &Axis) {
    for d in &p.dependencies {
        let max = d
            .buckets
            .iter()
            .map(|(a, b)| a + b)
            .max()
            .unwrap_or(0)
            .max(1);
        let stacks = d
            .buckets
            .iter()
            .map(|(reached, faulted)| vec![(*reached, "reached"), (*faulted, "faulted")]);
        let bars = stacked(stacks, p.bucket_ms, max, axis);
        row(
            h,
            "dependency-row",
            &d.name,
            &format!("arrivals at the dependency, max {max}/bucket"),
            60,
            &bars,
        );
    }
}

/// The colours the page uses: the breaker states and outcomes this run
/// has, each with its name.
fn legend(h: &mut String, p: &Picture) {
    let f = &p.facts;
    let states: Vec<String> = f
        .breakers
        .iter()
        .flat_map(|b| {
            let reported = b.reported.iter().flatten();
            b.transitions.iter().chain(reported).map(|t| t.to.clone())
        })
        .chain(f.breakers.first().map(|_| "closed".to_string()))
        .collect();
    h.push_str("<ul class=\"legend\">");
    for state in ["closed", "open", "half_open", "forced_open", "disabled"] {
        if states.iter().any(|s| s == state) {
            let _ = write!(
                h,
                "<li><span class=\"swatch st-{state}\"></span>{}</li>",
                state.replace('_', "-")
            );
        }
    }
    for (i, o) in Outcome::ALL.iter().enumerate() {
        let seen = p
            .routes
            .iter()
            .flat_map(|r| &r.buckets)
            .any(|b| b.counts[i] > 0);
        if seen {
            let _ = write!(
                h,
                "<li><span class=\"swatch {}\"></span>{}</li>",
                o.name().replace(' ', "-"),
                o.name()
            );
        }
    }
    if !p.routes.is_empty() {
        h.push_str("<li><span class=\"swatch line-p50\"></span>latency p50</li>");
        h.push_str("<li><span class=\"swatch line-p99\"></span>latency p99</li>");
    }
    if !p.dependencies.is_empty() {
        h.push_str("<li><span class=\"swatch reached\"></span>reached the dependency</li>");
        h.push_str("<li><span class=\"swatch faulted\"></span>answered by a fault</li>");
    }
    h.push_str("</ul>\n");
}

/// Fault shading across every track, the cut of a partial run, and the
/// layer that shows the window an expectation judged.
fn overlays(h: &mut String, p: &Picture, axis: &Axis) {
    h.push_str("<div class=\"overlay\" aria-hidden=\"true\">");
    for f in &p.facts.faults {
        for (a, b) in &f.windows_ms {
            let _ = write!(
                h,
                "<div class=\"shade\" style=\"left:{};width:{}\"></div>",
                axis.pct(*a),
                axis.width(*a, *b)
            );
        }
    }
    if p.facts.planned_duration_ms.is_some() {
        let at = p.facts.duration_ms;
        let _ = write!(
            h,
            "<div class=\"cut-rest\" style=\"left:{};width:{}\"></div>\
             <div class=\"cut\" id=\"cut\" style=\"left:{}\"><span>{} at {}</span></div>",
            axis.pct(at),
            axis.width(at, p.axis_ms),
            axis.pct(at),
            esc(&p.facts.ending.kind),
            time(at)
        );
    }
    h.push_str("<div id=\"judged\"></div></div>\n");
}

/// The time axis with its ticks.
fn axis_row(h: &mut String, p: &Picture, axis: &Axis) {
    let step = tick_step(p.axis_ms);
    h.push_str(
        "<div class=\"row axis-row\"><div class=\"label\">time</div><div class=\"track ticks\">",
    );
    let mut t = 0.0;
    while t <= p.axis_ms + 0.5 {
        let _ = write!(
            h,
            "<span class=\"tick\" style=\"left:{}\">{}</span>",
            axis.pct(t),
            time(t)
        );
        t += step;
    }
    h.push_str("</div></div>\n");
}

/// One labelled track: a name, a note under it, and an SVG of `height`.
fn row(h: &mut String, class: &str, name: &str, note: &str, height: u32, svg: &str) {
    let _ = writeln!(
        h,
        "<div class=\"row {class}\"><div class=\"label\"><b>{}</b><small>{}</small></div>\
         <div class=\"track\"><svg width=\"100%\" height=\"{height}\" role=\"img\" aria-label=\"{} {}\">{svg}</svg></div></div>",
        esc(name),
        esc(note),
        esc(name),
        esc(note)
    );
}

/// A breaker's states as coloured segments with their names, and a mark at
/// each transition whose hover text says why.
fn state_band(transitions: &[TransitionFacts], end: f64, axis: &Axis) -> String {
    let mut s = String::new();
    for (a, b, state) in segments(transitions, end) {
        let _ = write!(
            s,
            "<rect class=\"state st-{state}\" x=\"{}\" width=\"{}\" y=\"0\" height=\"100%\">\
             <title>{} from {} to {}</title></rect>\
             <text class=\"seg\" x=\"{}\" dx=\"4\" y=\"16\">{}</text>",
            axis.pct(a),
            axis.width(a, b),
            esc(&state),
            time(a),
            time(b),
            axis.pct(a),
            esc(&state.replace('_', "-"))
        );
    }
    // A state entered and left at the same instant (a half-open whose
    // probe failed at once) still shows, as a thin mark of its colour.
    for pair in transitions.windows(2) {
        if pair[1].at_ms <= pair[0].at_ms && pair[0].at_ms < end {
            let _ = write!(
                s,
                "<rect class=\"instant st-{}\" x=\"{}\" width=\"4\" transform=\"translate(-2,0)\" y=\"0\" height=\"100%\"/>",
                esc(&pair[0].to),
                axis.pct(pair[0].at_ms)
            );
        }
    }
    for t in transitions {
        let _ = write!(
            s,
            "<g class=\"transition\"><title>{} {} → {}: {}</title>\
             <rect class=\"mark\" x=\"{x}\" width=\"2\" transform=\"translate(-1,0)\" y=\"0\" height=\"100%\"/>\
             <rect class=\"hit\" x=\"{x}\" width=\"10\" transform=\"translate(-5,0)\" y=\"0\" height=\"100%\"/></g>",
            time(t.at_ms),
            esc(&t.from),
            esc(&t.to),
            esc(&t.reason),
            x = axis.pct(t.at_ms),
        );
    }
    s
}

/// One stack of bars per bucket: each (count, name) from the bottom up,
/// its height the count's share of `max`, its class the name with dashes.
fn stacked(
    stacks: impl Iterator<Item = Vec<(u32, &'static str)>>,
    bucket_ms: f64,
    max: u32,
    axis: &Axis,
) -> String {
    let mut bars = String::new();
    for (i, stack) in stacks.enumerate() {
        let at = i as f64 * bucket_ms;
        let mut y = 100.0;
        for (n, name) in stack.into_iter().filter(|(n, _)| *n > 0) {
            let height = f64::from(n) / f64::from(max) * 100.0;
            y -= height;
            let _ = write!(
                bars,
                "<rect class=\"{}\" x=\"{}\" width=\"{}\" y=\"{y:.2}%\" height=\"{height:.2}%\">\
                 <title>{}–{}: {n} {name}</title></rect>",
                name.replace(' ', "-"),
                axis.pct(at),
                axis.width(at, at + bucket_ms),
                time(at),
                time(at + bucket_ms),
            );
        }
    }
    bars
}

/// Per route: stacked outcomes per bucket, then p50 and p99 latency lines.
fn route_rows(h: &mut String, p: &Picture, r: &super::super::picture::RouteTrack, axis: &Axis) {
    let max = r
        .buckets
        .iter()
        .map(|b| b.total())
        .max()
        .unwrap_or(0)
        .max(1);
    let stacks = r.buckets.iter().map(|b| {
        Outcome::ALL
            .iter()
            .zip(b.counts)
            .map(|(o, n)| (n, o.name()))
            .collect()
    });
    let bars = stacked(stacks, p.bucket_ms, max, axis);
    row(
        h,
        "route-row",
        &r.name,
        &format!("outcomes per {}, max {max}", time(p.bucket_ms)),
        90,
        &bars,
    );
    let top = r
        .buckets
        .iter()
        .filter_map(|b| b.p99)
        .fold(0.0_f64, f64::max)
        .max(1.0);
    let mut lines = String::from(
        "<svg viewBox=\"0 0 1000 100\" preserveAspectRatio=\"none\" width=\"100%\" height=\"100%\">",
    );
    for (class, pick) in [
        (
            "line-p50",
            (|b| b.p50) as fn(&super::super::picture::Bucket) -> Option<f64>,
        ),
        ("line-p99", |b| b.p99),
    ] {
        let points: Vec<String> = r
            .buckets
            .iter()
            .enumerate()
            .filter_map(|(i, b)| {
                let mid = (i as f64 + 0.5) * p.bucket_ms / p.axis_ms * 1000.0;
                pick(b).map(|v| format!("{mid:.1},{:.1}", 100.0 - v / top * 96.0))
            })
            .collect();
        let _ = write!(
            lines,
            "<polyline class=\"{class}\" vector-effect=\"non-scaling-stroke\" points=\"{}\"/>",
            points.join(" ")
        );
    }
    lines.push_str("</svg>");
    row(
        h,
        "latency-row",
        &r.name,
        &format!("latency p50/p99, top {}", time(top)),
        60,
        &lines,
    );
}
