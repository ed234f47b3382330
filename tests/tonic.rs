//! A real Rust gRPC stack, a tonic server and a tonic client in this
//! process on loopback, through `firedrill proxy --mode http` and
//! `firedrill defend` towards an `h2c://` upstream: untouched calls arrive
//! byte-exact (unary, and a server stream of 1,000 messages), and the
//! client sees each fault, and an open breaker, as tonic reports it. The
//! messages are hand-written prost types and the service a hand-written
//! dispatch, so no protoc and no build script.
#![allow(clippy::disallowed_methods)] // real processes, bounded by timeouts
#![allow(clippy::result_large_err)] // tonic's API: Result<_, tonic::Status> by value

mod cli_support;

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use cli_support::{Killed, firedrill, spawn_until_ready};
use futures_util::Stream;
use http::uri::PathAndQuery;
use prost::Message as _;
use tonic::codec::ProstCodec;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Request, Response, Status};

/// What a call asks: an item, and for a stream how many.
#[derive(Clone, PartialEq, prost::Message)]
struct Query {
    #[prost(string, tag = "1")]
    sku: String,
    #[prost(uint32, tag = "2")]
    count: u32,
}

/// What the server answers: one item, with a payload whose length and
/// bytes change from one message to the next.
#[derive(Clone, PartialEq, prost::Message)]
struct Item {
    #[prost(string, tag = "1")]
    sku: String,
    #[prost(uint64, tag = "2")]
    seq: u64,
    #[prost(bytes = "vec", tag = "3")]
    payload: Vec<u8>,
}

const GET: &str = "/inventory.Inventory/Get";
const WATCH: &str = "/inventory.Inventory/Watch";

/// Every wait on a call is bounded by this (the deadlines the tests set
/// are far shorter).
const BOUND: Duration = Duration::from_secs(30);

/// The `seq`th item of `sku`: what the server sends and the client expects.
fn item(sku: &str, seq: u64) -> Item {
    let len = usize::try_from(seq * 37 % 1000 + 1).unwrap();
    let mut x = seq.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let payload = (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()[0]
        })
        .collect();
    Item {
        sku: sku.to_string(),
        seq,
        payload,
    }
}

/// The server's state: whether it fails every call with UNAVAILABLE, and
/// how many calls reached it.
#[derive(Default)]
struct Inventory {
    down: bool,
    /// A stream sends its items, then ends with UNAVAILABLE in its
    /// trailers instead of OK.
    breaks_streams: bool,
    calls: AtomicU64,
    /// Every query a call asked, in order.
    asked: std::sync::Mutex<Vec<Query>>,
}

impl Inventory {
    fn answer(&self, query: &Query) -> Result<(), Status> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.asked.lock().unwrap().push(query.clone());
        if self.down {
            return Err(Status::unavailable("inventory is down"));
        }
        Ok(())
    }
}

/// `Get`: one item.
struct Get(Arc<Inventory>);

impl tower_service::Service<Request<Query>> for Get {
    type Response = Response<Item>;
    type Error = Status;
    type Future = std::future::Ready<Result<Response<Item>, Status>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Status>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Query>) -> Self::Future {
        let q = req.into_inner();
        std::future::ready(
            self.0
                .answer(&q)
                .map(|()| Response::new(item(&q.sku, u64::from(q.count)))),
        )
    }
}

type ItemStream = Pin<Box<dyn Stream<Item = Result<Item, Status>> + Send>>;

/// `Watch`: a stream of `count` items.
struct Watch(Arc<Inventory>);

impl tower_service::Service<Request<Query>> for Watch {
    type Response = Response<ItemStream>;
    type Error = Status;
    type Future = std::future::Ready<Result<Response<ItemStream>, Status>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Status>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Query>) -> Self::Future {
        let q = req.into_inner();
        std::future::ready(self.0.answer(&q).map(|()| {
            let broken = self
                .0
                .breaks_streams
                .then(|| Err(Status::unavailable("stream broke")));
            let items = (0..u64::from(q.count))
                .map(move |seq| Ok(item(&q.sku, seq)))
                .chain(broken);
            Response::new(Box::pin(futures_util::stream::iter(items)) as ItemStream)
        }))
    }
}

/// One HTTP/2 request to the service, dispatched by its path with tonic's
/// server-side gRPC handling.
async fn dispatch(
    inventory: Arc<Inventory>,
    req: http::Request<hyper::body::Incoming>,
) -> Result<http::Response<tonic::body::Body>, Infallible> {
    let mut grpc = tonic::server::Grpc::new(ProstCodec::<Item, Query>::default());
    Ok(match req.uri().path() {
        GET => grpc.unary(Get(inventory), req).await,
        WATCH => grpc.server_streaming(Watch(inventory), req).await,
        _ => Status::unimplemented("no such method").into_http(),
    })
}

