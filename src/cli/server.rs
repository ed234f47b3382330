//! `firedrill server`: checks the flags (a non-loopback `--host` needs a
//! token: exit 2 without one), loads `--config`, binds (exit 3 on failure),
//! prints the address, serves until Ctrl-C or SIGTERM.

use std::path::PathBuf;
use std::sync::Arc;

use http::StatusCode;

use super::exit::{CliError, EXIT_OK};
use super::runtime::{init_logging, runtime, shutdown_on_stop_signal};
use super::stdout::outln;
use crate::api::guard::{BODY_LIMIT, Guard, host_is_loopback};
use crate::api::proxy::ProxyInput;
use crate::api::server::{Api, serve};

/// The flags of `firedrill server`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServerArgs {
    /// Address of the API. Anything but loopback needs --api-token.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port of the API (0 picks a free one, printed at start).
    #[arg(long, default_value_t = 8474)]
    pub port: u16,
    /// JSON array of proxies to create at start, as Toxiproxy's -config.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Require `Authorization: Bearer <token>` on every request.
    #[arg(long, env = "FIREDRILL_API_TOKEN", hide_env_values = true)]
    pub api_token: Option<String>,
    /// Seed of every random decision (toxicity, jitter).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// How many request records each HTTP proxy keeps for a drill on
    /// another host to read; older ones are dropped, and the drill counts
    /// them lost.
    #[arg(long, default_value_t = crate::api::journal::KEPT as u64, value_parser = clap::value_parser!(u64).range(1..))]
    pub records_kept: u64,
    /// PEM certificate chain: serve the API over TLS (https://), with
    /// --tls-key. Read at start: new certificates take a restart.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// PEM CA certificate(s): a client must show a certificate it signed
    /// (mTLS), so that only the drill's hosts may call. With --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_client_ca: Option<PathBuf>,
    /// Serve a non-loopback --host over plain HTTP all the same: the token
    /// and every fault command cross the network in clear (logged as
    /// such). Without it, a non-loopback --host needs --tls-cert.
    #[arg(long)]
    pub insecure: bool,
}

/// Runs the server until a stop signal.
pub fn server(args: &ServerArgs) -> Result<u8, CliError> {
    let token = args.api_token.clone().filter(|t| !t.is_empty());
    if !host_is_loopback(&args.host) && token.is_none() {
        return Err(CliError::invalid(format!(
            "--host {}: not a loopback address; the API can flip faults on every proxy, so give --api-token (or FIREDRILL_API_TOKEN) to listen there",
            args.host
        )));
    }
    let off_loopback = !host_is_loopback(&args.host);
    if off_loopback && args.tls_cert.is_none() && !args.insecure {
        return Err(CliError::invalid(format!(
            "--host {}: not a loopback address, and plain HTTP would send the token and every fault command in clear: give --tls-cert and --tls-key (or --insecure to accept that)",
            args.host
        )));
    }
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(
            crate::tls::server_config(cert, key, args.tls_client_ca.as_deref())
                .map_err(CliError::invalid)?,
        ),
        _ => None,
    };
    let initial: Vec<ProxyInput> = match &args.config {
        Some(path) => {
            let text = crate::schema::read_bounded(path).map_err(|e| {
                CliError::invalid(e).context(format!("--config {}", path.display()))
            })?;
            serde_json::from_str(&text).map_err(|e| {
                CliError::invalid(e).context(format!(
                    "--config {}: expected a JSON array of proxies",
                    path.display()
                ))
            })?
        }
        None => Vec::new(),
    };
    init_logging("info");
    let runtime = runtime()?;
    let served = runtime.block_on(async move {
        let host = args.host.trim_start_matches('[').trim_end_matches(']');
        let addr = crate::net::resolve(&format!(
            "{}:{}",
            if host.contains(':') {
                format!("[{host}]")
            } else {
                host.to_string()
            },
            args.port
        ))
        .await
        .map_err(|e| CliError::runtime(e).context(format!("--host {}", args.host)))?;
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
            CliError::runtime(e).context(format!("--port {}: cannot bind {addr}", args.port))
        })?;
        let bound = listener.local_addr().map_err(CliError::runtime)?;
        let api = Arc::new(Api::new(Guard::new(token, BODY_LIMIT), args.seed));
        api.registry
            .keep_records(usize::try_from(args.records_kept).unwrap_or(usize::MAX));
        if !initial.is_empty() {
            let count = initial.len();
            api.registry.populate(initial).await.1.map_err(|e| {
                let message = format!("--config: {}", e.message);
                if e.status == StatusCode::BAD_REQUEST {
                    CliError::invalid(message)
                } else {
                    CliError::runtime(message)
                }
            })?;
            tracing::info!(proxies = count, "proxies created from --config");
        }
        let scheme = if tls.is_some() { "https" } else { "http" };
        if off_loopback && tls.is_none() {
            tracing::warn!(host = %args.host, "--insecure: the API serves plain HTTP off loopback; its token and fault commands cross the network in clear");
        }
        outln!("firedrill server listening on {scheme}://{bound}");
        let shutdown =
            shutdown_on_stop_signal(Some("stop signal: closing the API and every proxy"));
        serve(listener, api, tls, shutdown).await;
        Ok(EXIT_OK)
    });
    // A task that never yields (a toxic's connection) must not keep a
    // stopped server alive: drop the runtime without waiting for it.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    served
}
