//! Reports of a run: the data every format shares ([`RunReport`]), and one
//! exporter per format behind a small trait, as hyperfine does it.
//!
//! * [`summary`] — figures per load route.
//! * [`json`], [`junit`], [`journal`], [`dependencies`], [`html`] — file
//!   formats written from the report after the run; [`requests`] — the
//!   one written while the run goes, a line per request.
//! * [`console`] — the summary printed at the end of a run.
//! * `execute` — running an experiment into its report ([`execute`],
//!   [`execute_to`]).
//! * `pools` — a run's pools and their servers' health changes.

pub mod console;
pub mod dependencies;
mod execute;
pub mod html;
pub mod journal;
pub mod json;
pub mod junit;
mod pools;
pub mod requests;
pub mod summary;
pub mod sweep;

use serde::Serialize;

pub use execute::{execute, execute_to};
use pools::pools;
pub use pools::{HealthChangeReport, PoolReport, PoolServerReport};

use crate::clock::Duration;
use crate::experiment::Verdict;
use crate::experiment::config::{ClockKind, Experiment};
use crate::experiment::drill::Ending;
pub use crate::experiment::drill::RunResult;
use crate::experiment::timeline::Timeline;

/// Everything a report shows. Deterministic: no wall-clock time, stable
/// order, so the same seed gives the same bytes.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// The experiment's name.
    pub experiment: String,
    /// Its description.
    pub description: Option<String>,
    /// The firedrill version that ran it.
    pub version: &'static str,
    /// The version with the commit it was built from, as `firedrill
    /// --version` prints it: `0.1.0 (0123456789ab 2026-12-01)`.
    pub build: &'static str,
    /// The seed used.
    pub seed: u64,
    /// The clock used.
    pub clock: ClockKind,
    /// Real clock: when the drill started, milliseconds since the Unix
    /// epoch; every time in the report counts from it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at_unix_ms: Option<u64>,
    /// Real clock: the same instant in RFC 3339, UTC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// Real clock: the machine the drill ran on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// What the run sent traffic to: the target, or the service and its
    /// dependencies.
    pub targets: Vec<String>,
    /// How long the run lasted, in milliseconds.
    pub duration_ms: f64,
    /// A run cut short (halted, interrupted): how long it was to last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planned_duration_ms: Option<f64>,
    /// How it ended.
    pub ending: Ending,
    /// Whether every expectation held and the run completed.
    pub passed: bool,
    /// The run's verdict in one word, as the console, the page and JUnit
    /// say it.
    pub verdict: RunVerdict,
    /// Why the evidence cannot carry some verdicts (the evidence gate),
    /// each naming the breaker and the evidence; empty when it can.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inconclusive: Vec<crate::experiment::blackbox::gate::Finding>,
    /// One per expectation.
    pub verdicts: Vec<Verdict>,
    /// Figures per load route.
    pub routes: Vec<summary::RouteSummary>,
    /// Breaker transitions and final states.
    pub breakers: Vec<BreakerReport>,
    /// The pools of the defense line: each server and its health changes
    /// (omitted without pools).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pools: Vec<PoolReport>,
    /// Fault windows, in milliseconds.
    pub faults: Vec<FaultReport>,
    /// Requests that reached the target.
    pub target_hits: usize,
    /// Of them (health checks of a pool included), those each instance of
    /// the built-in target received, by name, every instance listed
    /// (omitted without instances).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub instance_hits: std::collections::BTreeMap<String, u64>,
    /// Requests shed by the in-flight cap.
    pub shed: u64,
    /// What could not be read after the run (a service's events file).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The keys of the imported defense files the drill does not cover
    /// (`key (file:line): why: ...`): the verdict is about the rest.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_drilled: Vec<String>,
    /// The agents whose fault proxies stood in front of dependencies on
    /// other hosts: each one's clock offset and round trip, every fault
    /// window as planned and as applied, and the evidence it gave (omitted
    /// without agents).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<crate::agent::AgentReport>,
    /// Each query a `query` sentence judged: its series over the run and
    /// the windows it was judged over (omitted without queries).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub queries: Vec<crate::experiment::prometheus::series::QuerySeries>,
    /// Whether the system under test is the user's own service.
    #[serde(skip)]
    pub system_under_test: bool,
    /// The recorded timeline (transitions, faults; requests only for a
    /// user's service's run).
    #[serde(skip)]
    pub timeline: Timeline,
    /// The requests folded into the HTML picture's time buckets as they
    /// finished.
    #[serde(skip)]
    pub fold: html::picture::Fold,
}

