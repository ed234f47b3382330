//! Tests of the fault plan: probability, seeds, windows, cold starts.
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

#[tokio::test(start_paused = true)]
async fn a_connection_rerolled_after_a_replace_keeps_rolls_of_unchanged_faults() {
    let p = plan(THIRTY, 11);
    let rolls: Vec<ConnectionRolls> = (0..50).map(|_| p.roll_connection(None)).collect();
    p.replace(p.faults().to_vec());
    for r in &rolls {
        let again = p.roll_connection(Some(r));
        assert_eq!(again.version(), 1);
        assert_eq!(again.is_clean(), r.is_clean());
    }
}
