//! A reader that goes away (`firedrill schema experiment | head -1`) ends
//! a command quietly: every command that prints keeps its own exit code
//! and never panics on the broken pipe.

use std::path::Path;
use std::process::{Command, Stdio};

/// Runs firedrill with `args` and a stdout whose reading end was closed
/// before it started, so its first write meets a broken pipe: the exit
/// code and stderr.
fn with_closed_stdout(args: &[&str]) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")))
        .args(args)
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_command_that_prints_ends_quietly_when_its_reader_has_gone() {
    let dir = tempfile::tempdir().unwrap();
    let reports = dir.path().to_str().unwrap();
    let run = ["run", "experiments/quickstart.yaml", "--clock", "virtual"];
    let commands: [(Vec<&str>, i32); 6] = [
        (vec!["schema", "experiment"], 0),
        (vec!["validate", "experiments/quickstart.yaml"], 0),
        ([&run[..], &["--report-dir", reports]].concat(), 0),
        (
            vec!["run", "fixtures/experiments/wrong_expectation.yaml"],
            1,
        ),
        (
            vec![
                "sweep",
                "experiments/quickstart.yaml",
                "--vary",
                "load.shop.rate=10/s,20/s",
            ],
            0,
        ),
        (vec!["report", reports], 0),
    ];
    for (args, code) in commands {
        let (exit, stderr) = with_closed_stdout(&args);
        assert_eq!(exit, Some(code), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}
