//! `firedrill server --tls-cert --tls-key [--tls-client-ca]`: the drill's
//! agent client calls it over `https://` with the CA it is given and, for
//! mTLS, its client certificate; a wrong CA, an expired server
//! certificate and a missing client certificate are each refused with a
//! message that names the cause. Certificates are made here (rcgen).
#![allow(clippy::disallowed_methods)]

mod cert_support;
mod port_support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use cert_support::certificates;
use firedrill::agent::AgentClient;
use firedrill::tls::{TlsClient, TlsKeys, TlsOptions};

/// `firedrill server` over TLS with `server` (a label) and, for mTLS, the
/// CA `client_ca`; killed on drop.
struct Agent(Child, u16);

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn agent(dir: &Path, server: &str, client_ca: Option<&str>) -> Agent {
    let port = port_support::free_port();
    let file = |name: String| dir.join(name).to_str().unwrap().to_string();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_firedrill"));
    cmd.args(["server", "--port", &port.to_string()])
        .args(["--tls-cert", &file(format!("{server}.pem"))])
        .args(["--tls-key", &file(format!("{server}-key.pem"))]);
    if let Some(ca) = client_ca {
        cmd.args(["--tls-client-ca", &file(format!("{ca}-ca.pem"))]);
    }
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let agent = Agent(child, port);
    for _ in 0..400 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return agent;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("the agent never listened on {port}");
}

/// The agent client's answer to `GET /version` on `agent` with `tls`
/// (files in `dir`): the status, or the refusal's message.
async fn version(dir: &Path, agent: &Agent, tls: TlsOptions) -> Result<u16, String> {
    let client = TlsClient::load(&tls, dir, TlsKeys::yaml("agent.tls")).map_err(|e| e.message)?;
    let api = format!("https://127.0.0.1:{}", agent.1);
    let client = AgentClient::new(&api, None, Some(client), firedrill::clock::now())
        .await
        .map_err(|e| e.0)?;
    let answer = client
        .call(http::Method::GET, "/version", None)
        .await
        .map_err(|e| e.0)?;
    Ok(answer.status.as_u16())
}

fn options(ca: &str, client: bool) -> TlsOptions {
    TlsOptions {
        ca_file: Some(format!("{ca}-ca.pem")),
        client_cert: client.then(|| "drill.pem".to_string()),
        client_key: client.then(|| "drill-key.pem".to_string()),
        insecure_skip_verify: false,
    }
}

#[tokio::test]
async fn the_agent_client_calls_an_mtls_agent_with_its_ca_and_client_certificate() {
    let dir = certificates();
    let agent = agent(dir.path(), "agent", Some("drill"));
    assert_eq!(
        version(dir.path(), &agent, options("drill", true)).await,
        Ok(200)
    );
}

#[tokio::test]
async fn a_wrong_ca_is_refused_naming_the_unknown_issuer() {
    let dir = certificates();
    let agent = agent(dir.path(), "agent", None);
    let refused = version(dir.path(), &agent, options("other", false))
        .await
        .unwrap_err();
    assert!(refused.contains("UnknownIssuer"), "{refused}");
    assert!(refused.contains("agent.tls.ca_file"), "{refused}");
}

#[tokio::test]
async fn an_expired_agent_certificate_is_refused_naming_it_expired() {
    let dir = certificates();
    let agent = agent(dir.path(), "expired", None);
    let refused = version(dir.path(), &agent, options("drill", false))
        .await
        .unwrap_err();
    assert!(refused.contains("Expired"), "{refused}");
}

#[tokio::test]
async fn a_missing_client_certificate_is_refused_naming_the_certificate_required() {
    let dir = certificates();
    let agent = agent(dir.path(), "agent", Some("drill"));
    let refused = version(dir.path(), &agent, options("drill", false))
        .await
        .unwrap_err();
    assert!(refused.contains("CertificateRequired"), "{refused}");
    assert!(refused.contains("agent.tls.client_cert"), "{refused}");
}
