//! What the stream counts of each final request and hit: one counter per
//! expectation, the live view's figures per route, and the scene the
//! windows are read in.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{ManualFaults, StreamSetup};
use crate::clock::Duration;
use crate::defense::breaker::{State, Transition};
use crate::defense::report::HealthChange;
use crate::experiment::expect::ast::{Expectation, Rule, Server, Window};
use crate::experiment::expect::latencies::Latencies;
use crate::experiment::expect::tally::{RouteTally, ShareTally, Tally, counts_hit};
use crate::experiment::expect::window::{Scene, interval_start};
use crate::experiment::timeline::{RequestRecord, TargetHit};

/// What one expectation counts, as the stream sees it.
#[derive(Clone)]
pub(super) enum Counter {
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
    pub(super) fn of(expectation: &Expectation) -> Counter {
        match &expectation.rule {
            rule if rule.counted_route().is_some() => {
                Counter::Route(expectation.clone(), RouteTally::default())
            }
            Rule::Calls { .. } => Counter::Calls(expectation.clone(), Default::default()),
            rule @ Rule::Pool(_) => match rule.counted_window() {
                Some(window) => Counter::Share(window.clone(), ShareTally::default()),
                None => Counter::None,
            },
            _ => Counter::None,
        }
    }

    pub(super) fn tally(&self) -> Tally {
        match self {
            Counter::None => Tally::None,
            Counter::Route(_, t) => Tally::Route(t.clone()),
            Counter::Calls(_, t) => Tally::Calls(t.clone()),
            Counter::Share(_, t) => Tally::Share(t.clone()),
        }
    }

    /// Counts a final request if it is this sentence's.
    pub(super) fn request(&mut self, r: &RequestRecord, scene: &impl Scene) {
        if let Counter::Route(e, tally) = self
            && let Some((route, window)) = e.rule.counted_route()
            && r.route == route.text
            && interval_start(window, scene, r.sent).is_some()
        {
            tally.add(r);
        }
        if let Counter::Share(window, tally) = self
            && let Some(by) = &r.served_by
            && interval_start(window, scene, by.picked).is_some()
        {
            tally.add(r);
        }
    }

    /// Counts a target hit if it is this sentence's; `sent` is when its
    /// request was sent, if known.
    pub(super) fn hit(&mut self, hit: &TargetHit, sent: Option<Duration>, scene: &impl Scene) {
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
            tally.add(hit);
        }
    }
}

/// Figures a live view shows per route: counts since the start in the
/// words of [`crate::experiment::vocabulary`], and per second of the run
/// (the last [`LiveCounts::SECONDS`]) the requests sent and the latencies
/// of the answers that came, for the rate and latency of the last
/// interval.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveCounts {
    /// Since the start.
    pub counts: Counts,
    /// By second of the run: the requests sent in it, the latencies of
    /// the answers whose head came in it.
    seconds: BTreeMap<u64, Second>,
}

/// A route's requests so far, in the words of
/// [`crate::experiment::vocabulary`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Finished: sent and answered, or given up.
    pub requests: usize,
    /// A success for the caller, fallbacks included.
    pub success: usize,
    /// Answered by a fallback.
    pub fallback: usize,
    /// No success for the caller.
    pub errors: usize,
    /// Turned away by the defense line (breaker, bulkhead, rate limit).
    pub rejected: usize,
    /// Timed out at the client or in the defense line.
    pub timeouts: usize,
}

/// One second of a route, for the live view.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Second {
    sent: u64,
    latencies: Latencies<{ LiveCounts::LATENCIES }>,
}

/// What a live view shows of an interval of seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Interval {
    /// Requests sent per second over it.
    pub rate: f64,
    /// Median latency of the answers that came in it.
    pub p50: Option<Duration>,
    /// 99th percentile latency of those answers.
    pub p99: Option<Duration>,
}

impl LiveCounts {
    /// Seconds kept for the interval figures: the longest interval shown.
    pub const SECONDS: u64 = 60;
    /// Distinct latencies kept per second (coarsened beyond).
    const LATENCIES: usize = 256;

    pub(super) fn add(&mut self, r: &RequestRecord) {
        let c = &mut self.counts;
        c.requests += 1;
        c.rejected += usize::from(r.rejected_by.is_some());
        c.timeouts += usize::from(r.timed_out());
        c.fallback += usize::from(r.fallback.is_some());
        if r.succeeded() {
            c.success += 1;
        } else {
            c.errors += 1;
        }
        if let Some(latency) = r.latency {
            let second = (r.sent + latency).as_secs();
            self.second(second).latencies.add(latency);
        }
    }

