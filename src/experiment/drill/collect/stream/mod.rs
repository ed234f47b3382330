//! The requests of a run as a stream: each request is joined with the
//! defense line's report of it and the times it reached the dependency,
//! then counted (route figures, the expectations' tallies) and handed to
//! the record sinks (`requests.jsonl`, the HTML picture) in id order, and
//! forgotten. Memory stays bounded by the requests in flight, whatever the
//! length of the run.
//!
//! # When a request is final
//!
//! A request is counted once the client has its answer (or gave up), the
//! defense line has reported the call (when there is one and the request
//! was sent to it), and the clock has moved past the last of those events:
//! everything that happens at one instant (a transition, a late arrival at
//! the dependency) is then known. A report that never comes is waited for
//! [`REPORT_WAIT`] at most. Target hits are judged once the clock has moved
//! past them, so every transition up to them is known. The end of the run
//! counts whatever is left, as the whole timeline would.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use crate::clock::{self, Duration, Instant};
use crate::defense::breaker::Transition;
use crate::defense::report::{CallReport, HealthChange, Observer, Recorder};
use crate::experiment::expect::ast::Expectation;
use crate::experiment::expect::tally::{RouteTally, Tally};
use crate::experiment::kept::KeptRequest;
use crate::experiment::timeline::{ClientError, RequestRecord};
use crate::fault::FaultPlan;
use crate::fault::plan::Arrival;
use crate::spill::Spill;

/// How long a finished request waits for the defense line's report of it
/// before it is counted without one.
pub const REPORT_WAIT: Duration = Duration::from_secs(60);

/// Where finished requests go, in id order (a file, a picture).
pub trait RecordSink: Send {
    /// One request, final.
    fn record(&mut self, record: &RequestRecord) -> std::io::Result<()>;
    /// The run is over: write out what is buffered.
    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Faults people start and stop while the run goes (the control
/// endpoint's): a window over one of them reads its span from here.
pub trait ManualFaults: Send + Sync {
    /// Each manual fault's windows so far, the open one closed at `end`.
    fn windows(&self, end: Duration) -> BTreeMap<String, Vec<(Duration, Duration)>>;
}

/// What the stream is told before the run: what to count and where to
/// send the requests.
pub struct StreamSetup {
    /// The expectations to count for (the experiment's, then the steady
    /// state's), in the order their tallies come back.
    pub expectations: Vec<Expectation>,
    /// The load routes, in the order of `load:`.
    pub routes: Vec<String>,
    /// The sinks, fed in id order.
    pub sinks: Vec<Box<dyn RecordSink>>,
    /// Keep every request too (a user's service: its breakers are
    /// inferred from them after the run).
    pub keep: bool,
    /// Keep finished requests sent this long ago for the halt watch.
    pub recent: Duration,
    /// A defense line reports each call the load sends it.
    pub defended: bool,
    /// The planned duration.
    pub planned: Duration,
    /// Each fault's span by name, from the file (manual faults excluded).
    pub fault_spans: BTreeMap<String, (Duration, Duration)>,
    /// Each phase's span by name.
    pub phases: BTreeMap<String, (Duration, Duration)>,
}

impl std::fmt::Debug for StreamSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamSetup")
            .field("expectations", &self.expectations.len())
            .field("sinks", &self.sinks.len())
            .field("keep", &self.keep)
            .finish()
    }
}

/// A fault plan whose arrivals are target hits, and the instance of the
/// built-in target its proxy stands in front of (none: no instances).
pub type WatchedPlan = (Arc<FaultPlan>, Option<String>);

/// The requests of a run, counted as they finish.
pub struct Stream {
    start: Instant,
    plans: OnceLock<Vec<WatchedPlan>>,
    control: OnceLock<Arc<dyn ManualFaults>>,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream").finish_non_exhaustive()
    }
}

/// What the stream counted, at the end of the run.
#[derive(Debug, Clone, Default)]
pub struct Counted {
    /// One per expectation of the setup.
    pub tallies: Vec<Tally>,
    /// Per route over the run, in the order of `load:` then as first seen.
    pub routes: Vec<(String, RouteTally)>,
    /// Target hits.
    pub target_hits: u64,
    /// Target hits per instance of the built-in target (none without
    /// instances).
    pub instance_hits: BTreeMap<String, u64>,
}

