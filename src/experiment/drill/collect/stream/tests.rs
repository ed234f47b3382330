//! The stream against the whole timeline: for random runs (requests that
//! finish, defense reports before or after the answer, hits at the
//! dependency, breaker transitions, a cut), what the stream counts as it
//! goes equals what the judges count on the whole recorded timeline, and
//! its sinks get every request, joined, in id order.

use std::sync::{Arc, Mutex};

use proptest::prelude::*;

use super::*;
use crate::defense::breaker::{Reason, State};
use crate::defense::report::{CallError, Rejection};
use crate::experiment::expect::{self, parse};
use crate::experiment::timeline::{FaultWindows, Phase, TargetHit, Timeline};
use crate::http::headers::FallbackKind;

const PLANNED_MS: u64 = 20_000;

/// Sentences over every kind of window, and both call and route figures.
const SENTENCES: &[&str] = &[
    "route A success >= 50%",
    "route A p99 between 2s and 9s <= 1s",
    "route B rejected while inventory is open <= 10%",
    "route A fallback during inventory-down >= 1%",
    "route B timeouts in phase recovery <= 5",
    "route A amplification while inventory is half_open <= 2",
    "route B p50 while inventory is closed >= 0ms",
    "calls to /a/* while inventory is open == 0",
    "calls to /b/* during inventory-down <= 3",
    "calls to /* between 1s and 15s >= 1",
    "instance b share while instance b is ejected <= 10%",
    "pool inventory served by backup during inventory-down >= 1%",
];

/// The pool server that answers request `id` (its hits reach the instance
/// of that name).
fn server_of(id: u64) -> &'static str {
    ["a", "b", "d"][(id % 3) as usize]
}

/// One generated request: when it is sent (gap after the previous one),
/// its route, how it ends, its report and hits.
#[derive(Debug, Clone)]
struct Gen {
    gap_ms: u64,
    route_b: bool,
    /// `None`: the client timed out after 2 s.
    latency_ms: Option<u64>,
    status: u16,
    fallback: bool,
    /// `(after the answer, ms; rejected; timed out)`; `None`: no report.
    report: Option<(u64, bool, bool)>,
    /// Hits, each this far after the request was sent (clipped to the end
    /// of the call: its answer or its report, whichever is later).
    hits: Vec<u64>,
}

fn request_gen() -> impl Strategy<Value = Gen> {
    // Times on a 50 ms grid, so that sends, answers, reports, hits and
    // transitions often share an instant.
    (
        (0u64..3).prop_map(|k| k * 50),
        any::<bool>(),
        prop::option::weighted(0.9, (0u64..30).prop_map(|k| k * 50)),
        prop::sample::select(vec![200u16, 503, 404]),
        prop::bool::weighted(0.2),
        prop::option::weighted(
            0.8,
            (
                (0u64..3).prop_map(|k| k * 50),
                prop::bool::weighted(0.2),
                any::<bool>(),
            ),
        ),
        prop::collection::vec((0u64..30).prop_map(|k| k * 50), 0..3),
    )
        .prop_map(
            |(gap_ms, route_b, latency_ms, status, fallback, report, hits)| Gen {
                gap_ms,
                route_b,
                latency_ms,
                status,
                fallback,
                report,
                hits,
            },
        )
}

/// What happens at one instant, in the order generated for it.
#[derive(Debug, Clone)]
enum Event {
    Send(u64),
    Finish(u64),
    Report(u64),
    Hit(u64),
    Transition(State),
    /// Server b of pool inventory ejected (false) or back (true).
    Health(bool),
}

/// A sink that keeps what it gets.
struct Keep(Arc<Mutex<Vec<RequestRecord>>>);

impl RecordSink for Keep {
    fn record(&mut self, record: &RequestRecord) -> std::io::Result<()> {
        self.0.lock().unwrap().push(record.clone());
        Ok(())
    }
}

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

fn record(id: u64, g: &Gen, sent: Duration) -> RequestRecord {
    let (route, path) = if g.route_b {
        ("B", "/b/x")
    } else {
        ("A", "/a/x")
    };
    RequestRecord::sent(id, route, path, sent)
}

/// A current-thread runtime with the clock paused.
fn paused() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}

