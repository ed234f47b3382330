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

use cli_support::{firedrill, spawn_until_ready};

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
    let (mut child, listen, _log) = spawn_until_ready(cmd, "proxy ready");

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
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn defend_answers_h2c_through_its_routes() {
    let (upstream, rx) = capturing_upstream();
    let mut cmd = firedrill();
    cmd.args(["defend", "--listen", "127.0.0.1:0", "--upstream", &upstream])
        .arg("--config")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/defense/good/inventory.yaml"
        ));
    let (mut child, listen, _log) = spawn_until_ready(cmd, "defense line ready");
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
    child.kill().unwrap();
    child.wait().unwrap();
}
