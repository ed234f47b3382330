//! TLS to a real target: `firedrill run` against a local HTTPS server
//! (rustls + hyper) whose certificate for 127.0.0.1 a test CA made here
//! (rcgen) signed. The right CA passes; a wrong one is a clear TLS error
//! with exit 3; `insecure_skip_verify` passes and says so in report.json;
//! a server that requires a client certificate refuses a run without one
//! and serves one with it; a path prefix in the URL reaches the server.
//! A service under test and its dependency over HTTPS are called with
//! their CA and prefix.
//! `firedrill defend` and `firedrill proxy --mode http` call an HTTPS
//! upstream with the same settings as flags.

mod port_support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use assert_cmd::Command;
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use port_support::free_port;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls::RootCertStore;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;

/// A certificate and its key, as DER (for the server) and PEM files (for
/// the experiment).
struct Leaf {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    cert_file: PathBuf,
    key_file: PathBuf,
}

/// A test CA whose certificate is written to `DIR/NAME-ca.pem`.
struct Authority {
    issuer: CertifiedIssuer<'static, KeyPair>,
    name: String,
    dir: PathBuf,
}

impl Authority {
    fn new(dir: &Path, name: &str) -> Authority {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        std::fs::write(dir.join(format!("{name}-ca.pem")), issuer.pem()).unwrap();
        Authority {
            issuer,
            name: name.to_string(),
            dir: dir.to_path_buf(),
        }
    }

    fn ca_file(&self) -> String {
        format!("{}-ca.pem", self.name)
    }

    fn ca_der(&self) -> CertificateDer<'static> {
        self.issuer.der().clone()
    }

    /// A certificate for `names`, signed by this CA, written as
    /// `DIR/LABEL.pem` and `DIR/LABEL-key.pem`.
    fn sign(&self, label: &str, names: &[&str]) -> Leaf {
        let key = KeyPair::generate().unwrap();
        let params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let cert_file = self.dir.join(format!("{label}.pem"));
        let key_file = self.dir.join(format!("{label}-key.pem"));
        std::fs::write(&cert_file, cert.pem()).unwrap();
        std::fs::write(&key_file, key.serialize_pem()).unwrap();
        Leaf {
            chain: vec![cert.der().clone()],
            key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            cert_file,
            key_file,
        }
    }
}

/// A local HTTPS server answering 200 to everything; it keeps the path and
/// the HTTP version of every request it served.
struct HttpsServer {
    addr: SocketAddr,
    paths: Arc<Mutex<Vec<String>>>,
    versions: Arc<Mutex<Vec<http::Version>>>,
}

/// Serves HTTPS on a free 127.0.0.1 port with `leaf`; with `client_ca`,
/// only clients holding a certificate that CA signed. No ALPN: HTTP/1.1.
async fn https_server(leaf: &Leaf, client_ca: Option<CertificateDer<'static>>) -> HttpsServer {
    https_server_with(leaf, client_ca, &[]).await
}

/// As [`https_server`], offering `alpn` (`[b"h2"]`: HTTP/2 only, as a gRPC
/// server behind TLS does); it serves what the client then speaks.
async fn https_server_with(
    leaf: &Leaf,
    client_ca: Option<CertificateDer<'static>>,
    alpn: &[&[u8]],
) -> HttpsServer {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            roots.add(ca).unwrap();
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .unwrap();
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder
        .with_single_cert(leaf.chain.clone(), leaf.key.clone_key())
        .unwrap();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let paths = Arc::new(Mutex::new(Vec::new()));
    let versions = Arc::new(Mutex::new(Vec::new()));
    let seen = paths.clone();
    let spoken = versions.clone();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let (acceptor, seen, spoken) = (acceptor.clone(), seen.clone(), spoken.clone());
            tokio::spawn(async move {
                // A failed handshake is the client's problem to report.
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(move |req: http::Request<_>| {
                    seen.lock().unwrap().push(req.uri().path().to_string());
                    spoken.lock().unwrap().push(req.version());
                    async {
                        Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(
                            Bytes::from_static(b"ok"),
                        )))
                    }
                });
                // HTTP/1.1, or HTTP/2 from a client that opens with its
                // preface (after ALPN chose it).
                let _ = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .serve_connection(TokioIo::new(tls), service)
                .await;
            });
        }
    });
    HttpsServer {
        addr,
        paths,
        versions,
    }
}