/// A run's verdict in one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunVerdict {
    /// It completed and every expectation held.
    Passed,
    /// It completed and an expectation failed.
    Failed,
    /// It completed, no expectation failed, and the evidence gate found
    /// that the evidence cannot carry at least one verdict: neither a pass
    /// nor a fail.
    Inconclusive,
    /// The steady state failed over the warm-up: no fault was injected and
    /// the expectations were not judged.
    NotHealthy,
    /// A halt condition stopped it.
    Halted,
    /// A person stopped it.
    Interrupted,
}

impl RunVerdict {
    /// The verdict of a run that ended so, with these verdicts.
    pub fn of(ending: &Ending, verdicts: &[Verdict]) -> RunVerdict {
        let failed = verdicts
            .iter()
            .any(|v| !v.passed && !v.awaits_history && v.inconclusive.is_none());
        let inconclusive = verdicts.iter().any(|v| v.inconclusive.is_some());
        match ending {
            Ending::Completed if failed => RunVerdict::Failed,
            Ending::Completed if inconclusive => RunVerdict::Inconclusive,
            Ending::Completed => RunVerdict::Passed,
            Ending::NotHealthy { .. } => RunVerdict::NotHealthy,
            Ending::Halted { .. } => RunVerdict::Halted,
            Ending::Interrupted => RunVerdict::Interrupted,
        }
    }

    /// As the console and the page show it: `NOT HEALTHY`.
    pub fn label(self) -> &'static str {
        match self {
            RunVerdict::Passed => "PASSED",
            RunVerdict::Failed => "FAILED",
            RunVerdict::Inconclusive => "INCONCLUSIVE",
            RunVerdict::NotHealthy => "NOT HEALTHY",
            RunVerdict::Halted => "HALTED",
            RunVerdict::Interrupted => "INTERRUPTED",
        }
    }
}

/// One breaker's story.
#[derive(Debug, Clone, Serialize)]
pub struct BreakerReport {
    /// Its name.
    pub name: String,
    /// `inferred` for a user's service's breaker, whose transitions were
    /// inferred from what reached its dependency; absent for firedrill's
    /// own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<&'static str>,
    /// Its state at the end.
    pub final_state: String,
    /// Its transitions.
    pub transitions: Vec<TransitionReport>,
    /// A user's service's breaker: what the service itself reported,
    /// beside the inferred transitions above.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reported: Option<Vec<TransitionReport>>,
    /// A user's service's breaker: how the calls that reached its
    /// dependency were paired with the load's requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correlation: Option<CorrelationReport>,
    /// A user's service's breaker inferred from both sides: what its
    /// evidence holds, as the evidence gate read it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<crate::experiment::blackbox::evidence::Quality>,
}

/// How the arrivals an inferred breaker was read from were paired with the
/// requests sent to the service: by the id the service passed on
/// (`system.correlation`, or firedrill's own `x-firedrill-request-id`), or
/// only by time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CorrelationReport {
    /// Arrivals whose id is the id of a request the drill sent: an id no
    /// request of the drill has pairs nothing.
    pub paired: u64,
    /// Arrivals counted: every one at the dependency proxies that matches
    /// the breaker's `path` (all of them without one).
    pub of: u64,
    /// `id` when every arrival was paired by id, `time` when none was,
    /// `mixed` otherwise.
    pub by: &'static str,
}

impl CorrelationReport {
    /// The pairing of the target hits matching `path`, paired when their
    /// id is one of a request the run sent.
    fn of(
        timeline: &crate::experiment::timeline::Timeline,
        path: Option<&crate::fault::HttpMatch>,
    ) -> Self {
        let (mut paired, mut of) = (0, 0);
        timeline.each_hit(&mut |h, sender| {
            if path.is_none_or(|m| m.matches(&http::Method::GET, &h.path, &http::HeaderMap::new()))
            {
                paired += u64::from(sender.is_some());
                of += 1;
            }
        });
        let by = match paired {
            0 => "time",
            p if p == of => "id",
            _ => "mixed",
        };
        CorrelationReport { paired, of, by }
    }
}

/// One transition, for reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TransitionReport {
    /// Milliseconds since the start.
    pub at_ms: f64,
    /// From.
    pub from: String,
    /// To.
    pub to: String,
    /// Why, with figures.
    pub reason: String,
    /// After the run's end: caused by a call still in flight when the load
    /// stopped. Shown, never judged by an expectation.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub after_end: bool,
}

