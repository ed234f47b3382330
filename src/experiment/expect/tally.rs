//! What the route and call figures need of the requests, kept as counts:
//! a [`RouteTally`] folds request records one at a time (counters and the
//! latencies, exact while they take few values), a [`CallTally`] folds target hits. A run feeds
//! them as its requests finish, so it never keeps the requests themselves;
//! the judges read the tallies, whoever filled them.

use std::collections::BTreeMap;

use super::latencies::Latencies;
use crate::clock::Duration;
use crate::defense::fallback::FallbackKind;
use crate::defense::report::CallError;
use crate::experiment::timeline::{ClientError, RequestRecord, TargetHit};

use super::ast::{Name, PathGlob};

/// Counts of a set of requests (a route over a window, a route over the
/// run): everything the route figures and the report's summary read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouteTally {
    /// Requests.
    pub requests: u64,
    /// Answered 2xx/3xx (or the route's `success`), fallbacks included.
    pub succeeded: u64,
    /// Answered by a fallback, per kind.
    pub fallbacks: BTreeMap<FallbackKind, u64>,
    /// Turned away by the defense line.
    pub rejected: u64,
    /// Timed out at the client or at the defense line.
    pub timeouts: u64,
    /// Given up by the caller while the defense line waited.
    pub cancelled: u64,
    /// Shed by the in-flight cap.
    pub shed: u64,
    /// Times they reached the dependency (retries count each).
    pub reached: u64,
    /// Latencies of the requests that got a response head, with how many
    /// had each: exact up to [`RouteTally::LATENCIES`] distinct values (a
    /// virtual clock moves in whole milliseconds), then coarsened to stay
    /// within them (a real clock gives each request its own).
    pub latencies: Latencies<{ RouteTally::LATENCIES }>,
    /// gRPC answers per status code.
    pub grpc: BTreeMap<u8, u64>,
}

impl RouteTally {
    /// The most distinct latencies one tally keeps.
    pub const LATENCIES: usize = 4096;

    /// Counts one request.
    pub fn add(&mut self, r: &RequestRecord) {
        self.requests += 1;
        self.succeeded += u64::from(r.succeeded());
        if let Some(kind) = r.fallback {
            *self.fallbacks.entry(kind).or_default() += 1;
        }
        self.rejected += u64::from(r.rejected_by.is_some());
        self.timeouts += u64::from(r.timed_out());
        self.cancelled += u64::from(r.defense_error == Some(CallError::Cancelled));
        self.shed += u64::from(r.client_error == Some(ClientError::Shed));
        self.reached += u64::from(r.reached_dependency);
        if let Some(latency) = r.latency {
            self.latencies.add(latency);
        }
        if let Some(code) = r.grpc_status {
            *self.grpc.entry(code).or_default() += 1;
        }
    }

    /// Requests answered by any fallback.
    pub fn fallback(&self) -> u64 {
        self.fallbacks.values().sum()
    }

    /// Requests that got a response head.
    pub fn responses(&self) -> u64 {
        self.latencies.count()
    }

    /// The `rank`-th smallest latency (1-based), if there are that many.
    pub fn latency_at_rank(&self, rank: u64) -> Option<Duration> {
        self.latencies.at_rank(rank)
    }

    /// The nearest-rank percentile `p` (0..=100) of the latencies: the
    /// smallest at or above which `p`% of them lie.
    pub fn latency_percentile(&self, p: f64) -> Option<Duration> {
        self.latencies.percentile(p)
    }

    /// The largest latency.
    pub fn latency_max(&self) -> Option<Duration> {
        self.latencies.max()
    }
}

/// Whether `calls to GLOB [on instance I]` counts `hit` (its window
/// aside): the path matches and, with an instance, the hit reached that
/// instance and belongs to a client request (a health check does not).
pub fn counts_hit(glob: &PathGlob, instance: Option<&Name>, hit: &TargetHit) -> bool {
    glob.is_match(&hit.path)
        && instance.is_none_or(|i| {
            hit.request_id.is_some() && hit.instance.as_deref() == Some(i.text.as_str())
        })
}

/// Target hits counted by `calls to GLOB WINDOW`: how many, and the first
/// [`CallTally::NAMED`] of them, named in the verdict.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallTally {
    /// Hits counted.
    pub count: u64,
    /// The first ones counted, in arrival order.
    pub named: Vec<NamedCall>,
}

/// A call a verdict names: when it arrived, where, and the request it
/// belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedCall {
    /// When it arrived.
    pub at: Duration,
    /// Its path.
    pub path: String,
    /// The load request it belongs to, when known.
    pub request_id: Option<u64>,
}

impl CallTally {
    /// How many calls a verdict names.
    pub const NAMED: usize = 5;

    /// Counts one hit (in arrival order).
    pub fn add(&mut self, hit: &TargetHit) {
        self.count += 1;
        if self.named.len() < Self::NAMED {
            self.named.push(NamedCall {
                at: hit.at,
                path: hit.path.clone(),
                request_id: hit.request_id,
            });
        }
    }
}

/// The calls pool servers answered (a pool's share sentences): per pool,
/// how many, how many a backup answered, and how many each server did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShareTally {
    /// Per pool.
    pub pools: BTreeMap<String, PoolTally>,
}

/// The calls one pool's servers answered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PoolTally {
    /// Calls any of its servers answered.
    pub served: u64,
    /// Calls a backup server answered.
    pub backup: u64,
    /// Calls per server.
    pub servers: BTreeMap<String, u64>,
}

impl ShareTally {
    /// Counts one request (nothing when no pool server answered it).
    pub fn add(&mut self, r: &RequestRecord) {
        let Some(by) = &r.served_by else { return };
        let pool = self.pools.entry(by.pool.clone()).or_default();
        pool.served += 1;
        pool.backup += u64::from(by.backup);
        *pool.servers.entry(by.server.clone()).or_default() += 1;
    }
}

/// What one expectation read of the requests, or nothing for breaker
/// sentences (they read the transitions only).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Tally {
    /// Breaker sentences.
    #[default]
    None,
    /// `route R METRIC [WINDOW] BOUND`.
    Route(RouteTally),
    /// `calls to GLOB [WINDOW] BOUND`.
    Calls(CallTally),
    /// `instance I share ...`, `pool P served by backup ...`.
    Share(ShareTally),
}
