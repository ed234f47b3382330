//! The runtime side of a fault list: which faults are active now, which
//! traffic they match, and the seeded probability roll.
//!
//! The list can be replaced while traffic runs (the control plane adds and
//! removes toxics): readers take an immutable [`Snapshot`] once per
//! connection, chunk or request, and a replace publishes a new one. Each
//! fault keeps its RNG stream and injection counter across replaces, keyed by
//! its name, so editing one fault does not shift the sequence another sees.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use rand::Rng;
use tokio::sync::watch;

use super::spec::{Fault, FaultKind};
use crate::clock::{self, Duration, Instant};
use crate::trace::Outcome;

mod shelf;
mod snapshot;

pub use self::snapshot::Snapshot;
use self::snapshot::{FaultState, Occurrences};

/// A fault list bound to a start instant and a seed, replaceable at runtime.
#[derive(Debug)]
pub struct FaultPlan {
    /// The current list; replaced whole or extended, never edited in place.
    current: RwLock<Published>,
    /// The version of `current`, readable without the lock (checked once
    /// per chunk by running connections).
    version: AtomicU64,
    /// Wakes listeners and idle connections when the list is replaced.
    changes: watch::Sender<u64>,
    /// Time zero of every fault window.
    start: Instant,
    /// Seed of every fault's RNG stream.
    seed: u64,
    /// Every HTTP request that entered the proxy, when a run records them:
    /// these are the calls that reached the dependency (answered by the
    /// target or by a fault in its place).
    arrivals: Option<Mutex<Vec<Arrival>>>,
    /// A user's service's dependency: the headers in which the load's
    /// requests carry their ids (`system.correlation`), read from each
    /// arrival the service passed them on to. Set once, before the load.
    correlation: OnceLock<crate::http::headers::Correlation>,
    /// Injections of faults no longer in the list, by name (a halt or an
    /// interrupt removes every fault; the report still counts them).
    retired: Mutex<std::collections::BTreeMap<String, u64>>,
    /// Whether faults may be added while traffic runs (the control
    /// plane's proxies). Otherwise the list only ever shrinks (interrupt,
    /// halt), so a connection no fault hit can never be hit later and runs
    /// on the plain copy loop without watching for changes.
    additions: bool,
}

/// The list published now, and what a writer needs to extend it.
#[derive(Debug)]
struct Published {
    /// The list readers take.
    snapshot: Arc<Snapshot>,
    /// How many faults of each name it holds, so a fault added to it finds
    /// its occurrence without a scan.
    occurrences: Occurrences,
}

/// One HTTP request that entered the proxy.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Arrival {
    /// Offset from the plan's start.
    pub at: Duration,
    /// Request path.
    pub path: String,
    /// The load request it belongs to: the load generator's
    /// `x-firedrill-request-id`, else the id in a correlation header the
    /// service passed on (see [`FaultPlan::correlate`]), if present.
    pub request_id: Option<u64>,
}

/// One fault chosen for a connection or request. Owns its snapshot, so it
/// stays valid when the list is replaced under it.
#[derive(Debug, Clone)]
pub struct Hit {
    /// Index of the fault in its snapshot.
    pub index: usize,
    /// The snapshot the fault was chosen from.
    snapshot: Arc<Snapshot>,
}

impl Hit {
    /// The fault.
    pub fn fault(&self) -> &Fault {
        &self.snapshot.entry(self.index).fault
    }

    fn state(&self) -> &FaultState {
        &self.snapshot.entry(self.index).state
    }
}

/// A connection's probability rolls against one snapshot. When the list is
/// replaced, [`FaultPlan::roll_connection`] keeps the rolls of faults that
/// did not change and rolls only new or edited ones (as Toxiproxy applies a
/// new toxic to open connections).
#[derive(Debug, Clone)]
pub struct ConnectionRolls {
    /// The snapshot rolled against.
    snapshot: Arc<Snapshot>,
    /// Per fault of the snapshot: whether it hit this connection.
    rolled: Vec<bool>,
    /// Per fault of the snapshot: when it began acting on this connection
    /// (its roll; kept while the fault is unchanged), where Toxiproxy
    /// starts a toxic's `Pipe` (its `timeout` counts from there).
    since: Vec<Instant>,
}