/// The defense line's report of call `id`; its pool picked the server half
/// a grid step after the call was sent (so a call sent just before a
/// window's edge is routed inside it).
fn report(id: u64, gens: &[Gen]) -> CallReport {
    let g = &gens[id as usize];
    let sent: u64 = gens[..=id as usize].iter().map(|g| g.gap_ms).sum();
    let (_, rejected, timed_out) = g.report.unwrap_or_default();
    CallReport {
        route: "r".to_string(),
        request_id: Some(id),
        status: g.status,
        latency: ms(g.latency_ms.unwrap_or(0)),
        breaker_state: Some(State::Closed),
        rejected_by: rejected.then_some(Rejection::Bulkhead),
        error: timed_out.then_some(CallError::Timeout),
        fallback: g.fallback.then_some(FallbackKind::Static),
        attempts: 1,
        served_by: Some(crate::defense::report::ServedBy {
            pool: "inventory".to_string(),
            server: server_of(id).to_string(),
            backup: server_of(id) == "d",
            picked: ms(sent + 25),
        }),
    }
}

/// Every event of the run with its time, ordered by time then by a seeded
/// key (events of one instant come in any order).
fn events(
    gens: &[Gen],
    steps: &[(u64, bool)],
    cut: Option<u64>,
    shuffle: u64,
) -> Vec<(u64, u64, Event)> {
    let mut events: Vec<(u64, u64, Event)> = Vec::new();
    let key = |i: u64| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ shuffle;
    let mut t = 0;
    let last_send = cut.unwrap_or(PLANNED_MS);
    for (id, g) in gens.iter().enumerate() {
        let id = id as u64;
        t += g.gap_ms;
        if t >= last_send {
            break;
        }
        let done = t + g.latency_ms.unwrap_or(2_000);
        events.push((t, key(4 * id), Event::Send(id)));
        events.push((done, key(4 * id + 1) | 1, Event::Finish(id)));
        if let Some((after, ..)) = g.report {
            events.push((done + after, key(4 * id + 2) | 1, Event::Report(id)));
        }
        for h in &g.hits {
            // A hit comes while the call is on: up to its report (the
            // defense line reports a call when it ends) or its answer.
            let over = done + g.report.map_or(0, |r| r.0);
            events.push(((t + h).min(over), key(4 * id + 3) | 1, Event::Hit(id)));
        }
    }
    let mut state = State::Closed;
    for (i, (at, open)) in steps.iter().enumerate() {
        let to = match (state, open) {
            (State::Closed, _) | (State::HalfOpen, true) => State::Open,
            (State::Open, _) => State::HalfOpen,
            (_, _) => State::Closed,
        };
        events.push((*at, key(1_000_000 + i as u64), Event::Transition(to)));
        events.push((*at, key(2_000_000 + i as u64), Event::Health(!*open)));
        state = to;
    }
    // A send sorts first at its instant: its id exists before anything
    // about it (its key is even, the others odd, compared after time).
    events.sort_by_key(|(at, k, e)| (*at, !matches!(e, Event::Send(_)), *k));
    events
}

/// The whole timeline, joined as the run used to join it at the end.
fn whole_timeline(
    gens: &[Gen],
    joined: Vec<Option<RequestRecord>>,
    hits: Vec<TargetHit>,
    transitions: Vec<Transition>,
    health: Vec<crate::defense::report::HealthChange>,
    cut: Option<u64>,
) -> Timeline {
    let duration = cut.map_or(ms(PLANNED_MS), |c| ms(c).min(ms(PLANNED_MS)));
    let requests: Vec<RequestRecord> = joined
        .into_iter()
        .enumerate()
        .filter_map(|(id, r)| {
            let mut r = r?;
            let g = &gens[id];
            r.reached_dependency = hits
                .iter()
                .filter(|h: &&TargetHit| h.request_id == Some(id as u64))
                .count() as u32;
            if g.report.is_some() {
                let c = report(id as u64, gens);
                r.rejected_by = c.rejected_by;
                r.defense_error = c.error;
                r.breaker_state = c.breaker_state;
                r.attempts = c.attempts;
                r.fallback = r.fallback.or(c.fallback);
                r.served_by = c.served_by.map(Box::new);
            }
            Some(r)
        })
        .collect();
    Timeline {
        duration,
        requests,
        target_hits: hits,
        transitions,
        health,
        faults: vec![FaultWindows {
            name: "inventory-down".to_string(),
            kind: "blackhole".to_string(),
            windows: vec![(ms(5_000), ms(12_000).min(duration))]
                .into_iter()
                .filter(|(a, b)| a < b)
                .collect(),
        }],
        phases: vec![Phase {
            name: "recovery".to_string(),
            from: ms(12_000),
            to: ms(PLANNED_MS),
        }],
        ..Timeline::default()
    }
}