/// A run's requests and arrivals as the stream kept them on disk.
#[derive(Debug)]
pub struct KeptSpills {
    /// Every request, in id order.
    pub requests: Spill<KeptRequest>,
    /// Every arrival with the index of its watched plan, in the order
    /// each plan recorded them.
    pub arrivals: Spill<(usize, Arrival)>,
}

impl Stream {
    /// A stream for a run starting at `start`.
    pub fn new(setup: StreamSetup, start: Instant) -> Arc<Stream> {
        let counters = setup.expectations.iter().map(Counter::of).collect();
        let route_order = setup.routes.clone();
        let end = setup.planned;
        let keep = setup.keep;
        Arc::new(Stream {
            start,
            plans: OnceLock::new(),
            control: OnceLock::new(),
            inner: Mutex::new(Inner {
                setup,
                open: BTreeMap::new(),
                due: VecDeque::new(),
                overdue: VecDeque::new(),
                ready: BTreeMap::new(),
                next_out: 0,
                hits: VecDeque::new(),
                transitions: Vec::new(),
                health: Vec::new(),
                end,
                counters,
                routes: BTreeMap::new(),
                route_order,
                live: BTreeMap::new(),
                recent: BTreeMap::new(),
                target_hits: 0,
                instance_hits: BTreeMap::new(),
                kept_requests: keep.then(Spill::new),
                kept_arrivals: keep.then(Spill::new),
                sink_error: None,
            }),
        })
    }

    /// The fault plans whose arrivals are the target hits, each with the
    /// instance of the built-in target it stands in front of (if any).
    pub fn watch_plans(&self, plans: Vec<WatchedPlan>) {
        let _ = self.plans.set(plans);
    }

    /// The arrivals kept so far, each with the index of its plan (none
    /// unless kept), in a spill of their own.
    pub fn kept_arrivals(&self) -> Spill<(usize, Arrival)> {
        let mut inner = self.lock();
        self.arrivals(&mut inner);
        let mut copy = Spill::new();
        if let Some(kept) = &mut inner.kept_arrivals {
            kept.read_each(|a| copy.push(&a));
        }
        copy
    }