/// The tonic server on 127.0.0.1 (HTTP/2 only, as gRPC servers are),
/// serving until the test's runtime ends: its address and its state.
async fn serve(down: bool) -> (String, Arc<Inventory>) {
    serve_inventory(Inventory {
        down,
        ..Inventory::default()
    })
    .await
}

/// As [`serve`], with the server's state given.
async fn serve_inventory(inventory: Inventory) -> (String, Arc<Inventory>) {
    let inventory = Arc::new(inventory);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let state = Arc::clone(&inventory);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let state = Arc::clone(&state);
            tokio::spawn(async move {
                let service =
                    hyper::service::service_fn(move |req| dispatch(Arc::clone(&state), req));
                let _ =
                    hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
            });
        }
    });
    (addr, inventory)
}

/// A tonic channel (HTTP/2, prior knowledge) to `addr`.
async fn channel(addr: &str) -> Channel {
    let endpoint = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_timeout(Duration::from_secs(10));
    tokio::time::timeout(BOUND, endpoint.connect())
        .await
        .expect("connecting in time")
        .unwrap()
}

/// `Get` of `sku` with tonic's client, with a deadline of `deadline`
/// (sent as `grpc-timeout`, enforced by the channel).
async fn get(addr: &str, sku: &str, deadline: Duration) -> Result<Item, Status> {
    let mut grpc = tonic::client::Grpc::new(channel(addr).await);
    let mut req = Request::new(Query {
        sku: sku.to_string(),
        count: 7,
    });
    req.set_timeout(deadline);
    let call = async {
        grpc.ready().await.unwrap();
        grpc.unary(
            req,
            PathAndQuery::from_static(GET),
            ProstCodec::<Query, Item>::default(),
        )
        .await
    };
    let resp = tokio::time::timeout(BOUND, call)
        .await
        .expect("an answer in time")?;
    Ok(resp.into_inner())
}

/// `Watch` of `count` items of `sku`: every message received.
async fn watch(addr: &str, sku: &str, count: u32) -> Result<Vec<Item>, Status> {
    let mut grpc = tonic::client::Grpc::new(channel(addr).await);
    let mut req = Request::new(Query {
        sku: sku.to_string(),
        count,
    });
    req.set_timeout(BOUND);
    let call = async {
        grpc.ready().await.unwrap();
        let mut stream = grpc
            .server_streaming(
                req,
                PathAndQuery::from_static(WATCH),
                ProstCodec::<Query, Item>::default(),
            )
            .await?
            .into_inner();
        let mut items = Vec::new();
        while let Some(m) = stream.message().await? {
            items.push(m);
        }
        Ok(items)
    };
    tokio::time::timeout(BOUND, call)
        .await
        .expect("the whole stream in time")
}

/// The unary call and the stream of 1,000 messages through `addr` are what
/// the server sent, byte for byte.
async fn assert_byte_exact(addr: &str) {
    let got = get(addr, "sku-42", BOUND).await.unwrap();
    assert_eq!(got.encode_to_vec(), item("sku-42", 7).encode_to_vec());
    let items = watch(addr, "sku-42", 1000).await.unwrap();
    assert_eq!(items.len(), 1000);
    for (seq, got) in (0..).zip(&items) {
        let want = item("sku-42", seq);
        assert_eq!(got.encode_to_vec(), want.encode_to_vec(), "message {seq}");
        assert_eq!(got, &want, "message {seq}");
    }
}

/// Runs `cmd` (blocking until its log says `ready`) off the runtime's
/// workers' async work: the child and its listen address.
fn start(cmd: std::process::Command, ready: &str) -> (Killed, String) {
    tokio::task::block_in_place(|| {
        let (child, listen, _log) = spawn_until_ready(cmd, ready);
        (Killed(child), listen)
    })
}

/// `firedrill proxy --mode http` towards `upstream` over h2c, with
/// `faults` (YAML).
fn proxy(upstream: &str, faults: &str) -> (Killed, String, tempfile::NamedTempFile) {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), faults).unwrap();
    let mut cmd = firedrill();
    cmd.args(["proxy", "--listen", "127.0.0.1:0", "--mode", "http"])
        .args(["--upstream", &format!("h2c://{upstream}")])
        .arg("--faults")
        .arg(file.path());
    let (child, listen) = start(cmd, "proxy ready");
    (child, listen, file)
}

