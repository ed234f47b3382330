//! `ci/line-limit.sh`, which `.ci/run` calls: a non-test source file under
//! src/ over 600 lines fails CI, named with its line count; test files
//! (`*_tests.rs`, `tests.rs`, anything under a `tests/` folder) do not.

use std::path::Path;
use std::process::Command;

/// Writes `lines` lines into `root/path`.
fn file(root: &Path, path: &str, lines: usize) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, "//\n".repeat(lines)).unwrap();
}

/// Runs the script as checked in, from a copy of it in `root/ci`.
fn check(root: &Path) -> (Option<i32>, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("ci/line-limit.sh");
    std::fs::create_dir_all(root.join("ci")).unwrap();
    std::fs::copy(script, root.join("ci/line-limit.sh")).unwrap();
    let out = Command::new("bash")
        .arg(root.join("ci/line-limit.sh"))
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn a_source_file_over_600_lines_fails_named_with_its_count_and_test_files_do_not() {
    let root = tempfile::tempdir().unwrap();
    file(root.path(), "src/lib.rs", 600);
    file(root.path(), "src/a/big.rs", 601);
    file(root.path(), "src/a/big_tests.rs", 900);
    file(root.path(), "src/a/tests.rs", 900);
    file(root.path(), "src/a/tests/fidelity.rs", 900);
    let (code, out) = check(root.path());
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["src/a/big.rs: 601 lines (over 600: split it by concept)"]
    );
}

#[test]
fn a_tree_of_files_within_600_lines_passes() {
    let root = tempfile::tempdir().unwrap();
    file(root.path(), "src/lib.rs", 600);
    file(root.path(), "src/a/tests.rs", 900);
    assert_eq!(check(root.path()), (Some(0), String::new()));
}
