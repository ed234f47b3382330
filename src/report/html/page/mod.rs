//! The page: one HTML file with its CSS, a little JS and inline SVG. Every
//! position on the time axis is a percentage, so the page reflows to any
//! width with text at its own size; nothing is fetched (the page's content
//! security policy forbids it).

use std::fmt::Write;

use super::picture::{Outcome, Picture, TransitionFacts, segments};

pub(super) const CSS: &str = include_str!("page.css");
const JS: &str = include_str!("page.js");

/// Escapes text for HTML content and attribute values.
pub(super) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `950ms`, `3.68s`, `2m05s`.
fn time(ms: f64) -> String {
    if ms == 0.0 {
        "0s".to_string()
    } else if ms < 1000.0 {
        format!("{}ms", ms.round())
    } else if ms < 60_000.0 {
        let s = format!("{:.2}", ms / 1000.0);
        format!("{}s", s.trim_end_matches('0').trim_end_matches('.'))
    } else {
        let s = (ms / 1000.0).round() as u64;
        format!("{}m{:02}s", s / 60, s % 60)
    }
}

/// A Unix epoch time in milliseconds as `2026-11-30 23:04:07 UTC`.
fn utc(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Days to a civil date (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// A percentage of the axis, as SVG and CSS take it.
struct Axis(f64);

impl Axis {
    fn pct(&self, ms: f64) -> String {
        format!("{:.3}%", (ms / self.0 * 100.0).clamp(0.0, 100.0))
    }

    fn width(&self, from: f64, to: f64) -> String {
        self.pct((to - from).max(0.0))
    }
}

/// A step for axis ticks: at most about ten across the axis.
fn tick_step(axis_ms: f64) -> f64 {
    const STEPS: [f64; 12] = [
        1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0,
    ];
    let secs = axis_ms / 1000.0;
    STEPS
        .iter()
        .map(|s| s * 1000.0)
        .find(|s| axis_ms / s <= 10.0)
        .unwrap_or((secs / 10.0).ceil() * 1000.0)
}

/// The whole page.
pub fn render(p: &Picture) -> String {
    let f = &p.facts;
    let axis = Axis(p.axis_ms);
    let mut h = String::with_capacity(64 * 1024);
    let verdict = match f.ending.kind.as_str() {
        "halted" => "halted",
        "interrupted" => "interrupted",
        _ if f.passed => "passed",
        _ => "failed",
    };
    let _ = write!(
        h,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{} — {verdict}</title>\n<style>\n{CSS}</style>\n</head>\n\
         <body data-axis-ms=\"{}\">\n",
        esc(&f.experiment),
        p.axis_ms
    );
    header(&mut h, p, verdict);
    let _ = write!(h, "<section id=\"timeline\">\n<h2>Timeline</h2>\n");
    legend(&mut h, p);
    h.push_str("<div class=\"chart\">\n");
    overlays(&mut h, p, &axis);
    axis_row(&mut h, p, &axis);
    for fault in &f.faults {
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
            &mut h,
            "fault-row",
            &format!("fault {}", fault.name),
            &fault.kind,
            22,
            &bands,
        );
    }
    for b in &f.breakers {
        let inferred = b.source.as_deref() == Some("inferred");
        let note = if inferred { "inferred" } else { "breaker" };
        let band = state_band(&b.transitions, f.duration_ms, &axis);
        row(&mut h, "breaker-row", &b.name, note, 24, &band);
        if let Some(reported) = &b.reported {
            let band = state_band(reported, f.duration_ms, &axis);
            row(
                &mut h,
                "breaker-row reported",
                &b.name,
                "reported by the service",
                24,
                &band,
            );
        }
    }
    for r in &p.routes {
        route_rows(&mut h, p, r, &axis);
    }
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
        let bars = stacked(stacks, p.bucket_ms, max, &axis);
        row(
            &mut h,
            "dependency-row",
            &d.name,
            &format!("arrivals at the dependency, max {max}/bucket"),
            60,
            &bars,
        );
    }
    h.push_str("</div>\n</section>\n");
    verdicts(&mut h, p);
    journal(&mut h, p);
    let _ = write!(
        h,
        "<footer>Drawn by firedrill {}. Buckets of {}.</footer>\n<script>\n{JS}</script>\n</body>\n</html>\n",
        esc(f.version.as_deref().unwrap_or("(unknown version)")),
        time(p.bucket_ms)
    );
    h
}

