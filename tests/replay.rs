//! Trace replay end to end, in virtual time: a dependency answering as an
//! access log says, a run's own requests.jsonl replayed as a dependency,
//! recorded arrival times as load, and the incident replay's reports the
//! same bytes for the same seed.

use std::path::{Path, PathBuf};

use serde_json::Value;

mod run_support;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `firedrill run FILE --clock virtual --quiet --report-dir DIR [extra]`,
/// which must exit 0.
fn run(file: &Path, dir: &Path, extra: &[&str]) -> run_support::Ran {
    let mut args = vec!["--clock", "virtual", "--quiet"];
    args.extend_from_slice(extra);
    run_support::run_ok(file, dir, &args)
}

fn requests(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("requests.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// What each request got: a status, or the client's error.
fn answer(r: &Value) -> String {
    match r["status"].as_u64() {
        Some(s) => s.to_string(),
        None => r["client_error"].as_str().unwrap().to_string(),
    }
}

/// The answers of the requests sent in second `s`.
fn in_second(requests: &[Value], s: u64) -> Vec<String> {
    requests
        .iter()
        .filter(|r| r["sent_ms"].as_f64().unwrap() as u64 / 1000 == s)
        .map(answer)
        .collect()
}

#[test]
fn an_envoy_log_replays_second_by_second_statuses_latencies_resets_and_hangs() {
    let dir = tempfile::tempdir().unwrap();
    let report = run(
        &root().join("fixtures/replay/seconds.yaml"),
        dir.path(),
        &[],
    )
    .report;
    let all = requests(dir.path());
    let five = |what: &str| vec![what.to_string(); 5];
    assert_eq!(in_second(&all, 0), five("200"));
    assert_eq!(in_second(&all, 1), five("503"));
    assert_eq!(in_second(&all, 2), five("broken"), "code 0 UF: a reset");
    assert_eq!(in_second(&all, 3), five("timeout"), "code 0 DC: a hang");
    assert_eq!(in_second(&all, 4), Vec::<String>::new(), "nothing sent");
    assert_eq!(in_second(&all, 5), five("200"));
    // Latency as logged: DURATION 10 ms for the 200s, 40 ms for the 503s.
    let latency = |r: &Value| r["latency_ms"].as_f64().unwrap();
    assert!(all[..5].iter().all(|r| latency(r) == 10.0), "{all:?}");
    assert!(all[5..10].iter().all(|r| latency(r) == 40.0), "{all:?}");
    // Arrivals as logged: every 200 ms from the first.
    let sent: Vec<f64> = all.iter().map(|r| r["sent_ms"].as_f64().unwrap()).collect();
    assert_eq!(&sent[..3], &[0.0, 200.0, 400.0]);
    let warnings = report["warnings"].to_string();
    assert!(
        warnings.contains("records no request in 1 of its 6 buckets (4s-5s)"),
        "{warnings}"
    );
}

#[test]
fn replayed_arrivals_at_speed_2_come_twice_as_fast() {
    let dir = tempfile::tempdir().unwrap();
    let file = root().join("fixtures/replay/seconds.yaml");
    run(&file, dir.path(), &["--set", "load.shop.replay.speed=2"]);
    let sent: Vec<f64> = requests(dir.path())
        .iter()
        .map(|r| r["sent_ms"].as_f64().unwrap())
        .collect();
    assert_eq!(sent.len(), 25);
    assert_eq!(&sent[..3], &[0.0, 100.0, 200.0]);
    assert_eq!(sent[24], 2900.0, "the 5.8 s arrival at half the time");
}

/// Writes `text` to `dir/name` and returns the path.
fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_runs_requests_jsonl_replayed_as_the_dependency_answers_as_that_run_did() {
    let work = tempfile::tempdir().unwrap();
    let first = work.path().join("first");
    let original = write(
        work.path(),
        "original.yaml",
        "name: an outage from 2 s to 4 s\nseed: 3\nduration: 6s\n\
         target: { builtin: { routes: [ { path: /stock/* } ] } }\n\
         load: [ { name: shop, request: GET /stock/1, rate: 10/s, arrivals: constant } ]\n\
         faults: [ { name: down, status: { code: 503 }, at: 2s, for: 2s } ]\n",
    );
    run(&original, &first, &[]);
    let replayed = write(
        work.path(),
        "replayed.yaml",
        "name: the outage, replayed\nseed: 4\nduration: 6s\n\
         target: { builtin: { routes: [ { path: /stock/* } ] } }\n\
         load: [ { name: shop, request: GET /stock/1, rate: 7/s } ]\n\
         faults: [ { name: again, replay: { file: first/requests.jsonl, format: requests } } ]\n",
    );
    let second = work.path().join("second");
    run(&replayed, &second, &[]);
    let all = requests(&second);
    for s in 0..6 {
        let answers = in_second(&all, s);
        assert!(!answers.is_empty(), "second {s}: nothing sent");
        let expected = if (2..4).contains(&s) { "503" } else { "200" };
        assert!(
            answers.iter().all(|a| a == expected),
            "second {s}: {answers:?}, expected all {expected}"
        );
    }
}

#[test]
fn the_incident_replay_passes_with_byte_identical_reports_for_a_seed() {
    let file = root().join("experiments/incident_replay.yaml");
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    run(&file, a.path(), &[]);
    run(&file, b.path(), &[]);
    let mut names: Vec<_> = std::fs::read_dir(a.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert!(names.len() >= 4, "{names:?}");
    for name in names {
        let (x, y) = (
            std::fs::read(a.path().join(&name)).unwrap(),
            std::fs::read(b.path().join(&name)).unwrap(),
        );
        assert!(x == y, "{name:?} differs between two runs of one seed");
    }
}

/// A recording that is a named pipe is refused at once, naming it, instead
/// of blocking `validate` and `run` on a FIFO no one writes to.
#[test]
fn a_recording_that_is_a_named_pipe_is_refused_instead_of_blocking() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        root().join("fixtures/replay/seconds.yaml"),
        dir.path().join("seconds.yaml"),
    )
    .unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(dir.path().join("seconds.envoy.log"))
        .status()
        .unwrap();
    assert!(made.success());
    for command in ["validate", "run"] {
        let out = assert_cmd::Command::new(env!("CARGO_BIN_EXE_firedrill"))
            .arg(command)
            .arg(dir.path().join("seconds.yaml"))
            // A safety net: before the fix the command blocked for ever.
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "firedrill {command}: {stderr}");
        assert!(
            stderr.contains("seconds.envoy.log")
                && stderr.contains("a named pipe (FIFO), not a regular file"),
            "firedrill {command}: {stderr}"
        );
    }
}

