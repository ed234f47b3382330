//! A running pool under a paused clock: backups only when every primary is
//! out, passive ejection and return with its health changes, the slow
//! start share, and active checks against the real fixture target over
//! in-memory pipes.

use std::sync::Arc;

use super::*;
use crate::clock::Duration;
use crate::defense::report::Recorder;
use crate::http::ShutdownSignal;
use crate::http::client::HttpUpstream;
use crate::target::{TargetRoute, TargetStats};

fn config(yaml: &str) -> PoolConfig {
    crate::schema::from_yaml_str("pool.yaml", yaml).unwrap()
}

/// An upstream nothing listens behind: picking never sends.
fn unused() -> Arc<dyn Upstream> {
    let (connector, _) = crate::net::memory_pair(1024);
    Arc::new(HttpUpstream::new(Arc::new(connector), "unused"))
}

/// The fixture target answering `routes` first, over in-memory pipes, and
/// the sender that stops it.
fn target(routes: &str) -> (Arc<dyn Upstream>, tokio::sync::watch::Sender<bool>) {
    let (connector, acceptor) = crate::net::memory_pair(64 * 1024);
    let routes: Vec<TargetRoute> = crate::schema::from_yaml_str("routes.yaml", routes).unwrap();
    let (stop, shutdown) = ShutdownSignal::new();
    tokio::spawn(crate::target::serve(
        acceptor,
        Arc::new(TargetStats::with_routes(routes)),
        shutdown,
    ));
    (
        Arc::new(HttpUpstream::new(Arc::new(connector), "target")),
        stop,
    )
}

fn pool(yaml: &str, upstreams: Vec<Arc<dyn Upstream>>) -> (Arc<Pool>, Arc<Recorder>) {
    let recorder = Arc::new(Recorder::default());
    let pool = Pool::new(
        "inventory",
        &config(yaml),
        upstreams,
        clock::now(),
        recorder.clone(),
    );
    (pool, recorder)
}

/// The server of each of `n` picks at `now`, each attempt ending at once
/// as `failed` says.
fn picks(pool: &Arc<Pool>, n: usize, failed: impl Fn(&str) -> bool) -> Vec<String> {
    (0..n)
        .map(|_| {
            let lease = pool.pick().expect("a server");
            let name = lease.server().to_string();
            lease.record(failed(&name));
            name
        })
        .collect()
}

const TWO_AND_A_BACKUP: &str = "
servers:
  - { address: a:1, name: a }
  - { address: b:1, name: b }
  - { address: c:1, name: c, backup: true }
max_fails: 1
fail_timeout: 10s
";

#[tokio::test(start_paused = true)]
async fn a_lease_says_when_the_pool_chose_its_server_on_the_clock_of_its_health_changes() {
    let (pool, _) = pool(TWO_AND_A_BACKUP, vec![unused(), unused(), unused()]);
    tokio::time::advance(Duration::from_millis(3_250)).await;
    let lease = pool.pick().unwrap();
    assert_eq!(lease.served_by().picked, Duration::from_millis(3_250));
}

