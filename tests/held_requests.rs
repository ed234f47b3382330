//! A request the proxy holds (a slow upstream, a blackhole) is released as
//! soon as its client hangs up, by default, in `proxy --mode http` and in
//! `defend`; a client that only half-closed is still answered. Before, each
//! abandoned request kept its socket in CLOSE-WAIT for as long as the
//! request was held, until the proxy ran out of descriptors.
//!
//! These drive real processes over loopback in real time: every wait is an
//! event with a generous overall limit, never a timing threshold.
#![allow(clippy::disallowed_methods)]

mod cli_support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Child, Command};
use std::sync::mpsc;
use std::time::Duration;

use cli_support::{firedrill, open_descriptors, spawn_until_ready, wait_for};

/// How long any one awaited event may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(30);

/// What the holding upstream saw of one connection.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    /// A request for `/hold/...` arrived (it is never answered).
    Held,
    /// A connection that held a request was closed by the proxy.
    Released,
}

/// An upstream on loopback that answers `/ok` and holds every other
/// request for ever, reporting each held request and each release.
struct Upstream {
    addr: String,
    seen: mpsc::Receiver<Seen>,
}

impl Upstream {
    fn start() -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let (tx, seen) = mpsc::channel();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let tx = tx.clone();
                std::thread::spawn(move || serve_upstream(stream, &tx));
            }
        });
        Upstream { addr, seen }
    }

    /// Waits for the next thing the upstream saw.
    fn next(&self, what: &str) -> Seen {
        self.seen
            .recv_timeout(PATIENCE)
            .unwrap_or_else(|_| panic!("the upstream never saw {what} within {PATIENCE:?}"))
    }

    /// Waits until a request is held upstream.
    fn held(&self) {
        assert_eq!(self.next("a held request"), Seen::Held);
    }

    /// Waits until the proxy releases a held request's upstream connection.
    fn released(&self, why: &str) {
        assert_eq!(
            self.next(&format!("the held request released ({why})")),
            Seen::Released
        );
    }
}

/// Answers `/ok` on `stream`; on any other request reports it held, then
/// waits for the proxy to close the connection and reports that.
fn serve_upstream(stream: TcpStream, seen: &mpsc::Sender<Seen>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        // The rest of the head.
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                break;
            }
        }
        if line.starts_with("GET /ok ") {
            let _ = writer.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nok\n");
            continue;
        }
        let _ = seen.send(Seen::Held);
        let mut rest = Vec::new();
        let _ = reader.read_to_end(&mut rest);
        let _ = seen.send(Seen::Released);
        return;
    }
}

/// `firedrill proxy --mode http` (or `front`) in front of `upstream`, with
/// `extra` flags; `limit` wraps it in `ulimit -n`.
fn start(front: &[&str], upstream: &Upstream, limit: Option<u32>) -> (Running, String) {
    let plain = firedrill();
    let mut cmd = match limit {
        Some(n) => {
            let mut sh = Command::new("sh");
            sh.args(["-c", &format!("ulimit -n {n} && exec \"$0\" \"$@\"")])
                .arg(plain.get_program());
            sh
        }
        None => plain,
    };
    cmd.args(front)
        .args(["--listen", "127.0.0.1:0", "--upstream", &upstream.addr]);
    let ready = match front[0] {
        "defend" => "defense line ready",
        _ => "proxy ready",
    };
    let (child, addr, log) = spawn_until_ready(cmd, ready);
    std::thread::spawn(move || log.for_each(drop));
    (Running(child), addr)
}

fn proxy(upstream: &Upstream) -> (Running, String) {
    start(&["proxy", "--mode", "http"], upstream, None)
}

/// A child process, killed when the test ends (passed or failed), so that
/// a failing test leaves nothing running.
struct Running(Child);

