//! The `proxy` command as a user runs it: exit codes for bad input and
//! runtime failures, and a graceful stop on SIGTERM.
//!
//! These drive real processes in real time, so they wait with real sleeps
//! (short polls with generous overall limits).
#![allow(clippy::disallowed_methods)]

mod cli_support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::time::Duration;

use cli_support::{firedrill, refused_proxy, spawn_until_ready};

#[test]
fn listen_port_in_use_exits_3_naming_the_flag() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = firedrill()
        .args(["proxy", "--listen", &addr, "--upstream", "127.0.0.1:9"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("error: --listen {addr}: cannot bind")),
        "{stderr}"
    );
}

/// Runs firedrill with `args` and returns its exit code and stderr.
fn exit_and_stderr(args: &[&str]) -> (Option<i32>, String) {
    let out = firedrill().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), stderr)
}

#[test]
fn an_address_flag_that_does_not_parse_is_a_bad_argument_exit_2_naming_flag_and_form() {
    let defense = tempfile::tempdir().unwrap();
    let config = defense.path().join("defense.yaml");
    std::fs::write(&config, "routes:\n  all:\n    match: /*\n").unwrap();
    let config = config.to_str().unwrap();
    let up = ["--upstream", "127.0.0.1:9"];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["proxy", "--listen", "nope", up[0], up[1]], "--listen"),
        (
            vec!["proxy", "--listen", "127.0.0.1:70000", up[0], up[1]],
            "--listen",
        ),
        (
            vec![
                "proxy",
                "--listen",
                "127.0.0.1:0",
                up[0],
                up[1],
                "--metrics-listen",
                "nope",
            ],
            "--metrics-listen",
        ),
        (vec!["target", "--listen", "localhost"], "--listen"),
        (
            vec![
                "defend", "--config", config, "--listen", "nope", up[0], up[1],
            ],
            "--listen",
        ),
        (
            vec![
                "defend",
                "--config",
                config,
                "--listen",
                "127.0.0.1:0",
                up[0],
                up[1],
                "--metrics-listen",
                "localhost:9",
            ],
            "--metrics-listen",
        ),
        (
            vec![
                "run",
                "experiments/quickstart.yaml",
                "--metrics-listen",
                "nope",
            ],
            "--metrics-listen",
        ),
        (
            vec![
                "run",
                "experiments/quickstart.yaml",
                "--control",
                "127.0.0.1",
            ],
            "--control",
        ),
    ];
    for (args, flag) in cases {
        let (code, stderr) = exit_and_stderr(&args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("for '{flag} ")) && stderr.contains("expected host:port"),
            "{args:?}: {stderr}"
        );
    }
}

/// Starts `firedrill ARGS --upstream ADDR` against a port nothing listens
/// on, reads its log until `ready`, stops it and returns the lines before.
fn log_until_ready_against_a_closed_port(args: &[&str], ready: &str) -> (String, Vec<String>) {
    use std::io::BufRead;
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let mut child = firedrill()
        .args(args)
        .args(["--listen", "127.0.0.1:0", "--upstream", &closed])
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut seen = Vec::new();
    for line in std::io::BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        if line.contains(ready) {
            break;
        }
        seen.push(line);
    }
    let _ = child.kill();
    let _ = child.wait();
    (closed, seen)
}

#[test]
fn proxy_and_defend_warn_at_start_of_an_upstream_that_refuses_and_start_anyway() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("defense.yaml");
    std::fs::write(&config, "routes:\n  all:\n    match: /*\n").unwrap();
    let config = config.to_str().unwrap();
    for (args, ready) in [
        (vec!["proxy"], "proxy ready"),
        (vec!["defend", "--config", config], "defense line ready"),
    ] {
        let (closed, seen) = log_until_ready_against_a_closed_port(&args, ready);
        assert!(
            seen.iter().any(|l| l.contains("WARN")
                && l.contains(&format!("--upstream {closed}: cannot connect at start"))
                && l.contains("refused")),
            "{args:?}: {seen:#?}"
        );
    }
}

