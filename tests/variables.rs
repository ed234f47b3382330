//! Variables in experiment files: set, defaulted, missing (a located error
//! naming it), and secret values masked in every report and output.

use std::path::Path;
use std::process::{Command, Output};

const FILE: &str = "fixtures/variables/staging_drill.yaml";
const TOKEN: &str = "tok-9f2c41d7e8";

fn run(vars: &[(&str, &str)], dir: &Path) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_firedrill"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["run", FILE, "--clock", "virtual", "--report-dir"])
        .arg(dir)
        .env_remove("DRILL_RATE")
        .env_remove("DRILL_API_TOKEN")
        .env_remove("DRILL_DURATION");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

#[test]
fn a_variable_driven_experiment_passes_with_its_variables_set() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &[("DRILL_RATE", "10/s"), ("DRILL_API_TOKEN", TOKEN)],
        dir.path(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("report.json")).unwrap()).unwrap();
    // DRILL_DURATION was unset: its default, 5s.
    assert_eq!(report["duration_ms"], 5000.0);
}

#[test]
fn a_missing_variable_is_a_located_error_naming_it_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&[("DRILL_API_TOKEN", TOKEN)], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim_end(),
        format!(
            "error: {FILE}:14:11: ${{DRILL_RATE}}: variable DRILL_RATE is not set: set it in the environment, or give a default: ${{DRILL_RATE:-value}}"
        )
    );
    assert!(!dir.path().join("report.json").exists(), "nothing ran");
}

#[test]
fn a_secret_variables_value_is_masked_in_every_report_and_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &[("DRILL_RATE", "10/s"), ("DRILL_API_TOKEN", TOKEN)],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0));
    let mut seen_masked = false;
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        assert!(!text.contains(TOKEN), "{} holds the token", path.display());
        seen_masked |= text.contains("token=***");
    }
    assert!(
        seen_masked,
        "the request path with its masked token is in the reports"
    );
    for stream in [&out.stdout, &out.stderr] {
        assert!(!String::from_utf8_lossy(stream).contains(TOKEN));
    }
}
