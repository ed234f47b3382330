//! Harness for black-box drills: a service under test as a real process on
//! a free loopback port (killed on drop), `firedrill run` on a copy of an
//! experiment with the ports filled in, and the transition sequences of the
//! service's own log and of the report.
#![allow(dead_code, unreachable_pub, missing_docs)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub(crate) use super::port_support::free_port;

pub mod services;

/// A service under test; killed (and reaped) on drop.
pub struct Service {
    pub port: u16,
    child: Child,
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Service {
    /// `firedrill defend` with `config`, calling the dependency proxy on
    /// `dependency_port`, writing its journal to `journal`.
    pub fn defend(config: &Path, dependency_port: u16, journal: &Path) -> Service {
        Service::defend_with_metrics(config, dependency_port, journal, free_port())
    }

    /// [`Service::defend`], serving its Prometheus /metrics on
    /// `metrics_port`.
    pub fn defend_with_metrics(
        config: &Path,
        dependency_port: u16,
        journal: &Path,
        metrics_port: u16,
    ) -> Service {
        let port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_firedrill"))
            .arg("defend")
            .arg("--config")
            .arg(config)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--upstream", &format!("127.0.0.1:{dependency_port}")])
            .arg("--journal")
            .arg(journal)
            .args(["--metrics-listen", &format!("127.0.0.1:{metrics_port}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let service = Service { port, child };
        service.wait_until_listening();
        service
    }

    /// A program of `tests/services/` started with `env` (PORT=0: it
    /// prints `listening on 127.0.0.1:<port>`).
    pub fn program(program: &str, args: &[&str], env: &[(&str, String)]) -> Service {
        let mut command = Command::new(program);
        command
            .args(args)
            .env("PORT", "0")
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().unwrap_or_else(|e| {
            panic!("cannot start {program} (run ci/install-test-clients.sh first): {e}")
        });
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        let port = line
            .trim()
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| {
                panic!("{program}: expected `listening on 127.0.0.1:PORT`, got {line:?}")
            });
        Service { port, child }
    }

    // A real process on the wall clock: poll its port, bounded to 5 s.
    #[allow(clippy::disallowed_methods)]
    fn wait_until_listening(&self) {
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        panic!("the service did not listen on {} within 5s", self.port);
    }
}

/// A finished `firedrill run`.
pub struct Drill {
    pub exit: Option<i32>,
    /// stdout and stderr.
    pub output: String,
    /// report.json, parsed (null when none was written).
    pub report: serde_json::Value,
    /// report.html (empty when none was written).
    pub html: String,
    /// junit.xml (empty when none was written).
    pub junit: String,
}

impl Drill {
    /// Runs `experiment` in real time with the variables `SERVICE_PORT` and
    /// `DEPENDENCY_PORT` set (firedrill fills in `${SERVICE_PORT}` and
    /// `${DEPENDENCY_PORT}`), reports in `dir`.
    pub fn run(experiment: &Path, service_port: u16, dependency_port: u16, dir: &Path) -> Drill {
        Drill::run_with(experiment, service_port, dependency_port, dir, &[])
    }

    /// [`Drill::run`], also replacing each `(from, to)` in the file.
    pub fn run_with(
        experiment: &Path,
        service_port: u16,
        dependency_port: u16,
        dir: &Path,
        replacements: &[(&str, String)],
    ) -> Drill {
        // The experiments under experiments/blackbox/ name fixed ports.
        let mut text = std::fs::read_to_string(experiment)
            .unwrap()
            .replace("127.0.0.1:18080", &format!("127.0.0.1:{service_port}"))
            .replace("127.0.0.1:19001", &format!("127.0.0.1:{dependency_port}"));
        for (from, to) in replacements {
            text = text.replace(from, to);
        }
        let file = dir.join("experiment.yaml");
        std::fs::write(&file, text).unwrap();
        let reports = dir.join("report");
        let mut command = Command::new(env!("CARGO_BIN_EXE_firedrill"));
        command
            .env("SERVICE_PORT", service_port.to_string())
            .env("DEPENDENCY_PORT", dependency_port.to_string())
            .arg("run")
            .arg(&file)
            .arg("--report-dir")
            .arg(&reports);
        Drill::finish(command, &reports)
    }

    /// Runs `command` (a `firedrill run ... --report-dir REPORTS`) to its
    /// end and reads what it wrote into `reports`.
    pub fn finish(mut command: Command, reports: &Path) -> Drill {
        let out = command.output().unwrap();
        Drill {
            exit: out.status.code(),
            output: format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
            report: report_in(reports),
            html: std::fs::read_to_string(reports.join("report.html")).unwrap_or_default(),
            junit: std::fs::read_to_string(reports.join("junit.xml")).unwrap_or_default(),
        }
    }

    /// The evidence gate's reasons, once the drill ended inconclusive
    /// (exit 5); panics with the output otherwise.
    pub fn inconclusive(&self) -> Vec<&str> {
        assert_eq!(self.exit, Some(5), "{}", self.output);
        self.report["inconclusive"]
            .as_array()
            .expect("an inconclusive list")
            .iter()
            .map(|f| f["reason"].as_str().unwrap())
            .collect()
    }

    /// The sentences of the verdicts that did not pass, in order.
    pub fn failed(&self) -> Vec<&str> {
        self.report["verdicts"]
            .as_array()
            .map(|v| {
                v.iter()
                    .filter(|v| v["passed"] == false)
                    .map(|v| v["expectation"].as_str().unwrap())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The verdict of `expectation`; panics with the output without one.
    pub fn verdict(&self, expectation: &str) -> &serde_json::Value {
        self.report["verdicts"]
            .as_array()
            .and_then(|v| v.iter().find(|v| v["expectation"] == expectation))
            .unwrap_or_else(|| panic!("no verdict for {expectation}: {}", self.output))
    }

    /// The report's path for reading other files beside it.
    pub fn dir(dir: &Path) -> PathBuf {
        dir.join("report")
    }
}

/// report.json in `reports`, parsed; null when none was written.
pub fn report_in(reports: &Path) -> serde_json::Value {
    std::fs::read_to_string(reports.join("report.json"))
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or(serde_json::Value::Null)
}

/// `from -> to` for each line of a firedrill journal.
pub fn journal_sequence(journal: &Path) -> Vec<String> {
    std::fs::read_to_string(journal)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            format!(
                "{} -> {}",
                v["from"].as_str().unwrap(),
                v["to"].as_str().unwrap()
            )
        })
        .collect()
}

/// `from -> to` for each transition of `breaker` in a report.
pub fn report_sequence(report: &serde_json::Value, breaker: &str) -> Vec<String> {
    transitions(report, breaker)
        .iter()
        .map(|(_, from, to)| format!("{from} -> {to}"))
        .collect()
}

/// `(at_ms, from, to)` of each transition of `breaker` in a report.
pub fn transitions(report: &serde_json::Value, breaker: &str) -> Vec<(f64, String, String)> {
    report["breakers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["name"] == breaker)
        .flat_map(|b| b["transitions"].as_array().cloned().unwrap_or_default())
        .map(|t| {
            (
                t["at_ms"].as_f64().unwrap(),
                t["from"].as_str().unwrap().to_string(),
                t["to"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Sends `GET path` to the service at `rate` per second for `seconds`
/// from a thread (a stand-in for an outside load tool); joins to the count
/// of requests sent.
// A real process on the wall clock: the thread paces itself with sleeps.
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
pub fn outside_load(
    port: u16,
    path: &'static str,
    rate: u32,
    seconds: u32,
) -> std::thread::JoinHandle<u32> {
    use std::io::{Read, Write};
    std::thread::spawn(move || {
        let start = std::time::Instant::now();
        let interval = std::time::Duration::from_secs(1) / rate;
        let mut sent = 0;
        for i in 0..rate * seconds {
            let due = start + interval * i;
            if let Some(wait) = due.checked_duration_since(std::time::Instant::now()) {
                std::thread::sleep(wait);
            }
            if let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) {
                let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(2)));
                let request =
                    format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
                if stream.write_all(request.as_bytes()).is_ok() {
                    sent += 1;
                    let mut sink = Vec::new();
                    let _ = stream.read_to_end(&mut sink);
                }
            }
        }
        sent
    })
}

/// `(at_ms since the Unix epoch, from, to)` of each line of a service's
/// events file (`tests/services/README.md`).
pub fn events(file: &Path) -> Vec<(f64, String, String)> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["at_ms"].as_f64().unwrap(),
                v["from"].as_str().unwrap().to_string(),
                v["to"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// `(at_ms, from, to)` of what the service reported of `breaker`, as the
/// report shows it beside the inferred transitions.
pub fn reported(report: &serde_json::Value, breaker: &str) -> Vec<(f64, String, String)> {
    report["breakers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["name"] == breaker)
        .flat_map(|b| b["reported"].as_array().cloned().unwrap_or_default())
        .map(|t| {
            (
                t["at_ms"].as_f64().unwrap(),
                t["from"].as_str().unwrap().to_string(),
                t["to"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// A "service" that accepts every connection and never answers: each
/// connection is held open, unread, until the test process ends. Returns
/// its port.
pub fn silent_service() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    port
}

/// Runs `firedrill ARGS FILE` and returns its exit code and stderr.
pub fn firedrill(args: &[&str], file: &Path) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .args(args)
        .arg(file)
        .output()
        .unwrap();
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// The seeds every real-clock story runs its correct and its broken
/// system under: a verdict must not depend on the seed.
pub const SEEDS: [u64; 5] = [7, 10, 11, 23, 42];

/// `drill(seed)` for each of [`SEEDS`] (or of `FIREDRILL_TEST_SEEDS`, a
/// comma-separated list, to try more), side by side (each on its own
/// ports), in the order of the seeds. One sweep of seeds at a time in a
/// test binary: several at once would load a 2-core machine past the
/// margins of a real-clock drill.
pub fn under_seeds<T: Send>(drill: impl Fn(u64) -> T + Sync) -> Vec<(u64, T)> {
    let _turn = ONE_SWEEP.lock().unwrap_or_else(|e| e.into_inner());
    let drill = &drill;
    std::thread::scope(|scope| {
        let runs: Vec<_> = seeds()
            .into_iter()
            .map(|seed| (seed, scope.spawn(move || drill(seed))))
            .collect();
        runs.into_iter()
            .map(|(seed, run)| (seed, run.join().expect("a seed's drill panicked")))
            .collect()
    })
}

/// [`under_seeds`], one seed after the other: for a load that is itself
/// several processes a drill (a Locust master and its workers), which
/// side by side would load a 2-core machine past a real-clock drill's
/// margins.
pub fn seed_after_seed<T>(drill: impl Fn(u64) -> T) -> Vec<(u64, T)> {
    let _turn = ONE_SWEEP.lock().unwrap_or_else(|e| e.into_inner());
    seeds()
        .into_iter()
        .map(|seed| (seed, drill(seed)))
        .collect()
}

/// One sweep of seeds at a time in a test binary.
static ONE_SWEEP: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// [`SEEDS`], or those of `FIREDRILL_TEST_SEEDS`.
fn seeds() -> Vec<u64> {
    match std::env::var("FIREDRILL_TEST_SEEDS") {
        Ok(list) => list
            .split(',')
            .map(|s| {
                s.trim()
                    .parse()
                    .expect("FIREDRILL_TEST_SEEDS: seeds, comma-separated")
            })
            .collect(),
        Err(_) => SEEDS.to_vec(),
    }
}

/// Where `breaker`'s inferred journal in `report` is not a path of the
/// state machine (from closed, each transition from the state the one
/// before reached, never to the state it is in); `None` when it is.
pub fn invalid_path(report: &serde_json::Value, breaker: &str) -> Option<String> {
    let mut state = "closed".to_string();
    for (at, from, to) in transitions(report, breaker) {
        if from != state || from == to {
            return Some(format!(
                "{breaker}: {from} -> {to} at {at:.0} ms while {state}"
            ));
        }
        state = to;
    }
    None
}

/// `breaker`'s `correlation` in `report`: calls paired by a request id of
/// the drill, of the calls counted.
pub fn paired_share(report: &serde_json::Value, breaker: &str) -> (u64, u64) {
    let breakers = report["breakers"].as_array().expect("a breakers list");
    let b = breakers
        .iter()
        .find(|b| b["name"] == breaker)
        .unwrap_or_else(|| panic!("no breaker {breaker}"));
    let c = &b["correlation"];
    (c["paired"].as_u64().unwrap(), c["of"].as_u64().unwrap())
}

/// The drill of `seed` passed, and each of `breakers` was read from calls
/// at least 95% of which carried the id of a request of the drill, into a
/// journal that is a path of the state machine.
pub fn passed_paired_by_id(seed: u64, drill: &Drill, breakers: &[&str]) {
    assert_eq!(
        drill.exit,
        Some(0),
        "seed {seed}: {}\n{:#}",
        drill.output,
        drill.report["verdicts"]
    );
    for breaker in breakers {
        let (paired, of) = paired_share(&drill.report, breaker);
        assert!(
            of > 50 && paired * 100 >= of * 95,
            "seed {seed}: {breaker}: {paired} of {of} calls paired by id"
        );
        assert_eq!(invalid_path(&drill.report, breaker), None, "seed {seed}");
    }
}
