//! The timeline: one chart of tracks on a shared time axis — fault
//! windows, breaker states, each judged Prometheus query, each route's outcomes and latency, and each
//! dependency's arrivals — under a legend and the overlays that cross every
//! track.

use std::fmt::Write;

use super::super::picture::{
    FaultFacts, HealthState, Outcome, Picture, RouteTrack, TransitionFacts, health_segments,
    no_server_spans, segments,
};
use super::format::{Axis, esc, row, row_with, tick_step, time};
use super::lines::{latency_row, nice_top, yticks};
use super::pools::{pool_rows, server_class};
use super::queries::query_rows;

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
    pool_rows(h, p, axis);
    query_rows(h, p);
    for r in &p.routes {
        route_rows(h, p, r);
        latency_row(h, p, r);
    }
    dependency_rows(h, p, axis);
    h.push_str("</div>\n</section>\n");
}

/// What the page calls a fault: its name, the instance it acts on and
/// whether people start it (`b-down on instance b`, `maint (manual)`).
pub(super) fn fault_title(fault: &FaultFacts) -> String {
    let mut title = fault.name.clone();
    if let Some(instance) = &fault.instance {
        let _ = write!(title, " on instance {instance}");
    }
    if fault.manual {
        title.push_str(" (manual)");
    }
    title
}

/// A row per fault: its windows as bands, each named; a replay's band
/// shaded per bucket by how much of the recording failed there.
fn fault_rows(h: &mut String, p: &Picture, axis: &Axis) {
    for fault in &p.facts.faults {
        let title = fault_title(fault);
        let class = if fault.manual {
            "fault manual"
        } else {
            "fault"
        };
        let mut bands = String::new();
        for (a, b) in &fault.windows_ms {
            let _ = write!(
                bands,
                "<rect class=\"{class}\" x=\"{}\" width=\"{}\" y=\"0\" height=\"100%\">\
                 <title>{} ({}) {}–{}</title></rect>\
                 <text class=\"seg\" x=\"{}\" dx=\"4\" y=\"15\">{}</text>",
                axis.pct(*a),
                axis.width(*a, *b),
                esc(&title),
                esc(&fault.kind),
                time(*a),
                time(*b),
                axis.pct(*a),
                esc(&title)
            );
        }
        for (a, b, failing) in recorded_buckets(fault) {
            let _ = write!(
                bands,
                "<rect class=\"recorded\" x=\"{}\" width=\"{}\" y=\"0\" height=\"100%\" \
                 fill-opacity=\"{:.2}\"><title>{} {}–{}: {failing:.0}% of the recorded answers failed</title></rect>",
                axis.pct(a),
                axis.width(a, b),
                failing / 100.0 * 0.85,
                esc(&fault.name),
                time(a),
                time(b),
            );
        }
        let mut note = fault.kind.clone();
        if fault.windows_ms.is_empty() {
            note.push_str(", never injected");
        }
        if fault.recorded.is_some() {
            note.push_str(", shaded by the recording's failures");
        }
        if fault.manual {
            note.push_str(", started by people");
        }
        row(
            h,
            "fault-row",
            &format!("fault {}", fault.name),
            &note,
            22,
            &bands,
        );
    }
}

/// A replay's buckets within its windows, each with the share of its
/// recorded answers that failed (buckets without any recorded answer are
/// left out; the replay repeats the last one that had some).
fn recorded_buckets(fault: &FaultFacts) -> Vec<(f64, f64, f64)> {
    let Some(rec) = &fault.recorded else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (start, end) in &fault.windows_ms {
        for (i, failing) in rec.failing_pct.iter().enumerate() {
            let a = start + i as f64 * rec.bucket_ms;
            let b = (a + rec.bucket_ms).min(*end);
            if let (Some(f), true) = (failing, b > a) {
                out.push((a, b, *f));
            }
        }
    }
    out
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
    let _ = axis;
    for d in &p.dependencies {
        let (top, step) = bar_top(p, d.buckets.iter().map(|(a, b)| a + b));
        let stacks = d
            .buckets
            .iter()
            .map(|(reached, faulted)| vec![(*reached, "reached"), (*faulted, "faulted")]);
        let bars = stacked(p, stacks, top);
        row_with(
            h,
            "dependency-row",
            &d.name,
            &format!("arrivals at the dependency per {}", time(p.bucket_ms)),
            60,
            &bars,
            &yticks(top, step, count),
        );
    }
}

/// The colours the page uses, one legend per track (breakers, requests,
/// dependencies, pools, faults), each with the entries this run has: a
/// colour means one thing within its track's legend, and the same colour
/// on two tracks (a half-open breaker, a request answered by a fallback
/// service) is never listed under one heading.
fn legend(h: &mut String, p: &Picture) {
    let mut tracks = [
        ("breakers", breaker_legend(p)),
        ("requests", request_legend(p)),
        ("dependencies", dependency_legend(p)),
        ("pools", pool_legend(p)),
        ("faults", fault_legend(p)),
    ];
    h.push_str("<div class=\"legends\">");
    for (track, entries) in &mut tracks {
        if entries.is_empty() {
            continue;
        }
        let _ = write!(
            h,
            "<ul class=\"legend\" data-track=\"{track}\"><li class=\"legend-track\">{track}:</li>{entries}</ul>"
        );
    }
    h.push_str("</div>\n");
}

/// One legend entry: a swatch of `class` and what it means.
fn entry(h: &mut String, class: &str, label: &str) {
    let _ = write!(h, "<li><span class=\"swatch {class}\"></span>{label}</li>");
}

/// The breaker states this run has.
fn breaker_legend(p: &Picture) -> String {
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
    let mut h = String::new();
    for state in ["closed", "open", "half_open", "forced_open", "disabled"] {
        if states.iter().any(|s| s == state) {
            entry(&mut h, &format!("st-{state}"), &state.replace('_', "-"));
        }
    }
    h
}

