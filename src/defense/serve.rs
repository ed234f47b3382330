//! The defense line as a standalone reverse proxy: hyper on the client
//! side, the line's pooled client towards the dependency.

use std::sync::Arc;

use super::config::DefenseConfig;
use super::line::DefenseLine;
use super::report::{JournalFile, NoObserver, Observer};
use crate::cli::CliError;
use crate::clock::Duration;
use crate::http::ShutdownSignal;
use crate::http::client::{HttpUpstream, Upstream};
use crate::net::Acceptor;
use crate::net::{self, TcpAcceptor, TcpConnector};

/// Serves `line` on `acceptor` until `shutdown`, then drains for `grace`.
pub async fn serve<A: Acceptor>(
    acceptor: A,
    line: Arc<DefenseLine>,
    shutdown: ShutdownSignal,
    grace: Duration,
) -> std::io::Result<()> {
    crate::http::serve(
        acceptor,
        Arc::new(crate::http::Open),
        move |stream, shutdown| {
            let line = line.clone();
            async move {
                let service = hyper::service::service_fn(move |req| {
                    let line = line.clone();
                    async move { Ok::<_, std::convert::Infallible>(line.handle(req).await) }
                });
                crate::http::serve_http(stream, service, shutdown, std::future::pending()).await;
            }
        },
        shutdown,
        grace,
    )
    .await
}

/// What `firedrill defend` was asked.
#[derive(Debug, Clone)]
pub struct DefendOptions {
    /// The defense config file.
    pub config: std::path::PathBuf,
    /// `--listen`.
    pub listen: String,
    /// `--upstream`.
    pub upstream: String,
    /// `--journal`.
    pub journal: Option<std::path::PathBuf>,
    /// `--seed`.
    pub seed: u64,
    /// `--grace`.
    pub grace: Duration,
    /// `--metrics-listen`.
    pub metrics_listen: Option<std::net::SocketAddr>,
}

/// `firedrill defend`: loads the config, binds, serves until a stop signal.
pub fn defend_command(options: &DefendOptions) -> Result<u8, CliError> {
    let DefendOptions {
        listen,
        upstream,
        seed,
        grace,
        ..
    } = options;
    let (listen, upstream, seed, grace) = (listen.as_str(), upstream.as_str(), *seed, *grace);
    let journal = options.journal.as_deref();
    let config: DefenseConfig = crate::schema::from_yaml_file(&options.config)?;
    if upstream.starts_with("https://") {
        return Err(CliError::Invalid(format!(
            "--upstream {upstream}: https is not supported; give host:port or http://host:port"
        )));
    }
    let observer: Arc<dyn Observer> = match journal {
        Some(path) => Arc::new(
            JournalFile::create(path)
                .map_err(|e| CliError::Runtime(format!("--journal {}: {e}", path.display())))?,
        ),
        None => Arc::new(NoObserver),
    };
    crate::cli::init_logging("info");
    crate::cli::runtime()?.block_on(async {
        let dial = |addr: &str| {
            let authority = crate::http::client::authority(addr).to_string();
            async move {
                let resolved = net::resolve(&authority)
                    .await
                    .map_err(|e| CliError::Runtime(format!("--upstream {authority}: cannot resolve: {e}")))?;
                Ok::<_, CliError>(Arc::new(HttpUpstream::new(Arc::new(TcpConnector { addr: resolved }), &authority)) as Arc<dyn Upstream>)
            }
        };
        let primary = dial(upstream).await?;
        let mut backups = std::collections::BTreeMap::new();
        for route in config.routes.values() {
            if let Some(addr) = route.fallback.as_ref().and_then(|f| f.backup.as_deref()) {
                backups.insert(addr.to_string(), dial(addr).await?);
            }
        }
        let backup = |addr: &str| backups.get(addr).cloned().expect("every backup was dialled above");
        let line = DefenseLine::new(&config, primary, &backup, seed, crate::clock::now(), observer);
        let addr = net::resolve(listen).await.map_err(|e| CliError::Runtime(format!("--listen {listen}: {e}")))?;
        let acceptor = TcpAcceptor::bind(addr)
            .await
            .map_err(|e| CliError::Runtime(format!("--listen {listen}: cannot bind: {e}")))?;
        tracing::info!(listen = %acceptor.local_addr(), %upstream, routes = config.routes.len(), "defense line ready");
        let (stop, shutdown) = ShutdownSignal::new();
        if let Some(addr) = options.metrics_listen {
            let metrics = TcpAcceptor::bind(addr)
                .await
                .map_err(|e| CliError::Runtime(format!("--metrics-listen {addr}: cannot bind: {e}")))?;
            let registry = Arc::new(crate::metrics::MetricsRegistry::default());
            registry.register(line.clone());
            tracing::info!(listen = %metrics.local_addr(), "metrics ready at /metrics");
            tokio::spawn(crate::metrics::serve(metrics, registry, shutdown.clone()));
        }
        tokio::spawn(async move {
            crate::cli::stop_signal().await;
            let _ = stop.send(true);
        });
        serve(acceptor, line.clone(), shutdown, grace)
            .await
            .map_err(|e| CliError::Runtime(format!("--listen {listen}: {e}")))?;
        tracing::info!(requests = line.requests(), attempts = line.attempts(), "defense line stopped");
        Ok(crate::cli::EXIT_OK)
    })
}
