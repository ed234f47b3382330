//! `firedrill defend` with an upstream pool, as a user runs it: three real
//! `firedrill target` servers on loopback behind one route. Traffic is
//! spread over them, a stopped server is ejected by the health checks and
//! gets nothing more, and a body match keeps out a server that answers
//! 200 with an error page.
//!
//! These drive real processes in real time, so they wait with real sleeps
//! (short polls with generous overall limits, never a timing threshold).
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use assert_cmd::cargo::CommandCargoExt;

fn firedrill() -> Command {
    Command::cargo_bin("firedrill").unwrap()
}

/// A free loopback address.
fn free_addr() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

/// Kills its processes when dropped, so a failing test leaves none behind.
struct Children(Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts `firedrill target` on a free port; returns it and its address,
/// once it accepts connections.
fn start_target() -> (Child, String) {
    let addr = free_addr();
    let child = firedrill()
        .args(["target", "--listen", &addr])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the target accepts connections", || {
        TcpStream::connect(&addr).is_ok()
    });
    (child, addr)
}

/// A server answering every request with 200 and an error page (a broken
/// app behind a proxy that still says 200).
fn start_error_page_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
                head.push(byte[0]);
            }
            let body = "<h1>Internal Server Error</h1>";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    addr
}

/// Starts `firedrill defend` with `config`, a journal and metrics; waits
/// for its ready line. Returns it, its address and its metrics address.
fn start_defend(dir: &Path, config: &str) -> (Child, String, String) {
    let file = dir.join("defense.yaml");
    std::fs::write(&file, config).unwrap();
    let (listen, metrics) = (free_addr(), free_addr());
    let mut child = firedrill()
        .args(["defend", "--config"])
        .arg(&file)
        .args(["--listen", &listen, "--upstream", "127.0.0.1:9"])
        .args(["--metrics-listen", &metrics, "--journal"])
        .arg(dir.join("journal.jsonl"))
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    loop {
        let line = lines.next().expect("exited before it was ready").unwrap();
        if line.contains("defense line ready") {
            break;
        }
    }
    std::thread::spawn(move || for _ in lines {});
    (child, listen, metrics)
}

/// The pool config: `servers` as `name: address`, checked every 100 ms,
/// the body must say `ok`; passive tracking off, so only the checks eject.
fn pool_config(servers: &[(&str, &str)]) -> String {
    let servers: String = servers
        .iter()
        .map(|(name, addr)| format!("      - {{ address: '{addr}', name: {name} }}\n"))
        .collect();
    format!(
        "routes:
  all:
    match: /*
    pool: backends
pools:
  backends:
    max_fails: 0
    health_check: {{ uri: /health, interval: 100ms, timeout: 100ms, match: {{ body: ok }} }}
    servers:
{servers}"
    )
}

/// One GET over a fresh connection: the status and headers (lower-case
/// names) of the answer, and its body.
fn get(addr: &str, path: &str) -> (u16, BTreeMap<String, String>, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap_or_default()
        .split(' ')
        .nth(1)
        .unwrap_or("0");
    let headers = lines
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))
        .collect();
    (status.parse().unwrap_or(0), headers, body.to_string())
}

/// The pool server that answered each of `n` requests (all must be 200).
fn served_by(addr: &str, n: usize) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for i in 0..n {
        let (status, headers, body) = get(addr, &format!("/items/{i}"));
        assert_eq!(status, 200, "request {i}: {headers:?} {body}");
        let server = headers
            .get("x-firedrill-pool-server")
            .cloned()
            .expect("every answer names its pool server");
        *counts.entry(server).or_default() += 1;
    }
    counts
}

/// Polls `done` every 50 ms for up to 60 s.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..1200 {
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("still waiting after 60 s: {what}");
}

/// The journal's health lines as (server, healthy, by).
fn health_lines(dir: &Path) -> Vec<(String, bool, String)> {
    let text = std::fs::read_to_string(dir.join("journal.jsonl")).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v.get("pool").is_some())
        .map(|v| {
            (
                v["server"].as_str().unwrap_or_default().to_string(),
                v["healthy"].as_bool().unwrap_or_default(),
                v["by"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_pool_spreads_traffic_and_a_stopped_server_is_ejected_by_its_checks_and_gets_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (a, a_addr) = start_target();
    let (b, b_addr) = start_target();
    let (c, c_addr) = start_target();
    let config = pool_config(&[("a", &a_addr), ("b", &b_addr), ("c", &c_addr)]);
    let (defend, addr, metrics) = start_defend(dir.path(), &config);
    let mut children = Children(vec![defend, a, b, c]);
    wait_until("every server passes its first check", || {
        health_lines(dir.path()).iter().filter(|h| h.1).count() == 3
    });

    let spread = served_by(&addr, 30);
    assert_eq!(spread.len(), 3, "{spread:?}");
    assert!(spread.values().all(|&n| n == 10), "round robin: {spread:?}");

    // c stops: the checks take it out, and a and b serve every request.
    let mut c = children.0.pop().unwrap();
    c.kill().unwrap();
    c.wait().unwrap();
    wait_until("c is ejected", || {
        health_lines(dir.path()).iter().any(|h| h.0 == "c" && !h.1)
    });
    let ejected = health_lines(dir.path());
    let by = &ejected.iter().find(|h| h.0 == "c" && !h.1).unwrap().2;
    assert!(by.starts_with("active check GET /health: "), "{by}");
    let after = served_by(&addr, 30);
    assert_eq!(after.get("c"), None, "{after:?}");
    assert_eq!(after.values().sum::<usize>(), 30);
    assert!(
        after.contains_key("a") && after.contains_key("b"),
        "{after:?}"
    );

    let (_, _, exposition) = get(&metrics, "/metrics");
    for line in [
        r#"firedrill_pool_server_healthy{pool="backends",server="a"} 1"#,
        r#"firedrill_pool_server_healthy{pool="backends",server="c"} 0"#,
        r#"firedrill_pool_server_requests_total{pool="backends",server="c"} 10"#,
        r#"firedrill_pool_server_in_flight{pool="backends",server="a"} 0"#,
    ] {
        assert!(exposition.contains(line), "{line} not in:\n{exposition}");
    }
}

#[test]
fn a_body_match_keeps_out_a_server_answering_200_with_an_error_page() {
    let dir = tempfile::tempdir().unwrap();
    let (a, a_addr) = start_target();
    let broken = start_error_page_server();
    let config = pool_config(&[("a", &a_addr), ("broken", &broken)]);
    let (defend, addr, _) = start_defend(dir.path(), &config);
    let _children = Children(vec![defend, a]);
    wait_until("a passes its first check", || {
        health_lines(dir.path()).iter().any(|h| h.0 == "a" && h.1)
    });
    assert_eq!(
        served_by(&addr, 20),
        BTreeMap::from([("a".to_string(), 20)])
    );
    // Its checks kept failing all along: it never entered rotation.
    assert!(
        health_lines(dir.path()).iter().all(|h| h.0 == "a"),
        "{:?}",
        health_lines(dir.path())
    );
}

#[test]
fn defend_refuses_an_instance_server_which_only_experiments_have_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("defense.yaml");
    std::fs::write(
        &file,
        "routes:\n  all: { match: /*, pool: p }\npools:\n  p:\n    servers: [{ instance: a }]\n",
    )
    .unwrap();
    let out = firedrill()
        .args(["defend", "--config"])
        .arg(&file)
        .args(["--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("pools.p.servers[0].instance: `a` names a target instance"),
        "{stderr}"
    );
}