/// The request outcomes this run has, and the latency lines.
fn request_legend(p: &Picture) -> String {
    let mut h = String::new();
    for (i, o) in Outcome::ALL.iter().enumerate() {
        let seen = p
            .routes
            .iter()
            .flat_map(|r| &r.buckets)
            .any(|b| b.counts[i] > 0);
        if seen {
            entry(&mut h, &o.name().replace(' ', "-"), o.name());
        }
    }
    if !p.routes.is_empty() {
        entry(&mut h, "line-p50", "latency p50");
        entry(&mut h, "line-p99", "latency p99");
    }
    h
}

/// A dependency's arrivals.
fn dependency_legend(p: &Picture) -> String {
    let mut h = String::new();
    if !p.dependencies.is_empty() {
        entry(&mut h, "reached", "reached the dependency");
        entry(&mut h, "faulted", "answered by a fault");
    }
    h
}

/// The faults' shading: a replay's recording, a manual fault.
fn fault_legend(p: &Picture) -> String {
    let f = &p.facts;
    let mut h = String::new();
    if f.faults.iter().any(|f| f.recorded.is_some()) {
        entry(
            &mut h,
            "recorded",
            "replay: darker where the recording failed more",
        );
    }
    if f.faults.iter().any(|f| f.manual) {
        entry(&mut h, "manual", "manual fault (started by people)");
    }
    h
}

/// The pools' colours: the health states the run has, the span with no
/// server in rotation, and each server's share.
fn pool_legend(p: &Picture) -> String {
    let mut h = String::new();
    let end = p.facts.duration_ms;
    let pools = &p.facts.pools;
    for state in HealthState::ALL {
        let seen = pools.iter().any(|pool| {
            pool.servers
                .iter()
                .any(|s| health_segments(pool, s, end).iter().any(|x| x.2 == state))
        });
        if seen {
            entry(&mut h, state.class(), state.label());
        }
    }
    if pools
        .iter()
        .any(|pool| !no_server_spans(pool, end).is_empty())
    {
        entry(
            &mut h,
            "no-server-span",
            "no server of the pool in rotation",
        );
    }
    for pool in pools {
        for (i, s) in pool.servers.iter().enumerate() {
            entry(
                &mut h,
                &server_class(i),
                &format!("share of {}", esc(&s.name)),
            );
        }
    }
    h
}

/// Fault shading across every track, the cut of a partial run, and the
/// layer that shows the window an expectation judged.
fn overlays(h: &mut String, p: &Picture, axis: &Axis) {
    h.push_str("<div class=\"overlay\" aria-hidden=\"true\">");
    for f in &p.facts.faults {
        if f.recorded.is_some() {
            // A replay shades where its recording failed, bucket by bucket.
            for (a, b, failing) in recorded_buckets(f).into_iter().filter(|x| x.2 > 0.0) {
                let _ = write!(
                    h,
                    "<div class=\"shade recorded-shade\" style=\"left:{};width:{};opacity:{:.2}\"></div>",
                    axis.pct(a),
                    axis.width(a, b),
                    failing / 100.0
                );
            }
            continue;
        }
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
            esc(&p.facts.ending.kind.replace('_', " ")),
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
/// A bucket the run stopped in is drawn up to the stop only, its counts
/// scaled to a whole bucket's (its hover text has the counts as they are).
fn stacked(
    p: &Picture,
    stacks: impl Iterator<Item = Vec<(u32, &'static str)>>,
    max: f64,
) -> String {
    let axis = Axis(p.axis_ms);
    let mut bars = String::new();
    for (i, stack) in stacks.enumerate() {
        let Some((at, end)) = p.bucket_span(i) else {
            continue;
        };
        let scale = p.bucket_ms / (end - at);
        let mut y = 100.0;
        for (n, name) in stack.into_iter().filter(|(n, _)| *n > 0) {
            let height = f64::from(n) * scale / max * 100.0;
            y -= height;
            let _ = write!(
                bars,
                "<rect class=\"{}\" x=\"{}\" width=\"{}\" y=\"{y:.2}%\" height=\"{height:.2}%\">\
                 <title>{}–{}: {n} {name}</title></rect>",
                name.replace(' ', "-"),
                axis.pct(at),
                axis.width(at, end),
                time(at),
                time(end),
            );
        }
    }
    bars
}

/// The top of a bar track: the largest stack, a partial bucket's scaled
/// to a whole one, rounded up.
fn bar_top(p: &Picture, totals: impl Iterator<Item = u32>) -> (f64, f64) {
    let max = totals
        .enumerate()
        .filter_map(|(i, n)| {
            let (at, end) = p.bucket_span(i)?;
            Some(f64::from(n) * p.bucket_ms / (end - at))
        })
        .fold(0.0, f64::max);
    nice_top(max.max(1.0))
}

/// A count on a y axis: `40`, `2.5`.
fn count(v: f64) -> String {
    let text = format!("{v:.1}");
    text.trim_end_matches(".0").to_string()
}

/// Per route: stacked outcomes per bucket, with y-axis ticks.
fn route_rows(h: &mut String, p: &Picture, r: &RouteTrack) {
    let (top, step) = bar_top(p, r.buckets.iter().map(|b| b.total()));
    let stacks = r.buckets.iter().map(|b| {
        Outcome::ALL
            .iter()
            .zip(b.counts)
            .map(|(o, n)| (n, o.name()))
            .collect()
    });
    let bars = stacked(p, stacks, top);
    row_with(
        h,
        "route-row",
        &r.name,
        &format!("outcomes per {}", time(p.bucket_ms)),
        90,
        &bars,
        &yticks(top, step, count),
    );
}
