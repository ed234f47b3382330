//! `firedrill validate` over the fixture corpora in `fixtures/faults/`,
//! `fixtures/defense/` and `fixtures/experiments/`, and over `experiments/`.
//!
//! In each corpus every `bad/NAME.yaml` must fail with exit code 2 and print exactly
//! `bad/NAME.expected` on stderr; every `good/NAME.yaml` must pass. A file
//! whose name ends in `_in_http_mode` or `_in_tcp_mode` is validated with
//! that `--mode`. The files are discovered, so a new fixture is a new case.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use firedrill::fault::FaultFile;

/// The corpora and how many bad files each must hold at least.
const CORPORA: [(&str, usize); 3] = [("faults", 16), ("defense", 12), ("experiments", 18)];

fn corpus_dir(corpus: &str, which: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(corpus)
        .join(which)
}

fn fixture_dir(which: &str) -> PathBuf {
    corpus_dir("faults", which)
}

/// The names (without `.yaml`) of the YAML files in `dir`, sorted.
fn yaml_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .map(|path| path.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Runs `firedrill validate NAME.yaml` inside `dir`, so messages name the
/// file as the fixture's `.expected` does, wherever the checkout lives.
fn validate(dir: &Path, name: &str) -> std::process::Output {
    let mode = if name.ends_with("_in_http_mode") {
        Some("http")
    } else if name.ends_with("_in_tcp_mode") {
        Some("tcp")
    } else {
        None
    };
    validate_in_mode(dir, name, mode)
}

/// Runs `firedrill validate NAME.yaml [--mode MODE]` inside `dir`.
fn validate_in_mode(dir: &Path, name: &str, mode: Option<&str>) -> std::process::Output {
    let mut cmd = Command::cargo_bin("firedrill").unwrap();
    cmd.current_dir(dir)
        .arg("validate")
        .arg(format!("{name}.yaml"));
    if let Some(mode) = mode {
        cmd.args(["--mode", mode]);
    }
    cmd.output().unwrap()
}

#[test]
fn every_bad_fixture_exits_2_with_exactly_its_expected_message() {
    for (corpus, minimum) in CORPORA {
        bad_corpus_fails_with_expected_messages(corpus, minimum);
    }
}

fn bad_corpus_fails_with_expected_messages(corpus: &str, minimum: usize) {
    let dir = corpus_dir(corpus, "bad");
    let names = yaml_names(&dir);
    assert!(
        names.len() >= minimum,
        "only {} bad {corpus} fixtures",
        names.len()
    );
    let mut failures = Vec::new();
    for name in &names {
        let expected_path = dir.join(format!("{name}.expected"));
        let Ok(expected) = std::fs::read_to_string(&expected_path) else {
            failures.push(format!("{name}: no {name}.expected next to it"));
            continue;
        };
        let output = validate(&dir, name);
        let stderr = String::from_utf8_lossy(&output.stderr);
        if output.status.code() != Some(2) {
            failures.push(format!(
                "{name}: exit code {:?}, expected 2 (stderr: {stderr})",
                output.status.code()
            ));
        } else if stderr != expected {
            failures.push(format!(
                "{name}: stderr differs\n  expected: {expected:?}\n  actual:   {stderr:?}"
            ));
        } else if !output.stdout.is_empty() {
            failures.push(format!("{name}: printed to stdout as well"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} bad fixtures failed:\n{}",
        failures.len(),
        names.len(),
        failures.join("\n")
    );
}

#[test]
fn every_expected_message_has_its_bad_fixture_and_every_line_is_located() {
    for (corpus, _) in CORPORA {
        expected_messages_are_located_lines(corpus);
    }
}

fn expected_messages_are_located_lines(corpus: &str) {
    let dir = corpus_dir(corpus, "bad");
    let names: BTreeSet<String> = yaml_names(&dir).into_iter().collect();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|ext| ext != "expected") {
            continue;
        }
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        assert!(names.contains(&name), "{name}.expected has no {name}.yaml");
        let expected = std::fs::read_to_string(&path).unwrap();
        let lines = expected
            .strip_suffix('\n')
            .unwrap_or_else(|| panic!("{name}.expected must end with a newline"));
        // One problem per line: `validate` names every one it finds.
        for line in lines.lines() {
            let prefix = format!("error: {name}.yaml:");
            let rest = line.strip_prefix(&prefix).unwrap_or_else(|| {
                panic!("{name}.expected: every line must start with `{prefix}`: {line}");
            });
            let mut parts = rest.splitn(3, ':');
            for what in ["line", "column"] {
                let n: usize = parts
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| panic!("{name}.expected has no {what}: {line}"));
                assert!(n >= 1, "{name}.expected has {what} 0: {line}");
            }
        }
    }
}