impl ConnectionRolls {
    /// The version of the snapshot these rolls belong to.
    pub fn version(&self) -> u64 {
        self.snapshot.version
    }

    /// The faults that hit the connection.
    pub fn hits(&self) -> impl Iterator<Item = Hit> + '_ {
        self.rolled
            .iter()
            .enumerate()
            .filter(|(_, hit)| **hit)
            .map(|(index, _)| Hit {
                index,
                snapshot: self.snapshot.clone(),
            })
    }

    /// When a hit's fault began acting on this connection.
    pub fn since(&self, hit: &Hit) -> Instant {
        self.since[hit.index]
    }

    /// Whether no fault hit the connection (the fast path).
    pub fn is_clean(&self) -> bool {
        !self.rolled.iter().any(|h| *h)
    }
}

impl FaultPlan {
    /// A plan whose windows count from `start`, rolling with `seed`.
    pub fn new(faults: Vec<Fault>, seed: u64, start: Instant) -> FaultPlan {
        let (snapshot, occurrences) = Snapshot::build(faults, seed, 0, None);
        FaultPlan {
            current: RwLock::new(Published {
                snapshot: Arc::new(snapshot),
                occurrences,
            }),
            version: AtomicU64::new(0),
            changes: watch::Sender::new(0),
            start,
            seed,
            arrivals: None,
            correlation: OnceLock::new(),
            retired: Mutex::new(std::collections::BTreeMap::new()),
            additions: false,
        }
    }

    /// The same plan, accepting faults added while traffic runs.
    pub fn accepting_additions(mut self) -> FaultPlan {
        self.additions = true;
        self
    }

    /// Whether faults may be added while traffic runs.
    pub fn accepts_additions(&self) -> bool {
        self.additions
    }

    /// The same plan, recording every HTTP request that enters the proxy.
    pub fn recording_arrivals(mut self) -> FaultPlan {
        self.arrivals = Some(Mutex::new(Vec::new()));
        self
    }

    /// Reads the load's request ids from these correlation headers too
    /// (a user's service's dependency); only the first call counts.
    pub fn correlate(&self, correlation: crate::http::headers::Correlation) {
        let _ = self.correlation.set(correlation);
    }

    /// Notes an HTTP request entering the proxy (when recording), and
    /// returns the load request it belongs to, when its headers say (its
    /// `x-firedrill-request-id`, or a correlation header the service
    /// passed on).
    pub fn note_arrival(&self, path: &str, headers: &http::HeaderMap) -> Option<u64> {
        let log = self.arrivals.as_ref()?;
        let request_id = crate::http::headers::load_request_id(headers)
            .or_else(|| self.correlation.get()?.request_id(headers));
        let at = self.elapsed();
        log.lock().unwrap_or_else(|e| e.into_inner()).push(Arrival {
            at,
            path: path.to_string(),
            request_id,
        });
        request_id
    }

    /// Notes an arrival seen elsewhere (a fault proxy on another host,
    /// whose records the drill reads back), when recording.
    pub fn push_arrival(&self, arrival: Arrival) {
        if let Some(log) = &self.arrivals {
            log.lock().unwrap_or_else(|e| e.into_inner()).push(arrival);
        }
    }

    /// The requests recorded so far, in arrival order.
    pub fn arrivals(&self) -> Vec<Arrival> {
        self.arrivals.as_ref().map_or_else(Vec::new, |log| {
            log.lock().unwrap_or_else(|e| e.into_inner()).clone()
        })
    }

    /// The requests recorded since the last call, in arrival order: the
    /// log is emptied, so a long run that reads it as it goes keeps none.
    pub fn take_arrivals(&self) -> Vec<Arrival> {
        self.arrivals.as_ref().map_or_else(Vec::new, |log| {
            std::mem::take(&mut *log.lock().unwrap_or_else(|e| e.into_inner()))
        })
    }

