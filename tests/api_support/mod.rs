//! Test harness for the control plane: `firedrill server` as a real
//! process on a free loopback port, an echo upstream, and a small JSON
//! client.
#![allow(dead_code, unreachable_pub, missing_docs)]

use std::net::SocketAddr;
use std::process::Stdio;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpListener;
use tokio::process::{Child, Command};

/// A running `firedrill server`; killed on drop.
pub struct Server {
    pub base: String,
    pub child: Child,
}

/// Starts `firedrill server --port 0 <extra>` and waits for its address.
pub async fn server(extra: &[&str]) -> Server {
    server_with_env(extra, &[]).await
}

pub async fn server_with_env(extra: &[&str], env: &[(&str, &str)]) -> Server {
    spawn(extra, env, None).await
}

/// Starts `firedrill server --port 0` logging at `level` into a pipe, read
/// from `child.stderr`.
pub async fn server_logging(level: &str) -> Server {
    spawn(&[], &[], Some(level)).await
}

async fn spawn(extra: &[&str], env: &[(&str, &str)], logging: Option<&str>) -> Server {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_firedrill"));
    cmd.args(["server", "--port", "0"])
        .args(extra)
        .env_remove("FIREDRILL_API_TOKEN")
        .env("RUST_LOG", logging.unwrap_or("warn"))
        .stdout(Stdio::piped())
        .stderr(if logging.is_some() {
            Stdio::piped()
        } else {
            Stdio::inherit()
        })
        .kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("firedrill runs");
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(std::time::Duration::from_secs(30), lines.next_line())
        .await
        .expect("server starts within 30s")
        .unwrap()
        .expect("a first line");
    let base = line
        .strip_prefix("firedrill server listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    Server { base, child }
}

/// An echo server on loopback.
pub async fn echo() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    addr
}

/// One answer: status, body text, parsed JSON (Null when not JSON).
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub text: String,
    pub json: Value,
    pub headers: reqwest::header::HeaderMap,
}

impl Server {
    pub fn client() -> reqwest::Client {
        reqwest::Client::builder().no_proxy().build().unwrap()
    }

    pub async fn call(&self, method: &str, path: &str, body: Option<&str>) -> Answer {
        self.call_with(method, path, body, &[]).await
    }

    pub async fn call_with(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
        headers: &[(&str, &str)],
    ) -> Answer {
        self.call_using(&Self::client(), method, path, body, headers)
            .await
    }

    /// [`Server::call_with`] through `client` (one client for many calls).
    pub async fn call_using(
        &self,
        client: &reqwest::Client,
        method: &str,
        path: &str,
        body: Option<&str>,
        headers: &[(&str, &str)],
    ) -> Answer {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut req = client.request(method, format!("{}{path}", self.base));
        if let Some(b) = body {
            req = req
                .header("content-type", "application/json")
                .body(b.to_string());
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = req.send().await.expect("the API answers");
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text = resp.text().await.unwrap();
        let json = serde_json::from_str(&text).unwrap_or(Value::Null);
        Answer {
            status,
            text,
            json,
            headers,
        }
    }

    /// Sends the server SIGTERM.
    pub fn sigterm(&self) {
        let pid = self.child.id().expect("running").to_string();
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        assert!(sent.success());
    }

    /// Sends the server SIGTERM and waits up to `bound` for it to exit.
    pub async fn sigterm_and_wait(
        &mut self,
        bound: std::time::Duration,
    ) -> std::process::ExitStatus {
        self.sigterm();
        tokio::time::timeout(bound, self.child.wait())
            .await
            .expect("the server exits after SIGTERM")
            .unwrap()
    }

    /// Creates a TCP proxy named `name` in front of `upstream`; returns its
    /// listen address.
    pub async fn proxy(&self, name: &str, upstream: SocketAddr) -> SocketAddr {
        let a = self
            .call(
                "POST",
                "/proxies",
                Some(&format!(
                    r#"{{"name":"{name}","listen":"127.0.0.1:0","upstream":"{upstream}"}}"#
                )),
            )
            .await;
        assert_eq!(a.status, 201, "{}", a.text);
        a.json["listen"].as_str().unwrap().parse().unwrap()
    }
}

/// The error body Toxiproxy sends.
pub fn error_body(message: &str, status: u16) -> Value {
    serde_json::json!({ "error": message, "status": status })
}
