//! The TLS flags of the subcommands that call a user's service, which may
//! be `https://` (`defend --upstream`, `proxy --upstream`).

use std::path::PathBuf;

use super::exit::CliError;
use crate::http::endpoint::Endpoint;
use crate::net::{self, TcpConnector};
use crate::tls::{ServiceConnector, TlsClient, TlsKeys, TlsOptions};

/// `--ca-file`, `--client-cert`, `--client-key`, `--insecure-skip-verify`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TlsArgs {
    /// PEM file of the CA(s) to trust for an `https://` upstream instead of
    /// the system's roots.
    #[arg(long)]
    pub ca_file: Option<PathBuf>,
    /// PEM file of the client certificate chain for mTLS (with
    /// `--client-key`).
    #[arg(long)]
    pub client_cert: Option<PathBuf>,
    /// PEM file of the client certificate's private key (with
    /// `--client-cert`).
    #[arg(long)]
    pub client_key: Option<PathBuf>,
    /// Accept any certificate from an `https://` upstream. Never for
    /// production: a warning is printed at start.
    #[arg(long)]
    pub insecure_skip_verify: bool,
}

impl TlsArgs {
    /// The TLS client these flags describe for `endpoint` (given as
    /// `flag`) when it is `https://`; none for plain HTTP. TLS flags with a
    /// plain upstream, or a file that cannot be used, are bad input
    /// (exit 2). Turning verification off prints a warning.
    pub fn client(&self, flag: &str, endpoint: &Endpoint) -> Result<Option<TlsClient>, CliError> {
        let shown = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
        let tls = TlsOptions {
            ca_file: shown(&self.ca_file),
            client_cert: shown(&self.client_cert),
            client_key: shown(&self.client_key),
            insecure_skip_verify: self.insecure_skip_verify,
        };
        if !endpoint.https {
            if tls != TlsOptions::default() {
                return Err(CliError::invalid(format!(
                    "{flag} {}: plain HTTP; --ca-file, --client-cert, --client-key and --insecure-skip-verify apply to an https:// upstream",
                    endpoint.url()
                )));
            }
            return Ok(None);
        }
        let client = TlsClient::load(&tls, std::path::Path::new(""), TlsKeys::flags())
            .map_err(CliError::invalid)?;
        if tls.insecure_skip_verify {
            eprintln!(
                "warning: {}",
                crate::tls::insecure_warning("--insecure-skip-verify", &endpoint.url())
            );
        }
        Ok(Some(client))
    }
}

/// Resolves `endpoint` (given as `flag` `written`) and returns how to dial
/// it, over TLS with `tls`. The handshake is tried once: a failure is logged, not
/// fatal (the upstream may come up later).
pub async fn connector(
    flag: &str,
    written: &str,
    endpoint: &Endpoint,
    tls: Option<TlsClient>,
) -> Result<ServiceConnector, CliError> {
    let addr = net::resolve(&endpoint.authority)
        .await
        .map_err(|e| CliError::runtime(e).context(format!("{flag} {written}: cannot resolve")))?;
    let tcp = TcpConnector { addr };
    let Some(client) = tls.filter(|_| endpoint.https) else {
        warn_if_unreachable(flag, written, addr).await;
        return Ok(ServiceConnector::plain(tcp));
    };
    let connector = ServiceConnector::new(tcp, Some((client, endpoint.host.as_str())))
        .map_err(|e| CliError::invalid(e).context(flag.to_string()))?;
    if let Err(err) = connector.probe().await {
        tracing::warn!(upstream = %endpoint.url(), %err, "TLS check at start failed");
    }
    Ok(connector)
}

/// How long the one connect attempt at start may take before it counts as
/// unreachable (a blackholed upstream never answers the SYN).
const START_CONNECT: std::time::Duration = std::time::Duration::from_secs(5);

/// One TCP connect to a plain upstream at start: one that refuses (or does
/// not answer) is a warning naming it and the error, not a failed start,
/// since it may come up later (the TLS path's probe says the same of a
/// handshake).
async fn warn_if_unreachable(flag: &str, written: &str, addr: std::net::SocketAddr) {
    let error =
        match tokio::time::timeout(START_CONNECT, tokio::net::TcpStream::connect(addr)).await {
            Ok(Ok(_)) => return,
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {}s", START_CONNECT.as_secs()),
        };
    tracing::warn!(
        "{flag} {written}: cannot connect at start ({error}); starting anyway, it may come up later"
    );
}
