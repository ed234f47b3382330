//! HTTP/2 with prior knowledge (h2c), as a client that speaks it calls
//! `firedrill proxy --mode http` and `firedrill defend`: the request is
//! answered over HTTP/2, faults apply to it, and the upstream (HTTP/1.1)
//! gets the same request with its authority as `Host` and its path in
//! origin form. Real processes on loopback, a real HTTP/2 client
//! (reqwest over hyper's h2).
#![allow(clippy::disallowed_methods)] // real processes, bounded by timeouts

mod cli_support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

use cli_support::{Killed, firedrill, spawn_until_ready};

/// An HTTP/1.1 upstream on loopback that answers `ok` to every request
/// and sends the head (and body) of each on the channel.
fn capturing_upstream() -> (String, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let tx = tx.clone();
            std::thread::spawn(move || {
                stream
                    .set_read_timeout(Some(Duration::from_secs(30)))
                    .unwrap();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut writer = stream;
                loop {
                    let mut head = String::new();
                    let mut length = 0;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap();
                        }
                        let end = line == "\r\n";
                        head.push_str(&line);
                        if end {
                            break;
                        }
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).unwrap();
                    head.push_str(&String::from_utf8_lossy(&body));
                    let _ = tx.send(head);
                    writer
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                        .unwrap();
                }
            });
        }
    });
    (addr, rx)
}

/// A client that opens every connection with HTTP/2's preface.
fn h2c_client() -> reqwest::Client {
    reqwest::Client::builder()
        .http2_prior_knowledge()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// Sends `method` `url` (with `body`) over h2c: version, status, the fault
/// header and the body.
fn call(method: &str, url: &str, body: &str) -> (http::Version, u16, Option<String>, String) {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let resp = h2c_client()
                .request(method.parse().unwrap(), url)
                .body(body.to_string())
                .send()
                .await
                .unwrap();
            let fault = resp
                .headers()
                .get("x-firedrill-fault")
                .map(|v| v.to_str().unwrap().to_string());
            (
                resp.version(),
                resp.status().as_u16(),
                fault,
                resp.text().await.unwrap(),
            )
        })
}

/// What the upstream saw of the next request.
fn seen(rx: &mpsc::Receiver<String>) -> String {
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the request reached the upstream")
}

#[test]
fn proxy_in_http_mode_answers_h2c_and_sends_the_request_on_as_http1_with_its_host() {
    let (upstream, rx) = capturing_upstream();
    let faults = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        faults.path(),
        "faults:\n  - { name: down, match: /fail/*, status: { code: 503, body: down } }\n",
    )
    .unwrap();
    let mut cmd = firedrill();
    cmd.args([
        "proxy",
        "--listen",
        "127.0.0.1:0",
        "--mode",
        "http",
        "--upstream",
        &upstream,
    ])
    .arg("--faults")
    .arg(faults.path());
    let (child, listen, _log) = spawn_until_ready(cmd, "proxy ready");
    let _child = Killed(child);

    let (version, status, fault, body) =
        call("GET", &format!("http://{listen}/inventory/1?x=2"), "");
    assert_eq!(
        (version, status, fault, body.as_str()),
        (http::Version::HTTP_2, 200, None, "ok")
    );
    let head = seen(&rx);
    assert!(
        head.starts_with("GET /inventory/1?x=2 HTTP/1.1\r\n"),
        "{head}"
    );
    assert!(
        head.to_ascii_lowercase()
            .contains(&format!("host: {listen}\r\n")),
        "{head}"
    );

    let (_, status, _, _) = call("POST", &format!("http://{listen}/orders"), "one order");
    assert_eq!(status, 200);
    let head = seen(&rx);
    assert!(head.starts_with("POST /orders HTTP/1.1\r\n"), "{head}");
    assert!(
        head.ends_with("\r\n\r\none order"),
        "the body went on: {head}"
    );

    // A fault answers the HTTP/2 request as it would an HTTP/1.1 one.
    let (version, status, fault, body) = call("GET", &format!("http://{listen}/fail/1"), "");
    assert_eq!(
        (version, status, fault.as_deref(), body.as_str()),
        (http::Version::HTTP_2, 503, Some("down"), "down")
    );
    assert!(
        rx.recv_timeout(Duration::from_millis(300)).is_err(),
        "a faulted request stays away"
    );
}

