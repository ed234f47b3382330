//! `firedrill proxy`: a fault-injecting proxy until Ctrl-C or SIGTERM,
//! optionally recording every HTTP request (`--record`) and serving its
//! counters (`--metrics-listen`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use clap::builder::PossibleValue;

use super::exit::{CliError, EXIT_OK};
use super::runtime::{init_logging, shutdown_on_stop_signal};
use crate::clock::Duration;
use crate::fault::FaultPlan;
use crate::http::endpoint::Endpoint;
use crate::proxy::record::{JsonLines, flush_every};
use crate::proxy::{BoundProxy, Forward, ProxyMetrics, ProxyMode, RecordSink, Recorder, Telemetry};
use crate::schema::units::Dur;

impl clap::ValueEnum for ProxyMode {
    fn value_variants<'a>() -> &'a [Self] {
        &ProxyMode::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.name()).help(match self {
            ProxyMode::Tcp => "Byte streams: every fault that acts on a connection",
            ProxyMode::Http => "HTTP/1.1: per-request faults, status injection",
        }))
    }
}

/// The flags of `firedrill proxy`.
#[derive(Debug, Clone, clap::Args)]
pub struct ProxyArgs {
    /// Address to listen on, e.g. `127.0.0.1:8080` (`:0` picks a port).
    #[arg(long, value_parser = super::address::listen)]
    pub listen: String,
    /// The dependency: `host:port`, or a URL `http://host:port`,
    /// `https://host[:port]` (the proxy speaks TLS to it; its clients speak
    /// plain), `h2c://host:port` (HTTP/2 without TLS, a gRPC server's;
    /// `--mode http`), with an optional path prefix put before every
    /// request path (`--mode http`).
    #[arg(long)]
    pub upstream: String,
    /// TLS towards an `https://` upstream.
    #[command(flatten)]
    pub tls: super::tls::TlsArgs,
    /// What a client's FIN means while its request is in flight.
    #[command(flatten)]
    pub client_close: super::runtime::ClientCloseArgs,
    /// How many event loops serve the listen address.
    #[command(flatten)]
    pub loops: super::runtime::LoopsArgs,
    /// How many client connections are held at once (`--mode http`).
    #[command(flatten)]
    pub connections: super::runtime::ConnectionLimitArgs,
    /// `tcp` (byte streams) or `http` (per-request faults).
    #[arg(long, value_enum, default_value_t = ProxyMode::DEFAULT)]
    pub mode: ProxyMode,
    /// YAML fault file (see `fixtures/faults/good/`); none: pass-through.
    #[arg(long)]
    pub faults: Option<PathBuf>,
    /// Seed of every random decision (probabilities, jitter).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// How long in-flight connections may finish after a stop signal.
    #[arg(long, default_value = "5s")]
    pub grace: Dur,
    /// The proxy's name in records and metrics (default: the bound listen
    /// address).
    #[arg(long)]
    pub name: Option<String>,
    /// HTTP mode: write one JSON line per request to FILE (created or
    /// truncated): at_ms, proxy, method, path, request_id, status (null: cut,
    /// reset or blackholed), fault, latency_ms, bytes_in, bytes_out,
    /// reached_upstream. Flushed every second and on shutdown.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Serve Prometheus /metrics on this address: byte counters and
    /// firedrill_proxy_http_requests_total{proxy,status_class,fault}.
    #[arg(long, value_name = "ADDR", value_parser = super::address::socket)]
    pub metrics_listen: Option<SocketAddr>,
}

