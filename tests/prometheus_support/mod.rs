//! A real Prometheus (Debian's `prometheus` package, installed by
//! ci/install-test-clients.sh) for the tests that judge a drill by it: a
//! temporary config scraping loopback targets every second, its storage
//! in a temporary directory, started on a free port, ready before it is
//! handed out, stopped (and reaped) on drop.
#![allow(dead_code, unreachable_pub, missing_docs)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use super::port_support::free_port;

/// The scrape and rule evaluation interval of the test's Prometheus.
pub const SCRAPE_INTERVAL: &str = "1s";

/// A running Prometheus; stopped on drop.
pub struct Prometheus {
    pub port: u16,
    child: Child,
    /// Its config, rules and storage.
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// Starts Prometheus scraping `127.0.0.1:PORT/metrics` of each of
    /// `targets` (job `service`), with `rules` (a rule file's YAML) when
    /// given; returns once it is ready and every target was scraped up.
    pub fn start(targets: &[u16], rules: Option<&str>) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let list: Vec<String> = targets.iter().map(|p| format!("'127.0.0.1:{p}'")).collect();
        let mut config = format!(
            "global:\n  scrape_interval: {SCRAPE_INTERVAL}\n  evaluation_interval: {SCRAPE_INTERVAL}\n\
             scrape_configs:\n  - job_name: service\n    static_configs:\n      - targets: [{}]\n",
            list.join(", ")
        );
        if let Some(rules) = rules {
            std::fs::write(dir.path().join("rules.yml"), rules).unwrap();
            config.push_str("rule_files: [rules.yml]\n");
        }
        let file = dir.path().join("prometheus.yml");
        std::fs::write(&file, config).unwrap();
        let child = Command::new("/usr/bin/prometheus")
            .arg(format!("--config.file={}", file.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start /usr/bin/prometheus (run ci/install-test-clients.sh): {e}")
            });
        let prometheus = Prometheus {
            port,
            child,
            _dir: dir,
        };
        prometheus.wait_until(|p| p.get("/-/ready").0 == 200, "ready");
        let up = targets.len();
        prometheus.wait_until(
            |p| {
                p.get("/api/v1/query?query=sum(up)")
                    .1
                    .contains(&format!("\"{up}\"]"))
            },
            "scraping every target",
        );
        prometheus
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// `GET path`: the status (0 when nothing answered) and the body.
    pub fn get(&self, path: &str) -> (u16, String) {
        get(self.port, path)
    }

    // A real process on the wall clock: poll it, bounded to 30 s.
    #[allow(clippy::disallowed_methods)]
    fn wait_until(&self, ok: impl Fn(&Prometheus) -> bool, what: &str) {
        for _ in 0..300 {
            if ok(self) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("Prometheus on {} was not {what} within 30s", self.port);
    }
}

/// `GET path` on 127.0.0.1:`port` (HTTP/1.0, whole answer): the status (0
/// when nothing answered) and the body.
pub fn get(port: u16, path: &str) -> (u16, String) {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return (0, String::new());
    };
    let _ = write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// Whether `path` exists under the repository (for messages).
pub fn installed() -> bool {
    Path::new("/usr/bin/prometheus").exists()
}