/// `firedrill defend` with the inventory defense line in front of
/// `upstream`: the process and its address.
fn defend(upstream: &str) -> (Killed, String) {
    let mut cmd = firedrill();
    cmd.args(["defend", "--listen", "127.0.0.1:0", "--upstream", upstream])
        .arg("--config")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/defense/good/inventory.yaml"
        ));
    let (child, listen, _log) = spawn_until_ready(cmd, "defense line ready");
    (Killed(child), listen)
}

#[test]
fn defend_answers_h2c_through_its_routes() {
    let (upstream, rx) = capturing_upstream();
    let (_defend, listen) = defend(&upstream);
    let (version, status, _, body) = call("GET", &format!("http://{listen}/inventory/7"), "");
    assert_eq!(
        (version, status, body.as_str()),
        (http::Version::HTTP_2, 200, "ok")
    );
    let head = seen(&rx);
    assert!(head.starts_with("GET /inventory/7 HTTP/1.1\r\n"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains(&format!("host: {upstream}\r\n")),
        "{head}"
    );
}

/// An HTTP/2-only upstream (h2c, prior knowledge) on loopback: answers
/// each request with `VERSION METHOD URI` in the body and a
/// `grpc-status: 0` trailer, as a gRPC server ends a call.
fn h2c_upstream() -> String {
    use http_body_util::BodyExt;
    serve_h2c(|| {
        hyper::service::service_fn(|req: http::Request<hyper::body::Incoming>| async move {
            let head = format!("{:?} {} {}", req.version(), req.method(), req.uri());
            let body = req.into_body().collect().await?.to_bytes();
            let text = format!("{head} {}", String::from_utf8_lossy(&body));
            let mut trailers = http::HeaderMap::new();
            trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
            let frames = futures_util::stream::iter([
                Ok::<_, hyper::Error>(hyper::body::Frame::data(bytes::Bytes::from(text))),
                Ok(hyper::body::Frame::trailers(trailers)),
            ]);
            Ok::<_, hyper::Error>(http::Response::new(http_body_util::StreamBody::new(frames)))
        })
    })
}

/// An HTTP/2-only server (h2c, prior knowledge) on loopback, in a thread
/// of its own, serving each connection with a service from `service`: its
/// address.
fn serve_h2c<S, B>(service: impl Fn() -> S + Send + 'static) -> String
where
    S: hyper::service::Service<
            http::Request<hyper::body::Incoming>,
            Response = http::Response<B>,
            Error = hyper::Error,
        > + Send
        + 'static,
    S::Future: Send + 'static,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let service = service();
                tokio::spawn(async move {
                    let _ = hyper::server::conn::http2::Builder::new(
                        hyper_util::rt::TokioExecutor::new(),
                    )
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
                });
            }
        });
    });
    addr
}

/// `method` `uri` with `body` over one HTTP/2 connection to `addr`
/// (hyper's client): status, body and trailers.
fn h2_call(
    addr: &str,
    method: &str,
    uri: &str,
    body: &str,
) -> (u16, String, Option<http::HeaderMap>) {
    let (status, _, body, trailers) = h2_exchange(addr, method, uri, body);
    (status, body, trailers)
}

/// As [`h2_call`], with the response's headers too.
fn h2_exchange(
    addr: &str,
    method: &str,
    uri: &str,
    body: &str,
) -> (u16, http::HeaderMap, String, Option<http::HeaderMap>) {
    h2_exchange_with(addr, method, uri, body, &[])
}

/// As [`h2_exchange`], the request carrying `headers`.
fn h2_exchange_with(
    addr: &str,
    method: &str,
    uri: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> (u16, http::HeaderMap, String, Option<http::HeaderMap>) {
    use http_body_util::BodyExt;
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let mut sender = cli_support::h2c_connect(addr).await;
            let mut req = http::Request::builder().method(method).uri(uri);
            for (name, value) in headers {
                req = req.header(*name, *value);
            }
            let req = req
                .body(http_body_util::Full::new(bytes::Bytes::from(
                    body.to_string(),
                )))
                .unwrap();
            let resp = tokio::time::timeout(Duration::from_secs(30), sender.send_request(req))
                .await
                .unwrap()
                .unwrap();
            let status = resp.status().as_u16();
            let headers = resp.headers().clone();
            let collected = resp.into_body().collect().await.unwrap();
            let trailers = collected.trailers().cloned();
            (
                status,
                headers,
                String::from_utf8_lossy(&collected.to_bytes()).into_owned(),
                trailers,
            )
        })
}

