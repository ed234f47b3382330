//! `proxy --mode http` and `defend` hold one descriptor per client
//! connection (the hang-up watch shares it), answer a stalled request head
//! `408` before closing it, and refuse connections past
//! `--max-connections` with a 503 and one warning, serving the ones they
//! hold. Before, each connection cost two descriptors: under
//! `ulimit -n 1024`, 600 slowloris connections starved a normal client.
//!
//! Real processes over loopback in real time: every wait is an event with
//! a generous overall limit, never a timing threshold.
#![allow(clippy::disallowed_methods)]

mod cli_support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use cli_support::{Killed, firedrill, open_descriptors, spawn_until_ready, wait_for};

/// How long any one awaited event may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(60);

const OK: &str = "GET /ok HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n";

/// An upstream on loopback answering every request `200 ok`.
fn upstream() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut writer = stream;
                loop {
                    let mut line = String::new();
                    while line != "\r\n" {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                    }
                    let answer = "HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nok\n";
                    if writer.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// `firedrill` with `args` in front of an upstream, in `ulimit -n` `files`
/// when given: the process, its address and its log lines (on a channel).
fn start(args: &[&str], files: Option<u32>) -> (Killed, String, mpsc::Receiver<String>) {
    let plain = firedrill();
    let mut cmd = match files {
        Some(n) => {
            let mut sh = Command::new("sh");
            sh.args(["-c", &format!("ulimit -n {n} && exec \"$0\" \"$@\"")])
                .arg(plain.get_program());
            sh
        }
        None => plain,
    };
    let upstream = upstream();
    cmd.args(args).args([
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        &upstream,
        "--loops",
        "1",
    ]);
    let ready = match args[0] {
        "defend" => "defense line ready",
        _ => "proxy ready",
    };
    let (child, addr, log) = spawn_until_ready(cmd, ready);
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in log.map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    (Killed(child), addr, lines)
}

/// A temporary defense config routing everything, and its directory.
fn defense_config() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("defense.yaml");
    std::fs::write(&config, "routes:\n  all:\n    match: /*\n").unwrap();
    let config = config.to_str().unwrap().to_string();
    (dir, config)
}

/// The answer to `request` on a new connection to `addr`, read until the
/// server closes (or `timeout`).
fn ask(addr: &str, request: &str, timeout: Duration) -> String {
    let mut client = TcpStream::connect(addr).unwrap();
    client.set_read_timeout(Some(timeout)).unwrap();
    client.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = client.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

/// Opens `n` connections to `addr` writing `bytes` each, and waits until
/// the server at `pid` holds descriptors for all of them.
fn open_held(addr: &str, pid: u32, n: usize, bytes: &str) -> Vec<TcpStream> {
    let before = open_descriptors(pid);
    let held: Vec<_> = (0..n)
        .map(|_| {
            let mut c = TcpStream::connect(addr).unwrap();
            c.write_all(bytes.as_bytes()).unwrap();
            c
        })
        .collect();
    // Less a few: the descriptors of a request just answered may close
    // meanwhile.
    wait_for(
        || open_descriptors(pid) >= before + n - n / 50,
        &format!("{n} connections accepted"),
        PATIENCE,
    );
    held
}

fn idle_connections_cost_one_descriptor_each(args: &[&str]) {
    let (server, addr, _log) = start(args, None);
    let pid = server.0.id();
    // One request first: the upstream connection's descriptors are counted
    // before.
    assert!(ask(&addr, OK, PATIENCE).starts_with("HTTP/1.1 200"));
    let before = open_descriptors(pid);
    let _idle = open_held(&addr, pid, 500, "");
    // Served after the 500 were accepted (one loop, in order).
    assert!(ask(&addr, OK, PATIENCE).starts_with("HTTP/1.1 200"));
    let after = open_descriptors(pid);
    assert!(
        after - before < 600,
        "500 idle connections cost {} descriptors ({before} → {after})",
        after - before
    );
}

#[test]
fn five_hundred_idle_connections_cost_about_500_descriptors_in_proxy_http() {
    idle_connections_cost_one_descriptor_each(&["proxy", "--mode", "http"]);
}

#[test]
fn five_hundred_idle_connections_cost_about_500_descriptors_in_defend() {
    let (_dir, config) = defense_config();
    idle_connections_cost_one_descriptor_each(&["defend", "--config", &config]);
}

#[test]
fn six_hundred_stalled_heads_under_ulimit_1024_leave_10_of_10_normal_requests_served_and_get_408() {
    let (server, addr, _log) = start(&["proxy", "--mode", "http"], Some(1024));
    let pid = server.0.id();
    let mut stalled = open_held(&addr, pid, 600, "GET /ok HTTP/1.1\r\nhost: t\r\n");
    // A loopback request answered within 10 s: generous, and well before
    // the stalled heads time out.
    let served = (0..10)
        .filter(|_| ask(&addr, OK, Duration::from_secs(10)).starts_with("HTTP/1.1 200"))
        .count();
    assert_eq!(served, 10, "normal requests served of 10");
    // A stalled head is answered 408 before the close.
    let first = &mut stalled[0];
    first.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut answer = String::new();
    let _ = first.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
}

#[test]
fn defend_past_max_connections_answers_503_with_one_warning_and_serves_the_connections_it_holds() {
    let (_dir, config) = defense_config();
    let args = ["defend", "--config", &config, "--max-connections", "5"];
    let (server, addr, log) = start(&args, None);
    let pid = server.0.id();
    let mut held = open_held(&addr, pid, 5, "");
    for _ in 0..20 {
        let refused = ask(&addr, OK, PATIENCE);
        assert!(refused.starts_with("HTTP/1.1 503"), "{refused:?}");
    }
    for client in &mut held {
        client.set_read_timeout(Some(PATIENCE)).unwrap();
        client.write_all(OK.as_bytes()).unwrap();
        let mut answer = String::new();
        let _ = client.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer:?}");
    }
    drop(server);
    let warned = log
        .iter()
        .filter(|l| l.contains("connection limit reached"))
        .count();
    assert_eq!(warned, 1, "warnings for 20 refused connections");
}
