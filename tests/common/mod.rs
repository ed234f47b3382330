//! Test harness: the fixture target and a fault proxy on loopback, in
//! process, with real sockets.
#![allow(dead_code, unreachable_pub, missing_docs)]

use std::net::SocketAddr;
use std::sync::Arc;

use firedrill::clock::Duration;
use firedrill::fault::{FaultFile, FaultPlan};
use firedrill::http::ShutdownSignal;
use firedrill::net::TcpAcceptor;
use firedrill::proxy::{BoundProxy, ProxyMode};
use firedrill::target::TargetStats;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A running target and proxy; dropping it stops both.
pub struct Rig {
    pub target: SocketAddr,
    pub proxy: SocketAddr,
    pub stats: Arc<TargetStats>,
    pub plan: Arc<FaultPlan>,
    stop: tokio::sync::watch::Sender<bool>,
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

pub fn faults(yaml: &str) -> FaultFile {
    firedrill::schema::from_yaml_str("test.yaml", yaml).expect("test fault file is valid")
}

/// Starts the fixture target and a proxy in `mode` with `yaml` faults.
pub async fn rig(mode: ProxyMode, yaml: &str) -> Rig {
    let (stop, shutdown) = ShutdownSignal::new();
    let target = TcpAcceptor::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let target_addr = target.local_addr();
    let stats = Arc::new(TargetStats::default());
    tokio::spawn(firedrill::target::serve(
        target,
        stats.clone(),
        shutdown.clone(),
    ));
    let (proxy_addr, plan) = start_proxy(mode, yaml, &target_addr.to_string(), shutdown).await;
    Rig {
        target: target_addr,
        proxy: proxy_addr,
        stats,
        plan,
        stop,
    }
}

/// Starts a proxy in front of `upstream`; returns its address and plan.
pub async fn start_proxy(
    mode: ProxyMode,
    yaml: &str,
    upstream: &str,
    shutdown: ShutdownSignal,
) -> (SocketAddr, Arc<FaultPlan>) {
    let file = if yaml.trim().is_empty() {
        FaultFile { faults: vec![] }
    } else {
        faults(yaml)
    };
    let plan = FaultPlan::new(file.faults, 1, firedrill::clock::now());
    start_proxy_with(mode, plan, upstream, shutdown).await
}

/// Starts a proxy with `plan` (e.g. one accepting faults added at runtime).
pub async fn start_proxy_with(
    mode: ProxyMode,
    plan: FaultPlan,
    upstream: &str,
    shutdown: ShutdownSignal,
) -> (SocketAddr, Arc<FaultPlan>) {
    let plan = Arc::new(plan);
    let bound = BoundProxy::bind("127.0.0.1:0", upstream, mode)
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve(plan.clone(), shutdown, Duration::from_secs(1)));
    (addr, plan)
}

/// Sends one raw HTTP/1.1 request and reads until the peer closes or
/// errors; returns the bytes read and how the read ended.
pub async fn raw_exchange(addr: SocketAddr, request: &str) -> (Vec<u8>, std::io::Result<()>) {
    // A reset fault may land before connect() returns or the request is
    // written: that is the reset, seen early.
    let mut stream = match TcpStream::connect(addr).await {
        Ok(s) => s,
        Err(e) => return (Vec::new(), Err(e)),
    };
    if let Err(e) = stream.write_all(request.as_bytes()).await {
        return (Vec::new(), Err(e));
    }
    let mut got = Vec::new();
    let mut buf = [0u8; 16384];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) => return (got, Ok(())),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => return (got, Err(e)),
        }
    }
}

/// Sends one raw HTTP/1.1 request, half-closes (shutdown of the write
/// side) and reads the answer to the end; panics unless it ends cleanly
/// within a generous margin.
pub async fn half_closed_exchange(addr: SocketAddr, request: &str) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    stream.shutdown().await.unwrap();
    let mut got = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        stream.read_to_end(&mut got),
    )
    .await
    .expect("the answer ends within the margin")
    .expect("a clean end");
    got
}

pub fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nhost: test\r\nconnection: close\r\n\r\n")
}

/// Splits a raw response into head and body.
pub fn split_response(raw: &[u8]) -> (String, &[u8]) {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    (
        String::from_utf8_lossy(&raw[..end]).to_string(),
        &raw[end + 4..],
    )
}

pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// target → fault proxy (HTTP) → defense line, all on loopback.
pub struct DefenseRig {
    pub rig: Rig,
    pub defense: SocketAddr,
    pub line: Arc<firedrill::defense::DefenseLine>,
    pub recorder: Arc<firedrill::defense::report::Recorder>,
    /// Stops the defense server when the rig is dropped.
    _stop: tokio::sync::watch::Sender<bool>,
}

impl DefenseRig {
    /// Requests that reached the dependency: answered by the target or by
    /// a fault the proxy injected in its place.
    pub fn dependency_calls(&self) -> u64 {
        let injected: u64 = (0..self.rig.plan.faults().len())
            .map(|i| self.rig.plan.injected(i))
            .sum();
        self.rig.stats.requests() + injected
    }

    pub fn breaker_state(&self, name: &str) -> firedrill::defense::breaker::State {
        self.line
            .breakers()
            .find(|(n, _)| *n == name)
            .expect("breaker exists")
            .1
            .state()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.defense)
    }
}

