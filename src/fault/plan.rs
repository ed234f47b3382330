//! The runtime side of a fault list: which faults are active now, which
//! traffic they match, and the seeded probability roll.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rand::Rng;

use super::spec::{Fault, FaultKind};
use crate::clock::{self, Duration, Instant, RunRng};

/// A fault list bound to a start instant and a seed.
#[derive(Debug)]
pub struct FaultPlan {
    /// The faults, in file order; indices are stable for the run.
    faults: Vec<Fault>,
    /// Time zero of every fault window.
    start: Instant,
    /// One RNG stream per fault, so adding a fault does not shift the
    /// sequence another one sees.
    rngs: Vec<Mutex<RunRng>>,
    /// How many times each fault was injected.
    injected: Vec<AtomicU64>,
    /// Set when a run is interrupted or halted: every fault is off.
    removed: AtomicBool,
}

/// One fault chosen for a connection or request.
#[derive(Debug, Clone, Copy)]
pub struct Hit<'a> {
    /// Index of the fault in the plan.
    pub index: usize,
    /// The fault.
    pub fault: &'a Fault,
}

impl FaultPlan {
    /// A plan whose windows count from `start`, rolling with `seed`.
    pub fn new(faults: Vec<Fault>, seed: u64, start: Instant) -> FaultPlan {
        let rngs = (0..faults.len())
            .map(|i| Mutex::new(clock::seeded_rng(seed, i as u64)))
            .collect();
        let injected = faults.iter().map(|_| AtomicU64::new(0)).collect();
        FaultPlan {
            faults,
            start,
            rngs,
            injected,
            removed: AtomicBool::new(false),
        }
    }

    /// A plan with no faults: the proxy is invisible.
    pub fn empty() -> FaultPlan {
        FaultPlan::new(Vec::new(), 0, clock::now())
    }

    /// The faults of the plan.
    pub fn faults(&self) -> &[Fault] {
        &self.faults
    }

    /// Time since the plan's start.
    pub fn elapsed(&self) -> Duration {
        clock::now().saturating_duration_since(self.start)
    }

    /// The plan's time zero.
    pub fn start(&self) -> Instant {
        self.start
    }

    /// Turns every fault off for good (interrupt, halt): from now on the
    /// proxy is invisible, connections held by a blackhole are released at
    /// their next check.
    pub fn remove_all(&self) {
        self.removed.store(true, Ordering::SeqCst);
        tracing::info!("every fault removed");
    }

    /// Whether [`FaultPlan::remove_all`] was called.
    pub fn is_removed(&self) -> bool {
        self.removed.load(Ordering::SeqCst)
    }

    /// Whether fault `index` is active now.
    pub fn is_active(&self, index: usize) -> bool {
        !self.is_removed() && self.faults[index].window.is_active(self.elapsed())
    }

    /// When fault `index`'s activity next changes, as an instant.
    pub fn next_change(&self, index: usize) -> (bool, Option<Instant>) {
        if self.is_removed() {
            return (false, None);
        }
        let (active, at) = self.faults[index].window.next_change(self.elapsed());
        (active, at.map(|d| self.start + d))
    }

    /// Rolls fault `index`'s probability (always true at 100 %).
    pub fn roll(&self, index: usize) -> bool {
        let p = self.faults[index].probability.fraction();
        if p >= 1.0 {
            return true;
        }
        if p <= 0.0 {
            return false;
        }
        let mut rng = self.rngs[index].lock().unwrap_or_else(|e| e.into_inner());
        rng.random::<f64>() < p
    }

    /// A uniform draw in `[0, 1)` from fault `index`'s stream (jitter,
    /// slice sizes).
    pub fn uniform(&self, index: usize) -> f64 {
        let mut rng = self.rngs[index].lock().unwrap_or_else(|e| e.into_inner());
        rng.random::<f64>()
    }

    /// The delay of a latency fault for one request or chunk: `delay`
    /// plus a uniform jitter in `[-jitter, +jitter]`, never below zero.
    pub fn latency_delay(&self, index: usize, latency: &super::spec::Latency) -> Duration {
        let delay = latency.delay.get();
        let jitter = latency.jitter.get();
        if jitter.is_zero() {
            return delay;
        }
        let offset = (self.uniform(index) * 2.0 - 1.0) * jitter.as_secs_f64();
        Duration::from_secs_f64((delay.as_secs_f64() + offset).max(0.0))
    }