/// `firedrill run FILE --clock real --quiet ARGS` (from the file's folder).
async fn run_file(file: &Path, args: &[&str]) -> std::process::Output {
    let (file, args) = (file.to_path_buf(), args.join(" "));
    tokio::task::spawn_blocking(move || {
        Command::cargo_bin("firedrill")
            .unwrap()
            .current_dir(file.parent().unwrap())
            .args(["run", "--clock", "real", "--quiet"])
            .args(args.split_whitespace())
            .arg(&file)
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

/// Writes a 2-second experiment against `url` with `tls` (YAML flow map
/// or empty) into `dir` and runs it with the real clock; returns the exit
/// code, stderr and report.json (when written).
async fn run(dir: &Path, url: &str, tls: &str) -> (Option<i32>, String, serde_json::Value) {
    let tls_line = if tls.is_empty() {
        String::new()
    } else {
        format!("  tls: {tls}\n")
    };
    let yaml = format!(
        "name: tls target\nduration: 2s\nclock: real\ntarget:\n  url: {url}\n{tls_line}load:\n  - {{ name: stock, request: GET /stock/1, rate: 5/s, timeout: 5s }}\nexpect:\n  - route stock success >= 99%\n"
    );
    let file = dir.join("experiment.yaml");
    std::fs::write(&file, yaml).unwrap();
    let out = run_file(&file, &["--report-dir", "reports"]).await;
    let report = std::fs::read(dir.join("reports/report.json"))
        .map(|b| serde_json::from_slice(&b).unwrap())
        .unwrap_or(serde_json::Value::Null);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), stderr, report)
}

fn url(server: &HttpsServer) -> String {
    format!("https://127.0.0.1:{}", server.addr.port())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_test_ca_passes_and_a_wrong_ca_fails_at_start_with_a_clear_tls_error_and_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Authority::new(dir.path(), "test");
    let other = Authority::new(dir.path(), "other");
    let server = https_server(&ca.sign("server", &["127.0.0.1", "localhost"]), None).await;

    let ca_file = format!("{{ ca_file: {} }}", ca.ca_file());
    let (code, stderr, report) = run(dir.path(), &url(&server), &ca_file).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(report["passed"], true, "{report}");
    assert!(!server.paths.lock().unwrap().is_empty());

    let wrong = format!("{{ ca_file: {} }}", other.ca_file());
    let (code, stderr, _) = run(dir.path(), &url(&server), &wrong).await;
    assert_eq!(code, Some(3), "{stderr}");
    assert!(
        stderr.contains(
            "TLS: certificate for 127.0.0.1 not trusted (UnknownIssuer): give target.tls.ca_file"
        ),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insecure_skip_verify_passes_without_the_ca_and_warns_on_stderr_and_in_report_json() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Authority::new(dir.path(), "test");
    let server = https_server(&ca.sign("server", &["127.0.0.1"]), None).await;

    let (code, stderr, report) =
        run(dir.path(), &url(&server), "{ insecure_skip_verify: true }").await;
    assert_eq!(code, Some(0), "{stderr}");
    let warning = "target.tls.insecure_skip_verify: TLS certificate verification is OFF";
    assert!(stderr.contains(&format!("warning: {warning}")), "{stderr}");
    let warnings = report["warnings"]
        .as_array()
        .expect("warnings in report.json");
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().is_some_and(|w| w.starts_with(warning))),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_requiring_a_client_certificate_refuses_a_run_without_one_and_serves_one_with_it()
{
    let dir = tempfile::tempdir().unwrap();
    let ca = Authority::new(dir.path(), "test");
    let clients = Authority::new(dir.path(), "clients");
    let server = https_server(&ca.sign("server", &["127.0.0.1"]), Some(clients.ca_der())).await;
    let client = clients.sign("client", &["firedrill"]);

    let without = format!("{{ ca_file: {} }}", ca.ca_file());
    let (code, stderr, _) = run(dir.path(), &url(&server), &without).await;
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stderr.contains("target.tls.client_cert"), "{stderr}");
    assert!(server.paths.lock().unwrap().is_empty());

    let with = format!(
        "{{ ca_file: {}, client_cert: {}, client_key: {} }}",
        ca.ca_file(),
        client.cert_file.file_name().unwrap().to_string_lossy(),
        client.key_file.file_name().unwrap().to_string_lossy(),
    );
    let (code, stderr, report) = run(dir.path(), &url(&server), &with).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(report["passed"], true, "{report}");
    assert!(!server.paths.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_prefix_in_the_url_is_put_before_every_request_path() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Authority::new(dir.path(), "test");
    let server = https_server(&ca.sign("server", &["localhost"]), None).await;
    // By name: the certificate holds `localhost` only, sent as SNI.
    let url = format!("https://localhost:{}/prefix/", server.addr.port());

    let ca_file = format!("{{ ca_file: {} }}", ca.ca_file());
    let (code, stderr, _) = run(dir.path(), &url, &ca_file).await;
    assert_eq!(code, Some(0), "{stderr}");
    let paths = server.paths.lock().unwrap().clone();
    assert!(!paths.is_empty());
    assert!(paths.iter().all(|p| p == "/prefix/stock/1"), "{paths:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_ca_file_is_a_located_error_naming_the_key_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr, _) = run(
        dir.path(),
        "https://127.0.0.1:9",
        "{ ca_file: no-such-ca.pem }",
    )
    .await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("experiment.yaml:6:") && stderr.contains("target.tls.ca_file"),
        "{stderr}"
    );
    assert!(stderr.contains("no-such-ca.pem"), "{stderr}");
}

/// Starts `firedrill ARGS --listen 127.0.0.1:PORT` in `dir`; returns the
/// child and the port.
fn start(dir: &Path, args: &[&str]) -> (std::process::Child, u16) {
    let port = free_port();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .current_dir(dir)
        .args(args)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    (child, port)
}

/// Runs `firedrill defend` in front of `upstream` with `flags`; returns
/// the child and the port it listens on.
fn defend(dir: &Path, upstream: &str, flags: &[&str]) -> (std::process::Child, u16) {
    std::fs::write(
        dir.join("defense.yaml"),
        "timeout: 5s\nroutes:\n  stock:\n    match: /stock/*\n",
    )
    .unwrap();
    let mut args = vec!["defend", "--config", "defense.yaml", "--upstream", upstream];
    args.extend(flags);
    start(dir, &args)
}

/// `GET http://127.0.0.1:PORT/stock/1` once the port answers, then stops
/// `child`; the status, if it ever answered.
async fn get_stock_then_stop(
    port: u16,
    mut child: std::process::Child,
) -> Option<reqwest::StatusCode> {
    let client = reqwest::Client::new();
    let mut answer = None;
    // Generous: the process may start slowly on a loaded machine.
    for _ in 0..600 {
        match client
            .get(format!("http://127.0.0.1:{port}/stock/1"))
            .send()
            .await
        {
            Ok(response) => {
                answer = Some(response.status());
                break;
            }
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn defend_calls_an_https_upstream_with_ca_file_client_certificate_and_path_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Authority::new(dir.path(), "test");
    let clients = Authority::new(dir.path(), "clients");
    let server = https_server(&ca.sign("server", &["127.0.0.1"]), Some(clients.ca_der())).await;
    clients.sign("client", &["firedrill"]);
    let upstream = format!("{}/api", url(&server));
    let flags = [
        "--ca-file",
        "test-ca.pem",
        "--client-cert",
        "client.pem",
        "--client-key",
        "client-key.pem",
    ];
    let (child, port) = defend(dir.path(), &upstream, &flags);
    let answer = get_stock_then_stop(port, child).await;
    assert_eq!(answer, Some(reqwest::StatusCode::OK));
    assert_eq!(*server.paths.lock().unwrap(), ["/api/stock/1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_in_http_mode_forwards_to_an_https_upstream_with_its_ca_and_path_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Authority::new(dir.path(), "test");
    let server = https_server(&ca.sign("server", &["127.0.0.1"]), None).await;
    let upstream = format!("{}/api/", url(&server));
    let args = [
        "proxy",
        "--mode",
        "http",
        "--upstream",
        &upstream,
        "--ca-file",
        "test-ca.pem",
    ];
    let (child, port) = start(dir.path(), &args);
    let answer = get_stock_then_stop(port, child).await;
    assert_eq!(answer, Some(reqwest::StatusCode::OK));
    assert_eq!(*server.paths.lock().unwrap(), ["/api/stock/1"]);
}

#[test]
fn proxy_refuses_a_path_prefix_in_tcp_mode_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["proxy", "--upstream", "https://127.0.0.1:9/api"];
    let out = start(dir.path(), &args).0.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("a path prefix needs --mode http"),
        "{stderr}"
    );
}

#[test]
fn defend_refuses_tls_flags_with_a_plain_http_upstream_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let (child, _) = defend(
        dir.path(),
        "http://127.0.0.1:9",
        &["--insecure-skip-verify"],
    );
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("plain HTTP; --ca-file, --client-cert, --client-key and --insecure-skip-verify apply to an https:// upstream"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_services_https_dependency_is_called_with_its_ca_and_prefix_and_a_wrong_ca_is_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Authority::new(dir.path(), "test");
    let other = Authority::new(dir.path(), "other");
    let server = https_server(&ca.sign("server", &["127.0.0.1"]), None).await;
    // The user's service: a defense line whose upstream is the dependency
    // proxy's address.
    let listen = free_port();
    let (mut service, port) = defend(dir.path(), &format!("127.0.0.1:{listen}"), &[]);
    let experiment = |ca_file: &str| {
        format!(
            "name: https dependency\nduration: 2s\nclock: real\nsystem:\n  url: http://127.0.0.1:{port}\ndependencies:\n  inventory:\n    listen: 127.0.0.1:{listen}\n    upstream: {}/inventory\n    tls: {{ ca_file: {ca_file} }}\nload:\n  - {{ name: stock, request: GET /stock/1, rate: 5/s, timeout: 5s }}\nexpect:\n  - route stock success >= 99%\n",
            url(&server)
        )
    };
    let file = dir.path().join("system.yaml");
    std::fs::write(&file, experiment(&ca.ca_file())).unwrap();
    let right = run_file(&file, &[]).await;
    std::fs::write(&file, experiment(&other.ca_file())).unwrap();
    let wrong = run_file(&file, &[]).await;
    service.kill().unwrap();
    service.wait().unwrap();

    let stderr = String::from_utf8_lossy(&right.stderr);
    assert_eq!(right.status.code(), Some(0), "{stderr}");
    let paths = server.paths.lock().unwrap().clone();
    assert!(!paths.is_empty());
    assert!(paths.iter().all(|p| p == "/inventory/stock/1"), "{paths:?}");

    let stderr = String::from_utf8_lossy(&wrong.stderr);
    assert_eq!(wrong.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("dependencies.inventory.upstream")
            && stderr.contains("give dependencies.inventory.tls.ca_file"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_load_reaches_a_service_under_test_over_https_with_its_ca_and_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Authority::new(dir.path(), "test");
    let server = https_server(&ca.sign("server", &["127.0.0.1"]), None).await;
    let yaml = format!(
        "name: https service\nduration: 2s\nclock: real\nsystem:\n  url: {}/shop\n  tls: {{ ca_file: {} }}\nload:\n  - {{ name: stock, request: GET /stock/1, rate: 5/s, timeout: 5s }}\nexpect:\n  - route stock success >= 99%\n",
        url(&server),
        ca.ca_file()
    );
    let file = dir.path().join("service.yaml");
    std::fs::write(&file, yaml).unwrap();
    let out = run_file(&file, &[]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let paths = server.paths.lock().unwrap().clone();
    assert!(!paths.is_empty());
    assert!(paths.iter().all(|p| p == "/shop/stock/1"), "{paths:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_upstream_without_alpn_is_called_over_http1_by_the_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Authority::new(dir.path(), "test");
    let server = https_server(&ca.sign("server", &["127.0.0.1"]), None).await;
    let args = [
        "proxy",
        "--mode",
        "http",
        "--upstream",
        &url(&server),
        "--ca-file",
        "test-ca.pem",
    ];
    let (child, port) = start(dir.path(), &args);
    assert_eq!(
        get_stock_then_stop(port, child).await,
        Some(reqwest::StatusCode::OK)
    );
    assert_eq!(*server.versions.lock().unwrap(), [http::Version::HTTP_11]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_upstream_whose_alpn_chooses_h2_is_called_over_http2_by_proxy_and_defend() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Authority::new(dir.path(), "test");
    let leaf = ca.sign("server", &["127.0.0.1"]);
    for command in ["proxy", "defend"] {
        // HTTP/2 only: a client that stayed on HTTP/1.1 is not served.
        let server = https_server_with(&leaf, None, &[b"h2"]).await;
        let upstream = format!("{}/api", url(&server));
        let (child, port) = match command {
            "proxy" => start(
                dir.path(),
                &[
                    "proxy",
                    "--mode",
                    "http",
                    "--upstream",
                    &upstream,
                    "--ca-file",
                    "test-ca.pem",
                ],
            ),
            _ => defend(dir.path(), &upstream, &["--ca-file", "test-ca.pem"]),
        };
        let answer = get_stock_then_stop(port, child).await;
        assert_eq!(answer, Some(reqwest::StatusCode::OK), "{command}");
        assert_eq!(*server.paths.lock().unwrap(), ["/api/stock/1"], "{command}");
        assert_eq!(
            *server.versions.lock().unwrap(),
            [http::Version::HTTP_2],
            "{command}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drill_reaches_an_https_target_whose_alpn_chooses_h2_over_http2() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Authority::new(dir.path(), "test");
    let server = https_server_with(&ca.sign("server", &["127.0.0.1"]), None, &[b"h2"]).await;
    let (code, stderr, report) = run(dir.path(), &url(&server), "{ ca_file: test-ca.pem }").await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(report["routes"][0]["requests"].as_u64().unwrap() > 0);
    let versions = server.versions.lock().unwrap().clone();
    assert!(!versions.is_empty());
    assert!(
        versions.iter().all(|v| *v == http::Version::HTTP_2),
        "{versions:?}"
    );
}
