//! The proxy core is generic over the transport: the same HTTP proxy runs
//! over in-memory pipes under paused tokio time, where faults cost exactly
//! their configured virtual time.

mod common;

use std::sync::Arc;

use bytes::Bytes;
use firedrill::clock::{Duration, Instant};
use firedrill::fault::FaultPlan;
use firedrill::http::ShutdownSignal;
use firedrill::net::{Connector, MemoryConnector, memory_pair};
use firedrill::proxy::{ProxyMode, serve_mode};
use firedrill::target::TargetStats;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;

/// Fixture target and HTTP proxy, both in memory; returns the connector a
/// client uses to reach the proxy.
async fn in_memory_rig(
    yaml: &str,
    seed: u64,
) -> (
    MemoryConnector,
    Arc<TargetStats>,
    tokio::sync::watch::Sender<bool>,
) {
    let (stop, shutdown) = ShutdownSignal::new();
    let (to_target, target_acceptor) = memory_pair(64 * 1024);
    let stats = Arc::new(TargetStats::default());
    tokio::spawn(firedrill::target::serve(
        target_acceptor,
        stats.clone(),
        shutdown.clone(),
    ));
    let (to_proxy, proxy_acceptor) = memory_pair(64 * 1024);
    let plan = Arc::new(FaultPlan::new(
        common::faults(yaml).faults,
        seed,
        firedrill::clock::now(),
    ));
    tokio::spawn(serve_mode(
        proxy_acceptor,
        Arc::new(to_target),
        plan,
        ProxyMode::Http,
        shutdown.clone(),
        Duration::from_secs(1),
    ));
    (to_proxy, stats, stop)
}

type Sender = hyper::client::conn::http1::SendRequest<Empty<Bytes>>;

async fn client(connector: &MemoryConnector) -> Sender {
    let stream = connector.connect().await.unwrap();
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    sender
}

async fn get(sender: &mut Sender, path: &str) -> hyper::Result<(u16, Bytes)> {
    sender.ready().await?;
    let resp = sender
        .send_request(
            http::Request::get(path)
                .header("host", "mem")
                .body(Empty::new())
                .unwrap(),
        )
        .await?;
    let status = resp.status().as_u16();
    Ok((status, resp.into_body().collect().await?.to_bytes()))
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn latency_fault_of_3s_costs_exactly_3s_of_virtual_time() {
    let (proxy, stats, _shutdown) = in_memory_rig("faults:\n  - latency: { delay: 3s }\n", 1).await;
    let mut sender = client(&proxy).await;
    let started = Instant::now();
    let (status, body) = get(&mut sender, "/inventory/sku-1").await.unwrap();
    assert_eq!(started.elapsed(), Duration::from_secs(3));
    assert_eq!((status, &body[..]), (200, &b"ok\n"[..]));
    assert_eq!(stats.requests(), 1);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn blackhole_holds_until_the_client_timeout_fires() {
    let (proxy, stats, _shutdown) = in_memory_rig("faults:\n  - blackhole: {}\n", 1).await;
    let mut sender = client(&proxy).await;
    let started = Instant::now();
    let outcome = tokio::time::timeout(Duration::from_secs(10), get(&mut sender, "/x")).await;
    assert!(
        outcome.is_err(),
        "the client's 10 s timeout fired, not an answer: {outcome:?}"
    );
    assert_eq!(started.elapsed(), Duration::from_secs(10));
    assert_eq!(stats.requests(), 0);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_request_held_by_a_blackhole_stays_unanswered_after_the_window_and_later_ones_pass() {
    let (proxy, stats, _shutdown) =
        in_memory_rig("faults:\n  - { blackhole: {}, for: 4s }\n", 1).await;
    let mut held = client(&proxy).await;
    let started = Instant::now();
    let outcome = tokio::time::timeout(Duration::from_secs(10), get(&mut held, "/x")).await;
    assert!(
        outcome.is_err(),
        "still unanswered at the client's 10 s timeout, 6 s after the window: {outcome:?}"
    );
    assert_eq!(started.elapsed(), Duration::from_secs(10));
    let mut fresh = client(&proxy).await;
    assert_eq!(
        get(&mut fresh, "/x").await.unwrap().0,
        200,
        "after the window requests pass"
    );
    assert_eq!(stats.requests(), 1);
}

/// The statuses of `n` requests through a proxy with a 30 % status fault.
async fn statuses(seed: u64, n: usize) -> Vec<u16> {
    let (proxy, _stats, _shutdown) = in_memory_rig(
        "faults:\n  - { status: { code: 503 }, probability: 30% }\n",
        seed,
    )
    .await;
    let mut sender = client(&proxy).await;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(get(&mut sender, "/x").await.unwrap().0);
    }
    out
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn probability_30_percent_over_10000_requests_is_within_2_points_and_seeded() {
    let first = statuses(42, 10_000).await;
    let injected = first.iter().filter(|s| **s == 503).count() as f64 / 100.0;
    assert!(
        (28.0..=32.0).contains(&injected),
        "injected share {injected}%"
    );
    assert!(first.iter().all(|s| *s == 503 || *s == 200));
    let again = statuses(42, 10_000).await;
    assert_eq!(first, again, "the same seed gives the same sequence");
    let other = statuses(43, 1_000).await;
    assert_ne!(
        first[..1000],
        other[..],
        "another seed gives another sequence"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn tcp_latency_counts_from_arrival_so_chunks_sent_during_a_hold_are_not_delayed_twice() {
    use firedrill::net::Acceptor;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (_stop, shutdown) = ShutdownSignal::new();
    let (to_upstream, mut upstream) = memory_pair(64 * 1024);
    let (to_proxy, proxy_acceptor) = memory_pair(64 * 1024);
    let plan = Arc::new(FaultPlan::new(
        common::faults("faults:\n  - latency: { delay: 3s, direction: upstream }\n").faults,
        1,
        firedrill::clock::now(),
    ));
    tokio::spawn(serve_mode(
        proxy_acceptor,
        Arc::new(to_upstream),
        plan,
        ProxyMode::Tcp,
        shutdown,
        Duration::from_secs(1),
    ));
    let start = Instant::now();
    let receiver = tokio::spawn(async move {
        let mut stream = upstream.accept().await.unwrap();
        let mut arrivals = Vec::new();
        let mut buf = [0u8; 16];
        while arrivals.len() < 2 {
            let n = stream.read(&mut buf).await.unwrap();
            assert!(n > 0);
            arrivals.push((buf[..n].to_vec(), start.elapsed()));
        }
        arrivals
    });
    let mut client = to_proxy.connect().await.unwrap();
    client.write_all(b"A").await.unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    client.write_all(b"B").await.unwrap();
    let arrivals = receiver.await.unwrap();
    assert_eq!(arrivals[0], (b"A".to_vec(), Duration::from_secs(3)));
    assert_eq!(
        arrivals[1],
        (b"B".to_vec(), Duration::from_secs(4)),
        "B was held 3 s from its own arrival"
    );
}
