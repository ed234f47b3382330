//! Expectations: short sentences in an experiment's `expect:` list, parsed
//! with located errors, checked against the experiment's names, and judged
//! on the recorded [`Timeline`](super::timeline::Timeline).
//!
//! * [`ast`] — what a sentence means.
//! * [`grammar`] — lexer and parser; [`ParseError`] with a column.
//! * [`check`](mod@check) — unknown breakers, faults, routes, phases.
//! * `eval` (breaker sentences), `metrics` (calls and route figures),
//!   `window` (windows as intervals) — the judges.
//! * [`verdict`] — [`Verdict`]: expected, seen, where.
//!
//! # Grammar
//!
//! ```text
//! breaker B goes closed -> open -> half_open -> closed   exact sequence from closed ('→' too)
//! breaker B goes through open -> closed                  these states in order, others between
//! breaker B opens|closes|half_opens within 3s of ANCHOR  first such transition at/after ANCHOR
//!     ANCHOR: FAULT.start | fault FAULT | FAULT | FAULT.end | 10s
//! breaker B half_opens within wait_in_open ± 500ms after opening   ('+-' too; or `5s ± 500ms`)
//! breaker B opens at most|at least|exactly N times [WINDOW]
//! breaker B never opens|closes|half_opens [WINDOW]
//! breaker B stays STATE [WINDOW]
//! calls to GLOB [WINDOW] BOUND                           target hits by arrival time
//! route R METRIC [WINDOW] BOUND                          requests by send time
//!     METRIC: success | fallback [stale|static|backup] | rejected | errors   (shares, e.g. 99%)
//!             timeouts | requests                                           (counts)
//!             p50 | p90 | p99 | pN | max [latency]                          (durations, e.g. 5ms)
//!             amplification                                                 (a number)
//! WINDOW: during FAULT | while B is STATE | between 10s and 40s | in phase P
//!     (none: the whole run; `during` spans the fault's first start to its last end)
//! BOUND:  >= | <= | == | > | < VALUE   |   within 5% of VALUE   ('≥', '≤' too)
//! STATE:  closed | open | half_open | forced_open | disabled
//! ```
//!
//! Windows are `[start, end)` intervals clipped to the run; a transition at
//! exactly `within` after its anchor passes. A share over an empty window
//! fails, except under `<=`/`<` (see `metrics`).

pub mod ast;
pub mod check;
mod eval;
pub mod grammar;
mod metrics;
pub mod verdict;
mod window;

#[cfg(test)]
mod tests;

use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use ast::{Expectation, Rule};
pub use check::{Names, check};
pub use eval::evaluate;
pub use grammar::{ParseError, parse};
pub use verdict::Verdict;

use super::timeline::Timeline;

/// Judges every expectation on `timeline`, in order.
pub fn evaluate_all(expectations: &[Expectation], timeline: &Timeline) -> Vec<Verdict> {
    expectations.iter().map(|e| evaluate(e, timeline)).collect()
}

impl FromStr for Expectation {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse(s)
    }
}

/// Read from a YAML string; the error is `column N: expected ...`.
impl<'de> Deserialize<'de> for Expectation {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Written as the sentence.
impl Serialize for Expectation {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}
