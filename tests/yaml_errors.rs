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
            // A safety net only: a command that blocks fails the test
            // instead of hanging it.
            .timeout(std::time::Duration::from_secs(120))
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

/// A named pipe (FIFO) with no writer is refused at once by every command,
/// saying what it is, instead of blocking forever in `open`.
#[test]
fn a_fifo_is_refused_by_validate_run_and_defend_instead_of_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(dir.path().join("pipe.yaml"))
        .status()
        .unwrap();
    assert!(made.success());
    let expected = "error: pipe.yaml:1:1: a named pipe (FIFO), not a regular file: \
                    expected a file of at most 1048576 bytes (write the pipe's contents to a file)\n";
    let failures = commands_refusing_otherwise(dir.path(), "pipe.yaml", expected);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A device that never ends (`/dev/zero`) is read up to the limit and one
/// byte more, then refused as too large, naming the limit.
#[test]
fn dev_zero_is_refused_as_too_large_after_reading_one_byte_past_the_limit() {
    let expected = "error: /dev/zero:1:1: the file is more than 1048576 bytes: \
                    expected at most 1048576 bytes (1 MiB)\n";
    let failures = commands_refusing_otherwise(Path::new("/"), "/dev/zero", expected);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A directory is refused saying so.
#[test]
fn a_directory_is_refused_by_validate_run_and_defend_saying_it_is_one() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("folder.yaml")).unwrap();
    let expected = "error: folder.yaml:1:1: a directory, not a regular file: \
                    expected a file of at most 1048576 bytes\n";
    let failures = commands_refusing_otherwise(dir.path(), "folder.yaml", expected);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// One anchored string of 100 KB aliased 200 times is 20 MB once expanded,
/// though the file is far under 1 MiB and has few events: it is refused at
/// the alias that crosses the budget (the key), naming the alias and the
/// limit, at the anchor whose content the aliases copy (the parser places
/// every replayed node there).
#[test]
fn an_alias_bomb_of_one_big_string_is_refused_naming_the_alias_and_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let big = "x".repeat(100_000);
    let aliases = vec!["*big"; 200].join(", ");
    let text =
        format!("name: bomb\nduration: 10s\nload: []\nextra: &big {big}\nmore: [{aliases}]\n");
    std::fs::write(dir.path().join("bomb.yaml"), &text).unwrap();
    let expected = "error: bomb.yaml:4:8: more[82]: the alias `*big` expands the document \
                    past 8388608 bytes: expected aliases to expand it to at most 8388608 bytes (8 MiB) in all\n";
    let failures = commands_refusing_otherwise(dir.path(), "bomb.yaml", expected);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Writes `bytes` to `name` in a new folder and checks every command
/// refuses it with exactly `expected` (after `error: NAME:`).
fn refused_alike(name: &str, bytes: &[u8], expected: &str) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(name), bytes).unwrap();
    let expected = format!("error: {name}:{expected}\n");
    let failures = commands_refusing_otherwise(dir.path(), name, &expected);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// libyaml refuses a control character without saying where: it is
/// reported at its own line and column.
#[test]
fn a_nul_byte_is_reported_at_its_line_and_column_by_validate_run_and_defend() {
    let text = "name: nul\nduration: 10s\nload: []\n# 4\n# 5\n# 6\n# 7\n# 8\nseed: 1\0\n";
    refused_alike(
        "nul.yaml",
        text.as_bytes(),
        "9:8: the control character U+0000 is not allowed in YAML: \
         expected printable text (write it as \\x00 in a double-quoted string)",
    );
}

/// A byte that is not UTF-8 is reported at its line and column.
#[test]
fn invalid_utf8_is_reported_at_its_first_bad_byte_by_validate_run_and_defend() {
    refused_alike(
        "latin1.yaml",
        b"name: ok\nduration: 10s\ndescription: caf\xe9\nload: []\n",
        "3:17: the byte 0xE9 is not UTF-8: expected a UTF-8 text file",
    );
}

/// Lone carriage returns are line breaks, as YAML reads them: the file is
/// not "empty" (one comment line), and a problem is on its own line.
#[test]
fn carriage_return_line_endings_are_line_breaks_for_validate_run_and_defend() {
    refused_alike(
        "cr.yaml",
        b"# old Mac line endings\rname: a\rduration: 10s\rname: b\rload: []\r",
        "4:1: name: this key appears twice in its mapping (first at line 2): expected each key once",
    );
}
