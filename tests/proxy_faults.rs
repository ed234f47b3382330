//! Every fault of the catalogue, observed by a real client over real
//! loopback sockets. Timing checks use generous upper margins.

mod common;

use std::io::ErrorKind;
use std::time::Duration as StdDuration;

use common::{get, http_client, raw_exchange, rig, split_response};
use firedrill::proxy::ProxyMode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

const GENEROUS: StdDuration = StdDuration::from_secs(5);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_status_fault_answers_with_configured_status_body_and_headers_without_calling_target()
{
    let rig = rig(
        ProxyMode::Http,
        "faults:\n  - name: down\n    match: /inventory/*\n    status: { code: 503, body: 'inventory down', headers: { retry-after: '7' } }\n",
    )
    .await;
    let resp = http_client()
        .get(format!("http://{}/inventory/sku-1", rig.proxy))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 503);
    assert_eq!(resp.headers()["retry-after"], "7");
    assert_eq!(resp.headers()["x-firedrill-fault"], "down");
    assert_eq!(resp.text().await.unwrap(), "inventory down");
    assert_eq!(
        rig.stats.requests(),
        0,
        "an injected status must not reach the target"
    );
    // A path the fault does not match goes through.
    let ok = http_client()
        .get(format!("http://{}/local/ping", rig.proxy))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status().as_u16(), 200);
    assert_eq!(rig.stats.requests(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_status_fault_answers_an_upgrade_request_in_the_upstreams_place() {
    let echo = common::upgrade_echo_server().await;
    let (_stop, shutdown) = firedrill::http::ShutdownSignal::new();
    let yaml = "faults:\n  - name: down\n    status: { code: 503 }\n";
    let (proxy, _) = common::start_proxy(ProxyMode::Http, yaml, &echo.to_string(), shutdown).await;
    let (head, _) = common::request_upgrade(proxy, "/chat").await;
    assert!(head.starts_with("HTTP/1.1 503"), "{head}");
    assert!(head.contains("x-firedrill-fault: down"), "{head}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_reset_fault_gives_the_client_econnreset() {
    let rig = rig(ProxyMode::Http, "faults:\n  - reset: {}\n").await;
    let (got, end) = raw_exchange(rig.proxy, &get("/x")).await;
    assert!(got.is_empty(), "no response bytes before the reset");
    assert_eq!(end.unwrap_err().kind(), ErrorKind::ConnectionReset);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_reset_mid_body_delivers_a_prefix_then_econnreset() {
    let rig = rig(
        ProxyMode::Http,
        "faults:\n  - reset: { after_bytes: 1000 }\n",
    )
    .await;
    let (got, end) = raw_exchange(rig.proxy, &get("/bytes/100000")).await;
    assert_eq!(end.unwrap_err().kind(), ErrorKind::ConnectionReset);
    // The kernel may drop unread bytes when the RST lands; whatever did
    // arrive is the head and at most the first 1000 body bytes.
    if !got.is_empty() {
        let (head, body) = split_response(&got);
        assert!(head.contains("content-length: 100000"), "{head}");
        assert!(
            body.len() <= 1000,
            "at most the first 1000 body bytes, got {}",
            body.len()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_close_fault_before_response_gives_eof_and_no_response() {
    let rig = rig(ProxyMode::Http, "faults:\n  - close: {}\n").await;
    let (got, end) = raw_exchange(rig.proxy, &get("/x")).await;
    end.expect("a clean FIN, not a reset");
    assert!(got.is_empty());
    let err = http_client()
        .get(format!("http://{}/x", rig.proxy))
        .send()
        .await
        .unwrap_err();
    assert!(!err.is_timeout(), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_close_after_bytes_truncates_the_body() {
    let rig = rig(
        ProxyMode::Http,
        "faults:\n  - close: { after_bytes: 1000 }\n",
    )
    .await;
    let (got, end) = raw_exchange(rig.proxy, &get("/bytes/100000")).await;
    end.expect("FIN");
    let (head, body) = split_response(&got);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(body.len(), 1000, "the body stops at the cut");
    let err = http_client()
        .get(format!("http://{}/bytes/100000", rig.proxy))
        .send()
        .await
        .unwrap()
        .bytes()
        .await;
    assert!(err.is_err(), "a real client sees the body as incomplete");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_blackhole_holds_until_the_clients_own_timeout_fires() {
    let rig = rig(ProxyMode::Http, "faults:\n  - blackhole: {}\n").await;
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(StdDuration::from_millis(500))
        .build()
        .unwrap();
    let started = Instant::now();
    let err = client
        .get(format!("http://{}/x", rig.proxy))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "the client's timeout fired: {err}");
    assert!(started.elapsed() >= StdDuration::from_millis(500));
    assert_eq!(rig.stats.requests(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_blackhole_holds_the_socket_open_without_answering() {
    let rig = rig(ProxyMode::Tcp, "faults:\n  - blackhole: {}\n").await;
    let mut stream = TcpStream::connect(rig.proxy).await.unwrap();
    stream.write_all(get("/x").as_bytes()).await.unwrap();
    let mut buf = [0u8; 64];
    let read = tokio::time::timeout(StdDuration::from_millis(500), stream.read(&mut buf)).await;
    assert!(
        read.is_err(),
        "no answer and no close within the client's timeout: {read:?}"
    );
    assert_eq!(rig.stats.requests(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_latency_fault_delays_the_response_by_at_least_the_configured_value() {
    let rig = rig(ProxyMode::Http, "faults:\n  - latency: { delay: 300ms }\n").await;
    let client = http_client();
    for _ in 0..3 {
        let started = Instant::now();
        let resp = client
            .get(format!("http://{}/x", rig.proxy))
            .send()
            .await
            .unwrap();
        resp.bytes().await.unwrap();
        let took = started.elapsed();
        assert!(took >= StdDuration::from_millis(300), "{took:?}");
        assert!(took < StdDuration::from_millis(300) + GENEROUS, "{took:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_request_latency_holds_the_request_before_it_reaches_the_target() {
    let rig = rig(
        ProxyMode::Http,
        "faults:\n  - latency: { delay: 400ms, direction: request }\n",
    )
    .await;
    let url = format!("http://{}/x", rig.proxy);
    let pending =
        tokio::spawn(async move { http_client().get(url).send().await.unwrap().status() });
    tokio::time::sleep(StdDuration::from_millis(150)).await;
    assert_eq!(rig.stats.requests(), 0, "still held at the proxy");
    assert_eq!(pending.await.unwrap(), 200);
    assert_eq!(rig.stats.requests(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_latency_fault_delays_each_response_by_at_least_the_configured_value() {
    let rig = rig(ProxyMode::Tcp, "faults:\n  - latency: { delay: 300ms }\n").await;
    let started = Instant::now();
    let (got, end) = raw_exchange(rig.proxy, &get("/health")).await;
    end.unwrap();
    let took = started.elapsed();
    assert!(split_response(&got).0.starts_with("HTTP/1.1 200"));
    assert!(took >= StdDuration::from_millis(300), "{took:?}");
    assert!(took < StdDuration::from_millis(300) + GENEROUS, "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_reset_fault_gives_the_client_econnreset() {
    let rig = rig(ProxyMode::Tcp, "faults:\n  - reset: {}\n").await;
    let (got, end) = raw_exchange(rig.proxy, &get("/x")).await;
    assert!(got.is_empty());
    assert_eq!(end.unwrap_err().kind(), ErrorKind::ConnectionReset);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_reset_after_a_delay_resets_an_open_connection() {
    let rig = rig(ProxyMode::Tcp, "faults:\n  - reset: { after: 200ms }\n").await;
    let mut stream = TcpStream::connect(rig.proxy).await.unwrap();
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(GENEROUS, stream.read(&mut buf))
        .await
        .expect("reset within the margin");
    assert_eq!(read.unwrap_err().kind(), ErrorKind::ConnectionReset);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_close_after_bytes_truncates_the_stream_with_fin() {
    let rig = rig(ProxyMode::Tcp, "faults:\n  - close: { after_bytes: 500 }\n").await;
    let (got, end) = raw_exchange(rig.proxy, &get("/bytes/100000")).await;
    end.expect("FIN, not RST");
    assert_eq!(
        got.len(),
        500,
        "exactly the first 500 bytes of the response"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_limit_data_closes_after_the_byte_limit() {
    let rig = rig(ProxyMode::Tcp, "faults:\n  - limit_data: { bytes: 2KB }\n").await;
    let (got, end) = raw_exchange(rig.proxy, &get("/bytes/100000")).await;
    end.unwrap();
    assert_eq!(got.len(), 2000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuse_fault_refuses_connections_during_its_window_then_accepts_again() {
    let rig = rig(
        ProxyMode::Tcp,
        "faults:\n  - { refuse: {}, at: 0s, for: 2s }\n",
    )
    .await;
    tokio::time::sleep(StdDuration::from_millis(100)).await;
    let err = TcpStream::connect(rig.proxy).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionRefused);
    // Generous margin past the window's end (2 s).
    let deadline = Instant::now() + StdDuration::from_secs(15);
    tokio::time::sleep(StdDuration::from_millis(2500)).await;
    loop {
        match TcpStream::connect(rig.proxy).await {
            Ok(_) => break,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                tokio::time::sleep(StdDuration::from_millis(100)).await
            }
            Err(e) => panic!("still refused long after the window: {e}"),
        }
    }
    let (got, end) = raw_exchange(rig.proxy, &get("/health")).await;
    end.unwrap();
    assert!(split_response(&got).0.starts_with("HTTP/1.1 200"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_bandwidth_fault_caps_download_throughput() {
    // 200 KB at 100 KB/s: at least 2 s (each piece waits its own time, the
    // first one too, as in Toxiproxy).
    let rig = rig(
        ProxyMode::Tcp,
        "faults:\n  - bandwidth: { rate: 100KB/s }\n",
    )
    .await;
    let started = Instant::now();
    let (got, end) = raw_exchange(rig.proxy, &get("/bytes/200000")).await;
    end.unwrap();
    let took = started.elapsed();
    assert!(got.len() > 200_000);
    assert!(
        took >= StdDuration::from_secs(2),
        "{took:?}: faster than the cap"
    );
    assert!(took < StdDuration::from_secs(2) + GENEROUS * 2, "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_bandwidth_fault_caps_response_body_throughput() {
    let rig = rig(
        ProxyMode::Http,
        "faults:\n  - bandwidth: { rate: 100KB/s }\n",
    )
    .await;
    let started = Instant::now();
    let body = http_client()
        .get(format!("http://{}/bytes/200000", rig.proxy))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let took = started.elapsed();
    assert_eq!(body.len(), 200_000);
    assert!(
        body.iter()
            .enumerate()
            .all(|(i, b)| *b == firedrill::target::pattern_byte(i as u64))
    );
    assert!(
        took >= StdDuration::from_secs(2),
        "{took:?}: faster than the cap"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_slicer_delivers_data_intact_in_small_delayed_pieces() {
    let rig = rig(
        ProxyMode::Tcp,
        "faults:\n  - slicer: { average_size: 100, size_variation: 20, delay: 2ms }\n",
    )
    .await;
    let mut stream = TcpStream::connect(rig.proxy).await.unwrap();
    stream
        .write_all(get("/bytes/20000").as_bytes())
        .await
        .unwrap();
    let started = Instant::now();
    let mut got = Vec::new();
    let mut reads = 0;
    let mut buf = [0u8; 65536];
    loop {
        let n = stream.read(&mut buf).await.unwrap();
        if n == 0 {
            break;
        }
        reads += 1;
        got.extend_from_slice(&buf[..n]);
    }
    let (_, body) = split_response(&got);
    assert_eq!(body.len(), 20000);
    assert!(
        body.iter()
            .enumerate()
            .all(|(i, b)| *b == firedrill::target::pattern_byte(i as u64))
    );
    // ~200 slices, 2 ms apart: at least 0.3 s, and far more than one read
    // even if the client's reads merge some slices.
    assert!(
        started.elapsed() >= StdDuration::from_millis(300),
        "{:?}",
        started.elapsed()
    );
    assert!(reads >= 20, "only {reads} reads");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_slow_close_holds_the_fin_back() {
    let rig = rig(
        ProxyMode::Tcp,
        "faults:\n  - slow_close: { delay: 600ms }\n",
    )
    .await;
    let mut stream = TcpStream::connect(rig.proxy).await.unwrap();
    stream.write_all(get("/health").as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let mut response_at = None;
    loop {
        let n = stream.read(&mut buf).await.unwrap();
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
        if got.ends_with(b"ok\n") {
            response_at.get_or_insert(Instant::now());
        }
    }
    let held = response_at.expect("the whole response arrived").elapsed();
    assert!(
        held >= StdDuration::from_millis(550),
        "FIN came {held:?} after the response"
    );
}
