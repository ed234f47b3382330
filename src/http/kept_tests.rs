use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use http::{Request, StatusCode};
use http_body_util::BodyExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::KeptUpstream;
use crate::http::body::{BoxBody, full};
use crate::http::client::Upstream;
use crate::http::endpoint::{Endpoint, Rewrite};
use crate::net::{Acceptor, MemoryConnector, memory_pair};

/// What the test server saw: connections accepted, request heads read.
#[derive(Default)]
struct Seen {
    connections: AtomicUsize,
    heads: std::sync::Mutex<Vec<String>>,
}

/// How the test server answers.
#[derive(Clone, Copy)]
enum Serve {
    /// `200 ok` to every request, keeping the connection.
    KeepAlive,
    /// `200 ok` after 1 s of (virtual) time, keeping the connection.
    Slowly,
    /// `200 ok`, then closes the connection without saying so.
    CloseAfterOne,
    /// `101`, then echoes every byte (an upgraded connection).
    Upgrade,
    /// `200 ok`, then hands the connection to the test (which closes it
    /// when it wants).
    HandOver(&'static std::sync::Mutex<Option<tokio::io::DuplexStream>>),
}

/// A raw HTTP/1.1 server on an in-memory network; the client dials it as
/// `http://dependency:8080`.
fn server(serve: Serve) -> (KeptUpstream<MemoryConnector>, Arc<Seen>) {
    let upstream = Endpoint::parse("--upstream", "http://dependency:8080").unwrap();
    server_with(serve, upstream.rewrite())
}

/// As [`server`], the client rewriting requests with `rewrite`.
fn server_with(serve: Serve, rewrite: Rewrite) -> (KeptUpstream<MemoryConnector>, Arc<Seen>) {
    let (connector, mut acceptor) = memory_pair(64 * 1024);
    let seen = Arc::new(Seen::default());
    let counted = seen.clone();
    tokio::spawn(async move {
        while let Ok(mut stream) = acceptor.accept().await {
            counted.connections.fetch_add(1, Ordering::SeqCst);
            let seen = counted.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                loop {
                    let mut chunk = [0u8; 4096];
                    let n = match stream.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    buf.extend_from_slice(&chunk[..n]);
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head: Vec<u8> = buf.drain(..end + 4).collect();
                        seen.heads
                            .lock()
                            .unwrap()
                            .push(String::from_utf8_lossy(&head).into());
                        if let Serve::Slowly = serve {
                            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                        }
                        if let Serve::Upgrade = serve {
                            let switched = b"HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\nupgrade: echo\r\n\r\n";
                            let _ = stream.write_all(switched).await;
                            let (mut from, mut to) = tokio::io::split(stream);
                            let _ = tokio::io::copy(&mut from, &mut to).await;
                            return;
                        }
                        let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";

                        if stream.write_all(answer).await.is_err() {
                            return;
                        }
                        match serve {
                            Serve::CloseAfterOne => return,
                            Serve::HandOver(slot) => {
                                *slot.lock().unwrap() = Some(stream);
                                return;
                            }
                            _ => {}
                        }
                    }
                }
            });
        }
    });
    let client = KeptUpstream::new(Arc::new(connector), "dependency:8080", rewrite)
        .expect("a plain http:// dependency");
    (client, seen)
}

fn get(uri: &str) -> Request<BoxBody> {
    Request::get(uri).body(full(bytes::Bytes::new())).unwrap()
}

/// Sends `GET uri` and reads the whole answer.
async fn call(client: &KeptUpstream<MemoryConnector>, uri: &str) -> (StatusCode, bytes::Bytes) {
    let resp = client.send(get(uri)).await.expect("an answer");
    let status = resp.status();
    (status, resp.into_body().collect().await.unwrap().to_bytes())
}

#[tokio::test(start_paused = true)]
async fn sequential_requests_share_one_connection() {
    let (client, seen) = server(Serve::KeepAlive);
    for _ in 0..5 {
        assert_eq!(call(&client, "/a").await, (StatusCode::OK, "ok".into()));
    }
    assert_eq!(seen.connections.load(Ordering::SeqCst), 1);
    assert_eq!(seen.heads.lock().unwrap().len(), 5);
}