/// A recording is read at most 256 MiB, whatever it is: a larger file is
/// refused by its size, and one that never ends (`/dev/zero`) after one
/// byte past the limit, both at the `replay` key, naming the recording and
/// the limit (the whole file was read before, `/dev/zero` until memory
/// ran out).
#[test]
fn a_recording_over_the_limit_or_endless_is_refused_naming_it_and_the_limit() {
    let limit = firedrill::schema::limits::MAX_RECORDING_BYTES;
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        root().join("fixtures/replay/seconds.yaml"),
        dir.path().join("seconds.yaml"),
    )
    .unwrap();
    let recording = dir.path().join("seconds.envoy.log");
    let cases = [
        (false, format!("the file is {} bytes", limit + 1)),
        (true, format!("the file is more than {limit} bytes")),
    ];
    for (endless, size) in cases {
        let _ = std::fs::remove_file(&recording);
        if endless {
            std::os::unix::fs::symlink("/dev/zero", &recording).unwrap();
        } else {
            // Sparse: one byte over the limit without writing it.
            let file = std::fs::File::create(&recording).unwrap();
            file.set_len(limit + 1).unwrap();
        }
        let out = assert_cmd::Command::new(env!("CARGO_BIN_EXE_firedrill"))
            .arg("validate")
            .arg(dir.path().join("seconds.yaml"))
            // A safety net: before the fix /dev/zero was read until memory
            // ran out.
            .timeout(std::time::Duration::from_secs(120))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let expected = format!(
            "error: {}:18:21: faults[0].replay.file: {}:1:1: {size}: expected at most {limit} bytes (256 MiB)\n",
            dir.path().join("seconds.yaml").display(),
            recording.display()
        );
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr, expected);
    }
}
