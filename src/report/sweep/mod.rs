//! A sweep: one experiment run at every point of a grid of `--set`
//! values (and several seeds each) in virtual time, in parallel, with the
//! verdicts and key figures of each run. A sweep explores: pass and fail
//! are data, not the outcome.
//!
//! A stop (Ctrl-C, SIGTERM: the caller's flag) starts no further run and
//! interrupts the running ones, as `run` is interrupted (faults removed, a
//! partial report in the run's folder); the sweep then holds the runs that
//! finished and is marked partial.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Mutex;

use serde::Serialize;

use super::{RunReport, exporters};
use crate::experiment::config::{ClockKind, TargetSpec};
use crate::experiment::drill::Live;
use crate::experiment::file::{Loaded, load_text_with};
use crate::schema::LoadError;
use crate::schema::overrides::Override;

pub mod metric;
mod running;

pub use metric::Metric;
pub use running::Running;

/// `--vary PATH=V1,V2,...`.
#[derive(Debug, Clone, PartialEq)]
pub struct Vary {
    /// The dotted path (as `--set` takes it).
    pub path: String,
    /// Its values, in order.
    pub values: Vec<String>,
}

impl FromStr for Vary {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let first: Override = s.parse()?;
        let values: Vec<String> = first
            .value
            .split(',')
            .map(|v| v.trim().to_string())
            .collect();
        if values.iter().any(String::is_empty) {
            return Err(format!(
                "`{s}`: expected PATH=V1,V2,... with no empty value"
            ));
        }
        Ok(Vary {
            path: first.path,
            values,
        })
    }
}

/// What one run showed.
#[derive(Debug, Clone, Serialize)]
pub struct Figures {
    /// The seed it ran with.
    pub seed: u64,
    /// Whether every expectation held.
    pub passed: bool,
    /// Per expectation, in the file's order.
    pub verdicts: Vec<bool>,
    /// Transitions to open, every breaker.
    pub opens: usize,
    /// Of which from half-open (a failed probe).
    pub half_open_to_open: usize,
    /// Share of requests answered 2xx/3xx (fallbacks included), percent.
    pub success_pct: f64,
    /// Share answered by a fallback, percent.
    pub fallback_pct: f64,
    /// Share turned away by the defense line, percent.
    pub rejected_pct: f64,
    /// The largest p99 latency of the routes, milliseconds.
    pub p99_ms: f64,
}

impl Figures {
    fn of(report: &RunReport) -> Figures {
        let transitions = report.breakers.iter().flat_map(|b| &b.transitions);
        let requests: usize = report.routes.iter().map(|r| r.requests).sum();
        let share = |pct: fn(&super::summary::RouteSummary) -> f64| {
            if requests == 0 {
                return 0.0;
            }
            let sum: f64 = report
                .routes
                .iter()
                .map(|r| pct(r) * r.requests as f64)
                .sum();
            (sum / requests as f64 * 10.0).round() / 10.0
        };
        Figures {
            seed: report.seed,
            passed: report.passed,
            verdicts: report.verdicts.iter().map(|v| v.passed).collect(),
            opens: transitions.clone().filter(|t| t.to == "open").count(),
            half_open_to_open: transitions
                .filter(|t| t.from == "half_open" && t.to == "open")
                .count(),
            success_pct: share(|r| r.success_pct),
            fallback_pct: share(|r| r.fallback_pct),
            rejected_pct: share(|r| r.rejected_pct),
            p99_ms: report
                .routes
                .iter()
                .map(|r| r.latency_ms.p99)
                .fold(0.0, f64::max),
        }
    }
}

/// One point of the grid and its runs.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// The value of each varied path, in `--vary` order.
    pub values: Vec<String>,
    /// Its reports' folder inside a report directory (`NNN-VALUES`).
    pub dir: String,
    /// One per seed.
    pub runs: Vec<Figures>,
}

/// A whole sweep.
#[derive(Debug, Clone, Serialize)]
pub struct Sweep {
    /// The experiment's name.
    pub experiment: String,
    /// The varied paths.
    pub varied: Vec<String>,
    /// The expectations, in the file's order.
    pub expectations: Vec<String>,
    /// Every point, in grid order (the last `--vary` changes fastest);
    /// when partial, only those with a finished run.
    pub points: Vec<Point>,
    /// Stopped before every run finished (absent from sweep.json when
    /// complete).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// The figure the first expectation is about, if a chart has it.
    #[serde(skip)]
    pub first_figure: Option<Metric>,
}

