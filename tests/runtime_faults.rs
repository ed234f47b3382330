//! Replacing a proxy's fault list while traffic runs: a fault added reaches
//! connections that are already open (as Toxiproxy applies a new toxic), a
//! fault removed stops acting, and a `refuse` added closes the listener.
//! Real loopback sockets; timing checks have generous margins.

mod api_support;
mod common;

use std::time::Duration as StdDuration;

use api_support::echo;
use common::{faults, start_proxy_with};
use firedrill::fault::Direction;
use firedrill::fault::FaultPlan;
use firedrill::http::ShutdownSignal;
use firedrill::proxy::ProxyMode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// Sends one byte and returns how long its echo took.
async fn round_trip(stream: &mut TcpStream, byte: u8) -> StdDuration {
    let t = Instant::now();
    stream.write_all(&[byte]).await.unwrap();
    let mut got = [0u8; 1];
    stream.read_exact(&mut got).await.unwrap();
    assert_eq!(got[0], byte, "the echo must carry the byte unchanged");
    t.elapsed()
}

/// An empty plan that accepts faults added while traffic runs, as the
/// control plane's proxies have.
fn replaceable() -> FaultPlan {
    FaultPlan::new(Vec::new(), 1, firedrill::clock::now()).accepting_additions()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_added_at_runtime_delays_an_open_connection_and_removing_it_restores_speed() {
    let (_stop, shutdown) = ShutdownSignal::new();
    let upstream = echo().await;
    let (proxy, plan) = start_proxy_with(
        ProxyMode::Tcp,
        replaceable(),
        &upstream.to_string(),
        shutdown,
    )
    .await;
    let mut stream = TcpStream::connect(proxy).await.unwrap();
    stream.set_nodelay(true).unwrap();
    // The fault's own delay is the bound on either side: a round trip it
    // holds takes at least that long, one it no longer holds less (a
    // loaded machine's scheduling delays stay far below 2 s).
    let delay = StdDuration::from_secs(2);
    let before = round_trip(&mut stream, b'a').await;
    assert!(before < delay, "pass-through took {before:?}");

    plan.replace(faults("faults:\n  - latency: { delay: 2s }\n").faults);
    let slowed = round_trip(&mut stream, b'b').await;
    assert!(
        slowed >= delay,
        "latency not applied to the open connection: {slowed:?}"
    );
    assert!(slowed < delay * 5, "latency far too long: {slowed:?}");

    plan.replace(Vec::new());
    let after = round_trip(&mut stream, b'c').await;
    assert!(after < delay, "removed latency still acts: {after:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_through_the_pass_through_path_are_counted_per_direction() {
    let (_stop, shutdown) = ShutdownSignal::new();
    let upstream = echo().await;
    let traffic = std::sync::Arc::new(firedrill::proxy::Traffic::default());
    let bound =
        firedrill::proxy::BoundProxy::bind("127.0.0.1:0", &upstream.to_string(), ProxyMode::Tcp)
            .await
            .unwrap();
    let proxy = bound.local_addr();
    // A control-plane proxy: its counters are read live by /metrics.
    let plan = std::sync::Arc::new(replaceable());
    tokio::spawn(bound.serve_counted(
        plan,
        traffic.clone(),
        shutdown,
        firedrill::clock::Duration::from_secs(1),
    ));
    let mut stream = TcpStream::connect(proxy).await.unwrap();
    for b in 0..10u8 {
        round_trip(&mut stream, b).await;
    }
    assert_eq!(traffic.received(Direction::Upstream), 10);
    assert_eq!(traffic.sent(Direction::Upstream), 10);
    assert_eq!(traffic.received(Direction::Downstream), 10);
    assert_eq!(traffic.sent(Direction::Downstream), 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuse_added_at_runtime_closes_the_listener_and_removing_it_reopens() {
    let (_stop, shutdown) = ShutdownSignal::new();
    let upstream = echo().await;
    let (proxy, plan) = start_proxy_with(
        ProxyMode::Tcp,
        replaceable(),
        &upstream.to_string(),
        shutdown,
    )
    .await;
    TcpStream::connect(proxy)
        .await
        .expect("listening before the refuse");
    plan.replace(faults("faults:\n  - refuse: {}\n").faults);
    let refused = async {
        loop {
            if TcpStream::connect(proxy).await.is_err() {
                return;
            }
            tokio::time::sleep(StdDuration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(StdDuration::from_secs(5), refused)
        .await
        .expect("connections refused after refuse was added");
    plan.replace(Vec::new());
    let reopened = async {
        loop {
            if let Ok(mut s) = TcpStream::connect(proxy).await {
                return round_trip(&mut s, b'z').await;
            }
            tokio::time::sleep(StdDuration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(StdDuration::from_secs(5), reopened)
        .await
        .expect("listening again after refuse was removed");
}
