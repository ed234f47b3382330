//! What a query sentence says (`query NAME AGG [WINDOW] BOUND`): the
//! named PromQL query, how its samples are summed up, where, and the
//! bound on Prometheus's scale. How its window resolves on a timeline is
//! in `expect::query`.

use super::{Bound, Name, Op, Value, Window};

/// A query sentence.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryRule {
    /// The query, how its samples are summed up and where.
    pub measure: QueryMeasure,
    /// The bound, as written (its value's unit says the scale).
    pub bound: Bound,
}

/// The figure of a query sentence without its bound: the named query,
/// how its samples are summed up and where (a regression sentence's
/// figure, `query p99 max during inventory-slow no more than ...`).
#[derive(Debug, Clone, PartialEq)]
pub struct QueryMeasure {
    /// The query's name under `queries:`.
    pub query: Name,
    /// How the samples of the window are summed up (never `at every
    /// step`: a regression figure is one number).
    pub aggregate: Aggregate,
    /// Where the samples are taken.
    pub window: QueryWindow,
}

/// How a series' samples over the window are summed up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregate {
    /// `max`: the largest sample.
    Max,
    /// `min`: the smallest sample.
    Min,
    /// `avg`: the mean of the samples.
    Avg,
    /// `last`: the sample at the window's last step.
    Last,
    /// `at every step`: every sample must hold (the worst one is shown).
    EveryStep,
}

impl Aggregate {
    /// The words as written.
    pub fn words(self) -> &'static str {
        match self {
            Aggregate::Max => "max",
            Aggregate::Min => "min",
            Aggregate::Avg => "avg",
            Aggregate::Last => "last",
            Aggregate::EveryStep => "at every step",
        }
    }

    /// The word that starts each, for errors and suggestions.
    pub const WORDS: [&'static str; 5] = ["max", "min", "avg", "last", "at"];

    /// The aggregate a word starts (`at` is `at every step`).
    pub fn from_word(word: &str) -> Option<Aggregate> {
        match word {
            "max" => Some(Aggregate::Max),
            "min" => Some(Aggregate::Min),
            "avg" => Some(Aggregate::Avg),
            "last" => Some(Aggregate::Last),
            "at" => Some(Aggregate::EveryStep),
            _ => None,
        }
    }
}

/// The window of a query sentence: one every sentence knows, or `before
/// the first fault` (the steady state before injection).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryWindow {
    /// `during FAULT`, `while B is STATE`, `between 10s and 40s`, ...
    Drill(Window),
    /// `before the first fault`: from the start to the first fault's
    /// start (the whole run when no fault ran).
    BeforeFirstFault,
}

impl QueryRule {
    /// The bound on Prometheus's scale: a duration in seconds, a
    /// percentage as a ratio (`99.5%` is 0.995), a number as itself.
    pub fn prometheus_bound(&self) -> Bound {
        let scale = |v: Value| match v {
            Value::Percent(p) => Value::Number(p / 100.0),
            Value::Duration(d) => Value::Number(d.as_secs_f64()),
            Value::Count(n) => Value::Number(n as f64),
            other => other,
        };
        match self.bound {
            Bound::Cmp(op, v) => Bound::Cmp(op, scale(v)),
            Bound::Within { tolerance, of } => Bound::Within {
                tolerance,
                of: scale(of),
            },
        }
    }

    /// The bound's value on Prometheus's scale, the scale a query's figure
    /// is kept on (whichever sentence measures it), with its unit: `s` for
    /// a duration, none for a ratio or a number.
    pub fn limit(&self) -> (f64, Option<&'static str>) {
        let value = match self.prometheus_bound() {
            Bound::Cmp(_, v) => v,
            Bound::Within { of, .. } => of,
        };
        let unit = match self.bound {
            Bound::Cmp(_, Value::Duration(_))
            | Bound::Within {
                of: Value::Duration(_),
                ..
            } => Some("s"),
            _ => None,
        };
        (value.scalar(), unit)
    }

    /// The bound as the sentence wrote it (`<= 300ms`).
    pub fn bound_text(&self) -> String {
        let value = |v: Value| match v {
            Value::Percent(p) => format!("{p}%"),
            Value::Duration(d) => crate::schema::units::Dur(d).to_string(),
            Value::Count(n) => n.to_string(),
            Value::Number(x) => x.to_string(),
        };
        match self.bound {
            Bound::Cmp(op, v) => format!("{} {}", Op::symbol(op), value(v)),
            Bound::Within { tolerance, of } => format!("within {tolerance}% of {}", value(of)),
        }
    }
}