/// What a sweep runs: the file, its fields changed for every point, the
/// grid, the seeds per point.
#[derive(Debug, Clone, Copy)]
pub struct Plan<'a> {
    /// The experiment file.
    pub file: &'a Path,
    /// `--set`: changed for every point, before the grid's values.
    pub sets: &'a [Override],
    /// `--vary`: the grid.
    pub varies: &'a [Vary],
    /// Runs per point.
    pub seeds: u32,
}

impl Plan<'_> {
    /// How many runs the sweep makes: a run per seed of every point.
    pub fn runs(&self) -> usize {
        grid(self.varies).len() * self.seeds as usize
    }
}

/// Told after each run: how many are done, of how many.
pub type Progress<'a> = &'a (dyn Fn(usize, usize) + Sync);

/// Why a sweep could not start.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The file, or one point of the grid, is invalid.
    #[error(transparent)]
    Invalid(#[from] LoadError),
    /// The experiment cannot run in virtual time.
    #[error("{0}")]
    NotVirtual(String),
    /// A run failed, or a report could not be written.
    #[error("{0}")]
    Run(String),
}

/// Every combination of the varied values, the last varying fastest.
fn grid(varies: &[Vary]) -> Vec<Vec<String>> {
    varies.iter().fold(vec![Vec::new()], |acc, vary| {
        acc.iter()
            .flat_map(|prefix| {
                vary.values.iter().map(move |v| {
                    let mut point = prefix.clone();
                    point.push(v.clone());
                    point
                })
            })
            .collect()
    })
}

/// Runs the sweep on `threads` threads; with `report_dir`, each run's
/// reports go to `DIR/NNN-VALUES[/seed-S]`. Every point is loaded and
/// checked before the first run. Once `stop` turns true no run starts and
/// the running ones are interrupted: the sweep is partial. The runs going
/// on are kept in `running`, for a heartbeat to tell.
pub fn sweep(
    plan: &Plan<'_>,
    threads: usize,
    report_dir: Option<&Path>,
    stop: &Stop,
    progress: Progress<'_>,
    running: &Running,
) -> Result<Sweep, SweepError> {
    let points = grid(plan.varies);
    let dirs: Vec<String> = points
        .iter()
        .enumerate()
        .map(|(i, v)| point_dir(i, v))
        .collect();
    let Jobs {
        jobs,
        name,
        expectations,
        first_figure,
    } = jobs(plan, &points, &dirs)?;
    let total = jobs.len();
    let queue = Mutex::new(jobs.into_iter().enumerate());
    let done: Mutex<Vec<(usize, u32, Figures)>> = Mutex::new(Vec::new());
    let failure: Mutex<Option<String>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| {
                loop {
                    if *stop.borrow() {
                        return;
                    }
                    let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
                    let Some((job, (i, s, loaded, dir))) = next else {
                        return;
                    };
                    let label = dir.display().to_string();
                    let reached = running.start(job, label, loaded.experiment.duration);
                    let dir = report_dir.map(|d| d.join(&dir));
                    let ran = run_one(&loaded, dir.as_deref(), stop, reached);
                    running.end(job);
                    match ran {
                        // An interrupted run has its partial report, but
                        // no figures in the sweep.
                        Ok(None) => {}
                        Ok(Some(figures)) => {
                            let mut done = done.lock().unwrap_or_else(|e| e.into_inner());
                            done.push((i, s, figures));
                            progress(done.len(), total);
                        }
                        Err(e) => {
                            *failure.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                            return;
                        }
                    }
                }
            });
        }
    });
    if let Some(e) = failure.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(SweepError::Run(e));
    }
    let mut done = done.into_inner().unwrap_or_else(|e| e.into_inner());
    done.sort_by_key(|(i, s, _)| (*i, *s));
    let mut out: Vec<Point> = points
        .into_iter()
        .zip(dirs)
        .map(|(values, dir)| Point {
            values,
            dir,
            runs: Vec::new(),
        })
        .collect();
    for (i, _, figures) in done {
        out[i].runs.push(figures);
    }
    let partial = *stop.borrow();
    if partial {
        out.retain(|p| !p.runs.is_empty());
    }
    Ok(Sweep {
        experiment: name,
        varied: plan.varies.iter().map(|v| v.path.clone()).collect(),
        expectations,
        points: out,
        partial,
        first_figure,
    })
}