/// A breaker on the gRPC service's methods: open after 5 calls of which
/// half failed, and staying open for the rest of the test.
const BREAKER: &str = "
routes:
  inventory:
    match: /inventory.Inventory/*
    breaker:
      sliding_window_size: 10
      minimum_calls: 5
      failure_rate_threshold: 50%
      wait_in_open: 60s
";

/// `firedrill defend` with [`BREAKER`] towards `upstream` over h2c.
fn defend(upstream: &str) -> (Killed, String, tempfile::NamedTempFile) {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), BREAKER).unwrap();
    let mut cmd = firedrill();
    cmd.args(["defend", "--listen", "127.0.0.1:0"])
        .args(["--upstream", &format!("h2c://{upstream}")])
        .arg("--config")
        .arg(file.path());
    let (child, listen) = start(cmd, "defense line ready");
    (child, listen, file)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn untouched_tonic_calls_pass_the_proxy_byte_exact_unary_and_a_stream_of_a_thousand_messages()
{
    let (server, inventory) = serve(false).await;
    assert_byte_exact(&server).await;
    let (_proxy, listen, _faults) = proxy(&server, "faults: []\n");
    assert_byte_exact(&listen).await;
    assert_eq!(inventory.calls.load(Ordering::SeqCst), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn untouched_tonic_calls_pass_defend_byte_exact_unary_and_a_stream_of_a_thousand_messages() {
    let (server, inventory) = serve(false).await;
    let (_defend, listen, _config) = defend(&server);
    assert_byte_exact(&listen).await;
    assert_eq!(inventory.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_unavailable_fault_reaches_tonic_as_code_unavailable_with_the_fault_s_message() {
    let (server, inventory) = serve(false).await;
    let faults = "faults:\n  - { name: get-down, match: /inventory.Inventory/Get, \
                  grpc: { status: UNAVAILABLE, message: stock is down } }\n";
    let (_proxy, listen, _faults) = proxy(&server, faults);
    let failed = get(&listen, "sku-1", BOUND).await.unwrap_err();
    assert_eq!(failed.code(), Code::Unavailable, "{failed:?}");
    assert_eq!(failed.message(), "stock is down", "{failed:?}");
    assert_eq!(
        inventory.calls.load(Ordering::SeqCst),
        0,
        "the fault answers"
    );
    // The fault matches Get only: Watch passes whole.
    assert_eq!(watch(&listen, "sku-1", 1000).await.unwrap().len(), 1000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delay_past_tonic_s_deadline_ends_the_call_at_the_deadline_not_after_the_delay() {
    let (server, _inventory) = serve(false).await;
    let faults =
        "faults:\n  - { name: slow, match: /inventory.Inventory/*, latency: { delay: 3s } }\n";
    let (_proxy, listen, _faults) = proxy(&server, faults);
    let late = get(&listen, "sku-1", Duration::from_millis(500))
        .await
        .unwrap_err();
    // The deadline ends the call, whichever side's timer is seen first:
    // tonic's channel (its grpc-timeout layer) reports its own expired
    // deadline as CANCELLED with "Timeout expired", not DEADLINE_EXCEEDED
    // (tonic 0.12 to 0.14 alike); the proxy, honouring the grpc-timeout
    // tonic sends, answers DEADLINE_EXCEEDED at the same deadline counted
    // from the call's arrival, which a busy client may read first.
    let ended = (late.code(), late.message());
    assert!(
        ended == (Code::Cancelled, "Timeout expired")
            || ended == (Code::DeadlineExceeded, "deadline exceeded (grpc-timeout)"),
        "{late:?}"
    );
    // With a deadline past the delay, the call is answered.
    let waited_out = get(&listen, "sku-1", BOUND).await.unwrap();
    assert_eq!(waited_out, item("sku-1", 7));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_fault_reaches_tonic_as_code_unknown_transport_error_from_the_stream_s_reset() {
    let (server, _inventory) = serve(false).await;
    let faults = "faults:\n  - { name: cut, match: /inventory.Inventory/*, reset: {} }\n";
    let (_proxy, listen, _faults) = proxy(&server, faults);
    let cut = get(&listen, "sku-1", BOUND).await.unwrap_err();
    // Observed: the proxy's hyper resets the HTTP/2 stream with
    // INTERNAL_ERROR, and tonic's channel reports that as UNKNOWN,
    // "transport error", the reset as the status's source (grpcio says
    // INTERNAL for the same reset, tests/grpc.rs).
    assert_eq!(cut.code(), Code::Unknown, "{cut:?}");
    assert_eq!(cut.message(), "transport error", "{cut:?}");
    let source = format!("{:?}", std::error::Error::source(&cut));
    assert!(
        source.contains("Reset(") && source.contains("INTERNAL_ERROR"),
        "{cut:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unavailable_answers_open_defend_s_breaker_and_tonic_then_gets_unavailable_with_no_call_reaching_the_server()
 {
    let (server, inventory) = serve(true).await;
    let (_defend, listen, _config) = defend(&server);
    // The server's UNAVAILABLE answers pass to the client until the breaker
    // opens; then the defense line answers, itself.
    let mut opened = None;
    for _ in 0..50 {
        let failed = get(&listen, "sku-1", BOUND).await.unwrap_err();
        assert_eq!(failed.code(), Code::Unavailable, "{failed:?}");
        if failed.message() == "firedrill defense: breaker-open" {
            opened = Some(failed);
            break;
        }
        assert_eq!(failed.message(), "inventory is down", "{failed:?}");
    }
    let opened = opened.expect("the breaker opened within 50 calls");
    assert_eq!(
        opened.metadata().get("x-firedrill-reason").unwrap(),
        "breaker-open"
    );
    let reached = inventory.calls.load(Ordering::SeqCst);
    assert!(
        (5..=10).contains(&reached),
        "{reached} calls reached the server before the breaker opened"
    );
    // Open: every call fails at once as UNAVAILABLE, and none reaches the
    // server.
    for _ in 0..10 {
        let failed = get(&listen, "sku-1", BOUND).await.unwrap_err();
        assert_eq!(failed.code(), Code::Unavailable, "{failed:?}");
        assert_eq!(failed.message(), "firedrill defense: breaker-open");
    }
    let streamed = watch(&listen, "sku-1", 1000).await.unwrap_err();
    assert_eq!(streamed.code(), Code::Unavailable, "{streamed:?}");
    assert_eq!(
        inventory.calls.load(Ordering::SeqCst),
        reached,
        "an open breaker let a call through"
    );
}

/// The repository's descriptor set of the inventory service
/// (fixtures/grpc/inventory.proto, which declares the fields `Query` has).
fn descriptors() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/grpc/inventory.desc")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_routes_json_message_reaches_the_tonic_server_as_the_query_it_describes() {
    let (server, inventory) = serve(false).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("experiment.yaml");
    std::fs::write(
        &file,
        format!(
            "name: a JSON message, encoded with the service's descriptor set\n\
             seed: 1\n\
             duration: 2s\n\
             clock: real\n\
             system: {{ url: 'h2c://{server}' }}\n\
             load:\n\
             \x20 - name: get\n\
             \x20   request: grpc /inventory.Inventory/Get\n\
             \x20   message: {{ json: {{ sku: sku-9, count: 3, tags: [a, b] }}, descriptors: '{}' }}\n\
             \x20   rate: 20/s\n\
             \x20   arrivals: constant\n\
             expect:\n\
             \x20 - route get success == 100%\n",
            descriptors().display()
        ),
    )
    .unwrap();
    let out = tokio::task::block_in_place(|| {
        std::process::Command::new(env!("CARGO_BIN_EXE_firedrill"))
            .arg("run")
            .arg(&file)
            .args(["--quiet", "--report-dir"])
            .arg(dir.path().join("report"))
            .output()
            .unwrap()
    });
    let output =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{output}");
    let asked = inventory.asked.lock().unwrap().clone();
    assert!(
        asked.len() >= 30,
        "{} calls reached the server",
        asked.len()
    );
    let want = Query {
        sku: "sku-9".to_string(),
        count: 3,
    };
    assert!(asked.iter().all(|q| *q == want), "{asked:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_that_fail_in_their_trailers_open_defend_s_breaker_though_their_messages_came() {
    // Streams that end OK in their trailers never open it.
    let (server, inventory) = serve(false).await;
    let (_defend, listen, _config) = defend(&server);
    for _ in 0..20 {
        assert_eq!(watch(&listen, "sku-1", 3).await.unwrap().len(), 3);
    }
    assert_eq!(get(&listen, "sku-1", BOUND).await.unwrap().sku, "sku-1");
    assert_eq!(
        inventory.calls.load(Ordering::SeqCst),
        21,
        "every call reached it"
    );
    // Streams whose messages all came but whose trailers say UNAVAILABLE
    // (each an HTTP 200 with no status in its head) open it.
    let inventory = Inventory {
        breaks_streams: true,
        ..Inventory::default()
    };
    let (server, inventory) = serve_inventory(inventory).await;
    let (_defend, listen, _config) = defend(&server);
    let mut opened = false;
    for _ in 0..50 {
        let failed = watch(&listen, "sku-1", 3).await.unwrap_err();
        assert_eq!(failed.code(), Code::Unavailable, "{failed:?}");
        if failed.message() == "firedrill defense: breaker-open" {
            opened = true;
            break;
        }
        assert_eq!(failed.message(), "stream broke", "{failed:?}");
    }
    assert!(opened, "the breaker opened within 50 calls");
    let reached = inventory.calls.load(Ordering::SeqCst);
    assert!(
        (5..=10).contains(&reached),
        "{reached} calls reached the server before the breaker opened"
    );
}