    /// A plan with no faults: the proxy is invisible.
    pub fn empty() -> FaultPlan {
        FaultPlan::new(Vec::new(), 0, clock::now())
    }

    /// Replaces the fault list. Open connections and the listener pick the
    /// new list up at their next chunk, request or accept; a fault that keeps
    /// its name keeps its RNG stream and counter.
    pub fn replace(&self, faults: Vec<Fault>) {
        let mut current = self.current.write().unwrap_or_else(|e| e.into_inner());
        let version = current.snapshot.version + 1;
        let (next, occurrences) =
            Snapshot::build(faults, self.seed, version, Some(&current.snapshot));
        let mut retired = self.retired.lock().unwrap_or_else(|e| e.into_inner());
        let kept: std::collections::BTreeSet<*const FaultState> =
            next.entries().map(|e| Arc::as_ptr(&e.state)).collect();
        for entry in current.snapshot.entries() {
            if !kept.contains(&Arc::as_ptr(&entry.state)) {
                *retired.entry(entry.fault.name.clone()).or_default() +=
                    entry.state.injected.load(Ordering::Relaxed);
            }
        }
        drop(retired);
        *current = Published {
            snapshot: Arc::new(next),
            occurrences,
        };
        self.published(version, current);
    }

    /// Adds `faults` after the current list, as [`FaultPlan::replace`]
    /// with the list and them would, at the cost of the faults added: the
    /// list's faults are shared, not copied or looked at (the control
    /// plane adds a toxic at a time, thousands to a proxy).
    pub fn add(&self, faults: Vec<Fault>) {
        let mut current = self.current.write().unwrap_or_else(|e| e.into_inner());
        let version = current.snapshot.version + 1;
        let Published {
            snapshot,
            occurrences,
        } = &mut *current;
        let next = snapshot.extended(faults, self.seed, version, occurrences);
        current.snapshot = Arc::new(next);
        self.published(version, current);
    }

    /// Makes publication `version`, just written to `current`, known to
    /// readers, after the write lock is let go.
    fn published(&self, version: u64, current: std::sync::RwLockWriteGuard<'_, Published>) {
        self.version.store(version, Ordering::Release);
        drop(current);
        self.changes.send_replace(version);
    }

    /// The faults of the current list but those named `name`.
    pub fn without(&self, name: &str) -> Vec<Fault> {
        self.snapshot()
            .iter()
            .filter(|f| f.name != name)
            .cloned()
            .collect()
    }

    /// Removes the faults named `name` (the others keep their state).
    pub fn remove_named(&self, name: &str) {
        self.replace(self.without(name));
    }

    /// Removes every fault (interrupt, halt): the proxy is invisible from
    /// the next chunk, request or accept on.
    pub fn remove_all(&self) {
        self.replace(Vec::new());
        tracing::info!("every fault removed");
    }