#[test]
fn every_good_fixture_is_accepted_and_its_faults_counted() {
    let dir = fixture_dir("good");
    let names = yaml_names(&dir);
    assert!(!names.is_empty(), "no good fixtures");
    for name in &names {
        let output = validate(&dir, name);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{name}: {stderr}");
        assert!(stderr.is_empty(), "{name}: stderr {stderr}");
        let text = std::fs::read_to_string(dir.join(format!("{name}.yaml"))).unwrap();
        let file: FaultFile = firedrill::schema::from_yaml_str(name, &text).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            format!("ok: {name}.yaml: {} fault(s)\n", file.faults.len()),
        );
    }
}

#[test]
fn good_fixtures_cover_every_kind_in_block_and_flow_style() {
    for name in ["every_kind_block", "every_kind_flow"] {
        let path = fixture_dir("mixed_modes").join(format!("{name}.yaml"));
        let text = std::fs::read_to_string(&path).unwrap();
        let file: FaultFile = firedrill::schema::from_yaml_str(name, &text).unwrap();
        let kinds: BTreeSet<&str> = file.faults.iter().map(|f| f.kind.key()).collect();
        let missing: Vec<&str> = firedrill::fault::spec::kind_keys()
            .filter(|k| !kinds.contains(k))
            .collect();
        assert!(missing.is_empty(), "{name} lacks {missing:?}");
    }
}

/// A file with faults of both modes parses, but no proxy can run it:
/// `validate` refuses it in the default mode and in each `--mode`, as
/// `firedrill proxy` would, naming the first fault of the other mode.
#[test]
fn a_file_mixing_tcp_and_http_faults_is_refused_in_every_mode_and_by_default() {
    let dir = fixture_dir("mixed_modes");
    for name in yaml_names(&dir) {
        for (mode, needed) in [(None, "http"), (Some("tcp"), "http"), (Some("http"), "tcp")] {
            let output = validate_in_mode(&dir, &name, mode);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(2), "{name} {mode:?}: {stderr}");
            assert!(
                stderr.contains(&format!("needs --mode {needed}")),
                "{name} {mode:?}: {stderr}"
            );
        }
    }
}

/// Without `--mode`, `validate` checks a fault file against the mode
/// `firedrill proxy` runs in by default (tcp) and says so.
#[test]
fn an_http_only_fault_file_without_mode_is_refused_as_the_default_tcp_proxy_would() {
    let output = validate_in_mode(&fixture_dir("good"), "http_faults_in_http_mode", None);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: http_faults_in_http_mode.yaml:8:13: faults[1].status: `status` needs --mode http: \
         without --mode a proxy runs in tcp mode\n\
         error: http_faults_in_http_mode.yaml:20:13: faults[6].replay: `replay` needs --mode http: \
         without --mode a proxy runs in tcp mode\n"
    );
}

#[test]
fn every_good_defense_config_is_accepted_with_its_routes_counted() {
    let dir = corpus_dir("defense", "good");
    let names = yaml_names(&dir);
    assert!(!names.is_empty(), "no good defense fixtures");
    for name in &names {
        let output = validate(&dir, name);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let text = std::fs::read_to_string(dir.join(format!("{name}.yaml"))).unwrap();
        let config: firedrill::defense::DefenseConfig =
            firedrill::schema::from_yaml_str(name, &text).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            format!(
                "ok: {name}.yaml: defense line with {} route(s)\n",
                config.routes.len()
            ),
        );
    }
}

/// Checks that `firedrill validate NAME.yaml` in `dir` accepts every YAML
/// file there and prints `ok: NAME.yaml: experiment "..." with N
/// expectation(s)`, N and the name read back through the library.
fn experiments_validate_with_their_ok_line(dir: &Path) {
    let names = yaml_names(dir);
    assert!(!names.is_empty(), "no experiments in {}", dir.display());
    for name in &names {
        let output = validate(dir, name);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{name}: {stderr}");
        assert!(stderr.is_empty(), "{name}: stderr {stderr}");
        let loaded = firedrill::experiment::file::load(&dir.join(format!("{name}.yaml")))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            format!(
                "ok: {name}.yaml: experiment \"{}\" with {} expectation(s)\n",
                loaded.experiment.name,
                loaded.experiment.expect.len()
            ),
        );
    }
}

#[test]
fn every_experiment_in_experiments_dir_validates_with_its_expectations_counted() {
    experiments_validate_with_their_ok_line(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments"),
    );
}

