//! `firedrill defend`: the defense line as a reverse proxy in front of a
//! dependency, until Ctrl-C or SIGTERM.

use std::path::PathBuf;
use std::sync::Arc;

use super::exit::{CliError, EXIT_OK};
use super::runtime::{init_logging, runtime, shutdown_on_stop_signal};
use crate::defense::DefenseLine;
use crate::defense::config::DefenseConfig;
use crate::defense::report::{JournalFile, NoObserver, Observer};
use crate::http::client::{HttpUpstream, Upstream};
use crate::http::endpoint::Endpoint;
use crate::net::{self, TcpAcceptor, TcpConnector};
use crate::schema::units::Dur;
use crate::tls::{ServiceConnector, TlsClient, TlsKeys, TlsOptions};

/// The flags of `firedrill defend`.
#[derive(Debug, Clone, clap::Args)]
pub struct DefendArgs {
    /// YAML file holding the defense section (routes, breakers, ...).
    #[arg(long)]
    pub config: PathBuf,
    /// Address to listen on.
    #[arg(long)]
    pub listen: String,
    /// The dependency: `host:port`, `http://host:port` or
    /// `https://host[:port]`, optionally with a path prefix put before
    /// every request path (`https://host/api`).
    #[arg(long)]
    pub upstream: String,
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
    /// Write breaker transitions here as JSON lines.
    #[arg(long)]
    pub journal: Option<PathBuf>,
    /// Seed of every random decision (retry jitter).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// How long in-flight requests may finish after a stop signal.
    #[arg(long, default_value = "5s")]
    pub grace: Dur,
    /// Serve Prometheus /metrics (resilience4j names) on this address.
    #[arg(long)]
    pub metrics_listen: Option<std::net::SocketAddr>,
}

/// `firedrill defend`: loads the config, binds, serves until a stop signal.
pub fn defend(options: &DefendArgs) -> Result<u8, CliError> {
    let DefendArgs {
        listen,
        upstream,
        seed,
        grace,
        ..
    } = options;
    let (listen, upstream, seed, grace) = (listen.as_str(), upstream.as_str(), *seed, *grace);
    let journal = options.journal.as_deref();
    let config: DefenseConfig = crate::schema::from_yaml_file(&options.config)?;
    let endpoint = Endpoint::parse("--upstream", upstream).map_err(CliError::invalid)?;
    let tls = tls_client(options, &endpoint)?;
    let observer: Arc<dyn Observer> =
        match journal {
            Some(path) => Arc::new(JournalFile::create(path).map_err(|e| {
                CliError::runtime(e).context(format!("--journal {}", path.display()))
            })?),
            None => Arc::new(NoObserver),
        };
    init_logging("info");
    runtime()?.block_on(async {
        let dial = |key: &'static str, url: &str| {
            let endpoint = Endpoint::parse(key, url);
            let tls = tls.clone();
            async move {
                let endpoint = endpoint.map_err(CliError::invalid)?;
                let resolved = net::resolve(&endpoint.authority).await.map_err(|e| {
                    CliError::runtime(e).context(format!("{key} {}: cannot resolve", endpoint.url()))
                })?;
                let tcp = TcpConnector { addr: resolved };
                let connector = match tls.filter(|_| endpoint.https) {
                    None => ServiceConnector::plain(tcp),
                    Some(client) => {
                        let connector = ServiceConnector::new(tcp, Some((client, endpoint.host.as_str())))
                            .map_err(|e| CliError::invalid(e).context(key))?;
                        // The upstream may come up later: a failed
                        // handshake is told, not fatal.
                        if let Err(err) = connector.probe().await {
                            tracing::warn!(upstream = %endpoint.url(), %err, "TLS check at start failed");
                        }
                        connector
                    }
                };
                let client = HttpUpstream::new(Arc::new(connector), &endpoint.authority)
                    .rewriting(endpoint.rewrite());
                Ok::<_, CliError>(Arc::new(client) as Arc<dyn Upstream>)
            }
        };
        let primary = dial("--upstream", upstream).await?;
        let mut backups = std::collections::BTreeMap::new();
        for route in config.routes.values() {
            if let Some(addr) = route.fallback.as_ref().and_then(|f| f.backup.as_deref()) {
                backups.insert(addr.to_string(), dial("fallback.backup", addr).await?);
            }
        }
        let backup = |addr: &str| backups.get(addr).cloned().expect("every backup was dialled above");
        let line = DefenseLine::new(&config, primary, &backup, seed, crate::clock::now(), observer);
        let addr = net::resolve(listen).await.map_err(|e| CliError::runtime(e).context(format!("--listen {listen}")))?;
        let acceptor = TcpAcceptor::bind(addr)
            .await
            .map_err(|e| CliError::runtime(e).context(format!("--listen {listen}: cannot bind")))?;
        tracing::info!(listen = %acceptor.local_addr(), %upstream, routes = config.routes.len(), "defense line ready");
        let shutdown = shutdown_on_stop_signal(None);
        if let Some(addr) = options.metrics_listen {
            super::runtime::serve_metrics(addr, line.clone(), shutdown.clone()).await?;
        }
        crate::defense::serve::serve(acceptor, line.clone(), shutdown, grace.get())
            .await
            .map_err(|e| CliError::runtime(e).context(format!("--listen {listen}")))?;
        tracing::info!(requests = line.requests(), attempts = line.attempts(), "defense line stopped");
        Ok(EXIT_OK)
    })
}

/// The TLS client the flags describe, for an `https://` upstream (and any
/// `https://` fallback backup); none for plain HTTP. TLS flags with a plain
/// upstream, or a file that cannot be used, are bad input (exit 2).
fn tls_client(options: &DefendArgs, endpoint: &Endpoint) -> Result<Option<TlsClient>, CliError> {
    let shown = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
    let tls = TlsOptions {
        ca_file: shown(&options.ca_file),
        client_cert: shown(&options.client_cert),
        client_key: shown(&options.client_key),
        insecure_skip_verify: options.insecure_skip_verify,
    };
    if !endpoint.https {
        if tls != TlsOptions::default() {
            return Err(CliError::invalid(format!(
                "--upstream {}: plain HTTP; --ca-file, --client-cert, --client-key and --insecure-skip-verify apply to an https:// upstream",
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
