//! The pool sentences: when a server was ejected and came back, that one
//! never was, the counter proof per instance while it was out, a server's
//! share of its pool's calls, the share a backup answered; and the checks
//! of the names they use.

use super::fixture::{hit, judge, req, run, s};
use crate::defense::report::{HealthChange, ServedBy};
use crate::experiment::expect::{Names, check, parse};
use crate::experiment::timeline::{FaultWindows, PoolInfo, Timeline};

/// Pool `inventory` with servers a, b, c and backup d; fault `b-down` 20-40 s;
/// b ejected at 21 s (active check) and back at 42 s.
fn pool_run() -> Timeline {
    let mut t = run();
    t.faults.push(FaultWindows {
        name: "b-down".into(),
        kind: "status".into(),
        windows: vec![(s(20.0), s(40.0))],
    });
    t.pools = vec![PoolInfo {
        name: "inventory".into(),
        servers: vec![
            ("a".into(), false),
            ("b".into(), false),
            ("c".into(), false),
            ("d".into(), true),
        ],
        starts_out: false,
        slow_start: crate::clock::Duration::ZERO,
    }];
    t.health = vec![change(21.0, "b", false), change(42.0, "b", true)];
    t
}

fn change(at: f64, server: &str, healthy: bool) -> HealthChange {
    HealthChange {
        at: s(at),
        pool: "inventory".into(),
        server: server.into(),
        healthy,
        by: if healthy {
            "active check passed 2 times".into()
        } else {
            "active check GET /health: status 503 (3rd failure in a row)".into()
        },
    }
}

/// A request of route A sent at `sent` seconds and answered by `server`,
/// which the pool chose as it was sent.
fn served(id: u64, sent: f64, server: &str) -> crate::experiment::timeline::RequestRecord {
    routed(id, sent, sent, server)
}

/// As [`served`], the pool choosing `server` at `picked` seconds.
fn routed(
    id: u64,
    sent: f64,
    picked: f64,
    server: &str,
) -> crate::experiment::timeline::RequestRecord {
    let mut r = req(id, "A", sent, 200, 5);
    r.served_by = Some(Box::new(ServedBy {
        pool: "inventory".into(),
        server: server.into(),
        backup: server == "d",
        picked: s(picked),
    }));
    r
}

/// A target hit at instance `instance` at `at` seconds.
fn hit_at(at: f64, instance: &str, id: Option<u64>) -> crate::experiment::timeline::TargetHit {
    let mut h = hit(
        at,
        if id.is_some() {
            "/inventory/x"
        } else {
            "/health"
        },
        id,
    );
    h.instance = Some(instance.into());
    h
}

#[test]
fn ejection_within_its_deadline_passes_and_says_which_check_decided() {
    let v = judge(
        "instance b is ejected within 3s of b-down.start",
        &pool_run(),
    );
    assert!(v.passed, "{v}");
    assert_eq!(v.expected, "instance b ejected within 3s of b-down.start");
    assert_eq!(
        v.seen,
        "ejected at 21s, 1s after b-down.start (active check GET /health: status 503 (3rd \
         failure in a row))"
    );
    assert_eq!(v.at, Some(s(21.0)));
}

#[test]
fn an_ejection_later_than_its_deadline_fails() {
    let v = judge(
        "instance b of inventory is ejected within 500ms of b-down.start",
        &pool_run(),
    );
    assert!(!v.passed, "{v}");
}

#[test]
fn a_server_never_ejected_fails_the_ejection_sentence_with_the_anchor() {
    let v = judge(
        "instance a is ejected within 3s of b-down.start",
        &pool_run(),
    );
    assert!(!v.passed);
    assert_eq!(
        v.seen,
        "not ejected at or after b-down.start (20s); the run ended at 60s"
    );
}

#[test]
fn return_is_timed_from_the_fault_end() {
    let t = pool_run();
    assert!(judge("instance b returns within 2s of b-down.end", &t).passed);
    assert!(!judge("instance b returns within 1s of b-down.end", &t).passed);
}

#[test]
fn never_ejected_passes_for_untouched_servers_and_lists_the_ejections_of_others() {
    let t = pool_run();
    assert!(judge("instance a is never ejected", &t).passed);
    let v = judge("instance b is never ejected during b-down", &t);
    assert!(!v.passed);
    assert_eq!(v.seen, "ejected 1 time during b-down: at 21s");
    assert!(judge("instance b is never ejected between 0s and 20s", &t).passed);
}

#[test]
fn counter_proof_per_instance_counts_client_calls_while_ejected_only() {
    let mut t = pool_run();
    t.requests = vec![
        served(1, 10.0, "b"),
        served(2, 30.0, "a"),
        served(3, 45.0, "b"),
    ];
    t.target_hits = vec![
        hit_at(10.0, "b", Some(1)),
        hit_at(25.0, "b", None), // a health check: not a client call
        hit_at(30.0, "a", Some(2)),
        hit_at(45.0, "b", Some(3)), // after b came back
    ];
    let proof = "calls to instance b while instance b is ejected == 0";
    let v = judge(proof, &t);
    assert!(v.passed, "{v}");
    assert_eq!(
        v.seen,
        "0 calls to instance b while instance b is ejected (21s in 1 interval)"
    );
    t.requests.push(served(4, 30.0, "b"));
    t.target_hits.push(hit_at(30.0, "b", Some(4)));
    let v = judge(proof, &t);
    assert!(!v.passed);
    assert_eq!(
        v.seen,
        "1 call to instance b while instance b is ejected: 30s /inventory/x (request 4)"
    );
    assert!(
        judge(
            "calls to /inventory/* on instance a while instance b of inventory is ejected == 1",
            &t
        )
        .passed
    );
}