#[test]
fn every_experiment_fixture_outside_bad_validates_with_its_expectations_counted() {
    experiments_validate_with_their_ok_line(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/experiments"),
    );
}

#[test]
fn an_experiment_rejects_mode_because_its_faults_always_run_in_http() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments");
    let output = Command::cargo_bin("firedrill")
        .unwrap()
        .current_dir(&dir)
        .args(["validate", "quickstart.yaml", "--mode", "tcp"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: --mode: applies to fault files; an experiment's faults always run in http mode\n"
    );
}

/// `validate /dev/stdin` reads it once, whether standard input is a file
/// (a second read, to tell its kind and then to check it, found it empty)
/// or a pipe.
#[test]
fn validate_reads_standard_input_once_from_a_file_or_a_pipe() {
    let fault_file = corpus_dir("faults", "good").join("kinds_without_parameters.yaml");
    let experiment =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/outage_contained.yaml");
    for (path, expected) in [
        (fault_file, "ok: /dev/stdin: "),
        (experiment, "ok: /dev/stdin: experiment"),
    ] {
        let redirected = std::process::Command::new(env!("CARGO_BIN_EXE_firedrill"))
            .args(["validate", "/dev/stdin"])
            .stdin(std::fs::File::open(&path).unwrap())
            .output()
            .unwrap();
        let piped = Command::cargo_bin("firedrill")
            .unwrap()
            .args(["validate", "/dev/stdin"])
            .pipe_stdin(&path)
            .unwrap()
            .timeout(std::time::Duration::from_secs(120))
            .output()
            .unwrap();
        for output in [redirected, piped] {
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert!(
                output.status.success() && stdout.starts_with(expected),
                "{}: {stdout}{}",
                path.display(),
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }
}

/// An experiment whose `seed` (a u64) and `defense.max_concurrent` (a
/// u32) are written as given.
fn with_whole_numbers(seed: &str, max_concurrent: &str) -> String {
    format!(
        "name: whole numbers\nseed: {seed}\nduration: 10s\ntarget:\n  builtin:\n    routes:\n      - {{ path: /a/*, latency: 5ms }}\ndefense:\n  max_concurrent: {max_concurrent}\nload:\n  - {{ name: A, request: GET /a/1, rate: 10/s }}\nexpect:\n  - route A success >= 99%\n"
    )
}

/// `+5`, `0x10` and `0o17` are the whole numbers YAML reads them as; every
/// other form is refused at the value, showing it as written and the range
/// its field holds (`-0` read as "integer 0, expected u32" before).
#[test]
fn whole_number_fields_take_yamls_integers_and_refuse_other_forms_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let mut check = |text: String, expected: Option<String>| {
        std::fs::write(dir.path().join("n.yaml"), &text).unwrap();
        let output = validate(dir.path(), "n");
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        let ok = match &expected {
            None => output.status.success(),
            Some(line) => output.status.code() == Some(2) && stderr == format!("{line}\n"),
        };
        if !ok {
            failures.push(format!(
                "exit {:?}, expected {expected:?}, got {stderr:?} for\n{text}",
                output.status.code()
            ));
        }
    };
    for accepted in ["5", "+5", "0x10", "0o17"] {
        check(with_whole_numbers(accepted, accepted), None);
    }
    // The value, what is said of it before the range expected, and after.
    let refused = [
        ("-0", "has a minus sign", ", without a sign (write 0)"),
        ("-5", "is negative", ""),
        (
            "010",
            "has a leading zero, which YAML readers disagree on (YAML 1.1 reads it as octal 8)",
            ", without leading zeros (write 10, or 0o10 for octal)",
        ),
        (
            "1_000",
            "has an underscore, which YAML does not read in a number",
            " (write 1000)",
        ),
        (
            "'5'",
            "is quoted, so it is text",
            " (write 5 without quotes)",
        ),
        ("5.0", "is not a whole number", ""),
        ("4294967296", "is too large", ""),
    ];
    for (value, reason, hint) in refused {
        let u32_range = "expected a whole number from 0 to 4294967295";
        check(
            with_whole_numbers("7", value),
            Some(format!(
                "error: n.yaml:9:19: defense.max_concurrent: `{value}` {reason}: {u32_range}{hint}"
            )),
        );
        if value != "4294967296" {
            let u64_range = "expected a whole number from 0 to 18446744073709551615";
            check(
                with_whole_numbers(value, "40"),
                Some(format!(
                    "error: n.yaml:2:7: seed: `{value}` {reason}: {u64_range}{hint}"
                )),
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
