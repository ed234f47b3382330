//! A reader that goes away (`firedrill schema experiment | head -1`) ends
//! a command quietly: every command that prints keeps its own exit code
//! and never panics on the broken pipe.

use std::path::Path;
use std::process::{Command, Stdio};

mod cli_support;

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

/// A proxy whose log reader went away (a supervisor's pipe closed) still
/// answers: the log lines are dropped, and no request's task panics on
/// them (tracing's own report of a failed write used to panic on the
/// closed stderr in the task that logged, closing the client's
/// connection without an answer).
#[test]
fn a_proxy_whose_stderr_reader_has_gone_still_answers_its_faulted_requests() {
    use std::io::{Read, Write};
    let faults = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        faults.path(),
        "faults:\n  - { name: down, match: /fail/*, status: { code: 503, body: down } }\n",
    )
    .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_firedrill"));
    cmd.args([
        "proxy",
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        "127.0.0.1:9",
    ])
    .args(["--mode", "http", "--faults"])
    .arg(faults.path());
    let (child, listen, lines) = cli_support::spawn_until_ready(cmd, "proxy ready");
    let _child = cli_support::Killed(child);
    // The reader goes: every later log line meets a broken pipe.
    drop(lines);
    let mut answers = Vec::new();
    for _ in 0..3 {
        let mut stream = std::net::TcpStream::connect(&listen).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        stream
            .write_all(b"GET /fail/1 HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            .unwrap();
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answers.push(answer);
    }
    for answer in answers {
        assert!(answer.starts_with("HTTP/1.1 503"), "{answer:?}");
        assert!(answer.ends_with("down"), "{answer:?}");
    }
}