    /// A request was sent at `at`.
    pub(super) fn sent(&mut self, at: Duration) {
        self.second(at.as_secs()).sent += 1;
    }

    /// The bucket of `second`, the oldest ones beyond [`Self::SECONDS`]
    /// forgotten.
    fn second(&mut self, second: u64) -> &mut Second {
        let oldest = second.saturating_sub(Self::SECONDS);
        while self
            .seconds
            .first_key_value()
            .is_some_and(|(s, _)| *s < oldest)
        {
            self.seconds.pop_first();
        }
        self.seconds.entry(second).or_default()
    }

    /// The rate and latency over the whole seconds `[from, to)` of the
    /// run (those still kept).
    pub fn interval(&self, from: u64, to: u64) -> Interval {
        let mut latencies = Latencies::<{ Self::LATENCIES }>::default();
        let mut sent = 0;
        for (_, second) in self.seconds.range(from..to) {
            sent += second.sent;
            latencies.merge(&second.latencies);
        }
        let seconds = to.saturating_sub(from).max(1);
        Interval {
            rate: sent as f64 / seconds as f64,
            p50: latencies.percentile(50.0),
            p99: latencies.percentile(99.0),
        }
    }
}

/// The run as far as the windows need it.
pub(super) struct Known<'a> {
    end: Duration,
    fault_spans: &'a BTreeMap<String, (Duration, Duration)>,
    phases: &'a BTreeMap<String, (Duration, Duration)>,
    transitions: &'a [Transition],
    health: &'a [HealthChange],
    control: Option<&'a dyn ManualFaults>,
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

/// The scene of the windows: the run as known at `now` (the end: all).
pub(super) fn known<'a>(
    setup: &'a StreamSetup,
    transitions: &'a [Transition],
    health: &'a [HealthChange],
    end: Duration,
    control: Option<&'a Arc<dyn ManualFaults>>,
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

#[cfg(test)]
mod live_tests {
    use super::*;

    fn answered(sent_ms: u64, latency_ms: u64, status: u16) -> RequestRecord {
        let mut r = RequestRecord::sent(1, "shop", "/", Duration::from_millis(sent_ms));
        r.latency = Some(Duration::from_millis(latency_ms));
        r.status = Some(status);
        r
    }

    #[test]
    fn success_and_errors_add_up_to_the_requests_and_a_fallback_is_a_success() {
        let mut c = LiveCounts::default();
        c.add(&answered(0, 5, 200));
        c.add(&answered(0, 5, 503));
        let mut fell_back = answered(0, 5, 200);
        fell_back.fallback = Some(crate::http::headers::FallbackKind::Static);
        c.add(&fell_back);
        let n = c.counts;
        assert_eq!((n.requests, n.success, n.errors, n.fallback), (3, 2, 1, 1));
    }

    #[test]
    fn the_interval_has_the_rate_sent_and_the_latency_of_answers_that_came_in_it() {
        let mut c = LiveCounts::default();
        for ms in (0..2000).step_by(100) {
            c.sent(Duration::from_millis(ms));
        }
        // Sent in second 0, answered in second 1: counted there.
        c.add(&answered(900, 200, 200));
        for latency in [10, 20, 30] {
            c.add(&answered(1000, latency, 200));
        }
        let first = c.interval(0, 1);
        assert_eq!(first.rate, 10.0);
        assert_eq!(first.p50, None, "no answer came in second 0");
        let second = c.interval(1, 2);
        assert_eq!(second.p50, Some(Duration::from_millis(20)));
        assert_eq!(second.p99, Some(Duration::from_millis(200)));
        assert_eq!(c.interval(0, 2).rate, 10.0, "20 over 2 seconds");
    }

    #[test]
    fn seconds_older_than_a_minute_are_forgotten() {
        let mut c = LiveCounts::default();
        c.sent(Duration::from_secs(0));
        c.sent(Duration::from_secs(LiveCounts::SECONDS));
        assert_eq!(c.interval(0, 1).rate, 1.0, "exactly SECONDS back: kept");
        c.sent(Duration::from_secs(LiveCounts::SECONDS + 1));
        assert_eq!(c.interval(0, 1).rate, 0.0);
        assert_eq!(c.seconds.len(), 2);
    }
}
