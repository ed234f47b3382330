//! What the HTML report draws, read from the report's own files (or the
//! same data in memory): the header facts, fault windows, breaker bands,
//! and per-bucket figures per load route and per dependency. Requests are
//! folded into time buckets as they are read, so the page stays small for
//! any run length.

use std::collections::BTreeMap;

use serde::Deserialize;

mod bands;
mod facts;

pub use bands::{HealthState, health_segments, no_server_spans, segments};
pub use facts::*;

use crate::clock::Duration;
use crate::defense::report::CallError;
use crate::experiment::expect::latencies::Latencies;
use crate::experiment::timeline::RequestRecord;
use crate::http::headers::FallbackKind;

/// What a client got, as the page colours it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// A 2xx/3xx (or the route's `success`) answer from the dependency.
    Success,
    /// A fallback answered.
    Fallback(FallbackKind),
    /// The defense line turned it away.
    Rejected,
    /// It timed out (client or defense line).
    Timeout,
    /// No server of the route's pool was in rotation: nothing was called.
    NoServer,
    /// Anything else: an error status, a broken connection.
    Error,
}

impl Outcome {
    /// Every outcome, bottom of the stack first.
    pub const ALL: [Outcome; 9] = [
        Outcome::Success,
        Outcome::Fallback(FallbackKind::Stale),
        Outcome::Fallback(FallbackKind::Backup),
        Outcome::Fallback(FallbackKind::Static),
        Outcome::Fallback(FallbackKind::Service),
        Outcome::Rejected,
        Outcome::Timeout,
        Outcome::NoServer,
        Outcome::Error,
    ];

    /// What a request's record says it got.
    pub fn of(record: &RequestRecord) -> Outcome {
        if let Some(kind) = record.fallback {
            Outcome::Fallback(kind)
        } else if record.rejected_by.is_some() {
            Outcome::Rejected
        } else if record.timed_out() {
            Outcome::Timeout
        } else if record.defense_error == Some(CallError::NoServer) {
            Outcome::NoServer
        } else if record.succeeded() {
            Outcome::Success
        } else {
            Outcome::Error
        }
    }

    /// Its name in the legend and in CSS classes.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Fallback(FallbackKind::Stale) => "fallback stale",
            Outcome::Fallback(FallbackKind::Backup) => "fallback backup",
            Outcome::Fallback(FallbackKind::Static) => "fallback static",
            Outcome::Fallback(FallbackKind::Service) => "fallback service",
            Outcome::Rejected => "rejected",
            Outcome::Timeout => "timeout",
            Outcome::NoServer => "no server in rotation",
            Outcome::Error => "error",
        }
    }

    fn index(self) -> usize {
        Outcome::ALL.iter().position(|o| *o == self).unwrap_or(0)
    }
}

/// One time bucket of a load route.
#[derive(Debug, Clone, Default)]
pub struct Bucket {
    /// Requests per outcome, in [`Outcome::ALL`] order.
    pub counts: [u32; 9],
    /// Latencies of answered requests, with how many had each (within
    /// [`BUCKET_LATENCIES`] distinct values); dropped once the percentiles
    /// are taken.
    latencies: Latencies<BUCKET_LATENCIES>,
    /// Median latency, milliseconds.
    pub p50: Option<f64>,
    /// 99th percentile latency, milliseconds.
    pub p99: Option<f64>,
}

impl Bucket {
    /// Requests in the bucket.
    pub fn total(&self) -> u32 {
        self.counts.iter().sum()
    }
}

/// One load route over the run.
#[derive(Debug, Clone)]
pub struct RouteTrack {
    /// The route's name.
    pub name: String,
    /// Its buckets, from time zero.
    pub buckets: Vec<Bucket>,
}

/// Arrivals at one dependency proxy over the run.
#[derive(Debug, Clone)]
pub struct ArrivalTrack {
    /// The dependency's name.
    pub name: String,
    /// Per bucket: requests forwarded to the upstream, and answered by a
    /// fault without reaching it.
    pub buckets: Vec<(u32, u32)>,
}

/// The calls one pool server answered over the run.
#[derive(Debug, Clone)]
pub struct ServerTrack {
    /// The pool.
    pub pool: String,
    /// The server.
    pub server: String,
    /// Per bucket: requests whose last attempt it answered.
    pub buckets: Vec<u32>,
}

/// One request as `requests.jsonl` has it.
#[derive(Debug, Deserialize)]
pub struct SentRequest {
    /// Sent, milliseconds.
    pub sent_ms: f64,
    /// Time to the response head, milliseconds.
    pub latency_ms: Option<f64>,
    /// The rest.
    #[serde(flatten)]
    pub record: RequestRecord,
}

