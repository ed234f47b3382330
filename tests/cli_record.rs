//! `firedrill proxy --record FILE` and `--metrics-listen ADDR` as a user
//! runs them: the record file is complete after a SIGTERM (requests in
//! flight and a request held in a blackhole included), and the official
//! Prometheus parser reads the request counters.
//!
//! These drive real processes in real time: they wait on the proxy's own
//! log lines and on responses, with generous overall limits, never on a
//! wall-clock threshold.
#![allow(clippy::disallowed_methods)]

mod cli_support;
mod client_support;
mod port_support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command};
use std::sync::mpsc;

use port_support::free_port;
use std::time::Duration;

use cli_support::{firedrill, refused_proxy, spawn_until_ready};
use client_support::{missing, parse_metrics, venv_python};
use serde_json::Value;

/// Far longer than anything here takes on a loaded machine.
const GENEROUS: Duration = Duration::from_secs(30);

const FAULTS: &str = "faults:
  - { name: down, match: /down/*, status: { code: 503 } }
  - { name: slow, match: /slow/*, latency: { delay: 200ms } }
  - { name: hole, match: /hole/*, blackhole: {} }
";

/// `firedrill target` and an HTTP `firedrill proxy` with FAULTS in front of
/// it; the proxy's log lines arrive on `log`.
struct Pair {
    target: Child,
    proxy: Child,
    addr: String,
    log: mpsc::Receiver<String>,
    _dir: tempfile::TempDir,
}

impl Pair {
    fn start(extra: &[&str]) -> Pair {
        let dir = tempfile::tempdir().unwrap();
        let faults = dir.path().join("faults.yaml");
        std::fs::write(&faults, FAULTS).unwrap();
        let mut target = firedrill();
        target.args(["target", "--listen", "127.0.0.1:0"]);
        let (target, target_addr, target_log) = spawn_until_ready(target, "fixture target ready");
        std::thread::spawn(move || target_log.for_each(drop));
        let mut proxy = firedrill();
        proxy
            .args([
                "proxy",
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                &target_addr,
            ])
            .args(["--mode", "http", "--faults"])
            .arg(&faults)
            .args(extra);
        let (proxy, addr, lines) = spawn_until_ready(proxy, "proxy ready");
        let (tx, log) = mpsc::channel();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Pair {
            target,
            proxy,
            addr,
            log,
            _dir: dir,
        }
    }

    /// Waits until, for each of `wanted`, a log line has shown every one
    /// of its space-separated words, in any order.
    fn wait_for_logs(&self, wanted: &[&str]) {
        let mut left: Vec<Vec<&str>> = wanted.iter().map(|w| w.split(' ').collect()).collect();
        while !left.is_empty() {
            let line = self
                .log
                .recv_timeout(GENEROUS)
                .unwrap_or_else(|e| panic!("no log lines with {left:?}: {e}"));
            left.retain(|words| !words.iter().all(|w| line.contains(w)));
        }
    }

    /// Sends `GET path` on a new connection; the caller reads the answer.
    fn send(&self, path: &str) -> TcpStream {
        let mut s = TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(GENEROUS)).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n"
        )
        .unwrap();
        s
    }

    /// `GET path` and the status line of the answer.
    fn get(&self, path: &str) -> String {
        let mut answer = String::new();
        self.send(path).read_to_string(&mut answer).unwrap();
        answer.lines().next().unwrap_or_default().to_string()
    }

    fn sigterm_proxy(&mut self) -> Option<i32> {
        let pid = self.proxy.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
        self.proxy.wait().unwrap().code()
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        let _ = self.proxy.kill();
        let _ = self.target.kill();
        let _ = self.proxy.wait();
        let _ = self.target.wait();
    }
}

/// (status, fault, reached_upstream) of each record.
fn outcome(r: &Value) -> (Value, Value, Value) {
    (
        r["status"].clone(),
        r["fault"].clone(),
        r["reached_upstream"].clone(),
    )
}

#[test]
fn record_file_is_complete_after_sigterm_with_every_request_and_its_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("requests.jsonl");
    let file_arg = file.to_str().unwrap();
    let mut pair = Pair::start(&["--record", file_arg, "--name", "shop", "--grace", "5s"]);
    for _ in 0..3 {
        assert!(pair.get("/health").starts_with("HTTP/1.1 200"));
    }
    for _ in 0..2 {
        assert!(pair.get("/down/x").starts_with("HTTP/1.1 503"));
    }
    // In flight at the signal: one held 200 ms by latency (well within the
    // grace period), one in a blackhole that the end of the grace cuts.
    let mut slow = pair.send("/slow/x");
    let _hole = pair.send("/hole/x");
    pair.wait_for_logs(&["fault injected fault=slow", "fault injected fault=hole"]);
    let exit = pair.sigterm_proxy();
    let mut answer = String::new();
    slow.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(exit, Some(0));

    let text = std::fs::read_to_string(&file).unwrap();
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(records.len(), 7, "{text}");
    let count = |status: Value, fault: Value, reached: bool| {
        records
            .iter()
            .filter(|r| outcome(r) == (status.clone(), fault.clone(), Value::Bool(reached)))
            .count()
    };
    assert_eq!(count(200.into(), Value::Null, true), 3, "{text}");
    assert_eq!(count(503.into(), "down".into(), false), 2, "{text}");
    assert_eq!(count(200.into(), "slow".into(), true), 1, "{text}");
    assert_eq!(count(Value::Null, "hole".into(), false), 1, "{text}");
    for r in &records {
        assert_eq!((&r["proxy"], &r["method"]), (&"shop".into(), &"GET".into()));
        assert!(r["at_ms"].is_f64() || r["at_ms"].is_u64(), "{r}");
    }
    let slow = records.iter().find(|r| r["fault"] == "slow").unwrap();
    assert!(slow["latency_ms"].as_f64().unwrap() >= 200.0, "{slow}");
}

#[test]
fn a_fault_on_every_request_is_logged_at_info_level_once_not_per_request() {
    let mut pair = Pair::start(&[]);
    for _ in 0..3 {
        assert!(pair.get("/down/x").starts_with("HTTP/1.1 503"));
    }
    assert_eq!(pair.sigterm_proxy(), Some(0));
    // The proxy has exited: its stderr is closed, every line is in.
    let lines: Vec<String> = pair.log.iter().collect();
    let injected = lines
        .iter()
        .filter(|l| l.contains("fault injected") && l.contains("fault=down"))
        .count();
    assert_eq!(injected, 1, "{lines:#?}");
}

#[test]
fn record_in_tcp_mode_is_an_argument_error_with_exit_2() {
    let (code, stderr) = refused_proxy(["--mode", "tcp", "--record", "requests.jsonl"]);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("--record") && stderr.contains("--mode http"),
        "{stderr}"
    );
}

#[test]
fn proxy_help_documents_record_name_and_metrics_listen() {
    let out = firedrill().args(["proxy", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--record <FILE>",
        "--name <NAME>",
        "--metrics-listen <ADDR>",
    ] {
        assert!(help.contains(flag), "{flag} missing from:\n{help}");
    }
    assert!(help.contains("reached_upstream"), "{help}");
}

#[test]
fn metrics_listen_serves_request_counters_that_the_prometheus_parser_reads() {
    let Some(python) = venv_python() else {
        missing("prometheus-client (tests/clients/python/.venv)")
    };
    let metrics = format!("127.0.0.1:{}", free_port());
    let pair = Pair::start(&["--metrics-listen", &metrics, "--name", "shop"]);
    for _ in 0..2 {
        assert!(pair.get("/health").starts_with("HTTP/1.1 200"));
    }
    assert!(pair.get("/down/x").starts_with("HTTP/1.1 503"));
    let (samples, text) = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(parse_metrics(&python, &metrics));
    let requests = |class: &str, fault: &str| {
        samples
            .iter()
            .find(|s| {
                s["name"] == "firedrill_proxy_http_requests_total"
                    && s["labels"]["proxy"] == "shop"
                    && s["labels"]["status_class"] == class
                    && s["labels"]["fault"] == fault
            })
            .map(|s| (s["type"].as_str().unwrap().to_string(), s["value"].as_f64()))
    };
    assert_eq!(
        requests("2xx", "none"),
        Some(("counter".to_string(), Some(2.0))),
        "{text}"
    );
    assert_eq!(
        requests("5xx", "down"),
        Some(("counter".to_string(), Some(1.0))),
        "{text}"
    );
    let bytes_to_client = samples.iter().find(|s| {
        s["name"] == "toxiproxy_proxy_sent_bytes_total"
            && s["labels"]["direction"] == "downstream"
            && s["labels"]["proxy"] == "shop"
    });
    assert!(
        bytes_to_client.is_some_and(|s| s["value"].as_f64().unwrap() > 0.0),
        "{text}"
    );
}