/// Loads the faults, binds, serves until a stop signal, drains.
pub fn proxy(options: &ProxyArgs) -> Result<u8, CliError> {
    let ProxyArgs {
        listen,
        upstream,
        mode,
        seed,
        grace,
        ..
    } = options;
    let faults = match &options.faults {
        Some(path) => super::validate::load_faults(path, Some(*mode))?.faults,
        None => Vec::new(),
    };
    let endpoint = Endpoint::parse("--upstream", upstream).map_err(CliError::invalid)?;
    if !endpoint.prefix.is_empty() && *mode != ProxyMode::Http {
        return Err(CliError::invalid(format!(
            "--upstream {upstream}: a path prefix needs --mode http"
        )));
    }
    if endpoint.h2c && *mode != ProxyMode::Http {
        return Err(CliError::invalid(format!(
            "--upstream {upstream}: h2c:// (HTTP/2 towards the upstream) needs --mode http; in tcp mode give host:port (HTTP/2 passes as bytes)"
        )));
    }
    let tls = options.tls.client("--upstream", &endpoint)?;
    if options.record.is_some() && *mode != ProxyMode::Http {
        return Err(CliError::invalid(
            "--record: records HTTP requests; give --mode http",
        ));
    }
    let record_error = |e: std::io::Error| {
        let path = options.record.clone().unwrap_or_default();
        CliError::runtime(e).context(format!("--record {}", path.display()))
    };
    init_logging("info");
    // The first event loop is this thread's; the others get threads of
    // their own once the listeners are bound.
    let event_loop = crate::loops::event_loop()
        .map_err(|e| CliError::runtime(e).context("cannot start the runtime"))?;
    event_loop.block_on(async {
        // A URL is a user's service: its Host and path prefix go on every
        // request; `host:port` forwards requests as they came, a gRPC call
        // over HTTP/2.
        let rewrite = match upstream.contains("://") {
            true => endpoint.rewrite(),
            false => crate::http::endpoint::Rewrite::version_not_given(),
        };
        let connector = super::tls::connector("--upstream", upstream, &endpoint, tls).await?;
        let forward = Forward {
            connector: Arc::new(connector),
            rewrite,
            client_fin: options.client_close.fin(),
            limit: Some(options.connections.limit()),
        };
        let bound = BoundProxy::bind_forward(listen, forward, *mode, options.loops.count())
            .await
            .map_err(CliError::runtime)?;
        // Created once the proxy could bind: a failed start leaves no file.
        let records = match &options.record {
            Some(path) => Some(Arc::new(JsonLines::create(path).map_err(record_error)?)),
            None => None,
        };
        let bound_addr = bound.local_addr().to_string();
        let name = options.name.clone().unwrap_or_else(|| bound_addr.clone());
        let plan = Arc::new(FaultPlan::new(faults, *seed, crate::clock::now()));
        let sink = records.clone().map(|r| r as Arc<dyn RecordSink>);
        let telemetry = Telemetry {
            traffic: Default::default(),
            recorder: Recorder::new(&name, plan.start(), sink),
        };
        let shutdown =
            shutdown_on_stop_signal(Some("stop signal: no new connections; draining"));
        if let Some(addr) = options.metrics_listen {
            let metrics = ProxyMetrics {
                name: name.clone(),
                listen: bound_addr,
                upstream: upstream.clone(),
                telemetry: telemetry.clone(),
            };
            super::runtime::serve_metrics(addr, Arc::new(metrics), shutdown.clone()).await?;
        }
        let flusher = records
            .clone()
            .map(|r| tokio::spawn(flush_every(r, Duration::from_secs(1))));
        tracing::info!(listen = %bound.local_addr(), %upstream, mode = ?mode, faults = plan.faults().len(), seed, %name, loops = bound.loops(), "proxy ready");
        let served = bound.serve_with(plan, telemetry, shutdown, grace.get()).await;
        // Every connection has ended: every record is in the buffer.
        if let Some(task) = flusher {
            task.abort();
        }
        if let Some(records) = &records {
            records.flush().map_err(record_error)?;
        }
        served.map_err(|e| CliError::runtime(e).context(format!("--listen {listen}")))?;
        tracing::info!("proxy stopped");
        Ok(EXIT_OK)
    })
}