pub async fn defense_rig(faults_yaml: &str, defense_yaml: &str) -> DefenseRig {
    let rig = rig(ProxyMode::Http, faults_yaml).await;
    let defense = start_defense(rig.proxy, rig.target, defense_yaml).await;
    DefenseRig {
        rig,
        defense: defense.addr,
        line: defense.line,
        recorder: defense.recorder,
        _stop: defense.stop,
    }
}

/// A defense line served on loopback; dropping it stops the server.
pub struct Defense {
    pub addr: SocketAddr,
    pub line: Arc<firedrill::defense::DefenseLine>,
    pub recorder: Arc<firedrill::defense::report::Recorder>,
    pub stop: tokio::sync::watch::Sender<bool>,
}

/// Serves a defense line of `defense_yaml` calling `dependency`, its
/// backups calling `target`; a pool server `address: proxy` calls
/// `dependency`, `address: target` calls `target`.
pub async fn start_defense(
    dependency: SocketAddr,
    target: SocketAddr,
    defense_yaml: &str,
) -> Defense {
    use firedrill::http::client::{HttpUpstream, Upstream};
    let config: firedrill::defense::DefenseConfig =
        firedrill::schema::from_yaml_str("defense.yaml", defense_yaml)
            .expect("test defense config is valid");
    let recorder = Arc::new(firedrill::defense::report::Recorder::default());
    let connector = Arc::new(firedrill::net::TcpConnector { addr: dependency });
    let upstream: Arc<dyn Upstream> =
        Arc::new(HttpUpstream::new(connector, &dependency.to_string()));
    let backup = move |_: &str| -> Arc<dyn Upstream> {
        Arc::new(HttpUpstream::new(
            Arc::new(firedrill::net::TcpConnector { addr: target }),
            &target.to_string(),
        ))
    };
    let dial = |addr: SocketAddr| -> Arc<dyn Upstream> {
        Arc::new(HttpUpstream::new(
            Arc::new(firedrill::net::TcpConnector { addr }),
            &addr.to_string(),
        ))
    };
    let server = |server: &firedrill::defense::pool::config::ServerTarget| match server {
        firedrill::defense::pool::config::ServerTarget::Address(a) if a == "proxy" => {
            Some(dial(dependency))
        }
        firedrill::defense::pool::config::ServerTarget::Address(a) if a == "target" => {
            Some(dial(target))
        }
        _ => None,
    };
    let line = firedrill::defense::DefenseLine::new(
        &config,
        upstream,
        &backup,
        &server,
        1,
        firedrill::clock::now(),
        recorder.clone(),
    )
    .unwrap();
    let acceptor = TcpAcceptor::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let defense = acceptor.local_addr();
    let (stop, shutdown) = ShutdownSignal::new();
    tokio::spawn(firedrill::defense::serve::serve(
        acceptor,
        line.clone(),
        // A client that gives up on a probe must free its slot.
        firedrill::http::ClientFin::HangUp,
        None,
        shutdown,
        Duration::from_secs(1),
    ));
    Defense {
        addr: defense,
        line,
        recorder,
        stop,
    }
}

/// A server that switches every request with an `upgrade` header to
/// protocol `echo` (101) and then echoes the raw bytes it gets; any other
/// request gets 200. Runs until the test ends.
pub async fn upgrade_echo_server() -> SocketAddr {
    use http_body_util::Empty;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let service = hyper::service::service_fn(|mut req: hyper::Request<_>| async move {
                let mut resp = hyper::Response::new(Empty::<bytes::Bytes>::new());
                if req.headers().contains_key(hyper::header::UPGRADE) {
                    let upgrade = hyper::upgrade::on(&mut req);
                    tokio::spawn(async move {
                        let upgraded = upgrade.await.expect("the upgrade completes");
                        let mut io = hyper_util::rt::TokioIo::new(upgraded);
                        let (mut r, mut w) = tokio::io::split(&mut io);
                        let _ = tokio::io::copy(&mut r, &mut w).await;
                    });
                    *resp.status_mut() = hyper::StatusCode::SWITCHING_PROTOCOLS;
                    let headers = resp.headers_mut();
                    headers.insert(hyper::header::CONNECTION, "upgrade".parse().unwrap());
                    headers.insert(hyper::header::UPGRADE, "echo".parse().unwrap());
                }
                Ok::<_, std::convert::Infallible>(resp)
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .with_upgrades(),
            );
        }
    });
    addr
}

/// Asks `addr` to switch `path` to protocol `echo`; returns the response
/// head and, after a 101, the connection (the head's bytes consumed).
pub async fn request_upgrade(addr: SocketAddr, path: &str) -> (String, TcpStream) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "GET {path} HTTP/1.1\r\nhost: test\r\nconnection: upgrade\r\nupgrade: echo\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    // Byte by byte, so nothing after the head is read here.
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        let n = tokio::time::timeout(std::time::Duration::from_secs(10), stream.read(&mut byte))
            .await
            .expect("a response head within the margin")
            .unwrap();
        assert_eq!(n, 1, "closed before the end of the head: {head:?}");
        head.push(byte[0]);
    }
    (String::from_utf8_lossy(&head).to_string(), stream)
}

/// Sends bytes on an upgraded connection and expects them echoed back:
/// the tunnel carries both ways.
pub async fn assert_tunnel_echoes(mut stream: TcpStream) {
    let message = b"raw bytes after the switch, not HTTP";
    stream.write_all(message).await.unwrap();
    let mut echoed = vec![0u8; message.len()];
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        stream.read_exact(&mut echoed),
    )
    .await
    .expect("the echo within the margin")
    .expect("the tunnel carries the echo back");
    assert_eq!(echoed, message);
}
