//! Running `firedrill run` from the repository root with a report
//! directory, as the experiment-level tests do.
#![allow(dead_code, unreachable_pub, missing_docs)]

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// What a run left: its exit code, its output and its report.json.
pub struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// `report.json`, or `Null` when the run wrote none.
    pub report: Value,
}

/// `firedrill run FILE --report-dir DIR ARGS...` from the repository root.
pub fn run(file: impl AsRef<Path>, dir: &Path, args: &[&str]) -> Ran {
    let out = Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("run")
        .arg(file.as_ref())
        .arg("--report-dir")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    let report = std::fs::read(dir.join("report.json"))
        .map(|bytes| serde_json::from_slice(&bytes).unwrap())
        .unwrap_or(Value::Null);
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        report,
    }
}

/// [`run`], which must exit 0.
pub fn run_ok(file: impl AsRef<Path>, dir: &Path, args: &[&str]) -> Ran {
    let ran = run(file, dir, args);
    assert_eq!(ran.code, Some(0), "{}{}", ran.stdout, ran.stderr);
    ran
}
