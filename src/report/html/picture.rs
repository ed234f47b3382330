//! What the HTML report draws, read from the report's own files (or the
//! same data in memory): the header facts, fault windows, breaker bands,
//! and per-bucket figures per load route and per dependency. Requests are
//! folded into time buckets as they are read, so the page stays small for
//! any run length.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::clock::Duration;
use crate::experiment::expect::latencies::Latencies;
use crate::experiment::timeline::RequestRecord;
use crate::http::headers::FallbackKind;

/// The fields of `report.json` the page shows.
#[derive(Debug, Clone, Deserialize)]
pub struct Facts {
    /// The experiment's name.
    pub experiment: String,
    /// Its description.
    #[serde(default)]
    pub description: Option<String>,
    /// The firedrill version that ran it (absent in reports of older ones).
    #[serde(default)]
    pub version: Option<String>,
    /// The seed.
    pub seed: u64,
    /// `virtual` or `real`.
    pub clock: String,
    /// Real clock: the start, Unix epoch milliseconds.
    #[serde(default)]
    pub started_at_unix_ms: Option<u64>,
    /// How long it ran.
    pub duration_ms: f64,
    /// How long it was to run, when it was cut short.
    #[serde(default)]
    pub planned_duration_ms: Option<f64>,
    /// How it ended.
    pub ending: EndingFacts,
    /// Whether it passed.
    pub passed: bool,
    /// One per expectation.
    pub verdicts: Vec<VerdictFacts>,
    /// Breakers and their transitions.
    pub breakers: Vec<BreakerFacts>,
    /// Fault windows.
    pub faults: Vec<FaultFacts>,
    /// What could not be read after the run.
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// `ending` in report.json.
#[derive(Debug, Clone, Deserialize)]
pub struct EndingFacts {
    /// `completed`, `halted` or `interrupted`.
    pub kind: String,
    /// A halt's condition.
    #[serde(default)]
    pub condition: Option<String>,
}

/// One verdict.
#[derive(Debug, Clone, Deserialize)]
pub struct VerdictFacts {
    /// The sentence.
    pub expectation: String,
    /// Whether it held.
    pub passed: bool,
    /// What it required.
    pub expected: String,
    /// What the run showed.
    pub seen: String,
    /// The intervals it judged, milliseconds.
    #[serde(default)]
    pub judged_ms: Vec<(f64, f64)>,
}

/// One breaker.
#[derive(Debug, Clone, Deserialize)]
pub struct BreakerFacts {
    /// Its name.
    pub name: String,
    /// `inferred` for a user's service's breaker.
    #[serde(default)]
    pub source: Option<String>,
    /// Its transitions.
    pub transitions: Vec<TransitionFacts>,
    /// What the service reported itself, when it did.
    #[serde(default)]
    pub reported: Option<Vec<TransitionFacts>>,
}

/// One transition.
#[derive(Debug, Clone, Deserialize)]
pub struct TransitionFacts {
    /// When, milliseconds.
    pub at_ms: f64,
    /// From.
    pub from: String,
    /// To.
    pub to: String,
    /// Why.
    #[serde(default)]
    pub reason: String,
}

/// One fault.
#[derive(Debug, Clone, Deserialize)]
pub struct FaultFacts {
    /// Its name.
    pub name: String,
    /// Its kind.
    pub kind: String,
    /// `[start, end)` windows, milliseconds.
    pub windows_ms: Vec<(f64, f64)>,
}

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
    /// Anything else: an error status, a broken connection.
    Error,
}

impl Outcome {
    /// Every outcome, bottom of the stack first.
    pub const ALL: [Outcome; 8] = [
        Outcome::Success,
        Outcome::Fallback(FallbackKind::Stale),
        Outcome::Fallback(FallbackKind::Backup),
        Outcome::Fallback(FallbackKind::Static),
        Outcome::Fallback(FallbackKind::Service),
        Outcome::Rejected,
        Outcome::Timeout,
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
    pub counts: [u32; 8],
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
        }
    }
}

impl Picture {
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

/// A breaker's states as `[from, to)` segments over `[0, end)`, starting
/// closed.
pub fn segments(transitions: &[TransitionFacts], end: f64) -> Vec<(f64, f64, String)> {
    let mut out = Vec::new();
    let mut from = 0.0;
    let mut state = "closed".to_string();
    for t in transitions {
        let at = t.at_ms.min(end);
        if at > from {
            out.push((from, at, state.clone()));
        }
        from = from.max(at);
        state.clone_from(&t.to);
    }
    if end > from {
        out.push((from, end, state));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(at_ms: f64, to: &str) -> TransitionFacts {
        TransitionFacts {
            at_ms,
            from: String::new(),
            to: to.to_string(),
            reason: String::new(),
        }
    }

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

    #[test]
    fn segments_start_closed_and_cover_the_run_up_to_the_cut() {
        let s = segments(&[t(1000.0, "open"), t(3000.0, "half_open")], 4000.0);
        assert_eq!(
            s,
            [
                (0.0, 1000.0, "closed".to_string()),
                (1000.0, 3000.0, "open".to_string()),
                (3000.0, 4000.0, "half_open".to_string()),
            ]
        );
        // A transition at the very end and one past a cut add no segment.
        let s = segments(&[t(0.0, "open"), t(5000.0, "closed")], 2000.0);
        assert_eq!(s, [(0.0, 2000.0, "open".to_string())]);
    }
}