#[test]
fn unresolvable_upstream_exits_3_naming_the_flag() {
    let out = firedrill()
        .args([
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "no-such-host.invalid:80",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error: --upstream no-such-host.invalid:80: cannot resolve"),
        "{stderr}"
    );
}

#[test]
fn unknown_mode_is_an_argument_error_with_exit_2() {
    let (code, stderr) = refused_proxy(["--mode", "udp"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--mode"), "{stderr}");
}

#[test]
fn http_only_fault_in_tcp_mode_is_rejected_before_listening() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f.yaml");
    std::fs::write(&file, "faults:\n  - status: { code: 503 }\n").unwrap();
    let (code, stderr) = refused_proxy([
        "--mode".as_ref(),
        "tcp".as_ref(),
        "--faults".as_ref(),
        file.as_os_str(),
    ]);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("faults[0].status") && stderr.contains("--mode"),
        "{stderr}"
    );
}

#[test]
fn a_fault_naming_an_instance_is_refused_before_listening_with_its_location() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f.yaml");
    let text = "faults:\n  - { instance: b, status: { code: 503 } }\n";
    std::fs::write(&file, text).unwrap();
    let (code, stderr) = refused_proxy([
        "--mode".as_ref(),
        "http".as_ref(),
        "--faults".as_ref(),
        file.as_os_str(),
    ]);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains(
            "f.yaml:2:17: faults[0].instance: names an instance of an experiment's built-in target"
        ),
        "{stderr}"
    );
}

/// Starts `firedrill target` and `firedrill proxy` in front of it; returns
/// the children and the proxy's address.
fn start_pair(extra: &[&str]) -> (std::process::Child, std::process::Child, String) {
    start_in_front(&["proxy", "--mode", "http"], "proxy ready", extra)
}

/// Starts `firedrill target` and `front` (a subcommand and its own flags)
/// listening in front of it; waits for `ready` in the front's log and
/// returns the children and the front's address.
fn start_in_front(
    front: &[&str],
    ready: &str,
    extra: &[&str],
) -> (std::process::Child, std::process::Child, String) {
    // Each listens on a port of the kernel's choosing and says which in its
    // ready line: a port picked here and freed could be taken (by a client
    // socket of another test) before the child binds it.
    let mut target = firedrill();
    target.args(["target", "--listen", "127.0.0.1:0"]);
    let (target, target_addr, target_log) = spawn_until_ready(target, "fixture target ready");
    let mut proxy = firedrill();
    proxy
        .args(front)
        .args(["--listen", "127.0.0.1:0", "--upstream", &target_addr])
        .args(extra);
    let (proxy, proxy_addr, proxy_log) = spawn_until_ready(proxy, ready);
    // Read to the end, so neither blocks on a full pipe.
    std::thread::spawn(move || target_log.chain(proxy_log).for_each(drop));
    (target, proxy, proxy_addr)
}

/// Starts `firedrill target` and `firedrill defend` (one route for every
/// path) in front of it.
fn start_defend(
    dir: &std::path::Path,
    extra: &[&str],
) -> (std::process::Child, std::process::Child, String) {
    let config = dir.join("defense.yaml");
    std::fs::write(&config, "routes:\n  all:\n    match: /*\n").unwrap();
    let config = config.to_str().unwrap();
    start_in_front(&["defend", "--config", config], "defense line ready", extra)
}

/// Sends a request the target answers after 500 ms in HTTP/`version`,
/// half-closes at once (the FIN lands while the request is in flight) and
/// reads to the end.
fn half_closed_slow_request(addr: &str, version: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .write_all(format!("GET /delay/500ms HTTP/{version}\r\nhost: t\r\n\r\n").as_bytes())
        .unwrap();
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    read_answer(stream)
}