/// What the run played so far: when each request was sent, each as the
/// client saw it, and every hit, transition and health change.
struct Played {
    sent_at: Vec<Duration>,
    joined: Vec<Option<RequestRecord>>,
    hits: Vec<TargetHit>,
    transitions: Vec<Transition>,
    health: Vec<crate::defense::report::HealthChange>,
    /// The breaker's state before the next transition.
    from: State,
}

impl Played {
    fn new(requests: usize) -> Played {
        Played {
            sent_at: vec![Duration::ZERO; requests],
            joined: vec![None; requests],
            hits: Vec::new(),
            transitions: Vec::new(),
            health: Vec::new(),
            from: State::Closed,
        }
    }

    /// Plays `event` at `at` on `stream` (a hit reaches the plan of one
    /// of `plans`, by its time) and keeps it for the whole timeline.
    fn apply(
        &mut self,
        stream: &Stream,
        plans: &[(&str, Arc<FaultPlan>)],
        gens: &[Gen],
        at: u64,
        event: Event,
    ) {
        let now = ms(at);
        match event {
            Event::Send(id) => {
                let g = &gens[id as usize];
                self.sent_at[id as usize] = now;
                stream.sent(record(id, g, now));
            }
            Event::Finish(id) => {
                let g = &gens[id as usize];
                let mut r = record(id, g, self.sent_at[id as usize]);
                match g.latency_ms {
                    Some(l) => {
                        r.latency = Some(ms(l));
                        r.status = Some(g.status);
                        r.fallback = (g.fallback && g.status == 200).then_some(FallbackKind::Stale);
                    }
                    None => r.client_error = Some(ClientError::Timeout),
                }
                self.joined[id as usize] = Some(r.clone());
                stream.finished(r);
            }
            Event::Report(id) => stream.call(&report(id, gens)),
            Event::Hit(id) => {
                let g = &gens[id as usize];
                let path = if g.route_b { "/b/x" } else { "/a/x" };
                let mut headers = http::HeaderMap::new();
                headers.insert(
                    crate::http::headers::REQUEST_ID_HEADER,
                    id.to_string().parse().unwrap(),
                );
                let (instance, plan) = &plans[at as usize % plans.len()];
                plan.note_arrival(path, &headers);
                self.hits.push(TargetHit {
                    at: now,
                    path: path.to_string(),
                    request_id: Some(id),
                    instance: Some(instance.to_string()),
                });
            }
            Event::Transition(to) => {
                let tr = Transition {
                    at: now,
                    breaker: "inventory".to_string(),
                    from: self.from,
                    to,
                    reason: Reason::Manual { action: "test" },
                };
                self.from = to;
                stream.transition(&tr);
                self.transitions.push(tr);
            }
            Event::Health(healthy) => {
                let change = crate::defense::report::HealthChange {
                    at: now,
                    pool: "inventory".to_string(),
                    server: "b".to_string(),
                    healthy,
                    by: "test".to_string(),
                };
                stream.health(&change);
                self.health.push(change);
            }
        }
    }
}