/// One line of `dependencies.jsonl`, the fields the page needs.
#[derive(Debug, Deserialize)]
pub struct Arrival {
    /// Arrived, milliseconds.
    pub at_ms: f64,
    /// The dependency.
    pub proxy: String,
    /// Whether it was forwarded to the upstream.
    pub reached_upstream: bool,
}

/// Everything the page draws.
#[derive(Debug, Clone)]
pub struct Picture {
    /// The facts of report.json.
    pub facts: Facts,
    /// The time axis runs from 0 to this, milliseconds (the planned
    /// duration of a run cut short).
    pub axis_ms: f64,
    /// The width of one bucket, milliseconds (1 s, more for long runs).
    pub bucket_ms: f64,
    /// Load routes, in the order they first sent.
    pub routes: Vec<RouteTrack>,
    /// Dependency proxies, by name.
    pub dependencies: Vec<ArrivalTrack>,
    /// Pool servers that answered, in the order they first did.
    pub servers: Vec<ServerTrack>,
}

/// At most this many buckets across the axis.
const MAX_BUCKETS: f64 = 600.0;

/// The most distinct latencies one bucket keeps for its percentiles (a
/// real clock gives each request its own; the chart needs no more).
pub const BUCKET_LATENCIES: usize = 256;

/// Requests and dependency arrivals folded into time buckets as they
/// come, for a [`Picture`] once the run's facts are known.
#[derive(Debug, Clone)]
pub struct Fold {
    /// The time axis, milliseconds.
    axis_ms: f64,
    /// One bucket's width, milliseconds.
    bucket_ms: f64,
    /// Buckets across the axis.
    n: usize,
    /// Load routes, in the order they first sent.
    routes: Vec<RouteTrack>,
    /// Dependency proxies, by name.
    dependencies: BTreeMap<String, Vec<(u32, u32)>>,
    /// Pool servers that answered, in the order they first did.
    servers: Vec<ServerTrack>,
    /// Buckets before this one have their percentiles, their latencies
    /// dropped.
    settled: usize,
}

impl Fold {
    /// Buckets over `[0, axis_ms)`: 1 s wide, wider for long runs.
    pub fn new(axis_ms: f64) -> Fold {
        let axis_ms = axis_ms.max(1.0);
        let bucket_ms = (axis_ms / MAX_BUCKETS / 1000.0).ceil().max(1.0) * 1000.0;
        Fold {
            axis_ms,
            bucket_ms,
            n: (axis_ms / bucket_ms).ceil() as usize,
            routes: Vec::new(),
            dependencies: BTreeMap::new(),
            servers: Vec::new(),
            settled: 0,
        }
    }

    /// Takes the percentiles of every bucket before `upto` and drops their
    /// latencies.
    fn settle(&mut self, upto: usize) {
        let upto = upto.min(self.n);
        if upto <= self.settled {
            return;
        }
        let ms = |d: Duration| d.as_nanos() as f64 / 1e6;
        for route in &mut self.routes {
            for bucket in &mut route.buckets[self.settled..upto] {
                let latencies = std::mem::take(&mut bucket.latencies);
                bucket.p50 = latencies.percentile(50.0).map(ms);
                bucket.p99 = latencies.percentile(99.0).map(ms);
            }
        }
        self.settled = upto;
    }

    fn slot(&self, t: f64) -> usize {
        ((t / self.bucket_ms).floor().max(0.0) as usize).min(self.n - 1)
    }

    /// Adds one request, sent at `sent_ms`. Requests come in the order
    /// they were sent (their ids'), so a bucket two before the request's
    /// is complete: its percentiles are taken and its latencies dropped (a
    /// request later still is counted, its latency left out).
    pub fn request(&mut self, sent_ms: f64, latency_ms: Option<f64>, record: &RequestRecord) {
        let slot = self.slot(sent_ms);
        self.settle(slot.saturating_sub(1));
        let i = match self.routes.iter().position(|t| t.name == record.route) {
            Some(i) => i,
            None => {
                self.routes.push(RouteTrack {
                    name: record.route.clone(),
                    buckets: vec![Bucket::default(); self.n],
                });
                self.routes.len() - 1
            }
        };
        if let Some(by) = &record.served_by {
            self.served(slot, &by.pool, &by.server);
        }
        let bucket = &mut self.routes[i].buckets[slot];
        bucket.counts[Outcome::of(record).index()] += 1;
        if let (Some(l), Some(_), true) = (latency_ms, record.status, slot >= self.settled) {
            // `requests.jsonl`'s milliseconds have microsecond precision:
            // whole nanoseconds hold them exactly.
            bucket
                .latencies
                .add(Duration::from_nanos((l * 1e6).round() as u64));
        }
    }

