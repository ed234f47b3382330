//! Where the real clients installed by `ci/install-test-clients.sh` live,
//! and the rule for a missing one: a skip locally, a failure under CI.
#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};

pub(crate) fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

/// `true` (skip) when a client is missing; panics under `CI=true`.
pub(crate) fn missing(what: &str) -> bool {
    let message = format!("{what} is not installed: run ci/install-test-clients.sh");
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{message}");
    }
    eprintln!("skipped: {message}");
    true
}

/// The virtualenv's Python, if installed.
pub(crate) fn venv_python() -> Option<PathBuf> {
    let p = clients_dir().join("python/.venv/bin/python");
    p.exists().then_some(p)
}

/// Runs the Python Prometheus parser (prometheus_client's) on
/// `http://ADDR/metrics`: one JSON object per sample (`name`, `labels`,
/// `value`), and the page as the parser printed it, for messages.
pub(crate) async fn parse_metrics(python: &Path, addr: &str) -> (Vec<serde_json::Value>, String) {
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        tokio::process::Command::new(python)
            .arg(clients_dir().join("python/metrics_parse.py"))
            .arg(addr)
            .output(),
    )
    .await
    .expect("the parser finishes within 60s")
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let samples = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    (samples, text)
}
