//! A real PostgreSQL server for the history tests: Debian's postgresql
//! package (installed by ci/install-test-clients.sh), a fresh cluster in a
//! temporary folder, listening on 127.0.0.1 only, trust authentication for
//! one user, stopped and removed when dropped. Run as root, the server runs
//! as the package's `postgres` user (it refuses root).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::port_support::free_port;

/// A running server.
pub(crate) struct Postgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    /// The URL firedrill is given.
    pub(crate) url: String,
}

/// Debian's server binaries: /usr/lib/postgresql/VERSION/bin.
fn bin_dir() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path().join("bin"))
                .filter(|bin| bin.join("initdb").exists())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found.pop().expect(
        "PostgreSQL's server is not installed (Debian's postgresql package: ci/install-test-clients.sh installs it)",
    )
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// `program args`, as the postgres user when we are root.
fn as_server_user(program: &Path, args: &[&str]) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program).args(args);
        c
    } else {
        let mut c = Command::new(program);
        c.args(args);
        c
    }
}

fn ok(mut command: Command, what: &str) {
    let out = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Postgres {
    /// A new cluster, started and ready.
    pub(crate) fn start() -> Postgres {
        let bin = bin_dir();
        let dir = tempfile::tempdir().unwrap();
        if is_root() {
            ok(
                {
                    let mut c = Command::new("chown");
                    c.arg("postgres").arg(dir.path());
                    c
                },
                "chown the cluster's folder",
            );
        }
        let data = dir.path().join("data");
        let data = data.to_str().unwrap();
        ok(
            as_server_user(
                &bin.join("initdb"),
                &["-D", data, "-U", "drill", "--auth=trust", "-E", "UTF8"],
            ),
            "initdb",
        );
        let port = free_port();
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1",
            dir.path().display()
        );
        let log = dir.path().join("server.log");
        ok(
            as_server_user(
                &bin.join("pg_ctl"),
                &[
                    "-D",
                    data,
                    "-o",
                    &options,
                    "-l",
                    log.to_str().unwrap(),
                    "-w",
                    "-t",
                    "120",
                    "start",
                ],
            ),
            "pg_ctl start",
        );
        Postgres {
            url: format!("postgres://drill@127.0.0.1:{port}/postgres"),
            dir,
            bin,
        }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let data = self.dir.path().join("data");
        let _ = as_server_user(
            &self.bin.join("pg_ctl"),
            &["-D", data.to_str().unwrap(), "-m", "immediate", "stop"],
        )
        .output();
    }
}
