//! Real Toxiproxy clients from PyPI and npm drive `firedrill server`
//! (tests/clients/), and the official Prometheus Python parser reads its
//! /metrics. The clients are installed by `ci/install-test-clients.sh`;
//! where they are missing these tests skip, except under `CI=true`, where
//! a missing client is a failure.

mod api_support;
mod client_support;

use std::path::Path;
use std::time::Duration;

use api_support::{Server, echo, server};
use client_support::{clients_dir, missing, venv_python};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

fn node_client_installed() -> bool {
    clients_dir()
        .join("node/node_modules/toxiproxy-node-client/package.json")
        .exists()
        && std::process::Command::new("node")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
}

fn api_addr(s: &Server) -> String {
    s.base.trim_start_matches("http://").to_string()
}

/// Runs a client script against the server; fails with its whole output.
async fn run_script(program: &Path, script: &Path, s: &Server) -> String {
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        Command::new(program)
            .arg(script)
            .arg(api_addr(s))
            .current_dir(script.parent().unwrap())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("client scenario finishes within 120s")
    .expect("client runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{} failed:\n{text}", script.display());
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toxiproxy_python_creates_observes_latency_and_reset_toggles_and_resets() {
    let Some(python) = venv_python() else {
        missing("toxiproxy-python (tests/clients/python/.venv)")
    };
    let s = server(&[]).await;
    let out = run_script(&python, &clients_dir().join("python/scenario.py"), &s).await;
    assert!(out.contains("python scenario passed"), "{out}");
    assert!(
        out.contains("ok: reset_peer observed as a connection reset"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toxiproxy_node_client_does_the_same_plus_populate_and_version() {
    if !node_client_installed() {
        missing("node or toxiproxy-node-client (tests/clients/node/node_modules)")
    }
    let s = server(&[]).await;
    let out = run_script(
        Path::new("node"),
        &clients_dir().join("node/scenario.js"),
        &s,
    )
    .await;
    assert!(out.contains("node scenario passed"), "{out}");
    assert!(out.contains("ok: populate created both"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_parser_reads_the_byte_counters_with_their_labels_and_values() {
    let Some(python) = venv_python() else {
        missing("prometheus-client (tests/clients/python/.venv)")
    };
    let s = server(&[]).await;
    let up = echo().await;
    let listen = s.proxy("db", up).await;
    let mut c = tokio::net::TcpStream::connect(listen).await.unwrap();
    c.write_all(&[1u8; 1500]).await.unwrap();
    let mut back = vec![0u8; 1500];
    c.read_exact(&mut back).await.unwrap();
    drop(c);
    // Counters land just after the echo is read: wait until they show.
    let done = format!(
        "toxiproxy_proxy_sent_bytes_total{{direction=\"downstream\",listener=\"{listen}\",proxy=\"db\",upstream=\"{up}\"}} 1500"
    );
    for _ in 0..250 {
        if s.call("GET", "/metrics", None).await.text.contains(&done) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let out = run_script(&python, &clients_dir().join("python/metrics_parse.py"), &s).await;
    let samples: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    for name in [
        "toxiproxy_proxy_received_bytes_total",
        "toxiproxy_proxy_sent_bytes_total",
    ] {
        for dir in ["upstream", "downstream"] {
            let found = samples.iter().find(|s| {
                s["name"] == name && s["labels"]["direction"] == dir && s["labels"]["proxy"] == "db"
            });
            let found = found.unwrap_or_else(|| panic!("{name} {dir} not parsed from:\n{out}"));
            assert_eq!(found["value"], 1500.0, "{found}");
            assert_eq!(found["type"], "counter", "{found}");
            assert_eq!(found["labels"]["listener"], listen.to_string());
            assert_eq!(found["labels"]["upstream"], up.to_string());
        }
    }
}