#[test]
fn proxy_towards_an_h2c_upstream_sends_http2_and_passes_its_trailers() {
    let upstream = h2c_upstream();
    let mut cmd = firedrill();
    cmd.args(["proxy", "--listen", "127.0.0.1:0", "--mode", "http"])
        .args(["--upstream", &format!("h2c://{upstream}")]);
    let (child, listen, _log) = spawn_until_ready(cmd, "proxy ready");
    let _child = Killed(child);
    // HTTP/2 in, HTTP/2 out, the trailers back.
    let (status, body, trailers) = h2_call(
        &listen,
        "POST",
        &format!("http://{listen}/inventory.Inventory/Get?x=1"),
        "message",
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        format!("HTTP/2.0 POST http://{upstream}/inventory.Inventory/Get?x=1 message")
    );
    let trailers = trailers.expect("the upstream's trailers came through");
    assert_eq!(trailers["grpc-status"], "0");
    // HTTP/1.1 in, HTTP/2 out.
    let (version, status, _, body) = {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let resp = reqwest::Client::new()
                .get(format!("http://{listen}/a"))
                .send()
                .await
                .unwrap();
            (
                resp.version(),
                resp.status().as_u16(),
                (),
                resp.text().await.unwrap(),
            )
        })
    };
    assert_eq!((version, status), (http::Version::HTTP_11, 200));
    assert_eq!(body, format!("HTTP/2.0 GET http://{upstream}/a "));
}

#[test]
fn defend_towards_an_h2c_upstream_sends_http2() {
    let upstream = h2c_upstream();
    let (_defend, listen) = defend(&format!("h2c://{upstream}"));
    let (status, body, trailers) =
        h2_call(&listen, "GET", &format!("http://{listen}/inventory/3"), "");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, format!("HTTP/2.0 GET http://{upstream}/inventory/3 "));
    assert_eq!(trailers.expect("trailers")["grpc-status"], "0");
}

#[test]
fn an_h2c_upstream_in_tcp_mode_is_refused_naming_the_flag_and_the_mode_it_needs() {
    let out = firedrill()
        .args([
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "h2c://127.0.0.1:9",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "--upstream h2c://127.0.0.1:9: h2c:// (HTTP/2 towards the upstream) needs --mode http"
        ),
        "{stderr}"
    );
}

/// `firedrill proxy --mode http` with the fault file `faults_yaml` in front
/// of a fresh [`h2c_upstream`]: the running proxy with its fault file and
/// its log, read on (all dropped together: the proxy is killed), and its
/// address.
type Running = (
    Killed,
    tempfile::NamedTempFile,
    std::io::Lines<std::io::BufReader<std::process::ChildStderr>>,
);
fn proxy_with_faults(faults_yaml: &str) -> (Running, String) {
    let upstream = h2c_upstream();
    let faults = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(faults.path(), faults_yaml).unwrap();
    let mut cmd = firedrill();
    cmd.args(["proxy", "--listen", "127.0.0.1:0", "--mode", "http"])
        .args(["--upstream", &format!("h2c://{upstream}")])
        .arg("--faults")
        .arg(faults.path());
    let (child, listen, log) = spawn_until_ready(cmd, "proxy ready");
    ((Killed(child), faults, log), listen)
}

#[test]
fn a_grpc_fault_fails_the_matched_method_at_once_with_its_status_and_others_pass() {
    let (_proxy, listen) = proxy_with_faults(
        "faults:\n  - name: stock-down\n    match: /inventory.Inventory/Get*\n    \
         grpc: { status: UNAVAILABLE, message: \"stock 100% gone\" }\n",
    );
    let (status, headers, body, trailers) = h2_exchange(
        &listen,
        "POST",
        &format!("http://{listen}/inventory.Inventory/GetItem"),
        "m",
    );
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "application/grpc");
    assert_eq!(headers["grpc-status"], "14");
    assert_eq!(headers["grpc-message"], "stock 100%25 gone");
    assert_eq!(headers["x-firedrill-fault"], "stock-down");
    assert_eq!(
        (body.as_str(), trailers),
        ("", None),
        "trailers-only: the headers end the stream"
    );
    // Another method reaches the upstream and ends with its trailers.
    let (status, headers, body, trailers) = h2_exchange(
        &listen,
        "POST",
        &format!("http://{listen}/inventory.Inventory/List"),
        "m",
    );
    assert_eq!(status, 200);
    assert!(!headers.contains_key("grpc-status"), "{headers:?}");
    assert!(body.ends_with("/inventory.Inventory/List m"), "{body}");
    assert_eq!(trailers.expect("trailers")["grpc-status"], "0");
}