/// One fault's windows.
#[derive(Debug, Clone, Serialize)]
pub struct FaultReport {
    /// Its name.
    pub name: String,
    /// Its kind.
    pub kind: String,
    /// `[start, end)` in milliseconds.
    pub windows_ms: Vec<(f64, f64)>,
    /// How many times it was injected (requests it hit).
    pub injected: u64,
    /// The instance of the built-in target whose proxy applies it (omitted:
    /// every instance's, or the only one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    /// Started and stopped by people (`at: manual`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub manual: bool,
    /// A `replay` fault: what the recording does, bucket by bucket, from
    /// the start of its window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded: Option<RecordedReport>,
}

/// What a replayed recording does over time: per bucket, the share of its
/// recorded answers that failed (an error status, a reset, a hang).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordedReport {
    /// One bucket's width, milliseconds.
    pub bucket_ms: f64,
    /// Per bucket, from the window's start: failed answers in percent;
    /// `null` for a bucket with no recorded answer (the replay repeats
    /// the last bucket that had one).
    pub failing_pct: Vec<Option<f64>>,
}

/// Milliseconds with microsecond precision.
pub fn ms(d: Duration) -> f64 {
    d.as_micros() as f64 / 1000.0
}

impl RunReport {
    /// Builds the report of a finished run; the run's per-request lists
    /// (requests, target hits, dependency calls) move into the report.
    pub fn new(
        experiment: &Experiment,
        clock: ClockKind,
        result: &mut RunResult,
        verdicts: Vec<Verdict>,
        fold: html::picture::Fold,
    ) -> RunReport {
        let t = &result.timeline;
        let breakers = t
            .breakers
            .iter()
            .map(|b| {
                let of = |list: &[crate::defense::breaker::journal::Transition]| {
                    list.iter()
                        .filter(|x| x.breaker == b.name)
                        .map(|x| TransitionReport {
                            at_ms: ms(x.at),
                            from: x.from.to_string(),
                            to: x.to.to_string(),
                            reason: x.reason.to_string(),
                            after_end: x.at >= t.duration,
                        })
                        .collect::<Vec<_>>()
                };
                let transitions = of(&t.transitions);
                let inferred = experiment
                    .system
                    .as_ref()
                    .and_then(|s| s.breakers.get(&b.name));
                let reported = inferred
                    .is_some_and(|i| i.reported.is_some())
                    .then(|| of(&t.reported));
                let final_state = transitions
                    .last()
                    .map_or("closed".to_string(), |x| x.to.clone());
                BreakerReport {
                    name: b.name.clone(),
                    source: inferred.map(|_| "inferred"),
                    final_state,
                    transitions,
                    reported,
                    evidence: b.evidence.clone(),
                    correlation: inferred.map(|i| CorrelationReport::of(t, i.path.as_ref())),
                }
            })
            .collect();
        let faults = t
            .faults
            .iter()
            .map(|f| {
                let spec = experiment.faults.iter().find(|s| s.name == f.name);
                FaultReport {
                    name: f.name.clone(),
                    kind: f.kind.clone(),
                    windows_ms: f.windows.iter().map(|(a, b)| (ms(*a), ms(*b))).collect(),
                    injected: result.injected.get(&f.name).copied().unwrap_or(0),
                    instance: spec.and_then(|s| s.instance.clone()),
                    manual: spec.is_some_and(|s| s.manual),
                    recorded: spec.and_then(recorded),
                }
            })
            .collect();
        let passed = result.ending == Ending::Completed
            && verdicts.iter().all(|v| v.passed || v.awaits_history);
        let mut report = RunReport {
            experiment: experiment.name.clone(),
            description: experiment.description.clone(),
            version: env!("CARGO_PKG_VERSION"),
            build: env!("FIREDRILL_BUILD_VERSION"),
            seed: experiment.seed,
            clock,
            started_at_unix_ms: result.started_at_unix_ms,
            started_at: result.started_at_unix_ms.map(crate::clock::rfc3339),
            host: result.started_at_unix_ms.and_then(|_| host_name()),
            targets: targets(experiment),
            duration_ms: ms(t.duration),
            planned_duration_ms: (result.ending != Ending::Completed)
                .then(|| ms(experiment.duration)),
            ending: result.ending.clone(),
            passed,
            verdict: RunVerdict::of(&result.ending, &verdicts),
            inconclusive: result.inconclusive.clone(),
            verdicts,
            routes: summary::routes(&result.counted.routes),
            breakers,
            pools: pools(t),
            faults,
            target_hits: result.counted.target_hits as usize,
            instance_hits: instance_hits(experiment, &result.counted.instance_hits),
            shed: result.shed,
            warnings: result.warnings.clone(),
            not_drilled: not_drilled(experiment),
            agents: result.agents.clone(),
            queries: result.queries.clone(),
            system_under_test: experiment.system.is_some(),
            timeline: Timeline::default(),
            fold,
        };
        report.timeline = result.timeline.moved_out();
        report
    }
}