/// Plays the run on the stream (paused clock) and returns what it counted
/// and what its sink got, beside the whole timeline the judges read.
fn play(
    gens: &[Gen],
    steps: &[(u64, bool)],
    cut: Option<u64>,
    shuffle: u64,
) -> (Counted, Vec<RequestRecord>, Timeline) {
    paused().block_on(async {
        let start = clock::now();
        let expectations: Vec<Expectation> = SENTENCES.iter().map(|s| parse(s).unwrap()).collect();
        let sunk = Arc::new(Mutex::new(Vec::new()));
        let setup = StreamSetup {
            expectations: expectations.clone(),
            routes: vec!["A".to_string(), "B".to_string()],
            sinks: vec![Box::new(Keep(sunk.clone()))],
            keep: false,
            recent: Duration::ZERO,
            defended: true,
            planned: ms(PLANNED_MS),
            fault_spans: [("inventory-down".to_string(), (ms(5_000), ms(12_000)))].into(),
            phases: [("recovery".to_string(), (ms(12_000), ms(PLANNED_MS)))].into(),
        };
        let stream = Stream::new(setup, start);
        // Two instances of the target: a hit reaches one by its time (hits
        // of one instant at one instance: which of two is first is moot).
        let plans: Vec<(&str, Arc<FaultPlan>)> = ["a", "b"]
            .into_iter()
            .map(|name| {
                let plan = FaultPlan::new(Vec::new(), 0, start).recording_arrivals();
                (name, Arc::new(plan))
            })
            .collect();
        stream.watch_plans(
            plans
                .iter()
                .map(|(name, plan)| (plan.clone(), Some(name.to_string())))
                .collect(),
        );

        let events = events(gens, steps, cut, shuffle);

        let mut played = Played::new(gens.len());
        let mut cut_done = false;
        for (at, _, event) in events {
            if let Some(c) = cut
                && !cut_done
                && at >= c
            {
                tokio::time::advance(ms(c).saturating_sub(clock::now() - start)).await;
                stream.cut(ms(c));
                cut_done = true;
            }
            let now = ms(at);
            tokio::time::advance(now.saturating_sub(clock::now() - start)).await;
            played.apply(&stream, &plans, gens, at, event);
        }
        if let Some(c) = cut
            && !cut_done
        {
            stream.cut(ms(c));
        }
        let (counted, _) = stream.finish().unwrap();

        let timeline = whole_timeline(
            gens,
            played.joined,
            played.hits,
            played.transitions,
            played.health,
            cut,
        );
        let sunk = sunk.lock().unwrap().clone();
        (counted, sunk, timeline)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn streamed_tallies_equal_the_tallies_of_the_whole_timeline_with_hits_at_two_instances(
        gens in prop::collection::vec(request_gen(), 0..300),
        steps in prop::collection::vec(((0u64..PLANNED_MS / 50).prop_map(|k| k * 50), any::<bool>()), 0..12),
        cut in prop::option::weighted(0.3, (1u64..PLANNED_MS / 50).prop_map(|k| k * 50)),
        shuffle in any::<u64>(),
    ) {
        let mut steps = steps;
        steps.sort();
        let (counted, sunk, timeline) = play(&gens, &steps, cut, shuffle);
        let expectations: Vec<Expectation> =
            SENTENCES.iter().map(|s| parse(s).unwrap()).collect();
        let naive: Vec<Tally> = expectations.iter().map(|e| expect::tally(e, &timeline)).collect();
        for ((sentence, streamed), whole) in SENTENCES.iter().zip(&counted.tallies).zip(&naive) {
            prop_assert_eq!(streamed, whole, "{}", sentence);
        }
        // The sinks got every request, joined, in id order.
        prop_assert_eq!(&sunk, &timeline.requests);
        // The figures per route, over the run.
        for (route, tally) in &counted.routes {
            let mut whole = RouteTally::default();
            for r in timeline.requests.iter().filter(|r| &r.route == route) {
                whole.add(r);
            }
            prop_assert_eq!(tally, &whole, "route {}", route);
        }
        prop_assert_eq!(counted.target_hits, timeline.target_hits.len() as u64);
        // And per instance.
        let mut per_instance = std::collections::BTreeMap::new();
        for hit in &timeline.target_hits {
            *per_instance.entry(hit.instance.clone().unwrap_or_default()).or_insert(0) += 1;
        }
        prop_assert_eq!(&counted.instance_hits, &per_instance);
    }
}

#[test]
fn a_request_waits_for_its_report_and_no_longer_than_report_wait() {
    paused().block_on(async {
        let start = clock::now();
        let sunk = Arc::new(Mutex::new(Vec::new()));
        let setup = StreamSetup {
            expectations: Vec::new(),
            routes: vec!["A".to_string()],
            sinks: vec![Box::new(Keep(sunk.clone()))],
            keep: false,
            recent: Duration::ZERO,
            defended: true,
            planned: Duration::from_secs(3600),
            fault_spans: BTreeMap::new(),
            phases: BTreeMap::new(),
        };
        let stream = Stream::new(setup, start);
        let g = Gen {
            gap_ms: 0,
            route_b: false,
            latency_ms: Some(10),
            status: 200,
            fallback: false,
            report: None,
            hits: Vec::new(),
        };
        for id in 0..2 {
            stream.sent(record(id, &g, Duration::ZERO));
            let mut r = record(id, &g, Duration::ZERO);
            r.status = Some(200);
            stream.finished(r);
        }
        // Request 0's report comes a second later; request 1's never does.
        tokio::time::advance(Duration::from_secs(1)).await;
        stream.call(&report(0, std::slice::from_ref(&g)));
        tokio::time::advance(Duration::from_millis(1)).await;
        stream.sent(record(2, &g, Duration::from_millis(1001)));
        assert_eq!(sunk.lock().unwrap().len(), 1, "request 0, joined, is final");
        // Request 1 holds back the ids after it until it stops waiting.
        tokio::time::advance(REPORT_WAIT).await;
        stream.sent(record(3, &g, REPORT_WAIT));
        let ids: Vec<u64> = sunk.lock().unwrap().iter().map(|r| r.id).collect();
        assert_eq!(ids, [0, 1], "request 1 is final without its report");
        assert!(
            stream.lock().open.len() == 2,
            "2 and 3 are still open (sent, not finished)"
        );
    });
}

#[test]
fn hits_at_several_instances_are_judged_in_time_order_not_instance_order() {
    paused().block_on(async {
        let start = clock::now();
        let setup = StreamSetup {
            expectations: vec![parse("calls to /* between 1s and 15s >= 1").unwrap()],
            routes: Vec::new(),
            sinks: Vec::new(),
            keep: false,
            recent: Duration::ZERO,
            defended: false,
            planned: ms(PLANNED_MS),
            fault_spans: BTreeMap::new(),
            phases: BTreeMap::new(),
        };
        let stream = Stream::new(setup, start);
        let plan = || Arc::new(FaultPlan::new(Vec::new(), 0, start).recording_arrivals());
        let (a, b) = (plan(), plan());
        stream.watch_plans(vec![
            (a.clone(), Some("a".to_string())),
            (b.clone(), Some("b".to_string())),
        ]);
        let arrive = |plan: &FaultPlan, id: u64| {
            let mut headers = http::HeaderMap::new();
            headers.insert(
                crate::http::headers::REQUEST_ID_HEADER,
                id.to_string().parse().unwrap(),
            );
            plan.note_arrival("/x", &headers);
        };
        // b is reached first, then a; the stream reads both at once.
        tokio::time::advance(ms(2_000)).await;
        arrive(&b, 7);
        tokio::time::advance(ms(1_000)).await;
        arrive(&a, 8);
        let (counted, _) = stream.finish().unwrap();
        assert_eq!(
            counted.tallies,
            [Tally::Calls(crate::experiment::expect::tally::CallTally {
                count: 2,
                named: ["/x", "/x"]
                    .iter()
                    .zip([(ms(2_000), 7), (ms(3_000), 8)])
                    .map(
                        |(path, (at, id))| crate::experiment::expect::tally::NamedCall {
                            at,
                            path: path.to_string(),
                            request_id: Some(id),
                        }
                    )
                    .collect(),
            })]
        );
        let per_instance = [("a".to_string(), 1), ("b".to_string(), 1)];
        assert_eq!(counted.instance_hits, per_instance.into_iter().collect());
    })
}

/// An hour-long run of route A without a defense line or sinks, counting
/// for `expectations`, keeping every request when `keep`.
fn an_hour_of_route_a(expectations: Vec<Expectation>, keep: bool) -> StreamSetup {
    StreamSetup {
        expectations,
        routes: vec!["A".to_string()],
        sinks: Vec::new(),
        keep,
        recent: Duration::ZERO,
        defended: false,
        planned: Duration::from_secs(3600),
        fault_spans: BTreeMap::new(),
        phases: BTreeMap::new(),
    }
}

#[test]
fn a_long_run_of_distinct_latencies_keeps_a_bounded_number_of_them() {
    paused().block_on(async {
        let start = clock::now();
        let stream = Stream::new(
            an_hour_of_route_a(vec![parse("route A p99 < 1s").unwrap()], false),
            start,
        );
        // As a real clock measures them: every request its own latency.
        let requests = 3 * RouteTally::LATENCIES as u64;
        for id in 0..requests {
            let sent = Duration::from_millis(id);
            stream.sent(RequestRecord::sent(id, "A", "/a/x", sent));
            let mut r = RequestRecord::sent(id, "A", "/a/x", sent);
            r.status = Some(200);
            r.latency = Some(Duration::from_nanos(2_000_000 + id * 1_009));
            stream.finished(r);
            tokio::time::advance(Duration::from_millis(1)).await;
        }
        let (counted, _) = stream.finish().unwrap();
        let route = &counted.routes[0].1;
        assert_eq!(route.requests, requests);
        assert!(
            route.latencies.len() <= RouteTally::LATENCIES,
            "the route over the run keeps {} latencies of {requests}",
            route.latencies.len()
        );
        let Tally::Route(window) = &counted.tallies[0] else {
            panic!("a route sentence's tally: {:?}", counted.tallies[0]);
        };
        assert!(
            window.latencies.len() <= RouteTally::LATENCIES,
            "the sentence's tally keeps {} latencies of {requests}",
            window.latencies.len()
        );
    })
}

/// What a kept run holds in memory of its requests: those waiting to be
/// final aside, the kept ones.
fn kept_in_memory(stream: &Stream) -> usize {
    stream
        .lock()
        .kept_requests
        .as_ref()
        .map_or(0, crate::spill::Spill::in_memory)
}

#[test]
fn a_kept_run_holds_none_of_its_requests_and_arrivals_in_memory_yet_returns_them_all() {
    paused().block_on(async {
        let start = clock::now();
        let stream = Stream::new(an_hour_of_route_a(Vec::new(), true), start);
        let plan = Arc::new(FaultPlan::new(Vec::new(), 0, start).recording_arrivals());
        stream.watch_plans(vec![(plan.clone(), None)]);
        let requests = 5_000u64;
        for id in 0..requests {
            let sent = clock::now() - start;
            stream.sent(RequestRecord::sent(id, "A", "/a/x", sent));
            let mut headers = http::HeaderMap::new();
            headers.insert(
                crate::http::headers::REQUEST_ID_HEADER,
                id.to_string().parse().unwrap(),
            );
            plan.note_arrival("/a/x", &headers);
            let mut r = RequestRecord::sent(id, "A", "/a/x", sent);
            r.status = Some(200);
            r.latency = Some(Duration::from_nanos(1_000_003 + id));
            tokio::time::advance(Duration::from_millis(2)).await;
            stream.finished(r);
        }
        assert_eq!(kept_in_memory(&stream), 0, "kept requests in memory");
        assert_eq!(plan.arrivals().len(), 0, "arrivals left in the plan's log");
        let (counted, kept) = stream.finish().unwrap();
        assert_eq!(counted.routes[0].1.requests, requests);
        let mut kept = kept.expect("a kept run hands its lists over");
        let kept_requests: Vec<RequestRecord> = kept
            .requests
            .read()
            .into_iter()
            .map(RequestRecord::from)
            .collect();
        assert_eq!(kept_requests.len() as u64, requests);
        let last = &kept_requests[requests as usize - 1];
        assert_eq!(last.id, requests - 1);
        assert_eq!(last.sent, ms(2 * (requests - 1)), "exact times come back");
        assert_eq!(
            last.latency,
            Some(Duration::from_nanos(1_000_003 + requests - 1))
        );
        let arrivals = kept.arrivals.read();
        assert!(
            arrivals.iter().all(|(plan, _)| *plan == 0),
            "one plan watched"
        );
        assert_eq!(arrivals.len() as u64, requests);
        assert_eq!(arrivals[7].1.request_id, Some(7));
        assert_eq!(arrivals[7].1.at, ms(14));
    })
}