#[test]
fn a_grpc_calls_grpc_timeout_is_honoured_a_delay_past_it_is_answered_deadline_exceeded() {
    let (_proxy, listen) = proxy_with_faults(
        "faults:\n  - { name: slow, match: /inventory.Inventory/*, latency: { delay: 1s } }\n",
    );
    let call = |timeout: &str| {
        h2_exchange_with(
            &listen,
            "POST",
            &format!("http://{listen}/inventory.Inventory/Get"),
            "m",
            &[
                ("content-type", "application/grpc"),
                ("grpc-timeout", timeout),
            ],
        )
    };
    let (status, headers, body, trailers) = call("100m");
    assert_eq!(status, 200);
    assert_eq!(headers["grpc-status"], "4", "{headers:?}");
    assert_eq!(headers["x-firedrill-error"], "grpc-deadline");
    assert_eq!((body.as_str(), trailers), ("", None), "trailers-only");
    // A deadline the delay fits in: the upstream's answer.
    let (status, headers, body, trailers) = call("20S");
    assert_eq!(status, 200);
    assert!(!headers.contains_key("grpc-status"), "{headers:?}");
    assert!(body.ends_with("/inventory.Inventory/Get m"), "{body}");
    assert_eq!(trailers.expect("trailers")["grpc-status"], "0");
}

#[test]
fn a_reset_after_some_bytes_resets_the_http2_stream_with_its_code_and_the_connection_goes_on() {
    let (_proxy, listen) = proxy_with_faults(
        "faults:\n  - { match: /cut/*, reset: { after_bytes: 5, code: CANCEL } }\n",
    );
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            use http_body_util::BodyExt;
            let mut sender = cli_support::h2c_connect(&listen).await;
            let get = |path: &str| {
                http::Request::get(format!("http://{listen}{path}"))
                    .body(http_body_util::Empty::<bytes::Bytes>::new())
                    .unwrap()
            };
            let limit = Duration::from_secs(30);
            let reason = |err: &hyper::Error| {
                std::error::Error::source(err)
                    .and_then(|e| e.downcast_ref::<h2::Error>())
                    .and_then(h2::Error::reason)
            };
            // The reset may overtake the head it follows: h2 then reports
            // it for the response itself; otherwise the body ends with it.
            let cut = match tokio::time::timeout(limit, sender.send_request(get("/cut/1")))
                .await
                .unwrap()
            {
                Err(err) => err,
                Ok(resp) => {
                    assert_eq!(resp.status(), 200, "the head passes before the cut");
                    tokio::time::timeout(limit, resp.into_body().collect())
                        .await
                        .unwrap()
                        .unwrap_err()
                }
            };
            assert_eq!(reason(&cut), Some(h2::Reason::CANCEL), "{cut:?}");
            // The same connection serves the next stream.
            let next = tokio::time::timeout(limit, sender.send_request(get("/other")))
                .await
                .unwrap()
                .unwrap();
            let body = tokio::time::timeout(limit, next.into_body().collect())
                .await
                .unwrap()
                .unwrap();
            let text = String::from_utf8_lossy(&body.to_bytes()).into_owned();
            assert!(text.contains("GET") && text.contains("/other"), "{text}");
        });
}

