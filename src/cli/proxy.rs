//! `firedrill proxy`: a fault-injecting proxy until Ctrl-C or SIGTERM.

use std::path::PathBuf;
use std::sync::Arc;

use clap::builder::PossibleValue;

use super::exit::{CliError, EXIT_OK};
use super::runtime::{init_logging, runtime, shutdown_on_stop_signal};
use crate::fault::FaultPlan;
use crate::proxy::{BoundProxy, ProxyMode};
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
    #[arg(long)]
    pub listen: String,
    /// Address of the dependency, `host:port`.
    #[arg(long)]
    pub upstream: String,
    /// `tcp` (byte streams) or `http` (per-request faults).
    #[arg(long, value_enum, default_value = "tcp")]
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
    init_logging("info");
    runtime()?.block_on(async {
        let bound = BoundProxy::bind(listen, upstream, *mode)
            .await
            .map_err(CliError::runtime)?;
        tracing::info!(listen = %bound.local_addr(), %upstream, mode = ?mode, faults = faults.len(), seed, "proxy ready");
        let plan = Arc::new(FaultPlan::new(faults, *seed, crate::clock::now()));
        let shutdown =
            shutdown_on_stop_signal(Some("stop signal: no new connections; draining"));
        bound
            .serve(plan, shutdown, grace.get())
            .await
            .map_err(|e| CliError::runtime(e).context(format!("--listen {listen}")))?;
        tracing::info!("proxy stopped");
        Ok(EXIT_OK)
    })
}
