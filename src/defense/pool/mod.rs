//! Upstream pools: several servers of one dependency behind a route, the
//! proxy-level breaker of NGINX Plus. A server leaves rotation on failed
//! attempts (passive) or failed health checks (active), comes back with a
//! slow start, and backups answer only when every primary is out.
//!
//! * [`config`] — the `pools:` YAML section, validated.
//! * [`check_config`] — its `health_check:`, validated.
//! * [`balancer`] — smooth weighted round robin and least connections.
//! * [`health`] — one server's health, passive and active, a pure machine.
//! * [`outlier`] — Envoy's outlier detection over the pool, a pure machine.
//! * [`slow_start`] — the weight ramp of a returning server.
//! * [`probe`] — the active check task, on the run's clock.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use super::report::{HealthChange, Observer, ServedBy};
use crate::clock::{self, Duration, Instant};
use crate::http::client::Upstream;

pub mod balancer;
pub mod check_config;
pub mod config;
pub mod health;
pub mod outlier;
pub mod probe;
pub mod slow_start;

use self::balancer::{Candidate, RoundRobin};
use self::config::{Balance, PoolConfig};
use self::health::{Limits, ServerHealth};
use self::outlier::{Answer, Detector};

/// The header naming the pool server that answered a call.
pub const POOL_SERVER_HEADER: &str = "x-firedrill-pool-server";

/// The header (`1`) on an answer from a backup server.
pub const POOL_BACKUP_HEADER: &str = "x-firedrill-pool-backup";

/// The header (`1`) on every active health-check request.
pub const HEALTH_CHECK_HEADER: &str = "x-firedrill-health-check";

/// One server of a running pool.
pub struct Server {
    /// Its name.
    pub name: String,
    /// Used only when every primary is out.
    pub backup: bool,
    /// Configured weight.
    weight: u32,
    /// Where its calls go.
    upstream: Arc<dyn Upstream>,
    /// Attempts sent to it.
    requests: AtomicU64,
    /// Attempts in flight.
    in_flight: AtomicU64,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.name)
            .field("backup", &self.backup)
            .finish()
    }
}

impl Server {
    /// Attempts sent to it so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Attempts in flight now.
    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Relaxed)
    }
}

/// What changes with every call and check.
struct PoolState {
    /// Health of each server, by index.
    health: Vec<ServerHealth>,
    /// Round-robin state.
    rr: RoundRobin,
    /// Envoy's outlier detection, when the pool has it.
    outlier: Option<Detector>,
}

impl PoolState {
    /// Whether server `index` takes calls: in rotation as last reported
    /// and not ejected by the outlier detection.
    fn up(&self, index: usize) -> bool {
        self.health[index].reported_up()
            && !self.outlier.as_ref().is_some_and(|d| d.is_ejected(index))
    }
}

/// A running pool, shared by the routes that use it.
pub struct Pool {
    /// Its name.
    name: String,
    /// Its configuration.
    config: PoolConfig,
    /// Its servers, in configuration order.
    servers: Vec<Server>,
    /// Health and balancing state.
    state: Mutex<PoolState>,
    /// Time zero of health changes.
    run_start: Instant,
    /// Who hears about health changes.
    observer: Arc<dyn Observer>,
    /// Woken when a passive ejection starts, so the return timer re-reads
    /// its deadline.
    ejected: Arc<Notify>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").field("name", &self.name).finish()
    }
}

impl Pool {
    /// A pool of `config` whose servers are reached through `upstreams`
    /// (one per server, in order). Call [`Pool::start`] to run its checks.
    pub fn new(
        name: &str,
        config: &PoolConfig,
        upstreams: Vec<Arc<dyn Upstream>>,
        run_start: Instant,
        observer: Arc<dyn Observer>,
    ) -> Arc<Pool> {
        let checked = config.health_check.as_ref().is_some_and(|c| c.mandatory);
        let servers: Vec<Server> = config
            .servers
            .iter()
            .zip(upstreams)
            .map(|(s, upstream)| Server {
                name: s.name.clone(),
                backup: s.backup,
                weight: s.weight,
                upstream,
                requests: AtomicU64::new(0),
                in_flight: AtomicU64::new(0),
            })
            .collect();
        Arc::new(Pool {
            name: name.to_string(),
            state: Mutex::new(PoolState {
                health: servers.iter().map(|_| ServerHealth::new(checked)).collect(),
                rr: RoundRobin::new(servers.len()),
                outlier: config
                    .outlier_detection
                    .clone()
                    .map(|c| Detector::new(c, servers.len(), clock::now())),
            }),
            servers,
            config: config.clone(),
            run_start,
            observer,
            ejected: Arc::new(Notify::new()),
        })
    }