#[tokio::test(start_paused = true)]
async fn the_backup_serves_only_while_every_primary_is_out() {
    let (pool, recorder) = pool(TWO_AND_A_BACKUP, vec![unused(), unused(), unused()]);
    assert_eq!(picks(&pool, 4, |_| false), ["a", "b", "a", "b"]);
    // a fails once: out; b takes everything.
    assert_eq!(picks(&pool, 1, |_| true), ["a"]);
    assert_eq!(picks(&pool, 3, |_| false), ["b", "b", "b"]);
    // b fails too: the backup, marked as one.
    assert_eq!(picks(&pool, 1, |_| true), ["b"]);
    let lease = pool.pick().unwrap();
    assert_eq!(
        lease.served_by(),
        ServedBy {
            pool: "inventory".into(),
            server: "c".into(),
            backup: true,
            picked: Duration::ZERO,
        }
    );
    drop(lease);
    // After fail_timeout the primaries are back and the backup idle again.
    tokio::time::advance(Duration::from_secs(10)).await;
    let mut back = picks(&pool, 4, |_| false);
    back.sort();
    assert_eq!(back, ["a", "a", "b", "b"]);
    let changes: Vec<(String, bool)> = recorder
        .health_changes()
        .into_iter()
        .map(|c| (c.server, c.healthy))
        .collect();
    assert_eq!(
        changes,
        [
            ("a".into(), false),
            ("b".into(), false),
            ("a".into(), true),
            ("b".into(), true)
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_server_with_its_own_max_fails_and_fail_timeout_keeps_them_as_nginx_does() {
    // NGINX's health-check guide: backend2 has max_fails=3 fail_timeout=30s,
    // backend1 NGINX's defaults (1 and 10s).
    let yaml = "
servers:
  - { address: a:1, name: a }
  - { address: b:1, name: b, max_fails: 3, fail_timeout: 30s }
";
    let (pool, recorder) = pool(yaml, vec![unused(), unused()]);
    pool.start();
    // a fails once: out for 10 s.
    assert_eq!(picks(&pool, 1, |_| true), ["a"]);
    // b fails twice and stays: its own max_fails is 3.
    assert_eq!(picks(&pool, 2, |_| true), ["b", "b"]);
    assert_eq!(pool.healthy(), [false, true]);
    assert_eq!(picks(&pool, 1, |_| true), ["b"]);
    assert_eq!(pool.healthy(), [false, false]);
    // a is back after its 10 s; b only after its own 30 s.
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(picks(&pool, 2, |_| false), ["a", "a"]);
    tokio::time::sleep(Duration::from_secs(19)).await;
    assert_eq!(pool.healthy(), [true, false]);
    tokio::time::sleep(Duration::from_millis(1_010)).await;
    assert_eq!(
        pool.healthy(),
        [true, true],
        "b is back by the timer, with no call"
    );
    let changes: Vec<(String, bool, Duration, String)> = recorder
        .health_changes()
        .into_iter()
        .map(|c| (c.server, c.healthy, c.at, c.by))
        .collect();
    assert_eq!(
        changes,
        [
            (
                "a".into(),
                false,
                Duration::ZERO,
                "passive: 1 failure within 10s".into()
            ),
            (
                "b".into(),
                false,
                Duration::ZERO,
                "passive: 3 failures within 30s".into()
            ),
            (
                "a".into(),
                true,
                Duration::from_secs(10),
                "passive: back after 10s out".into()
            ),
            (
                "b".into(),
                true,
                Duration::from_secs(30),
                "passive: back after 30s out".into()
            ),
        ]
    );
}

#[test]
fn a_servers_own_passive_settings_are_checked_like_the_pools() {
    let refused = |yaml: &str| {
        crate::schema::from_yaml_str::<PoolConfig>("pool.yaml", yaml)
            .unwrap_err()
            .to_string()
    };
    let zero = refused("servers: [{ address: a:1, fail_timeout: 0s }]");
    assert!(
        zero.contains("servers[0].fail_timeout: must be longer than 0s"),
        "{zero}"
    );
    let both = refused(
        "servers: [{ address: a:1, max_fails: 2 }]\noutlier_detection: { consecutive_5xx: 2 }",
    );
    assert!(
        both.contains("servers[0].max_fails: NGINX's max_fails and Envoy's outlier_detection"),
        "{both}"
    );
    // A server may turn passive tracking off for itself.
    let off =
        config("servers: [{ address: a:1, max_fails: 0, fail_timeout: 0s }, { address: b:1 }]");
    assert_eq!((off.max_fails_of(0), off.max_fails_of(1)), (0, 1));
    assert_eq!(off.fail_timeout_of(1), Duration::from_secs(10));
}

#[tokio::test(start_paused = true)]
async fn a_pool_of_one_server_never_takes_it_out_on_failures_as_nginx_does() {
    let (alone, recorder) = pool(
        "servers: [{ address: a:1, name: a }]\nmax_fails: 1",
        vec![unused()],
    );
    assert_eq!(picks(&alone, 5, |_| true), ["a"; 5]);
    assert_eq!(alone.healthy(), [true]);
    assert!(recorder.health_changes().is_empty());
    // With a backup it is no longer alone: one failure takes it out.
    let yaml = "servers: [{ address: a:1, name: a }, { address: c:1, name: c, backup: true }]";
    let (with_backup, _) = pool(yaml, vec![unused(), unused()]);
    assert_eq!(picks(&with_backup, 2, |_| true), ["a", "c"]);
}

#[tokio::test(start_paused = true)]
async fn every_server_out_gives_no_server() {
    let (pool, _) = pool(TWO_AND_A_BACKUP, vec![unused(), unused(), unused()]);
    assert_eq!(picks(&pool, 3, |_| true), ["a", "b", "c"]);
    assert!(pool.pick().is_none());
}

#[tokio::test(start_paused = true)]
async fn a_passive_return_is_reported_at_its_time_without_any_call() {
    let (pool, recorder) = pool(TWO_AND_A_BACKUP, vec![unused(), unused(), unused()]);
    pool.start();
    let t0 = clock::now();
    tokio::time::advance(Duration::from_secs(1)).await;
    picks(&pool, 1, |_| true);
    tokio::time::sleep(Duration::from_secs(30)).await;
    let changes = recorder.health_changes();
    assert_eq!(changes.len(), 2, "{changes:?}");
    assert_eq!(changes[0].at, Duration::from_secs(1));
    assert_eq!(changes[0].by, "passive: 1 failure within 10s");
    assert!(changes[1].healthy);
    assert_eq!(changes[1].at, Duration::from_secs(11));
    assert_eq!(changes[1].by, "passive: back after 10s out");
    assert!(clock::now() - t0 >= Duration::from_secs(31));
    assert_eq!(pool.healthy(), [true, true, true]);
}

#[tokio::test(start_paused = true)]
async fn in_flight_and_requests_count_each_attempt_until_it_ends() {
    let (pool, _) = pool(TWO_AND_A_BACKUP, vec![unused(), unused(), unused()]);
    let first = pool.pick().unwrap();
    let second = pool.pick().unwrap();
    let third = pool.pick().unwrap();
    let counts = |p: &Pool| -> Vec<(u64, u64)> {
        p.servers()
            .iter()
            .map(|s| (s.requests(), s.in_flight()))
            .collect()
    };
    assert_eq!(counts(&pool), [(2, 2), (1, 1), (0, 0)]);
    drop((first, second));
    assert_eq!(counts(&pool), [(2, 1), (1, 0), (0, 0)]);
    drop(third);
    assert_eq!(counts(&pool), [(2, 0), (1, 0), (0, 0)]);
}

#[tokio::test(start_paused = true)]
async fn least_conn_sends_the_next_call_to_the_idle_server() {
    let yaml = "
servers: [{ address: a:1, name: a }, { address: b:1, name: b }]
balance: least_conn
";
    let (pool, _) = pool(yaml, vec![unused(), unused()]);
    let busy = pool.pick().unwrap();
    assert_eq!(busy.server(), "a");
    for _ in 0..3 {
        assert_eq!(pool.pick().unwrap().server(), "b");
    }
}

#[tokio::test(start_paused = true)]
async fn a_returning_server_gets_well_below_its_share_early_in_slow_start_and_all_of_it_after() {
    let yaml = "
servers: [{ address: a:1, name: a }, { address: b:1, name: b }, { address: c:1, name: c }]
max_fails: 1
fail_timeout: 10s
slow_start: 30s
";
    let (pool, _) = pool(yaml, vec![unused(), unused(), unused()]);
    // c fails and is out for 10 s.
    assert_eq!(picks(&pool, 3, |name| name == "c"), ["a", "b", "c"]);
    tokio::time::advance(Duration::from_secs(10)).await;
    // One call every 10 ms; c's share in the ramp's first 10 s, then after it.
    let early = share_of(&pool, "c", 1000).await;
    assert!(
        early < 0.15,
        "c's share in the first third of the ramp: {early}"
    );
    tokio::time::advance(Duration::from_secs(20)).await;
    let late = share_of(&pool, "c", 999).await;
    assert!(
        (late - 1.0 / 3.0).abs() < 0.01,
        "c's share after the ramp: {late}"
    );
}

/// The share of `n` picks, one every 10 ms, that went to `server`.
async fn share_of(pool: &Arc<Pool>, server: &str, n: usize) -> f64 {
    let mut hits = 0;
    for _ in 0..n {
        if pool_pick_name(pool) == server {
            hits += 1;
        }
        tokio::time::advance(Duration::from_millis(10)).await;
    }
    hits as f64 / n as f64
}

fn pool_pick_name(pool: &Arc<Pool>) -> String {
    pool.pick().unwrap().server().to_string()
}

#[tokio::test(start_paused = true)]
async fn a_checked_server_starts_out_and_enters_after_its_first_passing_check_at_time_zero() {
    let yaml = "
servers: [{ address: a:1, name: a }, { address: b:1, name: b }]
health_check: { interval: 5s }
";
    let (healthy, _stop_a) = target("[]");
    let (failing, _stop_b) = target("[{ path: /health, status: 500 }]");
    let (pool, recorder) = pool(yaml, vec![healthy, failing]);
    assert!(
        pool.pick().is_none(),
        "nothing is in rotation before a check"
    );
    pool.start();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(pool.healthy(), [true, false]);
    let changes = recorder.health_changes();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0].server, "a");
    assert_eq!(changes[0].at, Duration::ZERO);
    assert_eq!(changes[0].by, "active check GET /health passed 1 time");
}

#[tokio::test(start_paused = true)]
async fn without_mandatory_a_checked_server_starts_in_rotation_and_leaves_after_its_failed_checks()
{
    let yaml = "
servers: [{ address: a:1, name: a }, { address: b:1, name: b }]
health_check: { interval: 5s, fails: 2, mandatory: false }
";
    let (healthy, _stop_a) = target("[]");
    let (failing, _stop_b) = target("[{ path: /health, status: 500 }]");
    let (pool, recorder) = pool(yaml, vec![healthy, failing]);
    assert_eq!(pool.healthy(), [true, true], "both are in before any check");
    assert!(pool.pick().is_some());
    pool.start();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(pool.healthy(), [true, true], "one failed check is not two");
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(pool.healthy(), [true, false]);
    let changes = recorder.health_changes();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0].server, "b");
    assert_eq!(changes[0].at, Duration::from_secs(5));
    assert!(!changes[0].healthy);
}

