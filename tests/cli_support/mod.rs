//! Running firedrill's own commands as child processes: started on a port
//! of the kernel's choosing, and ready when their log says so.
#![allow(dead_code, unreachable_pub)]

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Lines};
use std::process::{Child, ChildStderr, Command, Stdio};

use assert_cmd::cargo::CommandCargoExt;

/// The firedrill binary of this build.
pub fn firedrill() -> Command {
    Command::cargo_bin("firedrill").unwrap()
}

/// Runs `firedrill proxy --listen 127.0.0.1:0 --upstream 127.0.0.1:9` with
/// `args` after, for flags it must refuse before listening: its exit code
/// and what it wrote on stderr.
pub fn refused_proxy<A: AsRef<OsStr>>(args: impl IntoIterator<Item = A>) -> (Option<i32>, String) {
    let out = firedrill()
        .args([
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "127.0.0.1:9",
        ])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Spawns `cmd` (given `--listen 127.0.0.1:0`) with info logs on a pipe,
/// waits for a log line with `ready` and returns the child, the `listen=`
/// address of that line and the rest of its log (read it, or drop it to
/// stop reading). A port picked by the test and freed before the child
/// binds it could be taken meanwhile (by a client socket of another test);
/// a port the child's kernel call chose cannot. Panics with everything the
/// child logged if it exits first.
pub fn spawn_until_ready(
    mut cmd: Command,
    ready: &str,
) -> (Child, String, Lines<BufReader<ChildStderr>>) {
    let mut child = cmd
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    loop {
        let Some(Ok(line)) = lines.next() else {
            let _ = child.kill();
            let status = child.wait();
            panic!("exited before it was ready ({status:?}): {seen:#?}");
        };
        if line.contains(ready) {
            let listen = line
                .split_whitespace()
                .find_map(|field| field.strip_prefix("listen="))
                .unwrap_or_else(|| panic!("no listen= in {line:?}"));
            return (child, listen.to_string(), lines);
        }
        seen.push(line);
    }
}

/// A child process killed when dropped: a test that fails half-way leaves
/// no process behind (one would hold the test's output open, and the test
/// run would wait for it).
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Open descriptors of process `pid`.
pub fn open_descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

/// Polls `done` every 20 ms until it holds; fails after `patience`. For
/// tests that drive real processes in real time (a generous overall limit,
/// never a timing threshold).
#[allow(clippy::disallowed_methods)]
pub fn wait_for(mut done: impl FnMut() -> bool, what: &str, patience: std::time::Duration) {
    let poll = std::time::Duration::from_millis(20);
    for _ in 0..patience.as_millis() / poll.as_millis() {
        if done() {
            return;
        }
        std::thread::sleep(poll);
    }
    panic!("never saw {what} within {patience:?}");
}

/// An HTTP/2 connection (h2c, prior knowledge) to `addr`, driven in the
/// background: its sender.
pub async fn h2c_connect<B>(addr: &str) -> hyper::client::conn::http2::SendRequest<B>
where
    B: http_body::Body + Send + Unpin + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    h2c_open(addr).await.0
}

/// [`h2c_connect`], with the task that drives the connection (it ends when
/// the connection does).
pub async fn h2c_open<B>(
    addr: &str,
) -> (
    hyper::client::conn::http2::SendRequest<B>,
    tokio::task::JoinHandle<Result<(), hyper::Error>>,
)
where
    B: http_body::Body + Send + Unpin + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    )
    .await
    .unwrap();
    (sender, tokio::spawn(connection))
}