/// Every run of a sweep, each point loaded and checked, and what the
/// points share.
struct Jobs {
    /// Point index, seed index, the run, its folder.
    jobs: Vec<(usize, u32, Loaded, PathBuf)>,
    name: String,
    expectations: Vec<String>,
    first_figure: Option<Metric>,
}

/// Loads and checks every point of `points` (their folders `dirs`), one
/// run per seed.
fn jobs(plan: &Plan<'_>, points: &[Vec<String>], dirs: &[String]) -> Result<Jobs, SweepError> {
    let Plan {
        file,
        sets: fixed,
        varies,
        seeds,
    } = *plan;
    let mut jobs: Vec<(usize, u32, Loaded, PathBuf)> = Vec::new();
    let mut name = String::new();
    let mut expectations = Vec::new();
    let mut first_figure = None;
    let text = crate::schema::read_text(file)?;
    for (i, values) in points.iter().enumerate() {
        let sets: Vec<Override> = (fixed.iter().cloned())
            .chain(varies.iter().zip(values).map(|(v, value)| Override {
                path: v.path.clone(),
                value: value.clone(),
            }))
            .collect();
        let loaded = load_text_with(&file.display().to_string(), &text, &sets)?;
        let e = &loaded.experiment;
        if e.system.is_some() || matches!(e.target, TargetSpec::Url(_)) {
            return Err(SweepError::NotVirtual(format!(
                "{}: a sweep runs in virtual time; a user's service (system) or a real target (target.url) needs the real clock",
                file.display()
            )));
        }
        name.clone_from(&e.name);
        expectations = e.expect.clone();
        first_figure = loaded
            .expectations
            .first()
            .and_then(|x| Metric::said_by(&x.rule));
        for s in 0..seeds {
            let mut run = loaded.clone();
            run.experiment.seed = loaded.experiment.seed + u64::from(s);
            let mut dir = PathBuf::from(&dirs[i]);
            if seeds > 1 {
                dir.push(format!("seed-{}", run.experiment.seed));
            }
            jobs.push((i, s, run, dir));
        }
    }
    Ok(Jobs {
        jobs,
        name,
        expectations,
        first_figure,
    })
}

/// The folder of point `i` (0-based): `NNN-VALUES`, the values made safe
/// for a file name.
fn point_dir(i: usize, values: &[String]) -> String {
    let slug: String = values
        .join("_")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("{:03}-{slug}", i + 1)
}

/// The flag a sweep stops on: true once a stop was asked for.
pub type Stop = tokio::sync::watch::Receiver<bool>;

/// Resolves once `stop` turns true (never, when its sender is gone
/// without having stopped).
async fn stopped(mut stop: Stop) {
    if stop.wait_for(|stopped| *stopped).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// One run in virtual time, its reports written to `dir` when given; its
/// figures, or `None` when `stop` interrupted it. It sets `reached` (its
/// simulated milliseconds) as it goes.
fn run_one(
    loaded: &Loaded,
    dir: Option<&Path>,
    stop: &Stop,
    reached: std::sync::Arc<std::sync::atomic::AtomicU64>,
) -> Result<Option<Figures>, String> {
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let (result, report) = super::execute_to(
        loaded,
        ClockKind::Virtual,
        stopped(stop.clone()),
        Live {
            reached: Some(reached),
            ..Live::default()
        },
        dir,
    )
    .map_err(|e| e.to_string())?;
    if let Some(dir) = dir {
        for exporter in exporters().iter().filter(|e| e.applies(&report)) {
            let path = dir.join(exporter.file_name());
            let bytes = exporter
                .render_masked(&report)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    let interrupted = matches!(result.ending, crate::experiment::drill::Ending::Interrupted);
    Ok((!interrupted).then(|| Figures::of(&report)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_is_every_combination_with_the_last_vary_fastest() {
        let varies: Vec<Vary> = ["a=1,2", "b=x,y,z"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let g = grid(&varies);
        assert_eq!(g.len(), 6);
        assert_eq!(g[0], ["1", "x"]);
        assert_eq!(g[1], ["1", "y"]);
        assert_eq!(g[5], ["2", "z"]);
    }

    #[test]
    fn a_vary_needs_a_path_and_non_empty_values() {
        assert!("a=1,,2".parse::<Vary>().is_err());
        assert!("=1".parse::<Vary>().is_err());
        assert_eq!("a.b=1, 2".parse::<Vary>().unwrap().values, ["1", "2"]);
    }
}
