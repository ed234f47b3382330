//! Envoy's outlier detection for a pool: the pool-wide passive ejection
//! Envoy runs per cluster (`source/common/upstream/outlier_detection_impl.cc`),
//! the consecutive-error part of it. A pure machine over the pool's
//! servers: the caller passes the time of every answer and lets
//! [`Detector::advance`] run the interval sweeps that are due first.
//!
//! * An answer of 5xx adds to the server's 5xx run, one of 502, 503 or
//!   504 also to its gateway-failure run; any other status ends both runs.
//!   A refused connection counts as a 503, a timeout as a 504; a
//!   connection broken after it was made counts as nothing.
//! * A run that *reaches* its threshold (equal, not at least) asks for an
//!   ejection: granted when the ejected share, this server included, stays
//!   within `max_ejection_percent` of all servers (or, with
//!   `always_eject_one_host`, when none is out). Asked for or not granted,
//!   the run starts again, unless the server was already out.
//! * An ejected server stays out until a sweep finds that
//!   `min(base_ejection_time x its backoff, max_ejection_time)` has passed
//!   since its ejection. Sweeps run every `interval` from the pool's start,
//!   and only they return servers. Each ejection adds one to the backoff
//!   (up to one step past `max_ejection_time`); each sweep that finds a
//!   server in rotation for at least one interval since its return takes
//!   one off.

use crate::clock::{Duration, Instant};
use crate::schema::units::{Dur, Percent};

/// The outlier detection of a pool, as Envoy's `outlier_detection` of a
/// cluster, with Envoy's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct OutlierConfig {
    /// 5xx answers in a row that eject a server (0: off).
    pub consecutive_5xx: u32,
    /// 502, 503 or 504 answers in a row that eject a server (0: off, as
    /// Envoy's default `enforcing_consecutive_gateway_failure: 0`).
    pub consecutive_gateway_failure: u32,
    /// Time between two sweeps, from the pool's start.
    pub interval: Duration,
    /// Time out of rotation for the first ejection; multiplied by the
    /// server's backoff.
    pub base_ejection_time: Duration,
    /// The longest time out of rotation.
    pub max_ejection_time: Duration,
    /// The largest share of the pool's servers out at once.
    pub max_ejection_percent: Percent,
    /// Eject one server even when the share forbids it, if none is out.
    pub always_eject_one_host: bool,
    /// Below this share of servers in rotation, calls go to every server,
    /// ejected or not (Envoy's `healthy_panic_threshold`; 0 %: never).
    pub panic_threshold: Percent,
}

impl Default for OutlierConfig {
    fn default() -> Self {
        OutlierConfig {
            consecutive_5xx: 5,
            consecutive_gateway_failure: 0,
            interval: Duration::from_secs(10),
            base_ejection_time: Duration::from_secs(30),
            max_ejection_time: Duration::from_secs(300),
            max_ejection_percent: Percent::new(10.0).expect("in range"),
            always_eject_one_host: false,
            panic_threshold: Percent::new(50.0).expect("in range"),
        }
    }
}

/// What an attempt on a server came to, as the detector counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// A response with this status.
    Status(u16),
    /// The connection could not be made (counted as a 503).
    ConnectFailed,
    /// No answer within the timeout (counted as a 504).
    Timeout,
    /// The connection broke after it was made (not counted).
    Reset,
}

impl Answer {
    /// The status the detector counts, if any.
    fn status(self) -> Option<u16> {
        match self {
            Answer::Status(s) => Some(s),
            Answer::ConnectFailed => Some(503),
            Answer::Timeout => Some(504),
            Answer::Reset => None,
        }
    }
}

/// One server's runs and ejection record.
#[derive(Debug, Clone, Default)]
struct Host {
    /// 5xx answers in a row.
    run_5xx: u32,
    /// Gateway failures in a row.
    run_gateway: u32,
    /// Out of rotation since then.
    ejected_at: Option<Instant>,
    /// The multiplier of `base_ejection_time` for its ejection.
    backoff: u32,
    /// When a sweep last returned it.
    returned_at: Option<Instant>,
}

/// The detector of one pool.
#[derive(Debug, Clone)]
pub struct Detector {
    /// Its settings.
    config: OutlierConfig,
    /// Each server's record, by index.
    hosts: Vec<Host>,
    /// When the next sweep runs.
    next_sweep: Instant,
}

/// Which run asked for an ejection.
#[derive(Debug, Clone, Copy)]
enum Run {
    Gateway,
    FiveXx,
}

impl Detector {
    /// A detector for `servers` servers whose first sweep is one interval
    /// after `start`.
    pub fn new(config: OutlierConfig, servers: usize, start: Instant) -> Detector {
        Detector {
            next_sweep: start + config.interval,
            config,
            hosts: vec![Host::default(); servers],
        }
    }

