//! The runtime side of a fault list: which faults are active now, which
//! traffic they match, and the seeded probability roll.
//!
//! The list can be replaced while traffic runs (the control plane adds and
//! removes toxics): readers take an immutable [`Snapshot`] once per
//! connection, chunk or request, and a replace publishes a new one. Each
//! fault keeps its RNG stream and injection counter across replaces, keyed by
//! its name, so editing one fault does not shift the sequence another sees.

use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use rand::Rng;
use tokio::sync::watch;

use super::spec::{Fault, FaultKind};
use crate::clock::{self, Duration, Instant, RunRng};
use crate::trace::Outcome;

/// A fault list bound to a start instant and a seed, replaceable at runtime.
#[derive(Debug)]
pub struct FaultPlan {
    /// The current list; replaced whole, never edited in place.
    current: RwLock<Arc<Snapshot>>,
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

/// One published fault list: the faults in order, each with its state.
#[derive(Debug)]
pub struct Snapshot {
    /// Which publication this is (0 for the list the plan started with).
    version: u64,
    /// The faults, in evaluation order.
    faults: Vec<Fault>,
    /// Per fault: RNG stream and counter, shared with earlier snapshots that
    /// held a fault of the same name.
    states: Vec<Arc<FaultState>>,
}

/// What a fault carries across replaces of the list.
#[derive(Debug)]
struct FaultState {
    /// This fault's own random stream (probability, jitter, slice sizes).
    rng: Mutex<RunRng>,
    /// How many times the fault was injected.
    injected: AtomicU64,
    /// When a request matching the fault last arrived (for `after_idle`).
    last_match: Mutex<Option<Instant>>,
}

impl FaultState {
    /// Whether a matching request arriving `now` comes after at least
    /// `idle` without one (the first ever does); notes the arrival.
    fn idle_for(&self, idle: Duration, now: Instant) -> bool {
        let mut last = self.last_match.lock().unwrap_or_else(|e| e.into_inner());
        let cold = last.is_none_or(|t| now.saturating_duration_since(t) >= idle);
        *last = Some(now);
        cold
    }
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
        &self.snapshot.faults[self.index]
    }

    fn state(&self) -> &FaultState {
        &self.snapshot.states[self.index]
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

impl Deref for Snapshot {
    type Target = [Fault];
    fn deref(&self) -> &[Fault] {
        &self.faults
    }
}

/// The RNG stream of the `occurrence`-th fault named `name` (FNV-1a), so a
/// fault's sequence depends on its name, not on its position in the list.
fn stream_of(name: &str, occurrence: usize) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in name.bytes().chain((occurrence as u64).to_le_bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// Names with their occurrence number (two faults may share a name: the
/// default name is the kind).
fn keys(faults: &[Fault]) -> Vec<(String, usize)> {
    let mut seen: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    faults
        .iter()
        .map(|f| {
            let n = seen.entry(f.name.as_str()).or_insert(0);
            *n += 1;
            (f.name.clone(), *n - 1)
        })
        .collect()
}

impl FaultPlan {
    /// A plan whose windows count from `start`, rolling with `seed`.
    pub fn new(faults: Vec<Fault>, seed: u64, start: Instant) -> FaultPlan {
        let snapshot = Self::build(faults, seed, 0, None);
        FaultPlan {
            current: RwLock::new(Arc::new(snapshot)),
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
        let request_id = headers
            .get(crate::http::headers::REQUEST_ID_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .or_else(|| self.correlation.get()?.request_id(headers));
        let at = self.elapsed();
        log.lock().unwrap_or_else(|e| e.into_inner()).push(Arrival {
            at,
            path: path.to_string(),
            request_id,
        });
        request_id
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

    fn build(faults: Vec<Fault>, seed: u64, version: u64, old: Option<&Snapshot>) -> Snapshot {
        // By key, so carrying n states over is n log n, not n^2 (the
        // control plane publishes the whole list on every toxic added).
        let old_states: std::collections::BTreeMap<(String, usize), &Arc<FaultState>> = old
            .map(|o| keys(&o.faults).into_iter().zip(&o.states).collect())
            .unwrap_or_default();
        let states = keys(&faults)
            .into_iter()
            .map(|key| {
                let kept = old_states.get(&key).map(|s| Arc::clone(s));
                kept.unwrap_or_else(|| {
                    Arc::new(FaultState {
                        rng: Mutex::new(clock::seeded_rng(seed, stream_of(&key.0, key.1))),
                        injected: AtomicU64::new(0),
                        last_match: Mutex::new(None),
                    })
                })
            })
            .collect();
        Snapshot {
            version,
            faults,
            states,
        }
    }

    /// Replaces the fault list. Open connections and the listener pick the
    /// new list up at their next chunk, request or accept; a fault that keeps
    /// its name keeps its RNG stream and counter.
    pub fn replace(&self, faults: Vec<Fault>) {
        let mut current = self.current.write().unwrap_or_else(|e| e.into_inner());
        let version = current.version + 1;
        let next = Self::build(faults, self.seed, version, Some(&current));
        let mut retired = self.retired.lock().unwrap_or_else(|e| e.into_inner());
        let kept: std::collections::BTreeSet<*const FaultState> =
            next.states.iter().map(Arc::as_ptr).collect();
        for (fault, state) in current.faults.iter().zip(&current.states) {
            if !kept.contains(&Arc::as_ptr(state)) {
                *retired.entry(fault.name.clone()).or_default() +=
                    state.injected.load(Ordering::Relaxed);
            }
        }
        drop(retired);
        *current = Arc::new(next);
        self.version.store(version, Ordering::Release);
        drop(current);
        self.changes.send_replace(version);
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
        for (fault, state) in snapshot.faults.iter().zip(&snapshot.states) {
            *all.entry(fault.name.clone()).or_default() += state.injected.load(Ordering::Relaxed);
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
        let (rolled, since) = (0..snapshot.faults.len())
            .map(|index| {
                let fault = &snapshot.faults[index];
                if matches!(fault.kind, FaultKind::Refuse | FaultKind::Status(_)) {
                    return (false, now);
                }
                let kept = previous.and_then(|p| {
                    let old = &p.snapshot;
                    (0..old.faults.len())
                        .find(|&i| {
                            Arc::ptr_eq(&old.states[i], &snapshot.states[index])
                                && old.faults[i].kind == fault.kind
                                && old.faults[i].probability == fault.probability
                        })
                        .map(|i| (p.rolled[i], p.since[i]))
                });
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
        if snapshot.faults.is_empty() {
            return Vec::new();
        }
        let elapsed = self.elapsed();
        let now = clock::now();
        (0..snapshot.faults.len())
            .filter(|&i| {
                let f = &snapshot.faults[i];
                !matches!(f.kind, FaultKind::Refuse)
                    && f.matcher.matches(method, path, headers)
                    && Self::cold_enough(f, &snapshot.states[i], now)
                    && f.window.is_active(elapsed)
            })
            .map(|index| Hit {
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
        for f in snapshot.faults.iter() {
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
#[cfg(test)]
mod tests;