#[tokio::test(start_paused = true)]
async fn failing_checks_eject_after_fails_in_a_row_at_each_interval() {
    let yaml = "
servers: [{ address: a:1, name: a }]
health_check: { interval: 2s, fails: 3, passes: 1, match: { body: '\"status\":\"up\"' } }
";
    let (up, stop) = target(r#"[{ path: /health, body: '{"status":"up"}' }]"#);
    let (pool, recorder) = pool(yaml, vec![up]);
    pool.start();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(pool.healthy(), [true]);
    // The server goes away at 1 s: checks at 2, 4 and 6 s fail.
    stop.send(true).unwrap();
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(pool.healthy(), [true], "two failures are not three");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(pool.healthy(), [false]);
    let out = recorder.health_changes().pop().unwrap();
    assert!(!out.healthy);
    assert!(
        out.at >= Duration::from_secs(6) && out.at < Duration::from_secs(7),
        "{out:?}"
    );
    assert!(
        out.by.starts_with("active check GET /health: "),
        "{}",
        out.by
    );
    assert!(out.by.ends_with("(3rd failure in a row)"), "{}", out.by);
}

#[tokio::test(start_paused = true)]
async fn a_body_match_keeps_out_a_server_answering_200_with_an_error_page() {
    let yaml = "
servers: [{ address: a:1, name: a }, { address: b:1, name: b }]
health_check: { interval: 1s, match: { status: 200, body: 'ok' } }
";
    let (fine, _stop_a) = target("[]");
    let (error_page, _stop_b) = target("[{ path: /health, body: '<h1>Internal error</h1>' }]");
    let (pool, recorder) = pool(yaml, vec![fine, error_page]);
    pool.start();
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(pool.healthy(), [true, false]);
    assert!(recorder.health_changes().iter().all(|c| c.server == "a"));
}

#[tokio::test(start_paused = true)]
async fn health_checks_carry_the_check_header_and_no_request_id() {
    let yaml = "
servers: [{ address: a:1, name: a }]
health_check: { interval: 1s, match: { body: 'ok' } }
";
    // The target answers `ok` only to a request with the check header and
    // without a request id.
    let (target, _stop) = target(
        "[{ path: { path: /health, headers: { x-firedrill-request-id: { regex: '.*' } } }, body: nope }, \
          { path: { path: /health, headers: { x-firedrill-health-check: '1' } }, body: ok }, \
          { path: /health, body: nope }]",
    );
    let (pool, _) = pool(yaml, vec![target]);
    pool.start();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(pool.healthy(), [true]);
}

#[test]
fn the_match_checks_status_ranges_headers_and_body() {
    let yaml = "
servers: [{ address: a:1 }]
health_check:
  match:
    status: [200, '204-206']
    header: { content-type: '^application/json' }
    body: '\"up\"'
";
    let m = config(yaml).health_check.unwrap().matcher;
    let mut json = http::HeaderMap::new();
    json.insert("content-type", "application/json".parse().unwrap());
    assert_eq!(m.failure(200, &json, b"\"up\""), None);
    assert_eq!(m.failure(206, &json, b"\"up\""), None);
    assert_eq!(m.failure(204, &json, b"\"up\""), None);
    assert_eq!(m.failure(203, &json, b"\"up\"").unwrap(), "status 203");
    assert_eq!(m.failure(207, &json, b"\"up\"").unwrap(), "status 207");
    assert_eq!(
        m.failure(200, &http::HeaderMap::new(), b"\"up\"").unwrap(),
        "header content-type does not match `^application/json`"
    );
    assert_eq!(
        m.failure(200, &json, b"down").unwrap(),
        "body does not match `\"up\"`"
    );
}

#[test]
fn body_not_fails_a_check_whose_body_matches_it_as_nginx_plus_body_not_match() {
    let yaml = "
servers: [{ address: a:1 }]
health_check: { match: { status: '200-399', body_not: 'maintenance mode' } }
";
    let m = config(yaml).health_check.unwrap().matcher;
    let none = http::HeaderMap::new();
    assert_eq!(m.failure(200, &none, b"all good"), None);
    assert_eq!(
        m.failure(200, &none, b"<p>down for maintenance mode</p>")
            .unwrap(),
        "body matches `maintenance mode`"
    );
    let bad = crate::schema::from_yaml_str::<PoolConfig>(
        "pool.yaml",
        "servers: [{ address: a:1 }]\nhealth_check: { match: { body_not: '(' } }",
    )
    .unwrap_err()
    .to_string();
    assert!(bad.contains("match.body_not: invalid regex `(`"), "{bad}");
}

#[test]
fn the_default_match_takes_200_to_399() {
    let m = config("servers: [{ address: a:1 }]\nhealth_check: {}")
        .health_check
        .unwrap()
        .matcher;
    let none = http::HeaderMap::new();
    for (status, passes) in [
        (199, false),
        (200, true),
        (399, true),
        (400, false),
        (500, false),
    ] {
        assert_eq!(m.failure(status, &none, b"").is_none(), passes, "{status}");
    }
}

#[test]
fn a_health_change_is_one_journal_line_time_first_with_what_decided() {
    let change = HealthChange {
        at: Duration::from_millis(6000),
        pool: "inventory".into(),
        server: "b".into(),
        healthy: false,
        by: "active check GET /health: status 500 (2nd failure in a row)".into(),
    };
    assert_eq!(
        change.to_json_line(),
        r#"{"at_ms":6000.0,"pool":"inventory","server":"b","healthy":false,"by":"active check GET /health: status 500 (2nd failure in a row)"}"#
    );
}

const ENVOY_THREE: &str = "
servers:
  - { address: a:1, name: a }
  - { address: b:1, name: b }
  - { address: c:1, name: c }
outlier_detection: { consecutive_5xx: 2, interval: 10s, base_ejection_time: 10s, max_ejection_percent: 100% }
";

/// `n` picks at `now`, each answered `status`.
fn answered(pool: &Arc<Pool>, n: usize, status: u16) -> Vec<String> {
    (0..n)
        .map(|_| {
            let lease = pool.pick().expect("a server");
            lease.record_answer(status >= 500, outlier::Answer::Status(status));
            lease.server().to_string()
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn an_outlier_ejected_server_gets_no_call_until_the_sweep_brings_it_back() {
    let (pool, recorder) = pool(ENVOY_THREE, vec![unused(), unused(), unused()]);
    pool.start();
    tokio::time::advance(Duration::from_secs(1)).await;
    // a's two 503s in a row (b and c answer 200 between: a's own run).
    assert_eq!(answered(&pool, 1, 503), ["a"]);
    assert_eq!(answered(&pool, 2, 200), ["b", "c"]);
    assert_eq!(answered(&pool, 1, 503), ["a"]);
    assert_eq!(pool.healthy(), [false, true, true]);
    assert_eq!(answered(&pool, 4, 200), ["b", "c", "b", "c"]);
    // Due at 11 s, back at the 20 s sweep, by the sweep task alone.
    tokio::time::advance(Duration::from_secs(18)).await;
    assert_eq!(
        pool.healthy(),
        [false, true, true],
        "19 s: before the sweep"
    );
    tokio::time::advance(Duration::from_secs(1)).await;
    tokio::task::yield_now().await;
    assert_eq!(pool.healthy(), [true, true, true]);
    let changes: Vec<(String, bool, Duration)> = recorder
        .health_changes()
        .into_iter()
        .map(|c| (c.server, c.healthy, c.at))
        .collect();
    assert_eq!(
        changes,
        [
            ("a".into(), false, Duration::from_secs(1)),
            ("a".into(), true, Duration::from_secs(20))
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn below_the_panic_threshold_every_server_takes_calls_again() {
    let (pool, _) = pool(ENVOY_THREE, vec![unused(), unused(), unused()]);
    // a and b out: 1 of 3 in rotation is 33 % < 50 %: panic, all three.
    answered(&pool, 3, 503);
    answered(&pool, 2, 503); // a and b again: their second 503
    assert_eq!(pool.healthy(), [false, false, true]);
    let mut got = answered(&pool, 6, 200);
    got.sort();
    got.dedup();
    assert_eq!(got, ["a", "b", "c"], "panic: the ejected take calls too");
    let strict = ENVOY_THREE.replace(
        "max_ejection_percent: 100%",
        "max_ejection_percent: 100%, panic_threshold: 0%",
    );
    let (pool, _) = pool_of(&strict);
    answered(&pool, 5, 503);
    assert_eq!(answered(&pool, 3, 200), ["c", "c", "c"], "no panic: only c");
}

fn pool_of(yaml: &str) -> (Arc<Pool>, Arc<Recorder>) {
    pool(yaml, vec![unused(), unused(), unused()])
}

#[test]
fn outlier_detection_excludes_max_fails_and_health_checks() {
    let err = |yaml: &str| {
        crate::schema::from_yaml_str::<PoolConfig>("pool.yaml", yaml)
            .expect_err("refused")
            .to_string()
    };
    let both = format!("{ENVOY_THREE}max_fails: 2\n");
    assert!(
        err(&both).contains(
            "max_fails: NGINX's max_fails and Envoy's outlier_detection are two passive ejections"
        ),
        "{}",
        err(&both)
    );
    let checked = format!("{ENVOY_THREE}health_check: {{ uri: /health }}\n");
    assert!(
        err(&checked).contains("outlier_detection: with health_check it is not modelled"),
        "{}",
        err(&checked)
    );
    assert_eq!(
        config(ENVOY_THREE).max_fails,
        0,
        "off beside outlier_detection"
    );
    assert_eq!(config(&format!("{ENVOY_THREE}max_fails: 0\n")).max_fails, 0);
}