/// An HTTP/2 upstream whose every call waits forever; each call's end
/// (its stream reset, its connection gone) is sent on the channel.
fn hanging_h2c_upstream() -> (String, std::sync::mpsc::Receiver<()>) {
    struct Ended(std::sync::mpsc::Sender<()>);
    impl Drop for Ended {
        fn drop(&mut self) {
            let _ = self.0.send(());
        }
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let addr = serve_h2c(move || {
        let tx = tx.clone();
        hyper::service::service_fn(move |_req: http::Request<hyper::body::Incoming>| {
            let ended = Ended(tx.clone());
            async move {
                let _ended = ended;
                std::future::pending::<()>().await;
                Ok::<_, hyper::Error>(http::Response::new(
                    http_body_util::Empty::<bytes::Bytes>::new(),
                ))
            }
        })
    });
    (addr, rx)
}

#[test]
fn a_clients_stream_reset_reaches_the_h2c_upstream_as_its_calls_end() {
    let (upstream, ended) = hanging_h2c_upstream();
    let mut cmd = firedrill();
    cmd.args(["proxy", "--listen", "127.0.0.1:0", "--mode", "http"])
        .args(["--upstream", &format!("h2c://{upstream}")]);
    let (child, listen, _log) = spawn_until_ready(cmd, "proxy ready");
    let _child = Killed(child);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut sender = cli_support::h2c_connect(&listen).await;
        let req = http::Request::post(format!("http://{listen}/inventory.Inventory/Watch"))
            .body(http_body_util::Full::new(bytes::Bytes::from_static(b"w")))
            .unwrap();
        // The call waits; giving up on it resets its stream (RST_STREAM
        // CANCEL) while the connection stays open.
        let call = sender.send_request(req);
        assert!(
            tokio::time::timeout(Duration::from_millis(500), call)
                .await
                .is_err(),
            "the upstream never answers"
        );
        let gone = tokio::task::spawn_blocking(move || ended.recv_timeout(Duration::from_secs(30)));
        assert!(
            gone.await.unwrap().is_ok(),
            "the upstream's call ended with the client's reset"
        );
        assert!(
            !sender.is_closed(),
            "the connection is still open: the stream was reset, not it"
        );
    });
}

#[test]
fn a_goaway_fault_ends_the_http2_connection_gracefully_after_its_request_is_answered() {
    let (_proxy, listen) =
        proxy_with_faults("faults:\n  - { name: drain, match: /drain/*, goaway: {} }\n");
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            use http_body_util::BodyExt;
            let limit = Duration::from_secs(30);
            let get = |path: &str| {
                http::Request::get(format!("http://{listen}{path}"))
                    .body(http_body_util::Empty::<bytes::Bytes>::new())
                    .unwrap()
            };
            let answered = |resp: http::Response<hyper::body::Incoming>| async move {
                assert_eq!(resp.status(), 200);
                let body = tokio::time::timeout(limit, resp.into_body().collect())
                    .await
                    .unwrap()
                    .unwrap();
                String::from_utf8_lossy(&body.to_bytes()).into_owned()
            };
            // Untouched requests keep their connection open.
            let (mut sender, connection) = cli_support::h2c_open(&listen).await;
            for _ in 0..2 {
                let resp = sender.send_request(get("/other")).await.unwrap();
                assert!(answered(resp).await.contains("/other"));
            }
            assert!(!connection.is_finished(), "no GOAWAY without the fault");
            // The matched request is answered by the upstream, and then the
            // connection ends cleanly (GOAWAY, no error).
            let resp = tokio::time::timeout(limit, sender.send_request(get("/drain/1")))
                .await
                .unwrap()
                .unwrap();
            assert!(
                answered(resp).await.contains("/drain/1"),
                "the request passes"
            );
            tokio::time::timeout(limit, connection)
                .await
                .expect("the connection ends after GOAWAY")
                .unwrap()
                .expect("a graceful end, no connection error");
            assert!(
                sender.is_closed(),
                "no new stream on a connection gone away"
            );
        });
}

#[test]
fn a_goaway_fault_closes_an_http1_connection_after_its_answer_with_connection_close() {
    let (_proxy, listen) =
        proxy_with_faults("faults:\n  - { name: drain, match: /drain/*, goaway: {} }\n");
    // Two requests on one connection: the first untouched (kept alive),
    // the second matched (answered with `connection: close`, then EOF).
    let mut stream = std::net::TcpStream::connect(&listen).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream
        .write_all(
            b"GET /other HTTP/1.1\r\nhost: t\r\n\r\nGET /drain/1 HTTP/1.1\r\nhost: t\r\n\r\n",
        )
        .unwrap();
    let mut text = String::new();
    stream
        .read_to_string(&mut text)
        .expect("the proxy closes the connection after the second answer");
    let answers: Vec<&str> = text.split("HTTP/1.1 200 OK").skip(1).collect();
    assert_eq!(answers.len(), 2, "{text}");
    assert!(
        !answers[0]
            .to_ascii_lowercase()
            .contains("connection: close"),
        "{text}"
    );
    assert!(
        answers[1]
            .to_ascii_lowercase()
            .contains("connection: close"),
        "{text}"
    );
    assert!(answers[1].contains("/drain/1"), "{text}");
}
