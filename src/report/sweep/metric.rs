//! The figures of a sweep's runs that a table column or a chart shows,
//! and the one a chart shows by default: the one that tells the points
//! apart.

use super::{Figures, Point, Sweep};
use crate::experiment::expect::ast::{Metric as Said, Rule};

/// A figure of a run the chart can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Transitions to open.
    Opens,
    /// Failed probes.
    HalfOpenToOpen,
    /// Share a success for the caller, percent.
    Success,
    /// Share answered by a fallback, percent.
    Fallback,
    /// Share turned away, percent.
    Rejected,
    /// The largest route p99, milliseconds.
    P99,
}

/// Every figure, in the order of the table's columns.
pub const FIGURES: [Metric; 6] = [
    Metric::Opens,
    Metric::HalfOpenToOpen,
    Metric::Success,
    Metric::Fallback,
    Metric::Rejected,
    Metric::P99,
];

impl std::str::FromStr for Metric {
    type Err = String;

    /// `success`, `fallback`, `rejected`, `opens`, `half-open-to-open`,
    /// `p99`.
    fn from_str(s: &str) -> Result<Metric, String> {
        Ok(match s {
            "success" => Metric::Success,
            "fallback" => Metric::Fallback,
            "rejected" => Metric::Rejected,
            "opens" => Metric::Opens,
            "half-open-to-open" => Metric::HalfOpenToOpen,
            "p99" => Metric::P99,
            _ => {
                return Err(format!(
                    "`{s}`: expected success, fallback, rejected, opens, half-open-to-open or p99"
                ));
            }
        })
    }
}

impl Metric {
    /// Its name on the page.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Success => "success %",
            Metric::Fallback => "fallback %",
            Metric::Rejected => "rejected %",
            Metric::Opens => "opens",
            Metric::HalfOpenToOpen => "half_open -> open",
            Metric::P99 => "p99 ms",
        }
    }

    /// Its value in one run.
    pub fn of(self, f: &Figures) -> f64 {
        match self {
            Metric::Success => f.success_pct,
            Metric::Fallback => f.fallback_pct,
            Metric::Rejected => f.rejected_pct,
            Metric::Opens => f.opens as f64,
            Metric::HalfOpenToOpen => f.half_open_to_open as f64,
            Metric::P99 => f.p99_ms,
        }
    }

    /// Mean and standard deviation over a point's runs.
    pub fn spread(self, runs: &[Figures]) -> (f64, f64) {
        let n = runs.len().max(1) as f64;
        let mean = runs.iter().map(|r| self.of(r)).sum::<f64>() / n;
        let var = runs
            .iter()
            .map(|r| (self.of(r) - mean).powi(2))
            .sum::<f64>()
            / n;
        (mean, var.sqrt())
    }

    /// The figure an expectation's sentence is about, if a chart has it:
    /// a route's success, fallback, rejected share or p99; a breaker's
    /// transitions (opens).
    pub fn said_by(rule: &Rule) -> Option<Metric> {
        match rule {
            Rule::Route { metric, .. } => match metric {
                Said::Success | Said::Errors => Some(Metric::Success),
                Said::Fallback(_) => Some(Metric::Fallback),
                Said::Rejected => Some(Metric::Rejected),
                Said::Latency(_) => Some(Metric::P99),
                Said::Timeouts | Said::Requests | Said::Amplification | Said::Grpc(_) => None,
            },
            Rule::Sequence { .. }
            | Rule::Reaches { .. }
            | Rule::WaitInOpen { .. }
            | Rule::Count { .. }
            | Rule::Stays { .. } => Some(Metric::Opens),
            Rule::Calls { .. } | Rule::Pool(_) | Rule::Regress(_) | Rule::Query(_) => None,
        }
    }

    /// Whether the points differ in this figure (their means).
    fn varies(self, points: &[Point]) -> bool {
        let mut means = points
            .iter()
            .filter(|p| !p.runs.is_empty())
            .map(|p| self.spread(&p.runs).0);
        let Some(first) = means.next() else {
            return false;
        };
        means.any(|m| (m - first).abs() > 1e-9)
    }

    /// The figure a chart shows when none is asked for: the first
    /// expectation's when the points differ in it, else the first figure
    /// (in table order) they differ in, else the first expectation's,
    /// else success.
    pub fn choose(sweep: &Sweep) -> Metric {
        let said = sweep.first_figure;
        said.into_iter()
            .chain(FIGURES)
            .find(|m| m.varies(&sweep.points))
            .or(said)
            .unwrap_or(Metric::Success)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(opens: usize, p99_ms: f64) -> Figures {
        Figures {
            seed: 1,
            passed: true,
            verdicts: vec![],
            opens,
            half_open_to_open: 0,
            success_pct: 100.0,
            fallback_pct: 0.0,
            rejected_pct: 0.0,
            p99_ms,
        }
    }

    fn sweep(first_figure: Option<Metric>, runs: Vec<Figures>) -> Sweep {
        Sweep {
            experiment: "e".into(),
            varied: vec!["a".into()],
            expectations: vec![],
            points: runs
                .into_iter()
                .enumerate()
                .map(|(i, r)| Point {
                    values: vec![i.to_string()],
                    dir: format!("{i:03}"),
                    runs: vec![r],
                })
                .collect(),
            partial: false,
            first_figure,
        }
    }

    #[test]
    fn the_chart_shows_the_figure_the_points_differ_in_not_success_flat_at_100() {
        let s = sweep(None, vec![figures(3, 20.0), figures(3, 40.0)]);
        assert_eq!(Metric::choose(&s), Metric::P99);
        let s = sweep(None, vec![figures(1, 20.0), figures(3, 40.0)]);
        assert_eq!(
            Metric::choose(&s),
            Metric::Opens,
            "the first in table order"
        );
    }

    #[test]
    fn the_first_expectations_figure_comes_first_when_it_varies_and_when_nothing_does() {
        let s = sweep(Some(Metric::P99), vec![figures(1, 20.0), figures(3, 40.0)]);
        assert_eq!(Metric::choose(&s), Metric::P99);
        let s = sweep(
            Some(Metric::Fallback),
            vec![figures(1, 20.0), figures(1, 20.0)],
        );
        assert_eq!(Metric::choose(&s), Metric::Fallback);
        let s = sweep(None, vec![figures(1, 20.0), figures(1, 20.0)]);
        assert_eq!(Metric::choose(&s), Metric::Success);
    }

    #[test]
    fn a_point_without_runs_does_not_make_a_figure_vary() {
        let mut s = sweep(None, vec![figures(1, 20.0), figures(1, 20.0)]);
        s.points[1].runs.clear();
        assert!(!Metric::P99.varies(&s.points));
        assert!(!Metric::P99.varies(&[]));
    }
}
