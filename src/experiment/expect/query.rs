//! `query NAME AGG [WINDOW] BOUND`: the value of a named PromQL query
//! (`queries:`) over a window the drill knows, summed up over the window
//! and compared with a bound in Prometheus's units (`300ms` is 0.3 s,
//! `99.5%` is 0.995). What the sentence means; Prometheus judges it after
//! the run (`crate::experiment::prometheus`).

use crate::clock::Duration;
use crate::experiment::timeline::Timeline;

pub use super::ast::{Aggregate, QueryMeasure, QueryRule, QueryWindow};
use super::window::{Intervals, describe, resolve};

impl QueryWindow {
    /// Its intervals in `timeline` (offsets from the drill's start).
    pub fn resolve(&self, timeline: &Timeline) -> Result<Intervals, String> {
        match self {
            QueryWindow::Drill(w) => resolve(w, timeline),
            QueryWindow::BeforeFirstFault => {
                let first = timeline
                    .faults
                    .iter()
                    .filter_map(|f| f.span())
                    .map(|(from, _)| from)
                    .min()
                    .unwrap_or(timeline.duration);
                Ok(vec![(Duration::ZERO, first)]
                    .into_iter()
                    .filter(|(a, b)| a < b)
                    .collect())
            }
        }
    }

    /// The words after the figure, as verdicts say them.
    pub fn describe(&self) -> String {
        match self {
            QueryWindow::Drill(w) => describe(w),
            QueryWindow::BeforeFirstFault => "before the first fault".to_string(),
        }
    }
}

impl QueryMeasure {
    /// The sentence up to its bound or comparison (`query checkout_p99 max
    /// during inventory-slow`): the name its figure is kept under in the
    /// history, by a bounded sentence and a regression sentence alike.
    pub fn figure_key(&self) -> String {
        format!(
            "query {} {} {}",
            self.query,
            self.aggregate.words(),
            self.window.describe()
        )
    }
}
