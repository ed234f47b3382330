//! What a report says about its run: version, start time (real clock),
//! host, seed, clock, targets; JUnit timestamp, time and properties read by
//! junitparser; times in milliseconds as numbers in every file; routes in
//! the order of `load:`.

mod client_support;
mod run_support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const FILE: &str = "fixtures/experiments/metadata_real.yaml";

fn run(clock: &str, dir: &Path) {
    run_support::run_ok(FILE, dir, &["--quiet", "--clock", clock]);
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn a_real_run_reports_its_start_in_utc_its_host_and_its_targets() {
    let dir = tempfile::tempdir().unwrap();
    run("real", dir.path());
    let r = json(&dir.path().join("report.json"));
    assert_eq!(r["version"], env!("CARGO_PKG_VERSION"));
    let build = r["build"].as_str().unwrap();
    assert!(
        build.starts_with(&format!("{} (", env!("CARGO_PKG_VERSION"))),
        "{build}"
    );
    let version = Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        format!("firedrill {build}"),
        "the report names the build as --version does"
    );
    assert_eq!(
        (r["seed"].as_u64(), r["clock"].as_str()),
        (Some(11), Some("real"))
    );
    assert_eq!(r["targets"], serde_json::json!(["target: builtin"]));
    assert!(!r["host"].as_str().unwrap().is_empty());
    let unix_ms = r["started_at_unix_ms"].as_u64().unwrap();
    assert_eq!(
        r["started_at"].as_str().unwrap(),
        firedrill::clock::rfc3339(unix_ms),
        "the one start time, in two forms"
    );
    assert!(r["started_at"].as_str().unwrap().ends_with('Z'));
    let names: Vec<&str> = r["routes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["route"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["zeta", "alpha"], "the order of load:");

    let Some(python) = client_support::venv_python() else {
        client_support::missing("the Python JUnit parser (junitparser)")
    };
    let out = Command::new(python)
        .arg(client_support::clients_dir().join("python/junit_meta.py"))
        .arg(dir.path().join("junit.xml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let junit: Value = serde_json::from_slice(&out.stdout).unwrap();
    let timestamp = junit["timestamp"].as_str().unwrap();
    // junitparser gives the attribute as written: the same instant.
    assert!(
        timestamp.starts_with(&r["started_at"].as_str().unwrap()[..19]),
        "{timestamp} vs {}",
        r["started_at"]
    );
    let time = junit["time"].as_f64().unwrap();
    assert!(
        (time - r["duration_ms"].as_f64().unwrap() / 1000.0).abs() < 0.01,
        "{junit}"
    );
    let properties: Vec<(String, String)> =
        serde_json::from_value(junit["properties"].clone()).unwrap();
    for (name, value) in [
        ("firedrill.version", env!("CARGO_PKG_VERSION")),
        ("seed", "11"),
        ("clock", "real"),
        ("target", "target: builtin"),
    ] {
        assert!(
            properties.contains(&(name.to_string(), value.to_string())),
            "{name}={value} in {properties:?}"
        );
    }
    assert!(
        properties.iter().any(|(n, _)| n == "host"),
        "{properties:?}"
    );
}

#[test]
fn a_virtual_run_has_no_wall_clock_or_host_and_every_time_is_a_number_of_milliseconds() {
    let dir = tempfile::tempdir().unwrap();
    run("virtual", dir.path());
    let r = json(&dir.path().join("report.json"));
    for key in ["started_at", "started_at_unix_ms", "host"] {
        assert!(r.get(key).is_none(), "{key} in a virtual report");
    }
    assert_eq!(r["targets"], serde_json::json!(["target: builtin"]));
    for v in r["verdicts"].as_array().unwrap() {
        assert!(v.get("at").is_none());
        assert!(v["at_ms"].is_number() || v["at_ms"].is_null(), "{v}");
    }
    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    assert!(!junit.contains("timestamp="), "{junit}");
    for line in std::fs::read_to_string(dir.path().join("requests.jsonl"))
        .unwrap()
        .lines()
    {
        let v: Value = serde_json::from_str(line).unwrap();
        assert!(v["sent_ms"].is_number(), "{line}");
    }
}

#[test]
fn journal_lines_give_times_and_waits_in_milliseconds_as_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "run",
            "experiments/quickstart.yaml",
            "--quiet",
            "--clock",
            "virtual",
            "--report-dir",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let journal = std::fs::read_to_string(dir.path().join("journal.jsonl")).unwrap();
    let lines: Vec<Value> = journal
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.len() >= 3, "{journal}");
    for l in &lines {
        assert!(l["at_ms"].is_number() && l.get("at").is_none(), "{l}");
    }
    let half_open = lines.iter().find(|l| l["to"] == "half_open").unwrap();
    assert_eq!(half_open["figures"]["wait_ms"], 5000.0, "{half_open}");
}