/// Everything the server sends on `stream` until it closes (30 s at most
/// between reads).
fn read_answer(mut stream: TcpStream) -> String {
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// A whole 200 from the fixture target after the interim `100 Continue`
/// that asked whether the client had hung up or half-closed.
fn assert_answered_after_the_probe(response: &str) {
    let answer = response
        .strip_prefix("HTTP/1.1 100 Continue\r\n\r\n")
        .unwrap_or_else(|| panic!("no interim 100 first: {response:?}"));
    assert!(answer.starts_with("HTTP/1.1 200"), "{response:?}");
    assert!(answer.ends_with("ok\n"), "{response:?}");
}

fn stop(mut children: [std::process::Child; 2]) {
    for child in &mut children {
        sigterm(child);
        assert_eq!(child.wait().unwrap().code(), Some(0));
    }
}

#[test]
fn http_proxy_answers_a_client_that_half_closes_after_a_whole_request() {
    let (target, proxy, addr) = start_pair(&[]);
    assert_answered_after_the_probe(&half_closed_slow_request(&addr, "1.1"));
    stop([proxy, target]);
}

#[test]
fn http_proxy_answers_an_http_1_0_client_that_half_closes_without_an_interim_response() {
    let (target, proxy, addr) = start_pair(&[]);
    let response = half_closed_slow_request(&addr, "1.0");
    // A 1xx may not be sent to an HTTP/1.0 client.
    assert!(response.starts_with("HTTP/1.0 200"), "{response:?}");
    assert!(response.ends_with("ok\n"), "{response:?}");
    stop([proxy, target]);
}

#[test]
fn http_proxy_with_abort_on_close_drops_a_half_closed_request_unanswered() {
    let (target, proxy, addr) = start_pair(&["--abort-on-close"]);
    assert_eq!(half_closed_slow_request(&addr, "1.1"), "");
    stop([proxy, target]);
}

#[test]
fn defend_answers_a_client_that_half_closes_after_a_whole_request() {
    let dir = tempfile::tempdir().unwrap();
    let (target, defend, addr) = start_defend(dir.path(), &[]);
    assert_answered_after_the_probe(&half_closed_slow_request(&addr, "1.1"));
    stop([defend, target]);
}

#[test]
fn defend_with_abort_on_close_drops_a_half_closed_request_unanswered() {
    let dir = tempfile::tempdir().unwrap();
    let (target, defend, addr) = start_defend(dir.path(), &["--abort-on-close"]);
    assert_eq!(half_closed_slow_request(&addr, "1.1"), "");
    stop([defend, target]);
}

fn sigterm(child: &std::process::Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn sigterm_lets_an_in_flight_request_finish_then_exits_0() {
    let (mut target, mut proxy, proxy_addr) = start_pair(&["--grace", "20s"]);
    // A request the target answers after 1 s: in flight when SIGTERM lands.
    let mut stream = TcpStream::connect(&proxy_addr).unwrap();
    stream
        .write_all(b"GET /delay/1s HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    sigterm(&proxy);
    let mut response = String::new();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    let status = proxy.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    // The listener is gone.
    assert!(TcpStream::connect(&proxy_addr).is_err());
    sigterm(&target);
    assert_eq!(target.wait().unwrap().code(), Some(0));
}

/// Sends `GET path` on `connections` connections at once, then reads every
/// answer; returns them.
fn on_many_connections(addr: &str, connections: usize, path: &str) -> Vec<String> {
    let streams: Vec<TcpStream> = (0..connections)
        .map(|_| {
            let mut stream = TcpStream::connect(addr).unwrap();
            let request = format!("GET {path} HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n");
            stream.write_all(request.as_bytes()).unwrap();
            stream
        })
        .collect();
    streams.into_iter().map(read_answer).collect()
}

#[test]
fn proxy_and_defend_on_four_event_loops_answer_and_drain_every_connection_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let pairs = [
        start_pair(&["--loops", "4", "--grace", "20s"]),
        start_defend(dir.path(), &["--loops", "4", "--grace", "20s"]),
    ];
    for (mut target, mut front, addr) in pairs {
        // The kernel spreads 32 connections over the four listeners.
        for response in on_many_connections(&addr, 32, "/") {
            assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        }
        // 16 requests in flight on the loops when SIGTERM lands: each loop
        // drains its own, and the process waits for all of them.
        let in_flight = std::thread::spawn({
            let addr = addr.clone();
            move || on_many_connections(&addr, 16, "/delay/1s")
        });
        std::thread::sleep(Duration::from_millis(300));
        sigterm(&front);
        for response in in_flight.join().unwrap() {
            assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        }
        assert_eq!(front.wait().unwrap().code(), Some(0));
        // Every loop's listener is gone.
        for _ in 0..16 {
            assert!(TcpStream::connect(&addr).is_err());
        }
        sigterm(&target);
        assert_eq!(target.wait().unwrap().code(), Some(0));
    }
}

#[test]
fn zero_event_loops_is_a_bad_argument_exit_2_naming_the_flag() {
    for command in [&["proxy"][..], &["defend", "--config", "d.yaml"][..]] {
        let mut args = command.to_vec();
        args.extend([
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "127.0.0.1:9",
            "--loops",
            "0",
        ]);
        let (code, stderr) = exit_and_stderr(&args);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains("--loops"), "{stderr}");
    }
}
