//! Inputs held to bounds of the whole file rather than of one value: the
//! windows all the faults' patterns open together, and how much of a bad
//! input an error quotes back.

mod run_support;

use std::path::Path;

/// An experiment of `faults` faults, each flapping every 1 ms (10,000
/// windows in its 20 s), on the built-in target.
fn flapping_faults(faults: usize) -> String {
    let mut text = String::from(
        "name: many patterns\nseed: 1\nduration: 20s\n\
         target:\n  builtin:\n    routes:\n      - { path: /dep/*, latency: 1ms }\n\
         load:\n  - { name: calls, request: GET /dep/x, rate: 10/s }\nfaults:\n",
    );
    for i in 0..faults {
        text.push_str(&format!(
            "  - {{ name: f{i}, match: /dep/*, status: {{ code: 503 }}, probability: 1%, pattern: {{ up: 1ms, down: 1ms }} }}\n"
        ));
    }
    text
}

/// `firedrill run FILE` in virtual time, reporting into `dir/reports`.
fn run_in(dir: &Path, text: &str) -> run_support::Ran {
    let file = dir.join("drill.yaml");
    std::fs::write(&file, text).unwrap();
    run_support::run(&file, &dir.join("reports"), &["--clock", "virtual", "-q"])
}

/// 100 faults of 10,000 windows each are each within their own bound, but
/// together held 600 MB and wrote a 228 MB report.html: the run is refused
/// before it starts, at the fault that passes the limit, with the total.
#[test]
fn patterns_opening_more_windows_in_all_than_the_run_limit_are_refused_at_the_fault_passing_it() {
    let dir = tempfile::tempdir().unwrap();
    let ran = run_in(dir.path(), &flapping_faults(100));
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    let file = dir.path().join("drill.yaml");
    assert_eq!(
        ran.stderr,
        format!(
            "error: {}:13:81: faults[2].pattern: the faults' patterns open 1000000 windows in the run \
             (this fault's passes the limit): expected at most 20000 in all faults together \
             (fewer patterned faults, or longer `up` and `down` phases)\n",
            file.display()
        )
    );
    assert!(!dir.path().join("reports").exists());
}

/// Two faults of 10,000 windows are exactly at the limit and run.
#[test]
fn patterns_opening_exactly_the_run_limit_of_windows_run() {
    let dir = tempfile::tempdir().unwrap();
    let ran = run_in(dir.path(), &flapping_faults(2));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let windows: Vec<usize> = ran.report["faults"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["windows_ms"].as_array().unwrap().len())
        .collect();
    assert_eq!(windows, [10_000, 10_000]);
}

/// `firedrill validate FILE` on `text` written to `dir/NAME`: its exit
/// code and its stderr.
fn validate(dir: &Path, name: &str, text: &str) -> (Option<i32>, String) {
    std::fs::write(dir.join(name), text).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .current_dir(dir)
        .args(["validate", name])
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A duration with a space (`10 s`) was always refused, a percentage with
/// one (`50 %`) was read as 50 %: refused alike, at the value.
#[test]
fn a_percentage_with_a_space_before_its_sign_is_refused_at_the_value() {
    let dir = tempfile::tempdir().unwrap();
    let text = "routes:\n  inventory:\n    match: /inventory/*\n    breaker:\n      \
                model: window\n      failure_rate_threshold: 50 %\n      wait_in_open: 5s\n";
    let (code, stderr) = validate(dir.path(), "defense.yaml", text);
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(
        stderr,
        "error: defense.yaml:6:31: routes.inventory.breaker.failure_rate_threshold: \
         invalid percentage `50 %`: a space inside it: expected the number and its unit together, `50%`\n"
    );
}

/// A file of noise read as one 1,000-character key was quoted back whole,
/// twice (2 KB of error); the key and the quoted name are cut to 64
/// characters.
#[test]
fn an_unknown_key_of_noise_is_quoted_back_by_a_short_prefix_only() {
    let dir = tempfile::tempdir().unwrap();
    let noise: String = (0..1000u32)
        .map(|i| char::from(b'a' + u8::try_from(i * 7 % 26).unwrap()))
        .collect();
    let (code, stderr) = validate(dir.path(), "noise.yaml", &format!("{noise}: x\n"));
    assert_eq!(code, Some(2), "{stderr}");
    let prefix = &noise[..64];
    assert!(
        stderr.starts_with(&format!(
            "error: noise.yaml:1:1: {prefix}...: unknown field `{prefix}...`, expected"
        )),
        "{stderr}"
    );
    assert!(stderr.len() < 400, "{} bytes: {stderr}", stderr.len());
}

/// `"  127.0.0.1:80"` validated, and the run handed it to the system's
/// resolver as a host name: refused at the key instead.
#[test]
fn an_upstream_with_spaces_is_refused_at_its_key_not_resolved() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("experiments/gameday/two-dependencies.yaml"))
        .unwrap()
        .replacen(
            "upstream: 127.0.0.1:${DATABASE_PORT:-19100}",
            "upstream: \"  127.0.0.1:${DATABASE_PORT:-19100}\"",
            1,
        );
    let (code, stderr) = validate(dir.path(), "spaced.yaml", &text);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "dependencies.inventory.upstream: `  127.0.0.1:19100` has a space in it: \
             expected host:port without spaces, `127.0.0.1:19100`"
        ),
        "{stderr}"
    );
}
