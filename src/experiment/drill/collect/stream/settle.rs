//! When a request is final: the stream's state, the requests still open,
//! the hits and requests counted as the clock passes them, and the final
//! requests handed to the sinks in id order.

use std::collections::{BTreeMap, VecDeque};

use super::counter::{Counter, Known, LiveCounts, known};
use super::{Stream, StreamSetup};
use crate::clock::Duration;
use crate::defense::breaker::Transition;
use crate::defense::report::{CallReport, HealthChange};
use crate::experiment::expect::tally::RouteTally;
use crate::experiment::kept::KeptRequest;
use crate::experiment::timeline::{RequestRecord, TargetHit};
use crate::fault::plan::Arrival;
use crate::spill::Spill;

/// A request not yet final.
#[derive(Debug)]
pub(super) struct Open {
    /// What the load recorded (complete once `finished`).
    pub(super) record: RequestRecord,
    /// The client has its answer or gave up.
    pub(super) finished: bool,
    /// The defense line's report is still to come.
    pub(super) awaiting_report: bool,
    /// Its report (the last, if there were several).
    pub(super) call: Option<CallReport>,
    /// Times it reached the dependency so far.
    pub(super) reached: u32,
    /// The latest event about it.
    pub(super) touched: Duration,
}

impl Open {
    /// The record joined with what is known of it now.
    pub(super) fn joined(&self) -> RequestRecord {
        let mut r = self.record.clone();
        r.reached_dependency = self.reached;
        if let Some(c) = &self.call {
            r.rejected_by = c.rejected_by;
            r.defense_error = c.error;
            r.breaker_state = c.breaker_state;
            r.attempts = c.attempts;
            r.fallback = r.fallback.or(c.fallback);
            r.served_by = c.served_by.clone().map(Box::new);
        }
        r
    }
}

/// The stream's state.
pub(super) struct Inner {
    pub(super) setup: StreamSetup,
    /// Requests sent and not yet final, by id.
    pub(super) open: BTreeMap<u64, Open>,
    /// Ids that may be final once the clock passes the time beside them.
    pub(super) due: VecDeque<(Duration, u64)>,
    /// Ids finished but waiting for a report, with the time they stop
    /// waiting.
    pub(super) overdue: VecDeque<(Duration, u64)>,
    /// Final requests waiting for a lower id before going to the sinks.
    pub(super) ready: BTreeMap<u64, RequestRecord>,
    /// The next id the sinks get.
    pub(super) next_out: u64,
    /// Target hits not yet judged, in arrival order.
    pub(super) hits: VecDeque<TargetHit>,
    /// Breaker transitions so far.
    pub(super) transitions: Vec<Transition>,
    /// Pool health changes so far.
    pub(super) health: Vec<HealthChange>,
    /// The run's end: planned, or when it was cut short.
    pub(super) end: Duration,
    /// One per expectation.
    pub(super) counters: Vec<Counter>,
    /// Per route over the run.
    pub(super) routes: BTreeMap<String, RouteTally>,
    /// Routes in the order of `load:`, then as they first appear.
    pub(super) route_order: Vec<String>,
    /// Per route, for a live view.
    pub(super) live: BTreeMap<String, LiveCounts>,
    /// Final requests sent within `recent` of now, for the halt watch.
    pub(super) recent: BTreeMap<u64, RequestRecord>,
    /// Hits counted.
    pub(super) target_hits: u64,
    /// Hits counted, per instance of the built-in target.
    pub(super) instance_hits: BTreeMap<String, u64>,
    /// Every request, when kept, on disk.
    pub(super) kept_requests: Option<Spill<KeptRequest>>,
    /// Every arrival with the index of its plan, when kept, on disk.
    pub(super) kept_arrivals: Option<Spill<(usize, Arrival)>>,
    /// The first error a sink gave.
    pub(super) sink_error: Option<std::io::Error>,
}

impl Stream {
    /// Takes the arrivals the plans recorded since the last look; those of
    /// several plans (instances, dependencies) join the hits in time order.
    pub(super) fn arrivals(&self, inner: &mut Inner) {
        let plans = self.plans.get().map_or(&[][..], Vec::as_slice);
        let mut batch = Vec::new();
        for (i, (plan, instance)) in plans.iter().enumerate() {
            // The plan's log is emptied as it is read; kept, every arrival
            // goes to the spill for the inference after the run.
            let arrivals = plan.take_arrivals();
            if let Some(kept) = &mut inner.kept_arrivals {
                for a in &arrivals {
                    kept.push(&(i, a.clone()));
                }
            }
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
    pub(super) fn step(&self, inner: &mut Inner, now: Duration) {
        self.advance(inner, Some(now));
    }

    pub(super) fn advance(&self, inner: &mut Inner, now: Option<Duration>) {
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
            if let Some(kept) = &mut inner.kept_requests {
                kept.push(&KeptRequest::from(record));
            }
        }
    }
}
