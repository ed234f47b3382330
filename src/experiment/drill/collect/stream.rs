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
use crate::defense::breaker::{State, Transition};
use crate::defense::report::{CallReport, HealthChange, Observer, Recorder};
use crate::experiment::drill::drive::control::Control;
use crate::experiment::expect::ast::{Expectation, Rule, Server, Window};
use crate::experiment::expect::tally::{RouteTally, ShareTally, Tally, counts_hit};
use crate::experiment::expect::window::{Scene, interval_start};
use crate::experiment::timeline::{ClientError, RequestRecord, TargetHit};
use crate::fault::FaultPlan;

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

/// A request not yet final.
#[derive(Debug)]
struct Open {
    /// What the load recorded (complete once `finished`).
    record: RequestRecord,
    /// The client has its answer or gave up.
    finished: bool,
    /// The defense line's report is still to come.
    awaiting_report: bool,
    /// Its report (the last, if there were several).
    call: Option<CallReport>,
    /// Times it reached the dependency so far.
    reached: u32,
    /// The latest event about it.
    touched: Duration,
}

impl Open {
    /// The record joined with what is known of it now.
    fn joined(&self) -> RequestRecord {
        let mut r = self.record.clone();
        r.reached_dependency = self.reached;
        if let Some(c) = &self.call {
            r.rejected_by = c.rejected_by;
            r.defense_error = c.error;
            r.breaker_state = c.breaker_state;
            r.attempts = c.attempts;
            r.fallback = r.fallback.or(c.fallback);
            r.served_by = c.served_by.clone();
        }
        r
    }
}

/// What one expectation counts, as the stream sees it.
#[derive(Clone)]
enum Counter {
    /// A breaker sentence: nothing.
    None,
    /// A route sentence: the route, its window and its tally.
    Route(Expectation, RouteTally),
    /// A calls sentence.
    Calls(Expectation, crate::experiment::expect::tally::CallTally),
    /// A pool share sentence: its window and the pool calls in it.
    Share(Window, ShareTally),
}

impl Counter {
    fn of(expectation: &Expectation) -> Counter {
        match &expectation.rule {
            Rule::Route { .. } => Counter::Route(expectation.clone(), RouteTally::default()),
            Rule::Calls { .. } => Counter::Calls(expectation.clone(), Default::default()),
            rule @ Rule::Pool(_) => match rule.counted_window() {
                Some(window) => Counter::Share(window.clone(), ShareTally::default()),
                None => Counter::None,
            },
            _ => Counter::None,
        }
    }

    fn tally(&self) -> Tally {
        match self {
            Counter::None => Tally::None,
            Counter::Route(_, t) => Tally::Route(t.clone()),
            Counter::Calls(_, t) => Tally::Calls(t.clone()),
            Counter::Share(_, t) => Tally::Share(t.clone()),
        }
    }

    /// Counts a final request if it is this sentence's.
    fn request(&mut self, r: &RequestRecord, scene: &impl Scene) {
        if let Counter::Route(e, tally) = self
            && let Rule::Route { route, window, .. } = &e.rule
            && r.route == route.text
            && interval_start(window, scene, r.sent).is_some()
        {
            tally.add(r);
        }
        if let Counter::Share(window, tally) = self
            && r.served_by.is_some()
            && interval_start(window, scene, r.sent).is_some()
        {
            tally.add(r);
        }
    }

    /// Counts a target hit if it is this sentence's; `sent` is when its
    /// request was sent, if known.
    fn hit(&mut self, hit: &TargetHit, sent: Option<Duration>, scene: &impl Scene) {
        if let Counter::Calls(e, tally) = self
            && let Rule::Calls {
                glob,
                instance,
                window,
                ..
            } = &e.rule
            && counts_hit(glob, instance.as_ref(), hit)
            && let Some(from) = interval_start(window, scene, hit.at)
            && sent.is_none_or(|s| s > from)
        {
            tally.add(hit.at, hit.request_id);
        }
    }
}

