//! Where the real clients installed by `ci/install-test-clients.sh` live,
//! and the rule for a missing one: a failure, never a skip (the README's
//! test command, `bash ci/test.sh`, installs them first).
#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};

pub(crate) fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

/// A missing client fails the test that needs it, saying how to install
/// it: a test never passes by skipping.
pub(crate) fn missing(what: &str) -> ! {
    panic!(
        "{what} is not installed: run `bash ci/test.sh` (it installs the test clients, then runs cargo test) or ci/install-test-clients.sh"
    )
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
