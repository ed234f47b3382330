//! `firedrill server`'s /metrics counts the HTTP requests of its HTTP-mode
//! proxies by status class and deciding fault, and their bytes on both
//! sides; the official Prometheus Python parser reads them (installed by
//! `ci/install-test-clients.sh`: a skip locally without it, a failure
//! under `CI=true`).

mod api_support;
mod client_support;

use std::net::SocketAddr;

use api_support::{Server, server};
use client_support::{missing, parse_metrics, venv_python};
use serde_json::Value;

/// The fixture target on loopback, for the proxies to stand in front of;
/// it stops when the returned sender is dropped.
async fn target() -> (SocketAddr, tokio::sync::watch::Sender<bool>) {
    let acceptor = firedrill::net::TcpAcceptor::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = acceptor.local_addr();
    let (stop, shutdown) = firedrill::http::ShutdownSignal::new();
    tokio::spawn(firedrill::target::serve(
        acceptor,
        Default::default(),
        shutdown,
    ));
    (addr, stop)
}

/// Creates an HTTP-mode proxy `name` in front of `upstream`.
async fn http_proxy(s: &Server, name: &str, upstream: SocketAddr) -> SocketAddr {
    let body = format!(r#"{{"name":"{name}","upstream":"{upstream}","mode":"http"}}"#);
    let a = s.call("POST", "/proxies", Some(&body)).await;
    assert_eq!(a.status, 201, "{}", a.text);
    a.json["listen"].as_str().unwrap().parse().unwrap()
}

async fn statuses(listen: SocketAddr, path: &str, times: usize) -> Vec<u16> {
    let mut seen = Vec::new();
    for _ in 0..times {
        let resp = Server::client()
            .get(format!("http://{listen}{path}"))
            .send()
            .await
            .unwrap();
        seen.push(resp.status().as_u16());
        resp.bytes().await.unwrap();
    }
    seen
}

/// Runs the parser on the server's /metrics: one JSON object per sample.
async fn parsed(s: &Server) -> Vec<Value> {
    let python = venv_python().expect("checked by the caller");
    parse_metrics(&python, s.base.trim_start_matches("http://"))
        .await
        .0
}

/// The value of the sample `name` whose labels include `labels`.
fn value(samples: &[Value], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|s| s["name"] == name && labels.iter().all(|(k, v)| s["labels"][*k] == *v))
        .and_then(|s| s["value"].as_f64())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_parser_reads_http_request_counters_by_status_class_and_fault() {
    if venv_python().is_none() {
        missing("prometheus-client (tests/clients/python/.venv)")
    }
    let s = server(&[]).await;
    let (up, _target) = target().await;
    let web = http_proxy(&s, "web", up).await;
    assert_eq!(statuses(web, "/health", 3).await, [200; 3]);
    assert_eq!(statuses(web, "/status/404", 1).await, [404]);
    let toxic = r#"{"name":"down","type":"http_status","attributes":{"code":503,"body":"down"}}"#;
    let t = s.call("POST", "/proxies/web/toxics", Some(toxic)).await;
    assert_eq!(t.status, 200, "{}", t.text);
    assert_eq!(statuses(web, "/health", 2).await, [503; 2]);

    let samples = parsed(&s).await;
    let requests = |class: &str, fault: &str| {
        let labels = [("proxy", "web"), ("status_class", class), ("fault", fault)];
        value(&samples, "firedrill_proxy_http_requests_total", &labels)
    };
    assert_eq!(requests("2xx", "none"), Some(3.0), "{samples:#?}");
    assert_eq!(requests("4xx", "none"), Some(1.0), "{samples:#?}");
    assert_eq!(requests("5xx", "down"), Some(2.0), "{samples:#?}");
    assert_eq!(requests("5xx", "none"), None, "only counted label sets");
    let family = samples
        .iter()
        .find(|s| s["name"] == "firedrill_proxy_http_requests_total")
        .unwrap();
    assert_eq!(family["type"], "counter");
    // Every response reached the client through the proxy's byte counters.
    for (name, direction) in [
        ("toxiproxy_proxy_received_bytes_total", "upstream"),
        ("toxiproxy_proxy_sent_bytes_total", "upstream"),
        ("toxiproxy_proxy_received_bytes_total", "downstream"),
        ("toxiproxy_proxy_sent_bytes_total", "downstream"),
    ] {
        let bytes = value(
            &samples,
            name,
            &[("proxy", "web"), ("direction", direction)],
        );
        assert!(
            bytes.is_some_and(|b| b > 0.0),
            "{name} {direction}: {bytes:?}"
        );
    }
}