    /// Counts a request a pool server answered in bucket `slot`.
    fn served(&mut self, slot: usize, pool: &str, server: &str) {
        let found = self
            .servers
            .iter()
            .position(|t| t.pool == pool && t.server == server);
        let i = found.unwrap_or_else(|| {
            self.servers.push(ServerTrack {
                pool: pool.to_string(),
                server: server.to_string(),
                buckets: vec![0; self.n],
            });
            self.servers.len() - 1
        });
        self.servers[i].buckets[slot] += 1;
    }

    /// Adds one arrival at a dependency proxy.
    pub fn arrival(&mut self, a: Arrival) {
        let slot = self.slot(a.at_ms);
        let n = self.n;
        let buckets = self
            .dependencies
            .entry(a.proxy)
            .or_insert_with(|| vec![(0, 0); n]);
        let b = &mut buckets[slot];
        if a.reached_upstream {
            b.0 += 1;
        } else {
            b.1 += 1;
        }
    }

    /// The picture of a run with these facts.
    pub fn picture(mut self, facts: Facts) -> Picture {
        self.settle(self.n);
        Picture {
            facts,
            axis_ms: self.axis_ms,
            bucket_ms: self.bucket_ms,
            routes: self.routes,
            dependencies: self
                .dependencies
                .into_iter()
                .map(|(name, buckets)| ArrivalTrack { name, buckets })
                .collect(),
            servers: self.servers,
        }
    }
}

impl Picture {
    /// Bucket `i`'s `[start, end)`, its end cut where the run stopped
    /// (a halted run's last bucket is partial); `None` for a bucket that
    /// starts after the run stopped.
    pub fn bucket_span(&self, i: usize) -> Option<(f64, f64)> {
        let at = i as f64 * self.bucket_ms;
        let end = (at + self.bucket_ms).min(self.facts.duration_ms);
        (end > at).then_some((at, end))
    }

    /// The time axis of a run with these facts, milliseconds: its planned
    /// duration (a run cut short included).
    pub fn axis_ms(facts: &Facts) -> f64 {
        facts
            .planned_duration_ms
            .unwrap_or(facts.duration_ms)
            .max(facts.duration_ms)
    }

    /// Folds requests and dependency arrivals into buckets.
    pub fn new(
        facts: Facts,
        requests: impl IntoIterator<Item = SentRequest>,
        arrivals: impl IntoIterator<Item = Arrival>,
    ) -> Picture {
        let mut fold = Fold::new(Picture::axis_ms(&facts));
        for r in requests {
            fold.request(r.sent_ms, r.latency_ms, &r.record);
        }
        for a in arrivals {
            fold.arrival(a);
        }
        fold.picture(facts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_of_distinct_latencies_keeps_a_bounded_number_of_them() {
        let mut fold = Fold::new(1000.0);
        let requests = 3 * BUCKET_LATENCIES;
        for i in 0..requests {
            let mut record = RequestRecord::sent(i as u64, "A", "/a", Duration::ZERO);
            record.status = Some(200);
            // Microseconds apart, as a real clock's requests.jsonl has them.
            fold.request(0.0, Some(2.0 + i as f64 / 1000.0), &record);
        }
        let bucket = &fold.routes[0].buckets[0];
        assert_eq!(bucket.total() as usize, requests);
        assert!(
            bucket.latencies.len() <= BUCKET_LATENCIES,
            "one bucket keeps {} latencies of {requests}",
            bucket.latencies.len()
        );
    }

    #[test]
    fn a_long_fold_keeps_the_latencies_of_two_buckets_at_most() {
        // Ten minutes at 200 req/s, each bucket's latencies distinct.
        let mut fold = Fold::new(600_000.0);
        for i in 0..120_000u32 {
            let mut record = RequestRecord::sent(u64::from(i), "A", "/a", Duration::ZERO);
            record.status = Some(200);
            let latency = 2.0 + f64::from(i % 200) / 1000.0;
            fold.request(f64::from(i) * 5.0, Some(latency), &record);
        }
        let kept: usize = fold.routes[0]
            .buckets
            .iter()
            .map(|b| b.latencies.len())
            .sum();
        assert!(kept <= 2 * BUCKET_LATENCIES, "{kept} latencies kept");
        let first = &fold.routes[0].buckets[0];
        assert_eq!((first.p50, first.p99), (Some(2.099), Some(2.197)));
    }
}
