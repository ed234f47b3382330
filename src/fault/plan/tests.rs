//! Tests of the fault plan: probability, seeds, windows, cold starts.
use super::snapshot::stream_of;
use super::*;
use crate::schema::from_yaml_str;

fn plan(yaml: &str, seed: u64) -> FaultPlan {
    let file: super::super::FaultFile = from_yaml_str("t.yaml", yaml).unwrap();
    FaultPlan::new(file.faults, seed, clock::now())
}

const THIRTY: &str = "faults:\n  - status: { code: 503 }\n    probability: 30%\n";

#[tokio::test(start_paused = true)]
async fn after_idle_hits_only_the_first_request_after_a_quiet_spell() {
    let p = plan(
        "faults:\n  - { status: { code: 503 }, after_idle: 1s }\n",
        1,
    );
    let h = http::HeaderMap::new();
    let hit = || !p.pick_request(&http::Method::GET, "/", &h).is_empty();
    assert!(hit(), "the very first request comes after nothing: cold");
    tokio::time::advance(Duration::from_millis(500)).await;
    assert!(!hit(), "0.5 s after the last one: warm");
    tokio::time::advance(Duration::from_millis(999)).await;
    assert!(!hit(), "0.999 s: still warm");
    tokio::time::advance(Duration::from_secs(1)).await;
    assert!(hit(), "1 s without a request: cold again");
    assert!(!hit());
}

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

#[tokio::test(start_paused = true)]
async fn replacing_the_list_keeps_a_kept_faults_stream_and_does_not_shift_it() {
    let alone = plan(THIRTY, 3);
    let expected = sequence(&alone, 200);
    let edited = plan(THIRTY, 3);
    let first = sequence(&edited, 100);
    // Add a fault before it: the kept fault (same name) goes on where it was.
    let mut faults = plan(
        "faults:\n  - { name: other, latency: { delay: 1ms }, probability: 50% }\n",
        3,
    )
    .faults()
    .to_vec();
    faults.extend(edited.faults().iter().cloned());
    edited.replace(faults);
    let h = http::HeaderMap::new();
    let rest: Vec<bool> = (0..100)
        .map(|_| {
            edited
                .pick_request(&http::Method::GET, "/", &h)
                .iter()
                .any(|hit| hit.fault().name == "status")
        })
        .collect();
    assert_eq!([first, rest].concat(), expected);
}

/// A fault a connection rolls for (TCP): `status` is never rolled there.
const THIRTY_TCP: &str = "faults:\n  - latency: { delay: 1ms }\n    probability: 30%\n";

#[tokio::test(start_paused = true)]
async fn a_connection_rerolled_after_a_replace_keeps_rolls_of_unchanged_faults() {
    let p = plan(THIRTY_TCP, 11);
    let rolls: Vec<ConnectionRolls> = (0..50).map(|_| p.roll_connection(None)).collect();
    let hit = rolls.iter().filter(|r| !r.is_clean()).count();
    assert!(
        (5..=25).contains(&hit),
        "about 30% of 50 rolled a hit: {hit}"
    );
    p.replace(p.faults().to_vec());
    for r in &rolls {
        let again = p.roll_connection(Some(r));
        assert_eq!(again.version(), 1);
        assert_eq!(again.is_clean(), r.is_clean());
    }
}

/// Two faults named `latency` (occurrences 0 and 1) and one `other`.
const THREE_TCP: &str = "faults:\n  - { latency: { delay: 1ms }, probability: 30% }\n  - { latency: { delay: 2ms }, probability: 30% }\n  - { name: other, latency: { delay: 3ms }, probability: 50% }\n";

