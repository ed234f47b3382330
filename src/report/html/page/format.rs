//! How the page writes text, times, dates and positions: HTML escaping,
//! `3.68s`-style times, UTC dates, percentages of the time axis and its
//! tick step.

use std::fmt::Write;

/// Escapes text for HTML content and attribute values.
pub(crate) fn esc(s: &str) -> String {
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
pub(super) fn time(ms: f64) -> String {
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

/// A latency: `4.5ms` below 10 ms, else as [`time`] writes it (`96ms`).
pub(super) fn latency(ms: f64) -> String {
    if ms > 0.0 && ms < 10.0 {
        format!("{}ms", format!("{ms:.1}").trim_end_matches(".0"))
    } else {
        time(ms)
    }
}

/// A Unix epoch time in milliseconds as `2026-11-30 23:04:07 UTC`.
pub(super) fn utc(unix_ms: u64) -> String {
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
pub(super) struct Axis(pub(super) f64);

impl Axis {
    /// `ms` as a percentage of the axis.
    pub(super) fn pct(&self, ms: f64) -> String {
        format!("{:.3}%", (ms / self.0 * 100.0).clamp(0.0, 100.0))
    }

    /// The span from `from` to `to` as a percentage of the axis.
    pub(super) fn width(&self, from: f64, to: f64) -> String {
        self.pct((to - from).max(0.0))
    }
}

/// A step for axis ticks: at most about ten across the axis.
pub(super) fn tick_step(axis_ms: f64) -> f64 {
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

/// One labelled track: a name, a note under it, and an SVG of `height`.
pub(super) fn row(h: &mut String, class: &str, name: &str, note: &str, height: u32, svg: &str) {
    row_with(h, class, name, note, height, svg, "");
}

/// [`row`] with `extra` HTML over the SVG (the y-axis ticks).
pub(super) fn row_with(
    h: &mut String,
    class: &str,
    name: &str,
    note: &str,
    height: u32,
    svg: &str,
    extra: &str,
) {
    let _ = writeln!(
        h,
        "<div class=\"row {class}\"><div class=\"label\"><b>{}</b><small>{}</small></div>\
         <div class=\"track\"><svg width=\"100%\" height=\"{height}\" role=\"img\" aria-label=\"{} {}\">{svg}</svg>{extra}</div></div>",
        esc(name),
        esc(note),
        esc(name),
        esc(note)
    );
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
        assert_eq!(latency(4.5), "4.5ms");
        assert_eq!(latency(2.0), "2ms");
        assert_eq!(latency(96.0), "96ms");
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