    /// The control endpoint, whose manual faults' windows the windows read.
    pub fn watch_control(&self, control: Arc<dyn ManualFaults>) {
        let _ = self.control.set(control);
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn now(&self) -> Duration {
        clock::now().saturating_duration_since(self.start)
    }

    /// A request was sent (or shed).
    pub fn sent(&self, record: RequestRecord) {
        let now = self.now();
        let mut inner = self.lock();
        let awaiting_report = inner.setup.defended;
        inner
            .live
            .entry(record.route.clone())
            .or_default()
            .sent(record.sent);
        inner.open.insert(
            record.id,
            Open {
                record,
                finished: false,
                awaiting_report,
                call: None,
                reached: 0,
                touched: now,
            },
        );
        self.step(&mut inner, now);
    }

    /// The client has its answer, or gave up.
    pub fn finished(&self, record: RequestRecord) {
        let now = self.now();
        let mut inner = self.lock();
        let id = record.id;
        let Some(open) = inner.open.get_mut(&id) else {
            return;
        };
        // A request never sent gets no report.
        let unsent = matches!(
            record.client_error,
            Some(ClientError::Shed | ClientError::Connect)
        );
        open.record = record;
        open.finished = true;
        open.touched = now;
        if unsent {
            open.awaiting_report = false;
        }
        if open.awaiting_report {
            inner.overdue.push_back((now + REPORT_WAIT, id));
        } else {
            inner.due.push_back((now, id));
        }
        self.step(&mut inner, now);
    }

    /// The defense line's report of a call.
    fn call(&self, report: &CallReport) {
        let Some(id) = report.request_id else {
            return;
        };
        let now = self.now();
        let mut inner = self.lock();
        if let Some(open) = inner.open.get_mut(&id) {
            open.call = Some(report.clone());
            open.touched = now;
            let was_awaiting = std::mem::replace(&mut open.awaiting_report, false);
            if open.finished && was_awaiting {
                inner.due.push_back((now, id));
            }
        }
        self.step(&mut inner, now);
    }

    fn transition(&self, transition: &Transition) {
        self.lock().transitions.push(transition.clone());
    }

    fn health(&self, change: &HealthChange) {
        self.lock().health.push(change.clone());
    }

    /// The run stopped early at `at`: nothing at or after it is counted.
    pub fn cut(&self, at: Duration) {
        let mut inner = self.lock();
        inner.end = inner.end.min(at);
    }

    /// Finished requests sent within the halt watch's reach (`recent`),
    /// final or not.
    pub fn with_finished<R>(
        &self,
        f: impl FnOnce(&mut dyn Iterator<Item = RequestRecord>) -> R,
    ) -> R {
        let inner = self.lock();
        let mut all = inner
            .recent
            .values()
            .cloned()
            .chain(inner.open.values().filter(|o| o.finished).map(Open::joined));
        f(&mut all)
    }

    /// The tallies of the expectations at `pick`, counting the finished
    /// requests and the hits not yet final as they stand now (the warm-up
    /// check, before the first fault).
    pub fn tallies_now(&self, pick: std::ops::Range<usize>) -> Vec<Tally> {
        let now = self.now();
        let mut inner = self.lock();
        self.arrivals(&mut inner);
        let inner = &*inner;
        let scene = known(
            &inner.setup,
            &inner.transitions,
            &inner.health,
            inner.end,
            self.control.get(),
            Some(now),
        );
        let mut counters: Vec<Counter> = inner.counters[pick].to_vec();
        for hit in &inner.hits {
            let sent = hit
                .request_id
                .and_then(|id| inner.open.get(&id).map(|o| o.record.sent));
            for c in &mut counters {
                c.hit(hit, sent, &scene);
            }
        }
        for open in inner.open.values().filter(|o| o.finished) {
            let record = open.joined();
            for c in &mut counters {
                c.request(&record, &scene);
            }
        }
        counters.iter().map(Counter::tally).collect()
    }

    /// Per route, the requests final so far and those finished.
    pub fn live(&self) -> BTreeMap<String, LiveCounts> {
        let inner = self.lock();
        let mut live = inner.live.clone();
        for open in inner.open.values().filter(|o| o.finished) {
            live.entry(open.record.route.clone())
                .or_default()
                .add(&open.joined());
        }
        live
    }

    /// Counts everything left and closes the sinks; hands over what was
    /// kept on disk (a user's service's run), for the inference and the
    /// judges after the run.
    pub fn finish(&self) -> std::io::Result<(Counted, Option<KeptSpills>)> {
        let mut inner = self.lock();
        self.advance(&mut inner, None);
        let Inner {
            setup, sink_error, ..
        } = &mut *inner;
        for sink in setup.sinks.iter_mut() {
            if let Err(e) = sink.finish()
                && sink_error.is_none()
            {
                *sink_error = Some(e);
            }
        }
        if let Some(e) = inner.sink_error.take() {
            return Err(e);
        }
        let spill_error = (inner.kept_requests.as_ref().and_then(Spill::error))
            .or_else(|| inner.kept_arrivals.as_ref().and_then(Spill::error));
        if let Some(e) = spill_error {
            return Err(e);
        }
        let kept = match (inner.kept_requests.take(), inner.kept_arrivals.take()) {
            (Some(requests), Some(arrivals)) => Some(KeptSpills { requests, arrivals }),
            _ => None,
        };
        let routes = inner
            .route_order
            .iter()
            .map(|r| (r.clone(), inner.routes.get(r).cloned().unwrap_or_default()))
            .collect();
        let counted = Counted {
            tallies: inner.counters.iter().map(Counter::tally).collect(),
            routes,
            target_hits: inner.target_hits,
            instance_hits: std::mem::take(&mut inner.instance_hits),
        };
        Ok((counted, kept))
    }
}

/// The defense line's observer in a run: transitions to the recorder (and
/// the stream's windows), call reports to the stream only, pool health
/// changes to the recorder.
#[derive(Debug)]
pub struct RunObserver {
    /// Keeps the transitions for the report and the live view.
    pub recorder: Arc<Recorder>,
    /// Joins each call report to its request.
    pub stream: Arc<Stream>,
}

impl Observer for RunObserver {
    fn transition(&self, transition: &Transition) {
        self.recorder.transition(transition);
        self.stream.transition(transition);
    }

    fn call(&self, report: &CallReport) {
        self.stream.call(report);
    }

    fn health(&self, change: &HealthChange) {
        self.recorder.health(change);
        self.stream.health(change);
    }
}

mod counter;
mod settle;

use counter::{Counter, known};
pub use counter::{Counts, Interval, LiveCounts};
use settle::{Inner, Open};

#[cfg(test)]
mod tests;
