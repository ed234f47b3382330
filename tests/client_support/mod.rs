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
