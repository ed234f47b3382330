//! Every request through an HTTP-mode proxy is recorded with what the
//! client got (status, or none when cut), the fault that decided it and
//! whether it reached the upstream; the byte counters see both sides.
//! Real loopback sockets, plus in-memory pipes under a paused clock where
//! times are asserted.

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration as StdDuration;

use bytes::Bytes;
use common::{faults, raw_exchange};
use firedrill::clock::Duration;
use firedrill::fault::{Direction, FaultPlan};
use firedrill::http::ShutdownSignal;
use firedrill::net::{Connector, TcpAcceptor, memory_pair};
use firedrill::proxy::record::JsonLines;
use firedrill::proxy::{
    BoundProxy, ProxyMode, Record, RecordSink, Recorder, Telemetry, serve_mode_with,
};
use firedrill::target::TargetStats;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::mpsc;

/// Far longer than anything here takes on a loaded machine.
const GENEROUS: StdDuration = StdDuration::from_secs(10);

/// One fault per path prefix, so one proxy shows every outcome.
const FAULTS: &str = "faults:
  - { name: down, match: /down/*, status: { code: 503, body: 'inventory down' } }
  - { name: cut, match: /cut/*, reset: {} }
  - { name: hole, match: /hole/*, blackhole: {} }
  - { name: trunc, match: /bytes/*, close: { after_bytes: 1000 } }
";

/// Hands each finished record to the test.
#[derive(Debug)]
struct Channel(mpsc::UnboundedSender<Record>);

impl RecordSink for Channel {
    fn record(&self, record: &Record) {
        let _ = self.0.send(record.clone());
    }
}

/// The fixture target behind a recording HTTP proxy on loopback.
struct Rig {
    proxy: SocketAddr,
    stats: Arc<TargetStats>,
    plan: Arc<FaultPlan>,
    telemetry: Telemetry,
    records: mpsc::UnboundedReceiver<Record>,
    _stop: tokio::sync::watch::Sender<bool>,
}

impl Rig {
    async fn start(yaml: &str, upstream: Option<SocketAddr>) -> Rig {
        let (stop, shutdown) = ShutdownSignal::new();
        let target = TcpAcceptor::bind("127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let target_addr = upstream.unwrap_or(target.local_addr());
        let stats = Arc::new(TargetStats::default());
        tokio::spawn(firedrill::target::serve(
            target,
            stats.clone(),
            shutdown.clone(),
        ));
        let plan = Arc::new(FaultPlan::new(
            faults(yaml).faults,
            1,
            firedrill::clock::now(),
        ));
        let (tx, records) = mpsc::unbounded_channel();
        let telemetry = Telemetry {
            traffic: Default::default(),
            recorder: Recorder::new("shop", plan.start(), Some(Arc::new(Channel(tx)))),
        };
        let bound = BoundProxy::bind("127.0.0.1:0", &target_addr.to_string(), ProxyMode::Http)
            .await
            .unwrap();
        let proxy = bound.local_addr();
        tokio::spawn(bound.serve_with(
            plan.clone(),
            telemetry.clone(),
            shutdown,
            Duration::from_secs(1),
        ));
        Rig {
            proxy,
            stats,
            plan,
            telemetry,
            records,
            _stop: stop,
        }
    }

    async fn next_record(&mut self) -> Record {
        tokio::time::timeout(GENEROUS, self.records.recv())
            .await
            .expect("a record is written once the request is over")
            .expect("the recorder is alive")
    }

    fn requests(&self, class: &str, fault: Option<&str>) -> u64 {
        let counters = self.telemetry.recorder.counters().unwrap();
        counters.get(class, fault)
    }
}

fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nhost: test\r\nconnection: close\r\n\r\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passed_through_request_is_recorded_with_status_sizes_path_and_request_id() {
    let mut rig = Rig::start(FAULTS, None).await;
    let body = "x".repeat(1234);
    let request = format!(
        "POST /echo?page=2 HTTP/1.1\r\nhost: test\r\nx-firedrill-request-id: 42\r\ncontent-length: 1234\r\nconnection: close\r\n\r\n{body}"
    );
    let (got, end) = raw_exchange(rig.proxy, &request).await;
    end.unwrap();
    assert!(got.starts_with(b"HTTP/1.1 200"));
    let r = rig.next_record().await;
    assert_eq!(
        (&*r.proxy, r.method.as_str(), r.path.as_str()),
        ("shop", "POST", "/echo?page=2")
    );
    assert_eq!(r.request_id, Some(42));
    assert_eq!((r.status, r.fault.as_deref()), (Some(200), None));
    assert_eq!((r.bytes_in, r.bytes_out), (1234, 1234));
    assert!(r.reached_upstream);
    assert!(r.latency_ms.is_some_and(|l| l >= 0.0), "{r:?}");
    assert!(r.at_ms >= 0.0, "{r:?}");
    assert_eq!(rig.requests("2xx", None), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_injected_status_is_recorded_with_its_fault_and_without_reaching_upstream() {
    let mut rig = Rig::start(FAULTS, None).await;
    let (got, _) = raw_exchange(rig.proxy, &get("/down/sku-1")).await;
    assert!(got.starts_with(b"HTTP/1.1 503"));
    let r = rig.next_record().await;
    assert_eq!((r.status, r.fault.as_deref()), (Some(503), Some("down")));
    assert_eq!(r.bytes_out, "inventory down".len() as u64);
    assert!(!r.reached_upstream);
    assert_eq!(rig.stats.requests(), 0);
    assert_eq!(rig.requests("5xx", Some("down")), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_request_is_recorded_with_no_status_and_the_reset_fault() {
    let mut rig = Rig::start(FAULTS, None).await;
    let (got, end) = raw_exchange(rig.proxy, &get("/cut/x")).await;
    assert!(got.is_empty());
    assert_eq!(end.unwrap_err().kind(), std::io::ErrorKind::ConnectionReset);
    let r = rig.next_record().await;
    assert_eq!((r.status, r.fault.as_deref()), (None, Some("cut")));
    assert_eq!((r.latency_ms, r.bytes_out), (None, 0));
    assert!(!r.reached_upstream);
    assert_eq!(rig.requests("none", Some("cut")), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blackholed_request_the_client_gives_up_on_is_recorded_with_no_status_and_when_it_left() {
    let mut rig = Rig::start(FAULTS, None).await;
    let mut client = TcpStream::connect(rig.proxy).await.unwrap();
    client.write_all(get("/hole/x").as_bytes()).await.unwrap();
    // The client gives up once the request is in the hole.
    tokio::time::timeout(GENEROUS, async {
        while rig.plan.injected(2) == 0 {
            tokio::time::sleep(StdDuration::from_millis(5)).await;
        }
    })
    .await
    .expect("the request reaches the blackhole");
    // Held a while, so that when the client left is told from when it came.
    let held = tokio::time::Instant::now();
    tokio::time::sleep(StdDuration::from_millis(300)).await;
    let waited = held.elapsed().as_secs_f64() * 1000.0;
    drop(client);
    let r = rig.next_record().await;
    assert_eq!((r.status, r.fault.as_deref()), (None, Some("hole")));
    assert_eq!(r.path, "/hole/x");
    assert!(!r.reached_upstream);
    // When the client gave up is recorded: at least the time it was held.
    let closed_after = r.closed_after_ms.expect("the client's close is recorded");
    assert!(closed_after >= waited, "{closed_after} ms < {waited} ms");
    assert_eq!(r.latency_ms, None);
    assert_eq!(rig.stats.requests(), 0);
    assert_eq!(rig.requests("none", Some("hole")), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncated_body_is_recorded_with_the_status_sent_and_only_the_bytes_passed() {
    let mut rig = Rig::start(FAULTS, None).await;
    let (got, _) = raw_exchange(rig.proxy, &get("/bytes/100000")).await;
    assert!(got.starts_with(b"HTTP/1.1 200"));
    let r = rig.next_record().await;
    assert_eq!((r.status, r.fault.as_deref()), (Some(200), Some("trunc")));
    assert_eq!(r.bytes_out, 1000);
    assert!(r.reached_upstream);
    assert_eq!(rig.requests("2xx", Some("trunc")), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_upstream_is_recorded_as_a_502_that_did_not_reach_it() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_addr = closed.local_addr().unwrap();
    drop(closed);
    let mut rig = Rig::start(FAULTS, Some(closed_addr)).await;
    let (got, _) = raw_exchange(rig.proxy, &get("/x")).await;
    assert!(got.starts_with(b"HTTP/1.1 502"));
    let r = rig.next_record().await;
    assert_eq!((r.status, r.fault.as_deref()), (Some(502), None));
    assert!(!r.reached_upstream);
    assert_eq!(rig.requests("5xx", None), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_mode_counts_the_bytes_read_from_and_written_to_both_sides() {
    let rig = Rig::start("faults: []\n", None).await;
    let request = get("/bytes/100000");
    let (got, end) = raw_exchange(rig.proxy, &request).await;
    end.unwrap();
    // The proxy closes the client connection after its last write, so the
    // client-side counters are final once the client saw the close.
    let t = &rig.telemetry.traffic;
    assert_eq!(t.received(Direction::Upstream), request.len() as u64);
    assert_eq!(t.sent(Direction::Downstream), got.len() as u64);
    assert!(got.len() > 100_000);
    assert!(
        t.sent(Direction::Upstream) >= "GET /bytes/100000 HTTP/1.1\r\n".len() as u64,
        "the forwarded request: {}",
        t.sent(Direction::Upstream)
    );
    assert!(
        t.received(Direction::Downstream) > 100_000,
        "the target's response: {}",
        t.received(Direction::Downstream)
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn arrival_and_latency_are_measured_on_the_tokio_clock() {
    let (stop, shutdown) = ShutdownSignal::new();
    let (to_target, target_acceptor) = memory_pair(64 * 1024);
    tokio::spawn(firedrill::target::serve(
        target_acceptor,
        Arc::new(TargetStats::default()),
        shutdown.clone(),
    ));
    let (to_proxy, proxy_acceptor) = memory_pair(64 * 1024);
    let plan = Arc::new(FaultPlan::new(
        faults("faults:\n  - { name: slow, latency: { delay: 3s } }\n").faults,
        1,
        firedrill::clock::now(),
    ));
    let (tx, mut records) = mpsc::unbounded_channel();
    let telemetry = Telemetry {
        traffic: Default::default(),
        recorder: Recorder::new("mem", plan.start(), Some(Arc::new(Channel(tx)))),
    };
    tokio::spawn(serve_mode_with(
        proxy_acceptor,
        Arc::new(to_target),
        plan,
        ProxyMode::Http,
        shutdown,
        Duration::from_secs(1),
        telemetry,
    ));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(TokioIo::new(to_proxy.connect().await.unwrap()))
            .await
            .unwrap();
    tokio::spawn(conn);
    let resp = sender
        .send_request(
            http::Request::get("/inventory/sku-1")
                .header("host", "mem")
                .body(Empty::<Bytes>::new())
                .unwrap(),
        )
        .await
        .unwrap();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    let r = records.recv().await.unwrap();
    assert_eq!((r.at_ms, r.latency_ms), (1500.0, Some(3000.0)));
    assert_eq!((r.status, r.fault.as_deref()), (Some(200), Some("slow")));
    assert_eq!(r.bytes_out, body.len() as u64);
    let _ = stop.send(true);
}

#[test]
fn a_record_is_one_json_line_with_the_documented_fields_and_millisecond_decimals() {
    let sink = JsonLines::new(Vec::new());
    sink.record(&Record {
        at_ms: 1234.567,
        proxy: Arc::from("127.0.0.1:8080"),
        method: http::Method::GET,
        http2: false,
        path: "/a?b=c".to_string(),
        request_id: Some(7),
        carried: None,
        status: None,
        fault: Some("hole".to_string()),
        latency_ms: None,
        closed_after_ms: None,
        bytes_in: 0,
        bytes_out: 0,
        reached_upstream: false,
        grpc_status: None,
    });
    let text = String::from_utf8(sink.into_inner().unwrap()).unwrap();
    assert_eq!(
        text,
        "{\"at_ms\":1234.567,\"proxy\":\"127.0.0.1:8080\",\"method\":\"GET\",\"path\":\"/a?b=c\",\"request_id\":\"7\",\"status\":null,\"fault\":\"hole\",\"latency_ms\":null,\"bytes_in\":0,\"bytes_out\":0,\"reached_upstream\":false}\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_without_a_recorder_counts_no_requests_but_still_counts_bytes() {
    let (_stop, shutdown) = ShutdownSignal::new();
    let target = TcpAcceptor::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let upstream = target.local_addr();
    tokio::spawn(firedrill::target::serve(
        target,
        Arc::new(TargetStats::default()),
        shutdown.clone(),
    ));
    let telemetry = Telemetry::default();
    let bound = BoundProxy::bind("127.0.0.1:0", &upstream.to_string(), ProxyMode::Http)
        .await
        .unwrap();
    let proxy = bound.local_addr();
    tokio::spawn(bound.serve_with(
        Arc::new(FaultPlan::empty()),
        telemetry.clone(),
        shutdown,
        Duration::from_secs(1),
    ));
    let (got, _) = raw_exchange(proxy, &get("/health")).await;
    assert!(got.starts_with(b"HTTP/1.1 200"));
    assert!(telemetry.recorder.counters().is_none());
    assert_eq!(
        telemetry.traffic.sent(Direction::Downstream),
        got.len() as u64
    );
}