impl Running {
    fn id(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Sends `requests` on a new connection to `addr`.
fn send(addr: &str, requests: &str) -> TcpStream {
    let mut client = TcpStream::connect(addr).unwrap();
    client.write_all(requests.as_bytes()).unwrap();
    client.set_read_timeout(Some(PATIENCE)).unwrap();
    client
}

/// A file named `name` holding `text` in `dir`; its path.
fn written(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

const HOLD: &str = "GET /hold/1 HTTP/1.1\r\nhost: t\r\n\r\n";

#[test]
fn a_held_request_is_released_at_once_when_its_client_hangs_up() {
    let upstream = Upstream::start();
    let (_running, addr) = proxy(&upstream);
    let client = send(&addr, HOLD);
    upstream.held();
    drop(client);
    upstream.released("the client closed its socket");
}

#[test]
fn defend_releases_a_held_request_at_once_when_its_client_hangs_up() {
    let upstream = Upstream::start();
    let dir = tempfile::tempdir().unwrap();
    let config = written(&dir, "defense.yaml", "routes:\n  all:\n    match: /*\n");
    let front = ["defend", "--config", &config];
    let (_running, addr) = start(&front, &upstream, None);
    let client = send(&addr, HOLD);
    upstream.held();
    drop(client);
    upstream.released("the client closed its socket");
}

#[test]
fn a_held_request_behind_a_pipelined_one_is_released_when_its_client_hangs_up() {
    let upstream = Upstream::start();
    let (_running, addr) = proxy(&upstream);
    let client = send(&addr, &format!("{HOLD}{HOLD}"));
    upstream.held();
    drop(client);
    upstream.released("the client of two pipelined requests closed its socket");
}

#[test]
fn a_client_that_half_closes_is_sent_an_interim_100_and_released_when_it_closes_later() {
    let upstream = Upstream::start();
    let (_running, addr) = proxy(&upstream);
    let mut client = send(&addr, HOLD);
    upstream.held();
    client.shutdown(Shutdown::Write).unwrap();
    // The probe: a half-closed client reads it and stays.
    let probe = b"HTTP/1.1 100 Continue\r\n\r\n";
    let mut got = vec![0; probe.len()];
    client.read_exact(&mut got).unwrap();
    assert_eq!(got, probe, "{:?}", String::from_utf8_lossy(&got));
    // Giving up later sends nothing on the wire: the next probe finds out.
    drop(client);
    upstream.released("the half-closed client closed its socket later");
}

/// Opens an HTTP/2 connection (h2c, prior knowledge) to `addr` and sends
/// a held request on it; the connection lives as long as the runtime.
fn hold_over_http2(addr: &str) -> tokio::runtime::Runtime {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let addr = addr.to_string();
    runtime.spawn(async move {
        let mut sender = cli_support::h2c_connect(&addr).await;
        let request = http::Request::get(format!("http://{addr}/hold/1"))
            .body(http_body_util::Empty::<bytes::Bytes>::new())
            .unwrap();
        let _ = sender.send_request(request).await;
    });
    runtime
}

#[test]
fn a_held_http2_request_is_released_when_its_client_closes_the_connection() {
    // HTTP/2 is not probed: the codec reads the socket all along, and a
    // client gone ends every stream it held.
    let upstream = Upstream::start();
    let (_running, addr) = proxy(&upstream);
    let client = hold_over_http2(&addr);
    upstream.held();
    // Its socket closes with the runtime.
    drop(client);
    upstream.released("the HTTP/2 client closed its connection");
}

#[test]
fn a_request_sent_while_the_one_before_it_is_held_is_read_and_answered_after_it() {
    // While the first is held, the watch on the client looks at the
    // socket and finds the second one's bytes: the codec must still read
    // them once the first is answered, though the watch spent the
    // readiness that announced them.
    let upstream = Upstream::start();
    let dir = tempfile::tempdir().unwrap();
    let faults = written(
        &dir,
        "faults.yaml",
        "faults:\n  - latency: { delay: 2s }\n    match: /ok\n",
    );
    let front = ["proxy", "--mode", "http", "--faults", &faults];
    let (_running, addr) = start(&front, &upstream, None);
    let mut client = send(&addr, "GET /ok HTTP/1.1\r\nhost: t\r\n\r\n");
    // Well inside the first one's 2 s (the order of events, not a timing
    // check: the assertion holds either way).
    std::thread::sleep(Duration::from_millis(500));
    client
        .write_all(b"GET /ok HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n")
        .unwrap();
    let mut answers = String::new();
    client.read_to_string(&mut answers).unwrap();
    assert_eq!(answers.matches("HTTP/1.1 200").count(), 2, "{answers:?}");
}

#[test]
fn hundreds_of_abandoned_held_requests_leave_a_64_descriptor_proxy_answering() {
    let upstream = Upstream::start();
    let (_running, addr) = start(&["proxy", "--mode", "http"], &upstream, Some(64));
    for n in 1..=300 {
        let client = send(&addr, HOLD);
        upstream.held();
        drop(client);
        upstream.released(&format!("abandoned request {n} of 300"));
    }
    let mut client = send(
        &addr,
        "GET /ok HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n",
    );
    let mut answer = String::new();
    client.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer:?}");
    assert!(answer.ends_with("ok\n"), "{answer:?}");
}

#[test]
fn blackholed_requests_whose_clients_hang_up_are_released_and_recorded() {
    let upstream = Upstream::start();
    let dir = tempfile::tempdir().unwrap();
    let faults = written(
        &dir,
        "faults.yaml",
        "faults:\n  - blackhole: {}\n    match: /hold/*\n",
    );
    let record = dir.path().join("requests.jsonl");
    let front = [
        "proxy",
        "--mode",
        "http",
        "--faults",
        &faults,
        "--record",
        record.to_str().unwrap(),
    ];
    let (proxy, addr) = start(&front, &upstream, None);
    let pid = proxy.id();
    let before = open_descriptors(pid);
    let clients: Vec<_> = (0..20).map(|_| send(&addr, HOLD)).collect();
    // A blackholed request never reaches the upstream: wait until the proxy
    // holds all 20 (20 more descriptors) before the clients hang up.
    wait_for(
        || open_descriptors(pid) >= before + 20,
        "20 blackholed requests held",
        PATIENCE,
    );
    drop(clients);
    wait_for(
        || open_descriptors(pid) <= before,
        "the descriptors of 20 abandoned blackholed requests closed",
        PATIENCE,
    );
    // Each is recorded when released (the record is flushed every second).
    wait_for(
        || {
            std::fs::read_to_string(&record)
                .map(|r| r.lines().filter(|l| l.contains("/hold/1")).count() == 20)
                .unwrap_or(false)
        },
        "20 blackholed requests recorded",
        PATIENCE,
    );
}