/// Figures a live view shows per route.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveCounts {
    /// Answered, not by a fallback.
    pub ok: usize,
    /// Answered by a fallback.
    pub fallback: usize,
    /// Turned away by the defense line.
    pub rejected: usize,
    /// Timed out.
    pub timeouts: usize,
}

impl LiveCounts {
    fn add(&mut self, r: &RequestRecord) {
        self.rejected += usize::from(r.rejected_by.is_some());
        self.timeouts += usize::from(r.timed_out());
        if r.fallback.is_some() {
            self.fallback += 1;
        } else if r.succeeded() {
            self.ok += 1;
        }
    }
}

/// The run as far as the windows need it.
struct Known<'a> {
    end: Duration,
    fault_spans: &'a BTreeMap<String, (Duration, Duration)>,
    phases: &'a BTreeMap<String, (Duration, Duration)>,
    transitions: &'a [Transition],
    health: &'a [HealthChange],
    control: Option<&'a Control>,
    now: Duration,
}

impl Scene for Known<'_> {
    fn end(&self) -> Duration {
        self.end
    }
    fn fault_span(&self, name: &str) -> Option<(Duration, Duration)> {
        if let Some(span) = self.fault_spans.get(name) {
            return Some(*span);
        }
        let windows = self.control?.windows(self.now).remove(name)?;
        Some((windows.first()?.0, windows.last()?.1))
    }
    fn phase(&self, name: &str) -> Option<(Duration, Duration)> {
        self.phases.get(name).copied()
    }
    fn last_transition(&self, name: &str, t: Duration) -> Option<(Duration, State)> {
        self.transitions
            .iter()
            .rfind(|tr| tr.breaker == name && tr.at <= t)
            .map(|tr| (tr.at, tr.to))
    }
    fn last_health(&self, server: &Server, t: Duration) -> Option<(Duration, bool)> {
        self.health
            .iter()
            .rfind(|h| server.is(&h.pool, &h.server) && h.at <= t)
            .map(|h| (h.at, h.healthy))
    }
}

/// The stream's state.
struct Inner {
    setup: StreamSetup,
    /// Requests sent and not yet final, by id.
    open: BTreeMap<u64, Open>,
    /// Ids that may be final once the clock passes the time beside them.
    due: VecDeque<(Duration, u64)>,
    /// Ids finished but waiting for a report, with the time they stop
    /// waiting.
    overdue: VecDeque<(Duration, u64)>,
    /// Final requests waiting for a lower id before going to the sinks.
    ready: BTreeMap<u64, RequestRecord>,
    /// The next id the sinks get.
    next_out: u64,
    /// Target hits not yet judged, in arrival order.
    hits: VecDeque<TargetHit>,
    /// Breaker transitions so far.
    transitions: Vec<Transition>,
    /// Pool health changes so far.
    health: Vec<HealthChange>,
    /// The run's end: planned, or when it was cut short.
    end: Duration,
    /// One per expectation.
    counters: Vec<Counter>,
    /// Per route over the run.
    routes: BTreeMap<String, RouteTally>,
    /// Routes in the order of `load:`, then as they first appear.
    route_order: Vec<String>,
    /// Per route, for a live view.
    live: BTreeMap<String, LiveCounts>,
    /// Final requests sent within `recent` of now, for the halt watch.
    recent: BTreeMap<u64, RequestRecord>,
    /// Hits counted.
    target_hits: u64,
    /// Hits counted, per instance of the built-in target.
    instance_hits: BTreeMap<String, u64>,
    /// Every request, when kept.
    kept_requests: Vec<RequestRecord>,
    /// Per plan, the arrivals read so far (kept).
    cursors: Vec<usize>,
    /// The first error a sink gave.
    sink_error: Option<std::io::Error>,
}

/// A fault plan whose arrivals are target hits, and the instance of the
/// built-in target its proxy stands in front of (none: no instances).
pub type WatchedPlan = (Arc<FaultPlan>, Option<String>);

/// The requests of a run, counted as they finish.
pub struct Stream {
    start: Instant,
    plans: OnceLock<Vec<WatchedPlan>>,
    control: OnceLock<Arc<Control>>,
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
    /// Every request, when kept.
    pub requests: Vec<RequestRecord>,
}