/// The not-drilled keys of the experiment's imported defense files, its
/// dependencies' included, in file order.
fn not_drilled(experiment: &Experiment) -> Vec<String> {
    experiment
        .defense
        .iter()
        .chain(
            experiment
                .dependencies
                .iter()
                .filter_map(|d| d.defense.as_ref()),
        )
        .flat_map(|d| d.not_drilled.iter().cloned())
        .collect()
}

/// A `replay` fault's recording as the report draws it: at most
/// [`RECORDED_BUCKETS`] buckets (wider ones for a long recording).
fn recorded(fault: &crate::fault::Fault) -> Option<RecordedReport> {
    let crate::fault::FaultKind::Replay(replay) = &fault.kind else {
        return None;
    };
    let model = replay.model.as_ref()?;
    let (width, failing) = model.failing_shares(RECORDED_BUCKETS);
    Some(RecordedReport {
        bucket_ms: ms(width),
        failing_pct: failing,
    })
}

/// The most buckets a recording is drawn in.
const RECORDED_BUCKETS: usize = 600;

/// The hits each instance of the built-in target received, by name: every
/// declared instance, none reached shown as 0 (empty without instances).
fn instance_hits(
    experiment: &Experiment,
    counted: &std::collections::BTreeMap<String, u64>,
) -> std::collections::BTreeMap<String, u64> {
    use crate::experiment::config::TargetSpec;
    match (&experiment.target, &experiment.system) {
        (TargetSpec::Builtin(target), None) => target
            .instances
            .keys()
            .map(|name| (name.clone(), counted.get(name).copied().unwrap_or(0)))
            .collect(),
        _ => std::collections::BTreeMap::new(),
    }
}

/// This machine's name, for real-time reports.
fn host_name() -> Option<String> {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
}

/// What an experiment sends traffic to, one line each.
fn targets(experiment: &Experiment) -> Vec<String> {
    use crate::experiment::config::TargetSpec;
    use crate::experiment::config::system::Upstream;
    let Some(system) = &experiment.system else {
        return vec![match &experiment.target {
            TargetSpec::Builtin(b) if b.instances.is_empty() => "target: builtin".to_string(),
            TargetSpec::Builtin(b) => {
                format!("target: builtin, instances {}", b.names().join(", "))
            }
            TargetSpec::Url(service) => format!("target: {}", service.endpoint.url()),
        }];
    };
    let mut out = vec![format!("system: {}", system.service.endpoint.url())];
    for d in &experiment.dependencies {
        out.push(match &d.upstream {
            Upstream::Url(service) => format!("dependency {}: {}", d.name, service.endpoint.url()),
            Upstream::Builtin(_) => format!("dependency {}: builtin", d.name),
            Upstream::Agent(agent) => format!(
                "dependency {}: proxy {} of the {} agent at {}",
                d.name,
                agent.proxy,
                agent.kind.name(),
                agent.api
            ),
        });
    }
    out
}

/// A report file format.
pub trait Exporter {
    /// The file name it is written to inside a report directory.
    fn file_name(&self) -> &'static str;
    /// The file's bytes.
    fn render(&self, report: &RunReport) -> std::io::Result<Vec<u8>>;
    /// Whether the file belongs in this run's report directory.
    fn applies(&self, _report: &RunReport) -> bool {
        true
    }
    /// The bytes written to disk: [`Exporter::render`] with every secret
    /// variable's value masked.
    fn render_masked(&self, report: &RunReport) -> std::io::Result<Vec<u8>> {
        Ok(masked(self.render(report)?))
    }
    /// Writes [`Exporter::render_masked`]'s bytes to `out` (a file that
    /// may be large writes itself piece by piece instead).
    fn write_masked(
        &self,
        report: &RunReport,
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        out.write_all(&self.render_masked(report)?)
    }
}

/// `bytes` with every secret variable's value masked.
pub fn masked(bytes: Vec<u8>) -> Vec<u8> {
    match String::from_utf8(bytes) {
        Ok(text) => crate::schema::vars::mask(&text).into_owned().into_bytes(),
        Err(raw) => raw.into_bytes(),
    }
}

/// Every file format, for `--report-dir`.
pub fn exporters() -> Vec<Box<dyn Exporter>> {
    vec![
        Box::new(json::Json),
        Box::new(junit::Junit),
        Box::new(journal::Journal),
        Box::new(dependencies::Dependencies),
        Box::new(html::Html),
    ]
}
