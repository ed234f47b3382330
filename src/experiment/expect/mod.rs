//! Expectations: short sentences in an experiment's `expect:` list, parsed
//! with located errors, checked against the experiment's names, and judged
//! on the recorded [`Timeline`](super::timeline::Timeline).
//!
//! * [`ast`] — what a sentence means.
//! * [`grammar`] — lexer and parser; [`ParseError`] with a column.
//! * [`check`](mod@check) — unknown breakers, faults, routes, phases.
//! * `eval` (breaker sentences), `metrics` (calls and route figures),
//!   [`window`] (windows as intervals) — the judges.
//! * [`tally`] — what route and call sentences count of the requests, so a
//!   run can count as requests finish and keep none of them;
//!   [`latencies`], their latencies in bounded memory.
//! * [`verdict`] — [`Verdict`]: expected, seen, where.
//! * [`names`] — an experiment's names, and every sentence of its file
//!   parsed and checked against them before the run.
//! * `regress` and [`baseline`] — regression sentences, judged against
//!   past runs of a history that held them (or seeded them), named by
//!   number.
//! * [`query`] — `query NAME AGG [WINDOW] BOUND`: a named PromQL query
//!   judged by the team's own Prometheus after the run.
//! * [`steady`] — the steady state: sentences judged over the warm-up and
//!   after the last fault.
//!
//! # Grammar
//!
#![doc = concat!("```text\n", include_str!("grammar/summary.txt"), "```\n")]
//!
//! Windows are `[start, end)` intervals clipped to the run; a transition at
//! exactly `within` after its anchor passes. A share over an empty window
//! fails, except under `<=`/`<` (see `metrics`).

pub mod ast;
pub mod baseline;
pub mod check;
mod eval;
pub mod grammar;
pub mod latencies;
mod metrics;
pub mod names;
mod pool;
pub mod query;
pub mod regress;
pub mod steady;
pub mod tally;
pub mod verdict;
pub mod window;

#[cfg(test)]
mod tests;

use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use ast::{Expectation, Rule};
pub use check::{Names, check};
pub use eval::{evaluate, evaluate_tallied, tally};
pub use grammar::{ParseError, parse};
pub use verdict::Verdict;

use super::timeline::Timeline;

/// The grammar summary above, also the description of `expect:` in the
/// published JSON Schema.
pub const GRAMMAR: &str = include_str!("grammar/summary.txt");

/// The expectation sentences, one string each (the field's own doc comment
/// describes the list; each item carries the grammar).
pub fn schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let grammar = GRAMMAR;
    schemars::json_schema!({
        "type": "array",
        "items": {
            "type": "string",
            "minLength": 1,
            "description": format!("An expectation sentence:\n{grammar}"),
            "examples": [
                "breaker inventory opens within 3s of inventory-down.start",
                "calls to /inventory/* while inventory is open == 0",
                "route A success during inventory-down >= 99%",
            ],
        },
    })
}

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