#[tokio::test(start_paused = true)]
async fn a_connection_busy_with_a_request_is_not_given_to_another() {
    let (client, seen) = server(Serve::Slowly);
    let (a, b) = tokio::join!(call(&client, "/a"), call(&client, "/b"));
    assert_eq!((a.0, b.0), (StatusCode::OK, StatusCode::OK));
    assert_eq!(seen.connections.load(Ordering::SeqCst), 2);
    // Both are idle again: the next two requests reuse them.
    let (c, d) = tokio::join!(call(&client, "/c"), call(&client, "/d"));
    assert_eq!((c.0, d.0), (StatusCode::OK, StatusCode::OK));
    assert_eq!(seen.connections.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn a_request_on_a_connection_closed_before_its_client_noticed_goes_again_on_a_new_one() {
    static SLOT: std::sync::Mutex<Option<tokio::io::DuplexStream>> = std::sync::Mutex::new(None);
    let (client, seen) = server(Serve::HandOver(&SLOT));
    assert_eq!(call(&client, "/a").await, (StatusCode::OK, "ok".into()));
    // The server end closes the idle connection and, before the client's
    // dispatcher has run to read the close, the next request is handed to
    // it: the dispatcher gives it back unsent.
    drop(
        SLOT.lock()
            .unwrap()
            .take()
            .expect("the server handed its end over"),
    );
    assert_eq!(call(&client, "/b").await, (StatusCode::OK, "ok".into()));
    assert_eq!(seen.connections.load(Ordering::SeqCst), 2);
    assert_eq!(
        seen.heads.lock().unwrap().len(),
        2,
        "the first connection never saw /b"
    );
}

#[tokio::test(start_paused = true)]
async fn a_connection_is_taken_only_by_requests_of_the_event_loop_that_opened_it() {
    let (client, seen) = server(Serve::KeepAlive);
    let client = Arc::new(client);
    call(&client, "/here").await;
    let there = client.clone();
    let other_loop = std::thread::spawn(move || {
        let rt = crate::loops::event_loop().unwrap();
        rt.block_on(async {
            call(&there, "/there").await;
            call(&there, "/there-again").await;
        });
    });
    // This loop (the server's) keeps serving while the other one runs.
    tokio::task::spawn_blocking(move || other_loop.join().unwrap())
        .await
        .unwrap();
    call(&client, "/here-again").await;
    assert_eq!(seen.connections.load(Ordering::SeqCst), 2);
    assert_eq!(seen.heads.lock().unwrap().len(), 4);
}

#[tokio::test(start_paused = true)]
async fn an_upgraded_connection_carries_bytes_both_ways_after_the_101_and_is_not_kept() {
    let (client, seen) = server(Serve::Upgrade);
    let mut req = get("/chat");
    let headers = req.headers_mut();
    headers.insert(http::header::CONNECTION, "upgrade".parse().unwrap());
    headers.insert(http::header::UPGRADE, "echo".parse().unwrap());
    let resp = client.send(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::SWITCHING_PROTOCOLS);
    let upgraded = hyper::upgrade::on(resp)
        .await
        .expect("the connection upgrades");
    let mut upgraded = hyper_util::rt::TokioIo::new(upgraded);
    upgraded.write_all(b"ping").await.unwrap();
    let mut echoed = [0u8; 4];
    upgraded.read_exact(&mut echoed).await.unwrap();
    assert_eq!(&echoed, b"ping");
    // The next request does not go on the upgraded connection.
    let next = client
        .send(get("/"))
        .await
        .expect("an answer on a new connection");
    assert_eq!(next.status(), StatusCode::SWITCHING_PROTOCOLS);
    assert_eq!(seen.connections.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn a_connection_the_dependency_closed_is_replaced_and_the_request_answered() {
    let (client, seen) = server(Serve::CloseAfterOne);
    for _ in 0..3 {
        assert_eq!(call(&client, "/a").await, (StatusCode::OK, "ok".into()));
    }
    assert_eq!(seen.connections.load(Ordering::SeqCst), 3);
}

/// The request heads the server saw for `GET /p?q=1` sent as an absolute
/// URI without `Host`, then `GET /kept` with `Host: caller.example`.
async fn heads_of_two_requests(client: &KeptUpstream<MemoryConnector>, seen: &Seen) -> Vec<String> {
    call(client, "http://elsewhere:1/p?q=1").await;
    let mut own = get("/kept");
    own.headers_mut()
        .insert(http::header::HOST, "caller.example".parse().unwrap());
    client
        .send(own)
        .await
        .unwrap()
        .into_body()
        .collect()
        .await
        .unwrap();
    seen.heads
        .lock()
        .unwrap()
        .iter()
        .map(|h| h.to_ascii_lowercase())
        .collect()
}

#[tokio::test(start_paused = true)]
async fn without_a_rewrite_a_request_keeps_its_host_or_gets_the_dependencys_and_goes_origin_form() {
    let (client, seen) = server_with(Serve::KeepAlive, Rewrite::default());
    let heads = heads_of_two_requests(&client, &seen).await;
    assert!(
        heads[0].starts_with("get /p?q=1 http/1.1\r\n"),
        "{}",
        heads[0]
    );
    assert!(
        heads[0].contains("host: dependency:8080\r\n"),
        "{}",
        heads[0]
    );
    assert!(
        heads[1].contains("host: caller.example\r\n"),
        "{}",
        heads[1]
    );
    assert!(!heads[1].contains("dependency:8080"), "{}", heads[1]);
}

#[tokio::test(start_paused = true)]
async fn a_user_services_url_sets_its_host_and_path_prefix_on_every_request() {
    let endpoint = Endpoint::parse("--upstream", "http://dependency:8080/api").unwrap();
    let (client, seen) = server_with(Serve::KeepAlive, endpoint.rewrite());
    let heads = heads_of_two_requests(&client, &seen).await;
    assert!(
        heads[0].starts_with("get /api/p?q=1 http/1.1\r\n"),
        "{}",
        heads[0]
    );
    assert!(
        heads[1].starts_with("get /api/kept http/1.1\r\n"),
        "{}",
        heads[1]
    );
    for head in &heads {
        assert!(head.contains("host: dependency:8080\r\n"), "{head}");
        assert!(!head.contains("caller.example"), "{head}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_dependency_that_refuses_is_a_connect_error() {
    let (connector, mut acceptor) = memory_pair(1024);
    acceptor.pause().unwrap();
    let upstream = Endpoint::parse("--upstream", "http://dependency:8080").unwrap();
    let client =
        KeptUpstream::new(Arc::new(connector), &upstream.authority, upstream.rewrite()).unwrap();
    let err = client.send(get("/")).await.expect_err("refused");
    assert!(err.is_connect(), "{err}");
}

#[tokio::test(start_paused = true)]
async fn a_dependency_that_hangs_up_mid_exchange_is_a_broken_connection_not_a_connect_error() {
    let (connector, mut acceptor) = memory_pair(1024);
    tokio::spawn(async move {
        if let Ok(stream) = acceptor.accept().await {
            drop(stream);
        }
        // A second dial would be refused: a request a fresh connection
        // could not take is not sent again.
        acceptor.pause().unwrap();
        std::future::pending::<()>().await;
    });
    let upstream = Endpoint::parse("--upstream", "http://dependency:8080").unwrap();
    let client =
        KeptUpstream::new(Arc::new(connector), &upstream.authority, upstream.rewrite()).unwrap();
    let err = client.send(get("/")).await.expect_err("hung up");
    assert!(!err.is_connect(), "one connection, broken: {err}");
}

#[test]
fn http2_and_tls_dependencies_are_left_to_the_pooled_client() {
    for url in ["h2c://dependency:8080", "https://dependency:8443"] {
        let endpoint = Endpoint::parse("--upstream", url).unwrap();
        let (connector, _acceptor) = memory_pair(1024);
        let kept = KeptUpstream::new(Arc::new(connector), &endpoint.authority, endpoint.rewrite());
        assert!(kept.is_none(), "{url}");
    }
    let endpoint = Endpoint::parse("--upstream", "http://dependency:8080").unwrap();
    let (connector, _acceptor) = memory_pair(1024);
    let kept = KeptUpstream::new(Arc::new(connector), &endpoint.authority, endpoint.rewrite())
        .expect("plain http is kept");
    // A log line names the dependency it talks to.
    let shown = format!("{kept:?}");
    assert!(
        shown.starts_with("KeptUpstream") && shown.contains("dependency:8080"),
        "{shown}"
    );
}
