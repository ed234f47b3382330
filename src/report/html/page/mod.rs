//! The page: one HTML file with its CSS, a little JS and inline SVG. Every
//! position on the time axis is a percentage, so the page reflows to any
//! width with text at its own size; nothing is fetched (the page's content
//! security policy forbids it).

use std::fmt::Write;

mod chart;
mod format;
mod lines;
#[cfg(test)]
mod palette;
mod pools;
mod queries;
mod routes;
mod sections;
#[cfg(test)]
mod tests;

use self::chart::timeline;
pub(crate) use self::format::esc;
use self::format::{Axis, time};
use self::routes::routes;
use self::sections::{evidence, header, journal, verdicts};
use super::picture::Picture;

/// The page's style sheet (the sweep summary page uses it too).
pub(crate) const CSS: &str = include_str!("page.css");
/// The page's script: marks the window an expectation judged.
const JS: &str = include_str!("page.js");

/// The whole page.
pub fn render(p: &Picture) -> String {
    let f = &p.facts;
    let axis = Axis(p.axis_ms);
    let mut h = String::with_capacity(64 * 1024);
    // Reports of older versions have no `verdict`: told from the ending.
    let verdict = match (f.verdict.as_deref(), f.ending.kind.as_str()) {
        (Some(v), _) => v,
        (None, "halted") => "halted",
        (None, "interrupted") => "interrupted",
        (None, "not_healthy") => "not_healthy",
        (None, _) if f.passed => "passed",
        (None, _) => "failed",
    };
    let _ = write!(
        h,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{} — {}</title>\n<style>\n{CSS}</style>\n</head>\n\
         <body data-axis-ms=\"{}\">\n",
        esc(&f.experiment),
        esc(&verdict.replace('_', " ")),
        p.axis_ms
    );
    header(&mut h, p, verdict);
    timeline(&mut h, p, &axis);
    verdicts(&mut h, p);
    evidence(&mut h, p);
    routes(&mut h, p);
    journal(&mut h, p);
    let _ = write!(
        h,
        "<footer>Drawn by firedrill {}. Buckets of {}.</footer>\n<script>\n{JS}</script>\n</body>\n</html>\n",
        esc(f.version.as_deref().unwrap_or("(unknown version)")),
        time(p.bucket_ms)
    );
    h
}