    /// Its settings.
    pub fn config(&self) -> &OutlierConfig {
        &self.config
    }

    /// Whether server `index` is out of rotation.
    pub fn is_ejected(&self, index: usize) -> bool {
        self.hosts[index].ejected_at.is_some()
    }

    /// How many servers are out.
    pub fn ejected(&self) -> usize {
        self.hosts.iter().filter(|h| h.ejected_at.is_some()).count()
    }

    /// When the next sweep runs.
    pub fn next_sweep(&self) -> Instant {
        self.next_sweep
    }

    /// Whether calls go to every server: fewer than `panic_threshold` of
    /// them are in rotation (`up` of them; a pool without servers never
    /// panics).
    pub fn in_panic(&self, up: usize) -> bool {
        100.0 * (up as f64) < self.config.panic_threshold.percent() * self.hosts.len() as f64
    }

    /// Runs every sweep due by `now`, in order; returns the servers each
    /// brought back, with the sweep's time.
    pub fn advance(&mut self, now: Instant) -> Vec<(usize, Instant)> {
        let mut back = Vec::new();
        while self.next_sweep <= now {
            let at = self.next_sweep;
            back.extend(self.sweep(at).into_iter().map(|i| (i, at)));
            self.next_sweep = at + self.config.interval;
        }
        back
    }

    /// One sweep at `at`: returns the servers whose time out has passed,
    /// then takes one off the backoff of every server in rotation for an
    /// interval since its last return.
    fn sweep(&mut self, at: Instant) -> Vec<usize> {
        let base = self.config.base_ejection_time;
        let max = self.config.max_ejection_time;
        let interval = self.config.interval;
        let mut back = Vec::new();
        for (index, host) in self.hosts.iter_mut().enumerate() {
            let Some(since) = host.ejected_at else {
                continue;
            };
            let out_for = base.saturating_mul(host.backoff).min(max);
            if at - since >= out_for {
                host.ejected_at = None;
                host.run_5xx = 0;
                host.run_gateway = 0;
                host.returned_at = Some(at);
                back.push(index);
            }
        }
        for host in &mut self.hosts {
            let rested = host.returned_at.is_some_and(|t| at - t >= interval);
            if host.ejected_at.is_none() && rested {
                host.backoff = host.backoff.saturating_sub(1);
            }
        }
        back
    }

    /// An answer from server `index` at `now` (call [`Detector::advance`]
    /// first); returns why it was ejected, when this ejected it.
    pub fn on_answer(&mut self, index: usize, answer: Answer, now: Instant) -> Option<String> {
        let host = &mut self.hosts[index];
        let status = answer.status()?;
        if !(500..600).contains(&status) {
            host.run_5xx = 0;
            host.run_gateway = 0;
            return None;
        }
        let mut asked = Vec::new();
        if matches!(status, 502..=504) {
            host.run_gateway += 1;
            if host.run_gateway == self.config.consecutive_gateway_failure {
                asked.push(Run::Gateway);
            }
        } else {
            host.run_gateway = 0;
        }
        host.run_5xx += 1;
        if host.run_5xx == self.config.consecutive_5xx {
            asked.push(Run::FiveXx);
        }
        let mut why = None;
        for run in asked {
            if self.is_ejected(index) {
                // Out already: the run goes on, unreset, as Envoy's.
                continue;
            }
            if self.may_eject() {
                why = Some(self.eject(index, run, now));
            }
            let host = &mut self.hosts[index];
            match run {
                Run::Gateway => host.run_gateway = 0,
                Run::FiveXx => host.run_5xx = 0,
            }
        }
        why
    }

    /// Whether one more server may go out.
    fn may_eject(&self) -> bool {
        let out = self.ejected();
        let share = 100.0 * (out + 1) as f64 / self.hosts.len() as f64;
        share <= self.config.max_ejection_percent.percent()
            || (self.config.always_eject_one_host && out == 0)
    }

    fn eject(&mut self, index: usize, run: Run, now: Instant) -> String {
        let base = self.config.base_ejection_time;
        let max = self.config.max_ejection_time;
        let host = &mut self.hosts[index];
        host.ejected_at = Some(now);
        if base.saturating_mul(host.backoff) < max.saturating_add(base) {
            host.backoff += 1;
        }
        let out_for = base.saturating_mul(host.backoff).min(max);
        let (count, what) = match run {
            Run::Gateway => (self.config.consecutive_gateway_failure, "gateway failures"),
            Run::FiveXx => (self.config.consecutive_5xx, "5xx answers"),
        };
        format!(
            "outlier: {count} {what} in a row, out for at least {}",
            Dur(out_for)
        )
    }
}

#[cfg(test)]
#[path = "outlier_tests.rs"]
mod tests;