fn header(h: &mut String, p: &Picture, verdict: &str) {
    let f = &p.facts;
    let _ = write!(
        h,
        "<header>\n<h1>{}</h1>\n<p class=\"verdict {verdict}\" id=\"verdict\">{}</p>\n",
        esc(&f.experiment),
        verdict.to_uppercase()
    );
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
    h.push_str("</header>\n");
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
fn route_rows(h: &mut String, p: &Picture, r: &super::picture::RouteTrack, axis: &Axis) {
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
            (|b| b.p50) as fn(&super::picture::Bucket) -> Option<f64>,
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

fn verdicts(h: &mut String, p: &Picture) {
    h.push_str("<section id=\"expectations\">\n<h2>Expectations</h2>\n<p class=\"hint\">Select one to mark the time it judged.</p>\n<ol class=\"verdicts\">\n");
    for (i, v) in p.facts.verdicts.iter().enumerate() {
        let judged: Vec<String> = v
            .judged_ms
            .iter()
            .map(|(a, b)| format!("[{a},{b}]"))
            .collect();
        let (class, mark) = if v.passed {
            ("pass", "✓ pass")
        } else {
            ("fail", "✗ FAIL")
        };
        let _ = writeln!(
            h,
            "<li id=\"expect-{}\" class=\"{class}\" tabindex=\"0\" data-judged=\"[{}]\">\
             <span class=\"mark\">{mark}</span> <code>{}</code>\
             <div class=\"detail\"><span>expected: {}</span><span>seen: {}</span></div></li>",
            i + 1,
            judged.join(","),
            esc(&v.expectation),
            esc(&v.expected),
            esc(&v.seen)
        );
    }
    h.push_str("</ol>\n</section>\n");
}

fn journal(h: &mut String, p: &Picture) {
    let mut rows: Vec<(f64, &str, &TransitionFacts, &str)> = Vec::new();
    for b in &p.facts.breakers {
        let source = if b.source.is_some() {
            "inferred"
        } else {
            "firedrill"
        };
        rows.extend(
            b.transitions
                .iter()
                .map(|t| (t.at_ms, b.name.as_str(), t, source)),
        );
        if let Some(reported) = &b.reported {
            rows.extend(
                reported
                    .iter()
                    .map(|t| (t.at_ms, b.name.as_str(), t, "reported")),
            );
        }
    }
    rows.sort_by(|a, b| a.0.total_cmp(&b.0));
    h.push_str("<section id=\"journal\">\n<h2>Transition journal</h2>\n");
    if rows.is_empty() {
        h.push_str("<p>No breaker changed state.</p>\n</section>\n");
        return;
    }
    h.push_str("<table>\n<thead><tr><th>at</th><th>breaker</th><th>from → to</th><th>source</th><th>reason</th></tr></thead>\n<tbody>\n");
    for (at, name, t, source) in rows {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{} → {}</td><td>{source}</td><td>{}</td></tr>",
            time(at),
            esc(name),
            esc(&t.from),
            esc(&t.to),
            esc(&t.reason)
        );
    }
    h.push_str("</tbody>\n</table>\n</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_for_html() {
        assert_eq!(
            esc("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn times_read_as_people_write_them() {
        assert_eq!(time(0.0), "0s");
        assert_eq!(time(950.0), "950ms");
        assert_eq!(time(3680.0), "3.68s");
        assert_eq!(time(3000.0), "3s");
        assert_eq!(time(125_000.0), "2m05s");
    }

    #[test]
    fn unix_milliseconds_become_a_utc_date() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_796_079_847_000), "2026-11-30 23:04:07 UTC");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00 UTC");
    }

    #[test]
    fn about_ten_ticks_cross_any_axis() {
        assert_eq!(tick_step(12_000.0), 2000.0);
        assert_eq!(tick_step(60_000.0), 10_000.0);
        assert_eq!(tick_step(600_000.0), 60_000.0);
        assert_eq!(tick_step(86_400_000.0), 8_640_000.0);
    }
}