#[test]
fn a_share_counts_the_calls_the_pool_answered_in_the_window() {
    let mut t = pool_run();
    // 45-60 s: b answers 1 of 10; before 45 s, b answers everything.
    t.requests = (0..10)
        .map(|i| served(i, 45.0 + i as f64, if i == 0 { "b" } else { "a" }))
        .chain((10..20).map(|i| served(i, 1.0, "b")))
        .collect();
    let v = judge(
        "instance b of inventory share between 45s and 60s <= 10%",
        &t,
    );
    assert!(v.passed, "{v}");
    assert_eq!(
        v.seen,
        "instance b of inventory answered exactly 10.0% (1 of 10) of the pool's calls between 45s and 60s"
    );
    assert!(!judge("instance b share between 45s and 60s < 10%", &t).passed);
    assert!(judge("instance b share within 5% of 55%", &t).passed);
}

#[test]
fn a_share_counts_a_call_by_when_the_pool_routed_it_not_when_it_was_sent() {
    let mut t = pool_run();
    // b is ejected 21-42 s. Sent at 41.999 s, routed at 42.001 s, after b
    // came back: not a call b answered while ejected.
    t.requests = vec![
        served(0, 30.0, "a"),
        served(1, 35.0, "c"),
        routed(2, 41.999, 42.001, "b"),
    ];
    let v = judge("instance b share while instance b is ejected == 0%", &t);
    assert!(v.passed, "{v}");
    // Sent at 20.999 s, routed at 21.001 s, after b's ejection: counted,
    // so a pool that routes to an ejected server fails.
    t.requests.push(routed(3, 20.999, 21.001, "b"));
    let v = judge("instance b share while instance b is ejected == 0%", &t);
    assert!(!v.passed, "{v}");
    assert_eq!(
        v.seen,
        "instance b answered 33.3% (1 of 3) of the pool's calls while instance b is ejected"
    );
}

#[test]
fn a_share_over_no_pool_calls_fails_except_for_an_upper_bound() {
    let t = pool_run();
    let v = judge("instance b share in phase recovery >= 30%", &t);
    assert!(!v.passed);
    assert!(
        v.seen
            .starts_with("no calls answered by the pool in phase recovery"),
        "{v}"
    );
    assert!(judge("instance b share in phase recovery <= 10%", &t).passed);
}

#[test]
fn backup_share_counts_calls_a_backup_answered() {
    let mut t = pool_run();
    t.requests = vec![
        served(1, 25.0, "d"),
        served(2, 26.0, "d"),
        served(3, 27.0, "d"),
        served(4, 28.0, "a"),
        served(5, 50.0, "a"),
    ];
    let v = judge("pool inventory served by backup during b-down >= 75%", &t);
    assert!(v.passed, "{v}");
    assert_eq!(
        v.seen,
        "backups of inventory answered exactly 75.0% (3 of 4) of the pool's calls during b-down"
    );
    assert!(!judge("pool inventory served by backup during b-down > 75%", &t).passed);
    assert!(
        judge(
            "pool inventory served by backup in phase recovery == 0%",
            &t
        )
        .passed
    );
}

#[test]
fn pool_sentences_name_known_pools_servers_and_instances() {
    let mut t = pool_run();
    t.target_hits = vec![hit_at(1.0, "a", Some(1)), hit_at(1.0, "b", Some(2))];
    let names = Names::of(&t);
    let checked = |sentence: &str| check(&parse(sentence).unwrap(), &names);
    assert_eq!(checked("instance b of inventory share <= 10%"), Ok(()));
    assert_eq!(
        checked("calls to instance a while instance b is ejected == 0"),
        Ok(())
    );
    assert_eq!(
        checked("instance e is ejected within 3s of b-down.start"),
        Err("unknown pool server \"e\" at column 10; the pool servers are: a, b, c, d".to_string())
    );
    assert_eq!(
        checked("pool inventori served by backup >= 50%"),
        Err(
            "unknown pool \"inventori\" at column 6 (did you mean \"inventory\"?); the pools are: \
             inventory"
                .to_string()
        )
    );
    assert_eq!(
        checked("calls to instance z == 0"),
        Err("unknown instance \"z\" at column 19; the instances are: a, b".to_string())
    );
}

#[test]
fn a_misspelt_pool_verb_is_located_with_a_suggestion() {
    let e = parse("instance b is ejectd within 3s of b-down.start").unwrap_err();
    assert_eq!(e.column, 15);
    assert!(e.message.contains("did you mean \"ejected\""), "{e}");
    let e = parse("pool inventory served by primary >= 1%").unwrap_err();
    assert_eq!(e.column, 26);
}
