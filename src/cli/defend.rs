//! `firedrill defend`: the defense line as a reverse proxy in front of a
//! dependency, until Ctrl-C or SIGTERM.

use std::path::PathBuf;
use std::sync::Arc;

use super::exit::{CliError, EXIT_OK};
use super::runtime::{init_logging, shutdown_on_stop_signal};
use crate::defense::DefenseLine;
use crate::defense::config::DefenseConfig;
use crate::defense::pool::config::ServerTarget;
use crate::defense::report::{JournalFile, NoObserver, Observer};
use crate::http::client::{HttpUpstream, Upstream};
use crate::http::endpoint::Endpoint;
use crate::http::kept::KeptUpstream;
use crate::net::{self, TcpAcceptor};
use crate::schema::units::Dur;

/// The flags of `firedrill defend`.
#[derive(Debug, Clone, clap::Args)]
pub struct DefendArgs {
    /// YAML file holding the defense section (routes, breakers, ...).
    #[arg(long)]
    pub config: PathBuf,
    /// Address to listen on.
    #[arg(long, value_parser = super::address::listen)]
    pub listen: String,
    /// The dependency: `host:port`, `http://host:port`,
    /// `https://host[:port]` or `h2c://host:port` (HTTP/2 without TLS, a
    /// gRPC server's), optionally with a path prefix put before every
    /// request path (`https://host/api`).
    #[arg(long)]
    pub upstream: String,
    /// TLS towards an `https://` upstream.
    #[command(flatten)]
    pub tls: super::tls::TlsArgs,
    /// What a client's FIN means while its request is in flight.
    #[command(flatten)]
    pub client_close: super::runtime::ClientCloseArgs,
    /// How many client connections are held at once.
    #[command(flatten)]
    pub connections: super::runtime::ConnectionLimitArgs,
    /// How many event loops serve the listen address.
    #[command(flatten)]
    pub loops: super::runtime::LoopsArgs,
    /// Write breaker transitions and pool health changes here as JSON lines.
    #[arg(long)]
    pub journal: Option<PathBuf>,
    /// Seed of every random decision (retry jitter).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// How long in-flight requests may finish after a stop signal.
    #[arg(long, default_value = "5s")]
    pub grace: Dur,
    /// Serve Prometheus /metrics (resilience4j names) on this address.
    #[arg(long, value_name = "ADDR", value_parser = super::address::socket)]
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
    let text = crate::schema::read_text(&options.config)?;
    let shown = options.config.display().to_string();
    let config: DefenseConfig = crate::defense::import::expand::load_defense(&shown, &text)?;
    refuse_instances(&config, &options.config)?;
    let endpoint = Endpoint::parse("--upstream", upstream).map_err(CliError::invalid)?;
    let tls = options.tls.client("--upstream", &endpoint)?;
    let observer: Arc<dyn Observer> =
        match journal {
            Some(path) => Arc::new(JournalFile::create(path).map_err(|e| {
                CliError::runtime(e).context(format!("--journal {}", path.display()))
            })?),
            None => Arc::new(NoObserver),
        };
    init_logging("info");
    // The first event loop is this thread's; the others get threads of
    // their own once the listeners are bound.
    let event_loop = crate::loops::event_loop()
        .map_err(|e| CliError::runtime(e).context("cannot start the runtime"))?;
    event_loop.block_on(async {
        let dial = |key: &'static str, url: &str| {
            let endpoint = Endpoint::parse(key, url);
            let (tls, written) = (tls.clone(), url.to_string());
            async move {
                let endpoint = endpoint.map_err(CliError::invalid)?;
                let connector = super::tls::connector(key, &written, &endpoint, tls).await?;
                let connector = Arc::new(connector);
                // A plain http:// dependency gets connections of its own
                // (no pool task per request); HTTP/2 and TLS the pooled client.
                let client: Arc<dyn Upstream> =
                    match KeptUpstream::new(connector.clone(), &endpoint.authority, endpoint.rewrite()) {
                        Some(kept) => Arc::new(kept),
                        None => Arc::new(HttpUpstream::new(connector, &endpoint.authority).rewriting(endpoint.rewrite())),
                    };
                Ok::<_, CliError>(client)
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
        let mut servers = std::collections::BTreeMap::new();
        for (name, pool) in &config.pools {
            for (i, server) in pool.servers.iter().enumerate() {
                if let ServerTarget::Address(addr) = &server.target {
                    let key = format!("pools.{name}.servers[{i}].address");
                    let open = dial("pools.servers.address", addr).await.map_err(|e| e.context(key))?;
                    servers.insert(server.target.clone(), open);
                }
            }
        }
        let server = |target: &ServerTarget| servers.get(target).cloned();
        let line = DefenseLine::new(&config, primary, &backup, &server, seed, crate::clock::now(), observer)
            .map_err(CliError::invalid)?;
        let addr = net::resolve(listen).await.map_err(|e| CliError::runtime(e).context(format!("--listen {listen}")))?;
        let listeners = TcpAcceptor::bind_shared(addr, options.loops.count())
            .await
            .map_err(|e| CliError::runtime(e).context(format!("--listen {listen}: cannot bind")))?;
        let bound = listeners[0].local_addr();
        let listeners = crate::loops::prepare(listeners)
            .map_err(|e| CliError::runtime(e).context("--loops: cannot start an event loop"))?;
        tracing::info!(listen = %bound, %upstream, routes = config.routes.len(), loops = listeners.len(), "defense line ready");
        let shutdown = shutdown_on_stop_signal(None);
        if let Some(addr) = options.metrics_listen {
            super::runtime::serve_metrics(addr, line.clone(), shutdown.clone()).await?;
        }
        let (served, fin, grace) = (line.clone(), options.client_close.fin(), grace.get());
        let limit = options.connections.limit();
        tracing::info!(max = limit.max(), "connection limit (--max-connections)");
        crate::loops::serve_each(listeners, move |acceptor| {
            let limit = Some(limit.clone());
            crate::defense::serve::serve(acceptor, served.clone(), fin, limit, shutdown.clone(), grace)
        })
        .await
            .map_err(|e| CliError::runtime(e).context(format!("--listen {listen}")))?;
        tracing::info!(requests = line.requests(), attempts = line.attempts(), "defense line stopped");
        Ok(EXIT_OK)
    })
}

/// `firedrill defend` has no built-in target, so a pool server must be an
/// `address:`; an `instance:` server is refused before anything starts.
fn refuse_instances(config: &DefenseConfig, file: &std::path::Path) -> Result<(), CliError> {
    for (name, pool) in &config.pools {
        for (i, server) in pool.servers.iter().enumerate() {
            if let ServerTarget::Instance(instance) = &server.target {
                return Err(CliError::invalid(format!(
                    "{}: pools.{name}.servers[{i}].instance: `{instance}` names a target instance, \
                     which only experiments have: expected address: host:port",
                    file.display()
                )));
            }
        }
    }
    Ok(())
}
