//! A real gRPC stack (Python grpcio, installed by
//! `ci/install-test-clients.sh`) through `firedrill proxy --mode http` and
//! through an experiment's dependency proxy, towards an `h2c://` upstream: untouched calls arrive byte-exact (unary,
//! and a server stream of 1,000 messages), and the client sees each fault
//! as grpcio reports it.
#![allow(clippy::disallowed_methods)] // real processes, bounded by timeouts

mod cli_support;
mod client_support;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use cli_support::{firedrill, spawn_until_ready};
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
    calls(addr, method, request, timeout_s, 1)
}

/// As [`call`], `n` calls one after the other on one channel: the first
/// status not OK, every message of every call.
fn calls(addr: &str, method: &str, request: &str, timeout_s: f64, n: u32) -> Value {
    let out = Command::new(python())
        .arg(dir().join("client.py"))
        .args([
            addr,
            method,
            request,
            &timeout_s.to_string(),
            &n.to_string(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Where the grpcio client's calls cross firedrill on their way to the
/// server: both carry the same faults.
#[derive(Clone, Copy, Debug)]
enum Via {
    /// `firedrill proxy --mode http --upstream h2c://SERVER`.
    Proxy,
    /// The dependency proxy of a running experiment (`firedrill run`,
    /// `dependencies.inventory.upstream: h2c://SERVER`, `load: external`).
    Dependency,
}

const VIAS: [Via; 2] = [Via::Proxy, Via::Dependency];

/// firedrill between the client and the server, stopped when dropped.
struct Crossing {
    child: Child,
    via: Via,
    listen: String,
    _dir: tempfile::TempDir,
}

impl Crossing {
    /// firedrill `via` towards `server`, with `faults` (the YAML list under
    /// `faults:`, each entry a line `  - {...}`, or `[]`).
    fn start(via: Via, server: &Server, faults: &str) -> Crossing {
        let dir = tempfile::tempdir().unwrap();
        match via {
            Via::Proxy => {
                let file = dir.path().join("faults.yaml");
                std::fs::write(&file, format!("faults:{faults}\n")).unwrap();
                let mut cmd = firedrill();
                cmd.args(["proxy", "--listen", "127.0.0.1:0", "--mode", "http"])
                    .args(["--upstream", &format!("h2c://{}", server.addr)])
                    .arg("--faults")
                    .arg(&file);
                let (child, listen, _log) = spawn_until_ready(cmd, "proxy ready");
                Crossing {
                    child,
                    via,
                    listen,
                    _dir: dir,
                }
            }
            Via::Dependency => {
                let port = std::net::TcpListener::bind("127.0.0.1:0")
                    .unwrap()
                    .local_addr()
                    .unwrap()
                    .port();
                let listen = format!("127.0.0.1:{port}");
                let file = dir.path().join("experiment.yaml");
                std::fs::write(
                    &file,
                    format!(
                        "name: grpcio through a dependency proxy\n\
                         seed: 1\n\
                         duration: 600s\n\
                         clock: real\n\
                         system: {{ url: 'h2c://{server}' }}\n\
                         dependencies:\n\
                         \x20 inventory: {{ listen: '{listen}', upstream: 'h2c://{server}' }}\n\
                         load: external\n\
                         faults:{faults}\n",
                        server = server.addr
                    ),
                )
                .unwrap();
                let child = Command::new(env!("CARGO_BIN_EXE_firedrill"))
                    .arg("run")
                    .arg(&file)
                    .args(["--quiet", "--report-dir"])
                    .arg(dir.path().join("report"))
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap();
                let mut crossing = Crossing {
                    child,
                    via,
                    listen,
                    _dir: dir,
                };
                crossing.wait_listening();
                crossing
            }
        }
    }

    /// Waits (30 s at most) until the dependency proxy accepts.
    fn wait_listening(&mut self) {
        for _ in 0..1200 {
            if std::net::TcpStream::connect(&self.listen).is_ok() {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("the drill exited before its dependency listened: {status}");
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        panic!(
            "the dependency proxy did not listen on {} within 30 s",
            self.listen
        );
    }

    /// The drill's dependencies.jsonl after an interrupt: one record per
    /// call the dependency proxy saw. The drill must stop as an interrupted
    /// run does (exit 130).
    fn interrupt(mut self) -> Vec<Value> {
        let sent = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let status = self.child.wait().unwrap();
        assert_eq!(status.code(), Some(130), "{:?}", self.via);
        let text =
            std::fs::read_to_string(self._dir.path().join("report/dependencies.jsonl")).unwrap();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for Crossing {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The gRPC statuses of the dependency proxy's records, in order (the
/// proxy mode keeps no records here: empty).
fn recorded(crossing: Crossing) -> Vec<String> {
    match crossing.via {
        Via::Proxy => Vec::new(),
        Via::Dependency => crossing
            .interrupt()
            .iter()
            .map(|r| r["grpc_status"].to_string())
            .collect(),
    }
}

#[test]
fn untouched_grpc_calls_pass_byte_exact_unary_and_a_stream_of_a_thousand_messages() {
    let server = Server::start();
    for via in VIAS {
        let crossing = Crossing::start(via, &server, " []");
        for (method, messages) in [("get", 1), ("watch", 1000)] {
            let direct = call(&server.addr, method, "sku-42", 30.0);
            let through = call(&crossing.listen, method, "sku-42", 30.0);
            assert_eq!(direct["code"], "OK", "{direct}");
            assert_eq!(direct["messages"], messages, "{direct}");
            assert_eq!(through, direct, "{method} through the {via:?}");
        }
        if let Via::Dependency = via {
            assert_eq!(
                recorded(crossing),
                ["0", "0"],
                "the dependency saw both calls end OK"
            );
        }
    }
}

#[test]
fn grpcio_sees_unavailable_from_a_grpc_fault_and_deadline_exceeded_from_a_delay_past_its_deadline()
{
    let server = Server::start();
    let faults = "\n\
        \x20 - { name: get-down, match: /inventory.Inventory/Get, grpc: { status: UNAVAILABLE, message: stock is down } }\n\
        \x20 - { name: watch-slow, match: /inventory.Inventory/Watch, latency: { delay: 3s } }";
    for via in VIAS {
        let crossing = Crossing::start(via, &server, faults);
        let failed = call(&crossing.listen, "get", "sku-1", 30.0);
        assert_eq!(failed["code"], "UNAVAILABLE", "{via:?}: {failed}");
        assert_eq!(failed["details"], "stock is down", "{via:?}: {failed}");
        let late = call(&crossing.listen, "watch", "w", 0.5);
        assert_eq!(late["code"], "DEADLINE_EXCEEDED", "{via:?}: {late}");
        assert_eq!(late["messages"], 0, "{via:?}: {late}");
        // With a deadline past the delay, the stream comes whole.
        let waited = call(&crossing.listen, "watch", "w", 30.0);
        assert_eq!(waited["code"], "OK", "{via:?}: {waited}");
        assert_eq!(waited["messages"], 1000, "{via:?}: {waited}");
        if let Via::Dependency = via {
            // UNAVAILABLE (14), the proxy's own DEADLINE_EXCEEDED (4) at
            // the caller's deadline, then OK.
            assert_eq!(recorded(crossing), ["14", "4", "0"]);
        }
    }
}

#[test]
fn a_reset_before_the_answer_reaches_grpcio_as_a_reset_stream_with_its_chosen_code() {
    let server = Server::start();
    // (the reset's code, the status grpcio reports for it): hyper's
    // default INTERNAL_ERROR is INTERNAL; gRPC maps REFUSED_STREAM to
    // UNAVAILABLE (safe to retry) and CANCEL to CANCELLED.
    for via in VIAS {
        for (code, status) in [
            ("", "INTERNAL"),
            ("code: REFUSED_STREAM", "UNAVAILABLE"),
            ("code: CANCEL", "CANCELLED"),
        ] {
            let faults = format!(
                "\n  - {{ name: cut, match: /inventory.Inventory/*, reset: {{ {code} }} }}"
            );
            let crossing = Crossing::start(via, &server, &faults);
            let cut = call(&crossing.listen, "get", "sku-1", 30.0);
            assert_eq!(cut["code"], status, "{via:?} {code}: {cut}");
            assert!(
                cut["details"].as_str().unwrap().contains("RST_STREAM"),
                "{via:?} {code}: {cut}"
            );
            if let Via::Dependency = via {
                assert_eq!(recorded(crossing), ["null"], "a reset call has no status");
            }
        }
    }
}

#[test]
fn a_goaway_after_each_call_has_grpcio_reconnect_and_every_call_is_answered_byte_exact() {
    let server = Server::start();
    let faults = "\n  - { name: drain, match: /inventory.Inventory/*, goaway: {} }";
    for via in VIAS {
        let crossing = Crossing::start(via, &server, faults);
        // Three calls on one channel: each connection goes away after its
        // call, so the second and third are sent on new connections.
        for (method, messages) in [("get", 3), ("watch", 3000)] {
            let direct = calls(&server.addr, method, "sku-7", 30.0, 3);
            let through = calls(&crossing.listen, method, "sku-7", 30.0, 3);
            assert_eq!(direct["code"], "OK", "{direct}");
            assert_eq!(direct["messages"], messages, "{direct}");
            assert_eq!(through, direct, "{method} through the {via:?}");
        }
        if let Via::Dependency = via {
            assert_eq!(recorded(crossing), ["0"; 6]);
        }
    }
}

#[test]
fn a_latency_per_message_holds_each_message_of_a_stream_and_not_its_head() {
    let server = Server::start();
    // 5 ms per message: a stream of 1,000 takes 5 s, a unary call 5 ms.
    let faults = "\n  - { name: slow-messages, match: /inventory.Inventory/*, latency: { delay: 5ms, per: message } }";
    for via in VIAS {
        let crossing = Crossing::start(via, &server, faults);
        // The stream's messages start at once and come slowly: the 1 s
        // deadline ends it half-way (a held head would have ended it with
        // none).
        let cut = call(&crossing.listen, "watch", "w", 1.0);
        assert_eq!(cut["code"], "DEADLINE_EXCEEDED", "{via:?}: {cut}");
        let messages = cut["messages"].as_u64().unwrap();
        assert!((1..1000).contains(&messages), "{via:?}: {cut}");
        // A unary call's one message is held, then passes whole.
        let direct = call(&server.addr, "get", "sku-3", 30.0);
        let through = call(&crossing.listen, "get", "sku-3", 30.0);
        assert_eq!(through, direct, "{via:?}");
    }
}

/// `firedrill proxy --mode http --upstream UPSTREAM` with no faults: the
/// child, its listen address and its log.
fn proxy_to(
    upstream: &str,
) -> (
    cli_support::Killed,
    String,
    std::io::Lines<BufReader<std::process::ChildStderr>>,
) {
    let mut cmd = firedrill();
    cmd.args(["proxy", "--listen", "127.0.0.1:0", "--mode", "http"])
        .args(["--upstream", upstream]);
    let (child, listen, log) = spawn_until_ready(cmd, "proxy ready");
    (cli_support::Killed(child), listen, log)
}

#[test]
fn a_grpc_call_to_an_upstream_given_as_host_and_port_goes_over_http2_and_passes_byte_exact() {
    let server = Server::start();
    let (_proxy, listen, _log) = proxy_to(&server.addr);
    for (method, messages) in [("get", 1), ("watch", 1000)] {
        let direct = call(&server.addr, method, "sku-42", 30.0);
        let through = call(&listen, method, "sku-42", 30.0);
        assert_eq!(direct["messages"], messages, "{direct}");
        assert_eq!(through, direct, "{method} through host:port");
    }
}

#[test]
fn a_grpc_call_to_an_upstream_given_as_http1_is_answered_unavailable_with_the_fix_and_logged() {
    let server = Server::start();
    let (proxy, listen, log) = proxy_to(&format!("http://{}", server.addr));
    let refused = call(&listen, "get", "sku-1", 30.0);
    assert_eq!(refused["code"], "UNAVAILABLE", "{refused}");
    let details = refused["details"].as_str().unwrap();
    assert!(
        details.contains("needs HTTP/2") && details.contains("h2c://HOST:PORT"),
        "{refused}"
    );
    drop(proxy);
    let logged: Vec<String> = log.map_while(Result::ok).collect();
    assert!(
        logged
            .iter()
            .any(|l| l.contains("WARN") && l.contains("h2c://HOST:PORT")),
        "{logged:#?}"
    );
}
