//! `firedrill proxy`: a fault-injecting proxy until Ctrl-C or SIGTERM.

use std::path::PathBuf;
use std::sync::Arc;

use clap::builder::PossibleValue;

use super::exit::{CliError, EXIT_OK};
use super::runtime::{init_logging, runtime, shutdown_on_stop_signal};
use crate::clock::Duration;
use crate::fault::FaultPlan;
use crate::proxy::{BoundProxy, ProxyMode};

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

/// What `firedrill proxy` was asked.
#[derive(Debug, Clone)]
pub struct ProxyOptions {
    /// `--listen`.
    pub listen: String,
    /// `--upstream`.
    pub upstream: String,
    /// `--mode`.
    pub mode: ProxyMode,
    /// `--faults`: none is a pass-through.
    pub faults: Option<PathBuf>,
    /// `--seed`.
    pub seed: u64,
    /// `--grace`.
    pub grace: Duration,
}

/// Loads the faults, binds, serves until a stop signal, drains.
pub fn proxy(options: &ProxyOptions) -> Result<u8, CliError> {
    let ProxyOptions {
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
            .serve(plan, shutdown, *grace)
            .await
            .map_err(|e| CliError::runtime(e).context(format!("--listen {listen}")))?;
        tracing::info!("proxy stopped");
        Ok(EXIT_OK)
    })
}
