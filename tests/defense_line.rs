//! The defense line through real proxies over loopback: client → defense
//! line → fault proxy → fixture target. Decisions are waited for by state,
//! with generous limits, never by fixed sleeps alone.

mod common;

use std::time::Duration as StdDuration;

use common::{DefenseRig, defense_rig, http_client};
use firedrill::defense::breaker::State;
use tokio::time::Instant;

const INVENTORY_BREAKER: &str = "
routes:
  inventory:
    match: /inventory/*
    timeout: 2s
    breaker:
      sliding_window_size: 10
      minimum_calls: 5
      failure_rate_threshold: 50%
      wait_in_open: 1500ms
      permitted_calls_in_half_open: 3
    fallback:
      static: { status: 200, body: '{\"items\":[]}' }
";

async fn get(rig: &DefenseRig, path: &str) -> reqwest::Response {
    http_client().get(rig.url(path)).send().await.unwrap()
}

/// Sends requests every 20 ms until the breaker is in `state` (at most `limit`).
async fn drive_until(rig: &DefenseRig, path: &str, state: State, limit: StdDuration) {
    let deadline = Instant::now() + limit;
    while rig.breaker_state("inventory") != state {
        assert!(
            Instant::now() < deadline,
            "breaker never reached {state} (now {})",
            rig.breaker_state("inventory")
        );
        let _ = get(rig, path).await;
        tokio::time::sleep(StdDuration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dependency_503s_open_the_breaker_nothing_reaches_it_while_open_and_it_closes_after_recovery()
 {
    let rig = defense_rig(
        "faults:\n  - { name: down, match: /inventory/*, status: { code: 503 }, for: 3s }\n",
        INVENTORY_BREAKER,
    )
    .await;
    drive_until(
        &rig,
        "/inventory/sku-1",
        State::Open,
        StdDuration::from_secs(10),
    )
    .await;

    // While open: fail fast with the marked fallback; the dependency's own
    // counter does not move.
    let before = rig.dependency_calls();
    for _ in 0..20 {
        let resp = get(&rig, "/inventory/sku-1").await;
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["x-firedrill-fallback"], "static");
        assert_eq!(resp.text().await.unwrap(), r#"{"items":[]}"#);
    }
    // wait_in_open (1.5 s) is far longer than 20 loopback requests take.
    assert_eq!(rig.breaker_state("inventory"), State::Open);
    assert_eq!(
        rig.dependency_calls(),
        before,
        "an open breaker sent calls to the dependency"
    );

    // After the fault window (3 s) the half-open probes succeed and it closes.
    drive_until(
        &rig,
        "/inventory/sku-1",
        State::Closed,
        StdDuration::from_secs(20),
    )
    .await;
    let journal = rig.recorder.transitions();
    let first = &journal[0];
    let last = journal.last().unwrap();
    assert_eq!(
        (first.from, first.to),
        (State::Closed, State::Open),
        "{journal:#?}"
    );
    assert_eq!(
        (last.from, last.to),
        (State::HalfOpen, State::Closed),
        "{journal:#?}"
    );
    for pair in journal.windows(2) {
        assert_eq!(pair[0].to, pair[1].from, "journal is a connected sequence");
    }
    let resp = get(&rig, "/inventory/sku-1").await;
    assert!(
        resp.headers().get("x-firedrill-fallback").is_none(),
        "closed: the real answer again"
    );
    // The breaker's own proof: nothing was admitted while open.
    let counters = rig.line.breakers().next().unwrap().1.counters();
    assert_eq!(counters.admitted.get(State::Open), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_400s_do_not_open_the_breaker_by_default() {
    let rig = defense_rig(
        "",
        INVENTORY_BREAKER
            .replace("/inventory/*", "/status/*")
            .as_str(),
    )
    .await;
    for _ in 0..30 {
        assert_eq!(get(&rig, "/status/400").await.status(), 400);
    }
    assert_eq!(rig.breaker_state("inventory"), State::Closed);
    assert!(rig.recorder.transitions().is_empty());
    assert_eq!(
        rig.rig.stats.requests(),
        30,
        "every 400 came from the dependency"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_400s_open_the_breaker_when_configured_to_count() {
    let config = INVENTORY_BREAKER
        .replace("/inventory/*", "/status/*")
        .replace(
            "wait_in_open: 1500ms",
            "wait_in_open: 1500ms\n      count_4xx: true",
        );
    let rig = defense_rig("", &config).await;
    for _ in 0..10 {
        get(&rig, "/status/400").await;
    }
    assert_eq!(rig.breaker_state("inventory"), State::Open);
    let t = &rig.recorder.transitions()[0];
    assert!(
        t.reason.to_string().contains("failure_rate"),
        "{}",
        t.reason
    );
}

/// A gRPC call (as HTTP carries it) to `/inventory.Inventory/Get`; its
/// gRPC status as the answer's head gives it (`None`: none there).
async fn grpc_call(rig: &DefenseRig) -> (u16, Option<String>) {
    let resp = http_client()
        .post(rig.url("/inventory.Inventory/Get"))
        .header("content-type", "application/grpc")
        .body(vec![0, 0, 0, 0, 0])
        .send()
        .await
        .unwrap();
    let status = resp
        .headers()
        .get("grpc-status")
        .map(|v| v.to_str().unwrap().to_string());
    (resp.status().as_u16(), status)
}

const GRPC_BREAKER: &str = "
routes:
  inventory:
    match: /inventory.Inventory/*
    breaker:
      sliding_window_size: 10
      minimum_calls: 5
      failure_rate_threshold: 50%
      wait_in_open: 60s
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_unavailable_answers_open_the_breaker_though_their_http_status_is_200() {
    let rig = defense_rig(
        "faults:\n  - { name: down, match: /inventory.Inventory/*, grpc: { status: UNAVAILABLE, message: down } }\n",
        GRPC_BREAKER,
    )
    .await;
    for _ in 0..5 {
        assert_eq!(grpc_call(&rig).await, (200, Some("14".to_string())));
    }
    assert_eq!(rig.breaker_state("inventory"), State::Open);
    let t = &rig.recorder.transitions()[0];
    assert!(
        t.reason.to_string().contains("failure_rate"),
        "{}",
        t.reason
    );
    // Open: turned away at once as a gRPC client understands it.
    let before = rig.rig.stats.requests();
    let (http, grpc) = grpc_call(&rig).await;
    assert_eq!((http, grpc.as_deref()), (200, Some("14")));
    assert_eq!(
        rig.rig.stats.requests(),
        before,
        "an open breaker let a call through"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_invalid_argument_answers_are_the_caller_s_and_never_open_the_breaker() {
    let rig = defense_rig(
        "faults:\n  - { name: bad, match: /inventory.Inventory/*, grpc: { status: INVALID_ARGUMENT } }\n",
        GRPC_BREAKER,
    )
    .await;
    for _ in 0..30 {
        assert_eq!(grpc_call(&rig).await, (200, Some("3".to_string())));
    }
    assert_eq!(rig.breaker_state("inventory"), State::Closed);
    assert!(rig.recorder.transitions().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_failure_statuses_choose_which_grpc_statuses_open_the_breaker() {
    let config = GRPC_BREAKER.replace(
        "wait_in_open: 60s",
        "wait_in_open: 60s\n      grpc_failure_statuses: [UNAVAILABLE]",
    );
    let rig = defense_rig(
        "faults:\n  - { name: bug, match: /inventory.Inventory/*, grpc: { status: INTERNAL } }\n",
        &config,
    )
    .await;
    for _ in 0..30 {
        assert_eq!(grpc_call(&rig).await, (200, Some("13".to_string())));
    }
    assert_eq!(
        rig.breaker_state("inventory"),
        State::Closed,
        "INTERNAL is not listed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_hanging_up_on_a_half_open_probe_does_not_leave_the_breaker_stuck() {
    let config = INVENTORY_BREAKER
        .replace(
            "permitted_calls_in_half_open: 3",
            "permitted_calls_in_half_open: 1",
        )
        .replace("timeout: 2s", "timeout: 20s");
    let rig = defense_rig(
        "faults:\n  - { match: /inventory/fail, status: { code: 503 } }\n  - { match: /inventory/slow, latency: { delay: 10s } }\n",
        &config,
    )
    .await;
    drive_until(
        &rig,
        "/inventory/fail",
        State::Open,
        StdDuration::from_secs(10),
    )
    .await;
    tokio::time::sleep(StdDuration::from_millis(1600)).await; // past wait_in_open
    // The one permitted probe: a slow call whose client gives up.
    let impatient = reqwest::Client::builder()
        .no_proxy()
        .timeout(StdDuration::from_millis(300))
        .build()
        .unwrap();
    let err = impatient
        .get(rig.url("/inventory/slow"))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_timeout());
    assert_eq!(rig.breaker_state("inventory"), State::HalfOpen);
    // The abandoned probe released its slot: the next call is admitted as
    // the probe (not rejected as half-open-full) and closes the breaker.
    let deadline = Instant::now() + StdDuration::from_secs(10);
    loop {
        let resp = get(&rig, "/inventory/ok").await;
        if rig.breaker_state("inventory") == State::Closed {
            assert!(resp.headers().get("x-firedrill-fallback").is_none());
            break;
        }
        assert!(
            Instant::now() < deadline,
            "stuck in {}",
            rig.breaker_state("inventory")
        );
        tokio::time::sleep(StdDuration::from_millis(20)).await;
    }
    assert!(rig.line.breakers().next().unwrap().1.counters().cancelled >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_fallback_serves_the_last_good_response_marked_when_the_dependency_fails() {
    let config = "
routes:
  items:
    match: /items/*
    fallback: { stale: { max_stale: 5m } }
";
    let rig = defense_rig(
        "faults:\n  - { match: /items/*, status: { code: 503 }, at: 1s }\n",
        config,
    )
    .await;
    let fresh = get(&rig, "/items/1").await;
    assert_eq!(fresh.status(), 200);
    assert!(fresh.headers().get("x-firedrill-fallback").is_none());
    assert_eq!(fresh.text().await.unwrap(), "ok\n");
    tokio::time::sleep(StdDuration::from_millis(1200)).await; // the 503s start at 1 s
    let stale = get(&rig, "/items/1").await;
    assert_eq!(stale.status(), 200);
    assert_eq!(stale.headers()["x-firedrill-fallback"], "stale");
    assert_eq!(stale.text().await.unwrap(), "ok\n");
    // Nothing cached for another key: the dependency's 503 passes through.
    let uncached = get(&rig, "/items/2").await;
    assert_eq!(uncached.status(), 503);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backup_fallback_answers_from_the_backup_upstream_marked() {
    let config = "
routes:
  ads:
    match: /ads/*
    fallback: { backup: backup-ads:80 }
";
    let rig = defense_rig(
        "faults:\n  - { match: /ads/*, status: { code: 500 } }\n",
        config,
    )
    .await;
    let resp = get(&rig, "/ads/personal").await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["x-firedrill-fallback"], "backup");
    assert_eq!(
        rig.rig.stats.requests(),
        1,
        "the backup (the target directly) answered"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_backup_answers_marked_once_the_only_primary_is_taken_out_by_a_failure() {
    let config = "
routes:
  inventory:
    match: /inventory/*
    pool: inventory
pools:
  inventory:
    servers: [{ address: proxy, name: primary }, { address: target, name: spare, backup: true }]
    max_fails: 1
    fail_timeout: 1m
";
    let rig = defense_rig(
        "faults:\n  - { match: /inventory/*, status: { code: 500 } }\n",
        config,
    )
    .await;
    let failed = get(&rig, "/inventory/1").await;
    assert_eq!(failed.status(), 500);
    assert_eq!(failed.headers()["x-firedrill-pool-server"], "primary");
    assert!(!failed.headers().contains_key("x-firedrill-pool-backup"));
    let resp = get(&rig, "/inventory/2").await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["x-firedrill-pool-server"], "spare");
    assert_eq!(resp.headers()["x-firedrill-pool-backup"], "1");
    let served: Vec<_> = rig
        .recorder
        .calls()
        .into_iter()
        .map(|c| c.served_by.map(|s| (s.server, s.backup)))
        .collect();
    assert_eq!(
        served,
        [
            Some(("primary".into(), false)),
            Some(("spare".into(), true))
        ]
    );
    let health = rig.recorder.health_changes();
    assert_eq!(health.len(), 1, "{health:?}");
    assert_eq!(
        (
            health[0].server.as_str(),
            health[0].healthy,
            health[0].by.as_str()
        ),
        ("primary", false, "passive: 1 failure within 60s")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_with_every_server_out_answers_503_and_the_breaker_counts_it_as_a_failure() {
    let config = "
routes:
  inventory:
    match: /inventory/*
    pool: inventory
    breaker: { minimum_calls: 3, sliding_window_size: 3, wait_in_open: 1m }
pools:
  inventory:
    servers: [{ address: proxy, name: one }, { address: proxy, name: two }]
    max_fails: 1
    fail_timeout: 1m
";
    let rig = defense_rig("faults:\n  - { match: /inventory/*, reset: {} }\n", config).await;
    // Two servers: NGINX never takes the only server of a pool out.
    for _ in 0..2 {
        let broken = get(&rig, "/inventory/x").await;
        assert_eq!(broken.headers()["x-firedrill-reason"], "upstream-error");
    }
    let empty = get(&rig, "/inventory/x").await;
    assert_eq!(empty.status(), 503);
    assert_eq!(empty.headers()["x-firedrill-reason"], "pool-no-server");
    assert_eq!(rig.breaker_state("inventory"), State::Open);
    assert_eq!(
        rig.rig.plan.injected(0),
        2,
        "the third call reached no server"
    );
    let last = rig.recorder.calls().pop().unwrap();
    assert_eq!(
        last.error,
        Some(firedrill::defense::report::CallError::NoServer),
        "no server in rotation is its own error, not a connection error"
    );
    assert_eq!(last.served_by, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_defense_line_tunnels_an_upgraded_connection_both_ways_after_the_upstreams_101() {
    let echo = common::upgrade_echo_server().await;
    let defense = common::start_defense(echo, echo, INVENTORY_BREAKER).await;
    let (head, stream) = common::request_upgrade(defense.addr, "/inventory/chat").await;
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    common::assert_tunnel_echoes(stream).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_fallback_gives_a_clear_503_with_the_reason_never_an_empty_success() {
    let config = "
routes:
  inventory:
    match: /inventory/*
    breaker: { minimum_calls: 2, sliding_window_size: 2, wait_in_open: 1m }
";
    let rig = defense_rig("faults:\n  - { match: /inventory/*, reset: {} }\n", config).await;
    for _ in 0..2 {
        let resp = get(&rig, "/inventory/x").await;
        assert_eq!(resp.status(), 503);
        assert_eq!(resp.headers()["x-firedrill-reason"], "upstream-error");
    }
    let rejected = get(&rig, "/inventory/x").await;
    assert_eq!(rejected.status(), 503);
    assert_eq!(rejected.headers()["x-firedrill-reason"], "breaker-open");
    assert!(rejected.headers().contains_key("retry-after"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_attempts_against_a_failing_dependency_amplify_calls_threefold() {
    let config = "
routes:
  all:
    match: /*
    retry: { attempts: 3, backoff: 10ms }
";
    let rig = defense_rig("faults:\n  - { status: { code: 503 } }\n", config).await;
    for _ in 0..10 {
        assert_eq!(get(&rig, "/x").await.status(), 503);
    }
    assert_eq!(
        rig.dependency_calls(),
        30,
        "10 requests × 3 attempts reached the dependency"
    );
    assert_eq!(rig.line.attempts(), 30);
    assert!(rig.recorder.calls().iter().all(|c| c.attempts == 3));
    // POST is not idempotent: sent once.
    let post = http_client()
        .post(rig.url("/x"))
        .body("order")
        .send()
        .await
        .unwrap();
    assert_eq!(post.status(), 503);
    assert_eq!(rig.dependency_calls(), 31);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_call_is_retried_on_unavailable_though_it_is_a_post_and_never_on_the_callers_error()
{
    let config = "
routes:
  inventory:
    match: /inventory.Inventory/*
    retry: { attempts: 3, backoff: 10ms }
";
    // (status the dependency fails with, its code, calls it sees for 4).
    let cases = [
        ("UNAVAILABLE", "14", 12, "each a POST, × 3 attempts"),
        ("INVALID_ARGUMENT", "3", 4, "the caller's error: sent once"),
        (
            "INTERNAL",
            "13",
            4,
            "a failure not listed in grpc_statuses: sent once",
        ),
    ];
    for (status, code, calls, why) in cases {
        let faults = format!(
            "faults:\n  - {{ match: /inventory.Inventory/*, grpc: {{ status: {status} }} }}\n"
        );
        let rig = defense_rig(&faults, config).await;
        for _ in 0..4 {
            assert_eq!(grpc_call(&rig).await, (200, Some(code.to_string())));
        }
        assert_eq!(rig.dependency_calls(), calls, "{status}: {why}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_callers_grpc_timeout_bounds_the_call_and_is_answered_deadline_exceeded() {
    let rig = defense_rig(
        "faults:\n  - { match: /inventory.Inventory/*, latency: { delay: 3s } }\n",
        GRPC_BREAKER,
    )
    .await;
    let resp = http_client()
        .post(rig.url("/inventory.Inventory/Get"))
        .header("content-type", "application/grpc")
        .header("grpc-timeout", "200m")
        .body(vec![0, 0, 0, 0, 0])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()
            .get("grpc-status")
            .map(|v| v.to_str().unwrap()),
        Some("4"),
        "DEADLINE_EXCEEDED, not the dependency's OK 3 s later: {:?}",
        resp.headers()
    );
    assert_eq!(resp.headers()["x-firedrill-reason"], "request-timeout");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulkhead_rejects_calls_beyond_its_limit_at_once_and_other_routes_keep_working() {
    let config = "
routes:
  slow:
    match: /slow/*
    bulkhead: { max_concurrent: 2 }
    fallback: { static: { status: 200, body: degraded } }
";
    let rig = defense_rig(
        "faults:\n  - { match: /slow/*, latency: { delay: 1s } }\n",
        config,
    )
    .await;
    let client = http_client();
    let held: Vec<_> = (0..2)
        .map(|_| {
            let (client, url) = (client.clone(), rig.url("/slow/1"));
            tokio::spawn(async move { client.get(url).send().await.unwrap().status() })
        })
        .collect();
    // Wait until both slots are taken.
    let deadline = Instant::now() + StdDuration::from_secs(10);
    while rig.line.bulkheads().next().unwrap().1.available() > 0 {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(StdDuration::from_millis(5)).await;
    }
    let third = get(&rig, "/slow/1").await;
    assert_eq!(third.headers()["x-firedrill-fallback"], "static");
    assert!(
        held.iter().all(|h| !h.is_finished()),
        "rejected at once, while the two 1 s calls still hold their slots"
    );
    assert_eq!(
        get(&rig, "/other").await.status(),
        200,
        "another route is not affected"
    );
    for h in held {
        assert_eq!(h.await.unwrap(), 200);
    }
    assert_eq!(rig.line.bulkheads().next().unwrap().1.rejected(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_answers_excess_with_503() {
    let rig = defense_rig("", "rate_limit: { rate: 1/s, burst: 3 }\n").await;
    let statuses: Vec<u16> = futures_util::future::join_all((0..6).map(|_| get(&rig, "/x")))
        .await
        .iter()
        .map(|r| r.status().as_u16())
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        3,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 503).count(),
        3,
        "{statuses:?}"
    );
}

mod client_support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resilience4j_metrics_after_a_breaker_opens_are_read_by_the_prometheus_parser() {
    let Some(python) = client_support::venv_python() else {
        client_support::missing("the Prometheus text parser (prometheus-client)")
    };
    let rig = defense_rig(
        "faults:\n  - { match: /inventory/*, status: { code: 503 } }\n",
        INVENTORY_BREAKER,
    )
    .await;
    drive_until(
        &rig,
        "/inventory/sku-1",
        State::Open,
        StdDuration::from_secs(10),
    )
    .await;
    for _ in 0..3 {
        assert_eq!(
            get(&rig, "/inventory/sku-1").await.headers()["x-firedrill-fallback"],
            "static"
        );
    }
    let registry = std::sync::Arc::new(firedrill::metrics::MetricsRegistry::default());
    registry.register(rig.line.clone());
    let acceptor = firedrill::net::TcpAcceptor::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = acceptor.local_addr();
    let (_stop, shutdown) = firedrill::http::ShutdownSignal::new();
    tokio::spawn(firedrill::metrics::serve(acceptor, registry, shutdown));
    let (samples, text) = client_support::parse_metrics(&python, &addr.to_string()).await;
    let value = |name: &str, labels: &[(&str, &str)]| -> f64 {
        samples
            .iter()
            .find(|s| s["name"] == name && labels.iter().all(|(k, v)| s["labels"][*k] == *v))
            .unwrap_or_else(|| panic!("{name} {labels:?} not parsed from:\n{text}"))["value"]
            .as_f64()
            .unwrap()
    };
    let counters = rig.line.breakers().next().unwrap().1.counters();
    assert_eq!(
        value(
            "resilience4j_circuitbreaker_state",
            &[("name", "inventory"), ("state", "open")]
        ),
        1.0
    );
    assert_eq!(
        value(
            "resilience4j_circuitbreaker_state",
            &[("name", "inventory"), ("state", "closed")]
        ),
        0.0
    );
    let failed = value(
        "resilience4j_circuitbreaker_calls_seconds_count",
        &[("name", "inventory"), ("kind", "failed")],
    );
    assert_eq!(failed, counters.failures as f64);
    assert!(
        failed >= 5.0,
        "the window needed at least 5 failures to open"
    );
    let not_permitted = value(
        "resilience4j_circuitbreaker_not_permitted_calls_total",
        &[("name", "inventory")],
    );
    assert!(not_permitted >= 3.0, "{not_permitted}");
    assert_eq!(
        value(
            "resilience4j_circuitbreaker_failure_rate",
            &[("name", "inventory")]
        ),
        100.0
    );
}
