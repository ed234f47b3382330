//! Errors of the YAML itself (before any firedrill key is read) are the
//! same, at the same line and column, in every command that reads a file:
//! `validate`, `run` and `defend`. The files are in `fixtures/yaml/`; the
//! file size limit is checked on a file made here.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/yaml")
}

/// Each fixture and the one line every command must print for it.
const CASES: [(&str, &str); 5] = [
    (
        "duplicate_key",
        "5:1: name: this key appears twice in its mapping (first at line 2): expected each key once",
    ),
    (
        "tab_indentation",
        "5:1: load: found character that cannot start any token, while scanning for the next token \
         (a tab: YAML indents with spaces only)",
    ),
    (
        "unclosed_quote",
        "2:7: name: this quoted string is never closed: expected its closing quote before the end of the file",
    ),
    (
        "two_documents",
        "5:1: a second YAML document starts here: expected one document per file \
         (put every fault, route or setting in the first)",
    ),
    (
        "integer_overflow",
        "3:7: seed: the integer 99999999999999999999 is out of range: \
         expected at most 18446744073709551615 and at least -9223372036854775808",
    ),
];

/// The three commands, each given the file `file`.
fn commands(file: &str) -> [(&'static str, Vec<String>); 3] {
    let owned = |args: &[&str]| args.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    [
        ("validate", owned(&["validate", file])),
        (
            "run",
            owned(&["run", "--clock", "virtual", "--quiet", file]),
        ),
        (
            "defend",
            owned(&[
                "defend",
                "--config",
                file,
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                "127.0.0.1:1",
            ]),
        ),
    ]
}

/// Runs each of the three commands on `file` in `dir`; every one that does
/// not exit 2 with exactly `expected` on stderr, described.
fn commands_refusing_otherwise(dir: &Path, file: &str, expected: &str) -> Vec<String> {
    let mut failures = Vec::new();
    for (command, args) in commands(file) {
        let output = Command::cargo_bin("firedrill")
            .unwrap()
            .current_dir(dir)
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        if output.status.code() != Some(2) || stderr != expected {
            failures.push(format!(
                "{command} {file}: exit {:?}\n  expected: {expected:?}\n  actual:   {stderr:?}",
                output.status.code()
            ));
        }
    }
    failures
}

#[test]
fn each_yaml_error_is_reported_alike_at_its_own_place_by_validate_run_and_defend() {
    let mut failures = Vec::new();
    for (name, expected) in CASES {
        let file = format!("{name}.yaml");
        let expected = format!("error: {file}:{expected}\n");
        failures.extend(commands_refusing_otherwise(&fixtures(), &file, &expected));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_fixture_in_the_yaml_folder_is_a_case() {
    let mut names: Vec<String> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut cases: Vec<String> = CASES.iter().map(|(n, _)| n.to_string()).collect();
    cases.sort();
    assert_eq!(names, cases);
}

/// A file over the 1 MiB limit is refused before it is read or parsed,
/// by every command, at its start.
#[test]
fn a_file_over_one_mebibyte_is_refused_by_validate_run_and_defend() {
    let dir = tempfile::tempdir().unwrap();
    let limit = firedrill::schema::limits::MAX_FILE_BYTES as usize;
    let mut text = String::from("name: big\nduration: 10s\nload: []\n");
    while text.len() <= limit {
        text.push_str("# padding to pass the size limit\n");
    }
    std::fs::write(dir.path().join("big.yaml"), &text).unwrap();
    let expected = format!(
        "error: big.yaml:1:1: the file is {} bytes: expected at most {limit} bytes (1 MiB)\n",
        text.len()
    );
    let failures = commands_refusing_otherwise(dir.path(), "big.yaml", &expected);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The depth limit holds in every command: the 100,000-deep fixture of
/// `fixtures/faults/bad/` gets the same located refusal from each.
#[test]
fn a_file_nested_100k_deep_is_refused_alike_by_validate_run_and_defend() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/faults/bad");
    let expected = std::fs::read_to_string(dir.join("nested_100k_deep.expected")).unwrap();
    let failures = commands_refusing_otherwise(&dir, "nested_100k_deep.yaml", &expected);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