    /// Counts one injection of fault `index` and logs it.
    pub fn record(&self, index: usize, target: &str) {
        self.injected[index].fetch_add(1, Ordering::Relaxed);
        let fault = &self.faults[index];
        tracing::info!(fault = %fault.name, kind = fault.kind.key(), %target, "fault injected");
    }

    /// How many times fault `index` was injected.
    pub fn injected(&self, index: usize) -> u64 {
        self.injected[index].load(Ordering::Relaxed)
    }

    /// The faults that hit a new TCP connection: every connection-level
    /// fault whose roll succeeds, active now or later (its window is checked
    /// as data flows).
    pub fn pick_connection(&self) -> Vec<Hit<'_>> {
        (0..self.faults.len())
            .filter(|&i| {
                !matches!(
                    self.faults[i].kind,
                    FaultKind::Refuse | FaultKind::Status(_)
                )
            })
            .filter(|&i| self.roll(i))
            .map(|index| Hit {
                index,
                fault: &self.faults[index],
            })
            .collect()
    }

    /// The faults that hit one HTTP request now: active, matching, and
    /// rolled, in file order.
    pub fn pick_request(
        &self,
        method: &http::Method,
        path: &str,
        headers: &http::HeaderMap,
    ) -> Vec<Hit<'_>> {
        let elapsed = self.elapsed();
        if self.is_removed() {
            return Vec::new();
        }
        (0..self.faults.len())
            .filter(|&i| {
                let f = &self.faults[i];
                !matches!(f.kind, FaultKind::Refuse)
                    && f.window.is_active(elapsed)
                    && f.matcher.matches(method, path, headers)
            })
            .filter(|&i| self.roll(i))
            .map(|index| Hit {
                index,
                fault: &self.faults[index],
            })
            .collect()
    }

    /// Whether the listener must refuse connections now, and when that next
    /// changes.
    pub fn refusing(&self) -> (bool, Option<Instant>) {
        let mut refusing = false;
        let mut next: Option<Instant> = None;
        for (i, f) in self.faults.iter().enumerate() {
            if f.kind != FaultKind::Refuse {
                continue;
            }
            let (active, change) = self.next_change(i);
            refusing |= active;
            if let Some(c) = change {
                next = Some(next.map_or(c, |n| n.min(c)));
            }
        }
        (refusing, next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::from_yaml_str;

    fn plan(yaml: &str, seed: u64) -> FaultPlan {
        let file: super::super::FaultFile = from_yaml_str("t.yaml", yaml).unwrap();
        FaultPlan::new(file.faults, seed, clock::now())
    }

    const THIRTY: &str = "faults:\n  - status: { code: 503 }\n    probability: 30%\n";

    fn sequence(p: &FaultPlan, n: usize) -> Vec<bool> {
        let h = http::HeaderMap::new();
        (0..n)
            .map(|_| !p.pick_request(&http::Method::GET, "/", &h).is_empty())
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn probability_30_percent_hits_within_two_points_over_10000_requests() {
        let hits = sequence(&plan(THIRTY, 42), 10_000)
            .iter()
            .filter(|h| **h)
            .count();
        let share = hits as f64 / 100.0;
        assert!((28.0..=32.0).contains(&share), "share {share}%");
    }

    #[tokio::test(start_paused = true)]
    async fn same_seed_gives_the_same_sequence_and_another_seed_does_not() {
        let a = sequence(&plan(THIRTY, 7), 1000);
        let b = sequence(&plan(THIRTY, 7), 1000);
        let c = sequence(&plan(THIRTY, 8), 1000);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[tokio::test(start_paused = true)]
    async fn refuse_window_reports_its_next_change() {
        let p = plan("faults:\n  - { refuse: {}, at: 2s, for: 3s }\n", 1);
        assert!(!p.refusing().0);
        tokio::time::advance(Duration::from_secs(2)).await;
        let (refusing, next) = p.refusing();
        assert!(refusing);
        assert_eq!(next, Some(p.start() + Duration::from_secs(5)));
    }
}