    /// Spawns the pool's tasks: one active check per server (the first at
    /// once) and the timer that brings passively ejected servers back.
    pub fn start(self: &Arc<Self>) {
        if let Some(check) = &self.config.health_check {
            for index in 0..self.servers.len() {
                tokio::spawn(probe::run(
                    Arc::downgrade(self),
                    index,
                    check.clone(),
                    self.servers[index].upstream.clone(),
                ));
            }
        }
        if self.config.tracks_passively() {
            tokio::spawn(passive_returns(Arc::downgrade(self)));
        }
        if self.config.outlier_detection.is_some() {
            tokio::spawn(outlier_sweeps(Arc::downgrade(self)));
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its servers.
    pub fn servers(&self) -> &[Server] {
        &self.servers
    }

    /// Whether each server is in rotation (as last reported), by index.
    pub fn healthy(&self) -> Vec<bool> {
        let state = self.lock();
        (0..self.servers.len()).map(|i| state.up(i)).collect()
    }

    /// The limits server `index`'s health follows.
    fn limits(&self, index: usize) -> Limits {
        let check = self.config.health_check.as_ref();
        Limits {
            max_fails: self.config.max_fails_of(index),
            fail_timeout: self.config.fail_timeout_of(index),
            fails: check.map_or(1, |c| c.fails),
            passes: check.map_or(1, |c| c.passes),
        }
    }

    fn lock(&self) -> MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Chooses a server for one attempt now: among the primaries in
    /// rotation, else among the backups in rotation; `None` when every
    /// server is out.
    ///
    /// Every decision of the pool (a pick, a check's result, an attempt's
    /// answer) reads the clock under its lock, so the times of picks and
    /// health changes are in the order the pool made them: a call picked
    /// after an ejection is stamped after it.
    pub fn pick(self: &Arc<Self>) -> Option<Lease> {
        self.pick_untried(&[])
    }

    /// As [`Pool::pick`], leaving out the servers at `tried` (a request
    /// passed on to the next server, as NGINX's `proxy_next_upstream`
    /// does: the primaries not yet tried, then the backups).
    pub fn pick_untried(self: &Arc<Self>, tried: &[usize]) -> Option<Lease> {
        let mut changes = Vec::new();
        let (chosen, now) = {
            let mut state = self.lock();
            let now = clock::now();
            self.settle_all(&mut state, now, &mut changes);
            self.sweep(&mut state, now, &mut changes);
            let up = (0..self.servers.len()).filter(|&i| state.up(i)).count();
            // Envoy's panic: too few in rotation, every server takes calls.
            let panic = state.outlier.as_ref().is_some_and(|d| d.in_panic(up));
            let candidates = |backup: bool| -> Vec<Candidate> {
                self.servers
                    .iter()
                    .enumerate()
                    .filter(|(i, s)| {
                        s.backup == backup && (panic || state.up(*i)) && !tried.contains(i)
                    })
                    .map(|(index, s)| Candidate {
                        index,
                        weight: slow_start::effective_weight(
                            s.weight,
                            state.health[index].back_since().map(|t| now - t),
                            self.config.slow_start,
                        ),
                        in_flight: s.in_flight(),
                    })
                    .collect()
            };
            let mut eligible = candidates(false);
            if eligible.is_empty() {
                eligible = candidates(true);
            }
            let chosen = match self.config.balance {
                Balance::RoundRobin => state.rr.pick(&eligible),
                Balance::LeastConn => state.rr.least_conn(&eligible),
            };
            (chosen, now)
        };
        self.publish(changes);
        let index = chosen?;
        let server = &self.servers[index];
        server.requests.fetch_add(1, Ordering::Relaxed);
        server.in_flight.fetch_add(1, Ordering::Relaxed);
        Some(Lease {
            pool: self.clone(),
            index,
            picked: now - self.run_start,
        })
    }

    /// An active check of server `index` ended; `failure` says why it
    /// failed (`None`: passed).
    pub fn checked(&self, index: usize, failure: Option<&str>) {
        let what = self
            .config
            .health_check
            .as_ref()
            .map_or(String::new(), |c| format!("GET {}", c.uri));
        let limits = self.limits(index);
        let mut changes = Vec::new();
        {
            let mut state = self.lock();
            let now = clock::now();
            let by = state.health[index].on_check(&what, failure, &limits);
            if let Some(by) = by {
                self.settle(&mut state, index, now, by, &mut changes);
            }
        }
        self.publish(changes);
    }

    /// An attempt on server `index` ended, `failed` as the route judged
    /// it, with `answer` for the outlier detection.
    fn attempted(&self, index: usize, failed: bool, answer: Answer) {
        let limits = self.limits(index);
        let mut changes = Vec::new();
        {
            let mut state = self.lock();
            let now = clock::now();
            if let Some(by) = state.health[index].on_attempt(failed, now, &limits) {
                self.settle(&mut state, index, now, by, &mut changes);
                self.ejected.notify_one();
            }
            self.sweep(&mut state, now, &mut changes);
            let ejected = state
                .outlier
                .as_mut()
                .and_then(|d| d.on_answer(index, answer, now));
            if let Some(by) = ejected {
                changes.push(self.change(index, now, false, by));
            }
        }
        self.publish(changes);
    }

    /// Runs the outlier detection's sweeps due by `now`, reporting the
    /// servers they bring back.
    fn sweep(&self, state: &mut PoolState, now: Instant, changes: &mut Vec<HealthChange>) {
        let Some(detector) = state.outlier.as_mut() else {
            return;
        };
        for (index, at) in detector.advance(now) {
            let by = "outlier: back at the interval's sweep".to_string();
            changes.push(self.change(index, at, true, by));
        }
    }

    fn change(&self, index: usize, at: Instant, healthy: bool, by: String) -> HealthChange {
        HealthChange {
            at: at - self.run_start,
            pool: self.name.clone(),
            server: self.servers[index].name.clone(),
            healthy,
            by,
        }
    }

    /// Reports server `index`'s change at `now`, if its state changed.
    fn settle(
        &self,
        state: &mut PoolState,
        index: usize,
        now: Instant,
        by: String,
        changes: &mut Vec<HealthChange>,
    ) {
        if let Some(healthy) = state.health[index].settle(now) {
            changes.push(self.change(index, now, healthy, by));
        }
    }

    /// Brings back every server whose passive ejection has ended by `now`.
    fn settle_all(&self, state: &mut PoolState, now: Instant, changes: &mut Vec<HealthChange>) {
        for index in 0..self.servers.len() {
            if state.health[index].reported_up() != state.health[index].is_up(now) {
                let by = format!(
                    "passive: back after {} out",
                    crate::schema::units::Dur(self.config.fail_timeout_of(index))
                );
                self.settle(state, index, now, by, changes);
            }
        }
    }

    fn publish(&self, changes: Vec<HealthChange>) {
        for change in &changes {
            tracing::info!(
                pool = %change.pool,
                server = %change.server,
                healthy = change.healthy,
                by = %change.by,
                "pool server health"
            );
            self.observer.health(change);
        }
    }

    /// The next passive return after `now`, if any.
    fn next_return(&self, now: Instant) -> Option<Instant> {
        self.lock()
            .health
            .iter()
            .filter_map(|h| h.passive_return(now))
            .min()
    }
}

/// Brings passively ejected servers back when their `fail_timeout` ends,
/// even when no call comes to notice it.
async fn passive_returns(pool: std::sync::Weak<Pool>) {
    loop {
        let (next, ejected) = {
            let Some(pool) = pool.upgrade() else { return };
            (pool.next_return(clock::now()), pool.ejected.clone())
        };
        if !clock::deadline_or_wake(next, &ejected).await {
            continue;
        }
        let Some(pool) = pool.upgrade() else { return };
        let mut changes = Vec::new();
        {
            let mut state = pool.lock();
            pool.settle_all(&mut state, clock::now(), &mut changes);
        }
        pool.publish(changes);
    }
}

/// Runs the outlier detection's sweeps on time, even when no call comes.
async fn outlier_sweeps(pool: std::sync::Weak<Pool>) {
    loop {
        let next = {
            let Some(pool) = pool.upgrade() else { return };
            let state = pool.lock();
            let Some(detector) = state.outlier.as_ref() else {
                return;
            };
            detector.next_sweep()
        };
        clock::sleep_until(next).await;
        let Some(pool) = pool.upgrade() else { return };
        let mut changes = Vec::new();
        {
            let mut state = pool.lock();
            pool.sweep(&mut state, clock::now(), &mut changes);
        }
        pool.publish(changes);
    }
}

/// One attempt's hold on a server: counts it in flight until dropped.
#[derive(Debug)]
pub struct Lease {
    /// The pool.
    pool: Arc<Pool>,
    /// The server's index.
    index: usize,
    /// When the pool chose it, from the run's start (the clock its health
    /// changes are stamped on).
    picked: Duration,
}

impl Lease {
    /// The server's index in its pool.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Where the attempt goes.
    pub fn upstream(&self) -> &dyn Upstream {
        self.pool.servers[self.index].upstream.as_ref()
    }

    /// The server's name.
    pub fn server(&self) -> &str {
        &self.pool.servers[self.index].name
    }

    /// Whether the server is a backup.
    pub fn is_backup(&self) -> bool {
        self.pool.servers[self.index].backup
    }

    /// The server, for the call's report.
    pub fn served_by(&self) -> ServedBy {
        let server = &self.pool.servers[self.index];
        ServedBy {
            pool: self.pool.name.clone(),
            server: server.name.clone(),
            backup: server.backup,
            picked: self.picked,
        }
    }

    /// The attempt ended, `failed` (as the breaker classifies it) or not;
    /// for the outlier detection, a failure is a 500 and a success a 200.
    pub fn record(&self, failed: bool) {
        let answer = Answer::Status(if failed { 500 } else { 200 });
        self.record_answer(failed, answer);
    }

    /// The attempt ended, `failed` (as the route judged it) or not, with
    /// `answer` (what the outlier detection counts).
    pub fn record_answer(&self, failed: bool, answer: Answer) {
        self.pool.attempted(self.index, failed, answer);
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.pool.servers[self.index]
            .in_flight
            .fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests;
