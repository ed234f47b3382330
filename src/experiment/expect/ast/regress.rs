//! What a regression sentence says: the figure it measures, which side
//! of the limit the figure must stay on, and the past runs the limit is
//! made of.

use super::query::QueryMeasure;
use super::{Anchor, Event, Metric, Name, ValueKind, Window};

/// A regression sentence: `breaker inventory opens no later than the
/// median of the last 10 passing runs + 500ms`.
#[derive(Debug, Clone, PartialEq)]
pub struct Regress {
    /// What is measured.
    pub measure: Measure,
    /// Which side of the limit the figure must stay on.
    pub direction: Direction,
    /// What the limit is made of.
    pub baseline: Baseline,
    /// Added to the baseline (towards the worse side).
    pub margin: Option<Margin>,
    /// The sentence up to its comparison: the name the figure is kept
    /// under in the history.
    pub key: String,
    /// The figure in the past runs fit for its baseline (the sentence
    /// judged and held in them, or seeded by them), newest first, as the
    /// history gave it before the run; `None`: the run keeps no history.
    pub past: Option<Vec<PastRun>>,
}

/// A past run's figure a regression sentence's baseline may be made of.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PastRun {
    /// Its number in the history (`#3`), so the sentence can name it.
    pub run: i64,
    /// The figure, in the unit the history keeps it in.
    pub value: f64,
    /// It seeded the baseline (the sentence was not judged in it, the
    /// history being too short) rather than being judged and held: named
    /// apart, so nobody takes it for a judged run.
    pub seed: bool,
}

/// The figure of a regression sentence.
#[derive(Debug, Clone, PartialEq)]
pub enum Measure {
    /// `breaker B opens [after ANCHOR]`: milliseconds from the anchor (the
    /// first fault's start when none is written) to the first such
    /// transition at or after it.
    Transition {
        /// The breaker.
        breaker: Name,
        /// The transition.
        event: Event,
        /// What it is measured from; `None`: the first fault's start.
        anchor: Option<Anchor>,
    },
    /// `route R METRIC [WINDOW]`: the figure a route sentence compares
    /// (milliseconds for a latency).
    Route {
        /// The load route.
        route: Name,
        /// The figure.
        metric: Metric,
        /// Which requests count.
        window: Window,
    },
    /// `query NAME AGG [WINDOW]`: a named PromQL query over a window,
    /// summed up, on Prometheus's own scale (seconds, ratios); Prometheus
    /// is asked once the run is over.
    Query(QueryMeasure),
}

impl Measure {
    /// The kind of value the figure is: a duration in milliseconds for a
    /// transition, the metric's for a route, Prometheus's own number for
    /// a query.
    pub fn kind(&self) -> ValueKind {
        match self {
            Measure::Transition { .. } => ValueKind::Duration,
            Measure::Route { metric, .. } => metric.kind(),
            Measure::Query(_) => ValueKind::Quantity,
        }
    }
}

/// Which side of the limit a regression figure must stay on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// At or below it (`no later than`, `no more than`, `no worse than`
    /// a time or an error share).
    AtMost,
    /// At or above it (`no earlier than`, `no less than`, `no worse than`
    /// a success share).
    AtLeast,
}

/// What a regression limit is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Baseline {
    /// `the last passing run`.
    Last,
    /// `the median|mean|min|max of the last N passing runs`.
    Of {
        /// How they are summed up.
        stat: Stat,
        /// How many past passing runs it needs.
        runs: usize,
    },
}

impl Baseline {
    /// How many past passing runs it needs.
    pub fn runs(self) -> usize {
        match self {
            Baseline::Last => 1,
            Baseline::Of { runs, .. } => runs,
        }
    }
}

/// How past figures are summed up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stat {
    /// The middle one (the mean of the two middle ones).
    Median,
    /// Their mean.
    Mean,
    /// The smallest.
    Min,
    /// The largest.
    Max,
}

/// What a regression limit allows beyond its baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Margin {
    /// `+ 20%`: a share of the baseline.
    Relative(f64),
    /// `+ 500ms`, `+ 3`: in the figure's own unit (milliseconds for a
    /// time).
    Absolute(f64),
}