impl Stream {
    /// A stream for a run starting at `start`.
    pub fn new(setup: StreamSetup, start: Instant) -> Arc<Stream> {
        let counters = setup.expectations.iter().map(Counter::of).collect();
        let route_order = setup.routes.clone();
        let end = setup.planned;
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
                kept_requests: Vec::new(),
                cursors: Vec::new(),
                sink_error: None,
            }),
        })
    }

    /// The fault plans whose arrivals are the target hits, each with the
    /// instance of the built-in target it stands in front of (if any).
    pub fn watch_plans(&self, plans: Vec<WatchedPlan>) {
        let _ = self.plans.set(plans);
    }

    /// The control endpoint, whose manual faults' windows the windows read.
    pub fn watch_control(&self, control: Arc<Control>) {
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
        let Some(id) = report.request_id.as_deref().and_then(|i| i.parse().ok()) else {
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

    /// Takes the arrivals the plans recorded since the last look; those of
    /// several plans (instances, dependencies) join the hits in time order.
    fn arrivals(&self, inner: &mut Inner) {
        let plans = self.plans.get().map_or(&[][..], Vec::as_slice);
        inner.cursors.resize(plans.len(), 0);
        let mut batch = Vec::new();
        for (i, (plan, instance)) in plans.iter().enumerate() {
            // Kept, the plan's log stays whole for the inference after the
            // run; else it is emptied as it is read.
            let arrivals = if inner.setup.keep {
                let new = plan.arrivals_since(inner.cursors[i]);
                inner.cursors[i] += new.len();
                new
            } else {
                plan.take_arrivals()
            };
            for a in arrivals {
                if let Some(open) = a.request_id.and_then(|id| inner.open.get_mut(&id)) {
                    open.reached += 1;
                    open.touched = open.touched.max(a.at);
                }
                batch.push(TargetHit {
                    at: a.at,
                    path: a.path,
                    request_id: a.request_id,
                    instance: instance.clone(),
                });
            }
        }
        batch.sort_by_key(|h| h.at);
        inner.hits.extend(batch);
    }

    /// Judges the hits and counts the requests whose time has passed
    /// (everything, when `now` is `None`: the run is over).
    fn step(&self, inner: &mut Inner, now: Duration) {
        self.advance(inner, Some(now));
    }

    fn advance(&self, inner: &mut Inner, now: Option<Duration>) {
        self.arrivals(inner);
        let past = |t: Duration| now.is_none_or(|now| t < now);
        while inner.hits.front().is_some_and(|h| past(h.at)) {
            let Some(hit) = inner.hits.pop_front() else {
                break;
            };
            let sent = hit.request_id.and_then(|id| {
                inner
                    .open
                    .get(&id)
                    .map(|o| o.record.sent)
                    .or_else(|| inner.ready.get(&id).map(|r| r.sent))
            });
            self.count(inner, now, |c, scene| c.hit(&hit, sent, scene));
            inner.target_hits += 1;
            if let Some(instance) = hit.instance {
                *inner.instance_hits.entry(instance).or_default() += 1;
            }
        }
        match now {
            Some(now) => {
                while let Some(&(at, id)) = inner.due.front() {
                    if at >= now {
                        break;
                    }
                    inner.due.pop_front();
                    match inner.open.get(&id) {
                        Some(o) if o.touched >= now => inner.due.push_back((o.touched, id)),
                        Some(o) if o.finished && !o.awaiting_report => {
                            self.finalize(inner, id, Some(now))
                        }
                        _ => {}
                    }
                }
                while let Some(&(at, id)) = inner.overdue.front() {
                    if at > now {
                        break;
                    }
                    inner.overdue.pop_front();
                    if inner.open.contains_key(&id) {
                        self.finalize(inner, id, Some(now));
                    }
                }
                let horizon = now.saturating_sub(inner.setup.recent);
                while inner
                    .recent
                    .first_key_value()
                    .is_some_and(|(_, r)| r.sent < horizon)
                {
                    inner.recent.pop_first();
                }
            }
            None => {
                let ids: Vec<u64> = inner.open.keys().copied().collect();
                for id in ids {
                    // Unfinished at the end: never answered, not recorded.
                    if inner.open.get(&id).is_some_and(|o| o.finished) {
                        self.finalize(inner, id, None);
                    }
                }
                inner.open.clear();
            }
        }
        self.emit(inner, now.is_none());
    }

    /// Hands every counter to `f` with the run as known at `now`.
    fn count(
        &self,
        inner: &mut Inner,
        now: Option<Duration>,
        mut f: impl FnMut(&mut Counter, &Known<'_>),
    ) {
        let Inner {
            counters,
            setup,
            transitions,
            health,
            end,
            ..
        } = inner;
        let scene = known(setup, transitions, health, *end, self.control.get(), now);
        for c in counters.iter_mut() {
            f(c, &scene);
        }
    }

    /// Counts request `id` and queues it for the sinks.
    fn finalize(&self, inner: &mut Inner, id: u64, now: Option<Duration>) {
        let Some(open) = inner.open.remove(&id) else {
            return;
        };
        let record = open.joined();
        self.count(inner, now, |c, scene| c.request(&record, scene));
        inner
            .routes
            .entry(record.route.clone())
            .or_default()
            .add(&record);
        inner
            .live
            .entry(record.route.clone())
            .or_default()
            .add(&record);
        if !inner.setup.recent.is_zero() {
            inner.recent.insert(id, record.clone());
        }
        if !inner.setup.sinks.is_empty() || inner.setup.keep {
            inner.ready.insert(id, record);
        } else if !inner.route_order.contains(&record.route) {
            inner.route_order.push(record.route);
        }
    }

    /// Hands final requests to the sinks in id order (all of them at the
    /// end, over any gap an unanswered request left).
    fn emit(&self, inner: &mut Inner, all: bool) {
        loop {
            let next = match inner.ready.first_key_value() {
                Some((&id, _)) if all || id == inner.next_out => id,
                Some((&id, _))
                    if !inner.open.contains_key(&inner.next_out) && id > inner.next_out =>
                {
                    // The next id is neither open nor ready: it never
                    // finished and was dropped; go on.
                    id
                }
                _ => break,
            };
            let Some(record) = inner.ready.remove(&next) else {
                break;
            };
            inner.next_out = next + 1;
            if !inner.route_order.contains(&record.route) {
                inner.route_order.push(record.route.clone());
            }
            let Inner {
                setup, sink_error, ..
            } = &mut *inner;
            for sink in setup.sinks.iter_mut() {
                if let Err(e) = sink.record(&record)
                    && sink_error.is_none()
                {
                    *sink_error = Some(e);
                }
            }
            if inner.setup.keep {
                inner.kept_requests.push(record);
            }
        }
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

    /// Counts everything left and closes the sinks.
    pub fn finish(&self) -> std::io::Result<Counted> {
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
        let routes = inner
            .route_order
            .iter()
            .map(|r| (r.clone(), inner.routes.get(r).cloned().unwrap_or_default()))
            .collect();
        Ok(Counted {
            tallies: inner.counters.iter().map(Counter::tally).collect(),
            routes,
            target_hits: inner.target_hits,
            instance_hits: std::mem::take(&mut inner.instance_hits),
            requests: std::mem::take(&mut inner.kept_requests),
        })
    }
}

/// The scene of the windows: the run as known at `now` (the end: all).
fn known<'a>(
    setup: &'a StreamSetup,
    transitions: &'a [Transition],
    health: &'a [HealthChange],
    end: Duration,
    control: Option<&'a Arc<Control>>,
    now: Option<Duration>,
) -> Known<'a> {
    Known {
        end,
        fault_spans: &setup.fault_spans,
        phases: &setup.phases,
        transitions,
        health,
        control: control.map(|c| &**c),
        now: now.unwrap_or(end),
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

#[cfg(test)]
mod tests;