    /// The current fault list.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .snapshot
            .clone()
    }

    /// The version of the current list (cheap: one atomic load).
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// A receiver that wakes when the list is replaced.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The faults of the plan, as of now.
    pub fn faults(&self) -> Arc<Snapshot> {
        self.snapshot()
    }

    /// Time since the plan's start.
    pub fn elapsed(&self) -> Duration {
        clock::now().saturating_duration_since(self.start)
    }

    /// The plan's time zero.
    pub fn start(&self) -> Instant {
        self.start
    }

    /// Fault `index` of the current list, as a hit.
    pub fn hit(&self, index: usize) -> Hit {
        Hit {
            index,
            snapshot: self.snapshot(),
        }
    }

    /// Whether a hit's fault is active now.
    pub fn hit_active(&self, hit: &Hit) -> bool {
        hit.fault().window.is_active(self.elapsed())
    }

    /// When a hit's fault activity next changes, as an instant.
    pub fn hit_next_change(&self, hit: &Hit) -> (bool, Option<Instant>) {
        let (active, at) = hit.fault().window.next_change(self.elapsed());
        (active, at.map(|d| self.start + d))
    }

    fn roll_hit(hit: &Hit) -> bool {
        let p = hit.fault().probability.fraction();
        if p >= 1.0 {
            return true;
        }
        if p <= 0.0 {
            return false;
        }
        Self::draw(hit) < p
    }

    fn draw(hit: &Hit) -> f64 {
        let mut rng = hit.state().rng.lock().unwrap_or_else(|e| e.into_inner());
        rng.random::<f64>()
    }

    /// A uniform draw in `[0, 1)` from a hit's fault stream.
    pub fn hit_uniform(&self, hit: &Hit) -> f64 {
        Self::draw(hit)
    }

    /// [`FaultPlan::latency_delay`] for a hit.
    pub fn hit_delay(&self, hit: &Hit, latency: &super::spec::Latency) -> Duration {
        let delay = latency.delay.get();
        let jitter = latency.jitter.get();
        if jitter.is_zero() {
            return delay;
        }
        let offset = (Self::draw(hit) * 2.0 - 1.0) * jitter.as_secs_f64();
        // Saturating: a delay beyond `Duration` is the longest one.
        Duration::try_from_secs_f64((delay.as_secs_f64() + offset).max(0.0))
            .unwrap_or(Duration::MAX)
    }

    /// Counts one injection of a hit's fault and logs it: the first at
    /// info level, the others at debug (a fault on every request would
    /// otherwise write a line per request; the counts are kept).
    pub fn record_hit(&self, hit: &Hit, target: &str) {
        let before = hit.state().injected.fetch_add(1, Ordering::Relaxed);
        let fault = hit.fault();
        if before == 0 {
            tracing::info!(fault = %super::LogName(&fault.name), kind = fault.kind.key(), %target, "fault injected");
        } else {
            tracing::debug!(fault = %super::LogName(&fault.name), kind = fault.kind.key(), %target, "fault injected");
        }
    }

    /// How many times each fault was injected, by name, over the plan's
    /// life (removed faults included).
    pub fn injected_by_name(&self) -> std::collections::BTreeMap<String, u64> {
        let mut all = self
            .retired
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let snapshot = self.snapshot();
        for entry in snapshot.entries() {
            *all.entry(entry.fault.name.clone()).or_default() +=
                entry.state.injected.load(Ordering::Relaxed);
        }
        all
    }

    /// How many times fault `index` of the current list was injected.
    pub fn injected(&self, index: usize) -> u64 {
        self.hit(index).state().injected.load(Ordering::Relaxed)
    }

    /// Rolls a connection against the current list. With `previous`, faults
    /// unchanged since then keep their roll; new or edited ones roll now.
    pub fn roll_connection(&self, previous: Option<&ConnectionRolls>) -> ConnectionRolls {
        let snapshot = self.snapshot();
        let now = clock::now();
        let mut earlier = previous.map(Earlier::new);
        let (rolled, since) = snapshot
            .entries()
            .enumerate()
            .map(|(index, entry)| {
                if matches!(
                    entry.fault.kind,
                    FaultKind::Refuse
                        | FaultKind::Status(_)
                        | FaultKind::Grpc(_)
                        | FaultKind::GoAway
                ) {
                    return (false, now);
                }
                let kept = earlier.as_mut().and_then(|e| e.roll_of(index, entry));
                kept.unwrap_or_else(|| {
                    let hit = Hit {
                        index,
                        snapshot: snapshot.clone(),
                    };
                    (Self::roll_hit(&hit), now)
                })
            })
            .unzip();
        ConnectionRolls {
            snapshot,
            rolled,
            since,
        }
    }

    /// The faults that hit one HTTP request now: active, matching, and
    /// rolled, in file order.
    pub fn pick_request(
        &self,
        method: &http::Method,
        path: &str,
        headers: &http::HeaderMap,
    ) -> Vec<Hit> {
        let snapshot = self.snapshot();
        if snapshot.is_empty() {
            return Vec::new();
        }
        let elapsed = self.elapsed();
        let now = clock::now();
        snapshot
            .entries()
            .enumerate()
            .filter(|(_, entry)| {
                let f = &entry.fault;
                !matches!(f.kind, FaultKind::Refuse)
                    && f.matcher.matches(method, path, headers)
                    && Self::cold_enough(f, &entry.state, now)
                    && f.window.is_active(elapsed)
            })
            .map(|(index, _)| Hit {
                index,
                snapshot: snapshot.clone(),
            })
            .filter(Self::roll_hit)
            .collect()
    }

    /// Whether a matching request arriving `now` may be hit by `fault`:
    /// always, unless the fault has `after_idle`, which hits only a request
    /// that comes after that long without one (a cold start). Notes the
    /// arrival either way.
    fn cold_enough(fault: &Fault, state: &FaultState, now: Instant) -> bool {
        match fault.after_idle {
            Some(idle) => state.idle_for(idle, now),
            None => true,
        }
    }

    /// The recorded answer a `replay` hit gives a request arriving now:
    /// drawn from the recording's bucket at the time into the fault's
    /// window, from its cold calls when the request comes after
    /// `cold_after` without one; `None` past the end of the recording.
    pub fn hit_replay(&self, hit: &Hit, replay: &super::replay::Replay) -> Option<Outcome> {
        let model = replay.model.as_ref()?;
        let cold = replay
            .fields
            .cold_after
            .is_some_and(|idle| hit.state().idle_for(idle.get(), clock::now()));
        let into = self.elapsed().saturating_sub(hit.fault().window.start);
        model.draw(into, cold, Self::draw(hit))
    }

    /// Whether the listener must refuse connections now, and when that next
    /// changes.
    pub fn refusing(&self) -> (bool, Option<Instant>) {
        let snapshot = self.snapshot();
        let mut refusing = false;
        let mut next: Option<Instant> = None;
        for f in snapshot.iter() {
            if f.kind != FaultKind::Refuse {
                continue;
            }
            let (active, change) = f.window.next_change(self.elapsed());
            refusing |= active;
            if let Some(c) = change.map(|d| self.start + d) {
                next = Some(next.map_or(c, |n| n.min(c)));
            }
        }
        (refusing, next)
    }
}
/// A connection's earlier rolls, looked up by fault state: at the same
/// place first (a list only added to keeps every place), else through an
/// index built once.
struct Earlier<'a> {
    /// The rolls.
    rolls: &'a ConnectionRolls,
    /// The place of each state in their snapshot, once one was not found
    /// at its own place.
    places: Option<std::collections::BTreeMap<*const FaultState, usize>>,
}

impl<'a> Earlier<'a> {
    fn new(rolls: &'a ConnectionRolls) -> Self {
        Earlier {
            rolls,
            places: None,
        }
    }

    /// The roll and its instant of the fault that `entry` (at `index` of
    /// the new list) was earlier, if it is unchanged.
    fn roll_of(&mut self, index: usize, entry: &snapshot::Entry) -> Option<(bool, Instant)> {
        let old = &self.rolls.snapshot;
        let state = Arc::as_ptr(&entry.state);
        let same_place =
            (index < old.len() && Arc::as_ptr(&old.entry(index).state) == state).then_some(index);
        let place = match same_place {
            Some(place) => place,
            None => *self
                .places
                .get_or_insert_with(|| {
                    old.entries()
                        .enumerate()
                        .map(|(i, e)| (Arc::as_ptr(&e.state), i))
                        .collect()
                })
                .get(&state)?,
        };
        let was = &old.entry(place).fault;
        (was.kind == entry.fault.kind && was.probability == entry.fault.probability)
            .then(|| (self.rolls.rolled[place], self.rolls.since[place]))
    }
}

#[cfg(test)]
mod tests;
