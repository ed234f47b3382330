//! A real gRPC stack (Python grpcio, installed by
//! `ci/install-test-clients.sh`) through `firedrill proxy --mode http`
//! towards an `h2c://` upstream: untouched calls arrive byte-exact (unary,
//! and a server stream of 1,000 messages), and the client sees each fault
//! as grpcio reports it.
#![allow(clippy::disallowed_methods)] // real processes, bounded by timeouts

mod cli_support;
mod client_support;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use cli_support::{Killed, firedrill, spawn_until_ready};
use serde_json::Value;

/// tests/services/grpc, where the server, the client and their venv are.
fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/services/grpc")
}

/// The venv's Python; a missing one fails the test.
fn python() -> PathBuf {
    let p = dir().join(".venv/bin/python");
    if !p.exists() {
        client_support::missing("grpcio (tests/services/grpc/.venv)");
    }
    p
}

/// The grpcio server, serving until it is dropped (its stdin closes).
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start() -> Server {
        let mut child = Command::new(python())
            .arg(dir().join("server.py"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("the server said {line:?}"))
            .trim();
        Server {
            child,
            addr: format!("127.0.0.1:{port}"),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// One call by the grpcio client: `method` (`get` or `watch`) of
/// `request`, with a deadline of `timeout_s`: code, details, messages,
/// their SHA-256.
fn call(addr: &str, method: &str, request: &str, timeout_s: f64) -> Value {
    let out = Command::new(python())
        .arg(dir().join("client.py"))
        .args([addr, method, request, &timeout_s.to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `firedrill proxy --mode http` towards the server over HTTP/2, with
/// `faults` (YAML).
fn proxy(server: &Server, faults: &str) -> (Killed, String, tempfile::NamedTempFile) {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), faults).unwrap();
    let mut cmd = firedrill();
    cmd.args(["proxy", "--listen", "127.0.0.1:0", "--mode", "http"])
        .args(["--upstream", &format!("h2c://{}", server.addr)])
        .arg("--faults")
        .arg(file.path());
    let (child, listen, _log) = spawn_until_ready(cmd, "proxy ready");
    (Killed(child), listen, file)
}

#[test]
fn untouched_grpc_calls_pass_byte_exact_unary_and_a_stream_of_a_thousand_messages() {
    let server = Server::start();
    let (_proxy, listen, _faults) = proxy(&server, "faults: []\n");
    for (method, messages) in [("get", 1), ("watch", 1000)] {
        let direct = call(&server.addr, method, "sku-42", 30.0);
        let through = call(&listen, method, "sku-42", 30.0);
        assert_eq!(direct["code"], "OK", "{direct}");
        assert_eq!(direct["messages"], messages, "{direct}");
        assert_eq!(through, direct, "{method} through the proxy");
    }
}

#[test]
fn grpcio_sees_unavailable_from_a_grpc_fault_and_deadline_exceeded_from_a_delay_past_its_deadline()
{
    let server = Server::start();
    let faults = "faults:\n\
        \x20 - { name: get-down, match: /inventory.Inventory/Get, grpc: { status: UNAVAILABLE, message: stock is down } }\n\
        \x20 - { name: watch-slow, match: /inventory.Inventory/Watch, latency: { delay: 3s } }\n";
    let (_proxy, listen, _faults) = proxy(&server, faults);
    let failed = call(&listen, "get", "sku-1", 30.0);
    assert_eq!(failed["code"], "UNAVAILABLE", "{failed}");
    assert_eq!(failed["details"], "stock is down", "{failed}");
    let late = call(&listen, "watch", "w", 0.5);
    assert_eq!(late["code"], "DEADLINE_EXCEEDED", "{late}");
    assert_eq!(late["messages"], 0, "{late}");
    // With a deadline past the delay, the stream comes whole.
    let waited = call(&listen, "watch", "w", 30.0);
    assert_eq!(waited["code"], "OK", "{waited}");
    assert_eq!(waited["messages"], 1000, "{waited}");
}

#[test]
fn a_reset_before_the_answer_reaches_grpcio_as_a_reset_stream_with_its_chosen_code() {
    let server = Server::start();
    // (the reset's code, the status grpcio reports for it): hyper's
    // default INTERNAL_ERROR is INTERNAL; gRPC maps REFUSED_STREAM to
    // UNAVAILABLE (safe to retry) and CANCEL to CANCELLED.
    for (code, status) in [
        ("", "INTERNAL"),
        ("code: REFUSED_STREAM", "UNAVAILABLE"),
        ("code: CANCEL", "CANCELLED"),
    ] {
        let faults = format!(
            "faults:\n  - {{ name: cut, match: /inventory.Inventory/*, reset: {{ {code} }} }}\n"
        );
        let (_proxy, listen, _faults) = proxy(&server, &faults);
        let cut = call(&listen, "get", "sku-1", 30.0);
        assert_eq!(cut["code"], status, "{code}: {cut}");
        assert!(
            cut["details"].as_str().unwrap().contains("RST_STREAM"),
            "{code}: {cut}"
        );
    }
}