/// Each fault's next `n` draws from its own stream, by position.
fn draws(p: &FaultPlan, n: usize) -> Vec<Vec<u64>> {
    (0..p.faults().len())
        .map(|i| {
            let hit = p.hit(i);
            (0..n).map(|_| p.hit_uniform(&hit).to_bits()).collect()
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn adding_faults_is_replacing_with_them_appended_and_shares_the_earlier_ones() {
    let all = plan(THREE_TCP, 5).faults().to_vec();
    let added = plan(THIRTY_TCP, 5);
    let replaced = plan(THIRTY_TCP, 5);
    let before = draws(&added, 3);
    assert_eq!(draws(&replaced, 3), before);
    let earlier = added.snapshot();
    added.add(all[1..].to_vec());
    replaced.replace(all.clone());
    assert_eq!(format!("{:?}", added.faults().to_vec()), format!("{all:?}"));
    assert_eq!(added.version(), 1);
    // The same streams, the kept fault going on where it was, and the
    // earlier fault shared, not copied.
    assert_eq!(draws(&added, 4), draws(&replaced, 4));
    assert!(Arc::ptr_eq(
        &earlier.entry(0).state,
        &added.snapshot().entry(0).state
    ));
    assert_eq!(earlier.len(), 1, "the earlier list is left as it was");
    // A connection rolled before keeps its roll of the first fault.
    let rolls: Vec<ConnectionRolls> = (0..50).map(|_| added.roll_connection(None)).collect();
    added.add(vec![all[2].clone()]);
    for r in &rolls {
        let again = added.roll_connection(Some(r));
        assert_eq!(again.version(), 2);
        let first = |r: &ConnectionRolls| r.hits().any(|h| h.index == 0);
        assert_eq!(first(&again), first(r));
    }
}

#[tokio::test(start_paused = true)]
async fn a_connection_rerolls_a_fault_whose_probability_changed() {
    let p = plan(THIRTY_TCP, 11);
    let rolls: Vec<ConnectionRolls> = (0..50).map(|_| p.roll_connection(None)).collect();
    let mut faults = p.faults().to_vec();
    faults[0].probability = crate::schema::units::Percent::ALL;
    p.replace(faults);
    for r in &rolls {
        assert!(
            !p.roll_connection(Some(r)).is_clean(),
            "edited to 100%: rolled again, hit"
        );
    }
}

#[test]
fn fault_streams_are_fnv1a_of_the_name_and_occurrence() {
    // FNV-1a 64 of the name's bytes followed by the occurrence as 8 bytes
    // little-endian (computed independently).
    assert_eq!(stream_of("latency", 0), 0xa0c5_3892_f0a1_83d9);
    assert_eq!(stream_of("latency", 1), 0x81ca_7189_e5b2_39b8);
}

#[tokio::test(start_paused = true)]
async fn a_hit_is_active_in_its_window_and_says_when_that_changes() {
    let p = plan(
        "faults:\n  - { latency: { delay: 1ms }, at: 2s, for: 3s }\n",
        1,
    );
    let hit = p.hit(0);
    assert!(!p.hit_active(&hit));
    assert_eq!(
        p.hit_next_change(&hit),
        (false, Some(p.start() + Duration::from_secs(2)))
    );
    tokio::time::advance(Duration::from_secs(2)).await;
    assert!(p.hit_active(&hit));
    assert_eq!(
        p.hit_next_change(&hit),
        (true, Some(p.start() + Duration::from_secs(5)))
    );
}

#[tokio::test(start_paused = true)]
async fn probability_100_always_hits_and_0_never_does() {
    let all = "faults:\n  - status: { code: 503 }\n";
    let none = "faults:\n  - status: { code: 503 }\n    probability: 0%\n";
    assert!(sequence(&plan(all, 1), 200).iter().all(|h| *h));
    assert!(sequence(&plan(none, 1), 200).iter().all(|h| !*h));
}

#[tokio::test(start_paused = true)]
async fn jitter_spreads_delays_evenly_around_the_delay_within_its_bounds() {
    let p = plan("faults:\n  - latency: { delay: 100ms, jitter: 20ms }\n", 5);
    let hit = p.hit(0);
    let FaultKind::Latency(latency) = &hit.fault().kind else {
        panic!("a latency fault");
    };
    let delays: Vec<f64> = (0..2000)
        .map(|_| p.hit_delay(&hit, latency).as_secs_f64() * 1000.0)
        .collect();
    assert!(
        delays.iter().all(|d| (80.0..=120.0).contains(d)),
        "within ±20 ms"
    );
    let mean = delays.iter().sum::<f64>() / delays.len() as f64;
    assert!((98.0..=102.0).contains(&mean), "centred: {mean}");
    let below = delays.iter().filter(|d| **d < 90.0).count();
    assert!(
        (400..=600).contains(&below),
        "a quarter below 90 ms: {below}"
    );
    let fixed = plan("faults:\n  - latency: { delay: 100ms }\n", 5);
    let hit = fixed.hit(0);
    let FaultKind::Latency(latency) = &hit.fault().kind else {
        panic!("a latency fault");
    };
    assert_eq!(fixed.hit_delay(&hit, latency), Duration::from_millis(100));
}

#[tokio::test(start_paused = true)]
async fn each_recorded_hit_counts_one_injection() {
    let p = plan(THIRTY, 1);
    assert_eq!(p.injected(0), 0);
    let hit = p.hit(0);
    p.record_hit(&hit, "/a");
    p.record_hit(&hit, "/b");
    assert_eq!(p.injected(0), 2);
    assert_eq!(p.injected_by_name().get("status"), Some(&2));
    p.remove_all();
    assert_eq!(
        p.injected_by_name().get("status"),
        Some(&2),
        "kept after removal"
    );
}

#[tokio::test(start_paused = true)]
async fn the_jitter_offset_is_added_to_the_delay_from_the_faults_own_draw() {
    // Mirrored offsets have the same spread, so only the draw itself tells
    // `delay + offset` from `delay - offset`.
    let p = plan("faults:\n  - latency: { delay: 100ms, jitter: 20ms }\n", 9);
    let hit = p.hit(0);
    let FaultKind::Latency(latency) = &hit.fault().kind else {
        panic!("a latency fault");
    };
    let mut rng = clock::seeded_rng(9, stream_of("latency", 0));
    for _ in 0..20 {
        let u: f64 = rng.random();
        let expected = Duration::from_secs_f64(0.100 + (u * 2.0 - 1.0) * 0.020);
        assert_eq!(p.hit_delay(&hit, latency), expected);
    }
}

#[tokio::test(start_paused = true)]
async fn arrivals_are_read_whole_or_taken_and_forgotten() {
    let p = FaultPlan::empty().recording_arrivals();
    let mut headers = http::HeaderMap::new();
    headers.insert(
        crate::http::headers::REQUEST_ID_HEADER,
        "7".parse().unwrap(),
    );
    p.note_arrival("/a", &headers);
    tokio::time::advance(Duration::from_millis(5)).await;
    p.note_arrival("/b", &http::HeaderMap::new());
    let paths = |v: Vec<Arrival>| v.into_iter().map(|a| a.path).collect::<Vec<_>>();
    assert_eq!(paths(p.arrivals()), ["/a", "/b"]);
    let taken = p.take_arrivals();
    assert_eq!(taken[0].request_id, Some(7));
    assert_eq!(taken[1].at, Duration::from_millis(5));
    assert_eq!(paths(taken), ["/a", "/b"]);
    assert!(p.take_arrivals().is_empty(), "taken arrivals are gone");
    assert!(p.arrivals().is_empty());
}

#[tokio::test(start_paused = true)]
async fn an_arrival_carrying_a_correlation_header_is_tagged_with_its_load_request() {
    use crate::http::headers::{Correlation, TRACEPARENT, X_REQUEST_ID};
    let correlation = Correlation {
        headers: vec![
            http::HeaderName::from_static(X_REQUEST_ID),
            http::HeaderName::from_static(TRACEPARENT),
        ],
        seed: 11,
    };
    let p = FaultPlan::empty().recording_arrivals();
    let traced = |name: &'static str, id| {
        let mut headers = http::HeaderMap::new();
        headers.insert(
            name,
            correlation.value(&http::HeaderName::from_static(name), id),
        );
        headers
    };
    p.note_arrival("/before", &traced(X_REQUEST_ID, 1));
    p.correlate(correlation.clone());
    p.note_arrival("/rid", &traced(X_REQUEST_ID, 2));
    p.note_arrival("/tp", &traced(TRACEPARENT, 3));
    p.note_arrival("/none", &http::HeaderMap::new());
    let mut own = traced(TRACEPARENT, 3);
    own.insert(
        crate::http::headers::REQUEST_ID_HEADER,
        "9".parse().unwrap(),
    );
    p.note_arrival("/own", &own);
    let ids: Vec<_> = p.arrivals().into_iter().map(|a| a.request_id).collect();
    assert_eq!(
        ids,
        [None, Some(2), Some(3), None, Some(9)],
        "not before correlate; firedrill's own header first"
    );
}

#[tokio::test(start_paused = true)]
async fn a_delay_and_jitter_beyond_any_duration_saturate_instead_of_panicking() {
    let p = plan("faults:\n  - latency: { delay: 100ms, jitter: 20ms }\n", 5);
    let hit = p.hit(0);
    let huge = super::super::spec::Latency {
        delay: crate::schema::units::Dur(Duration::MAX),
        jitter: crate::schema::units::Dur(Duration::MAX),
        direction: Default::default(),
        per: Default::default(),
    };
    for _ in 0..100 {
        assert!(p.hit_delay(&hit, &huge) >= Duration::from_secs(365 * 24 * 3600));
    }
}
