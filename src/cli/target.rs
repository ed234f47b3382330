//! `firedrill target`: the embedded fixture server on its own.

use std::sync::Arc;

use super::exit::{CliError, EXIT_OK};
use super::runtime::{init_logging, runtime, shutdown_on_stop_signal};
use crate::target::TargetStats;

/// The flags of `firedrill target`.
#[derive(Debug, Clone, clap::Args)]
pub struct TargetArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:9000", value_parser = super::address::listen)]
    pub listen: String,
}

/// Serves the fixture routes on `--listen` until a stop signal.
pub fn target(args: &TargetArgs) -> Result<u8, CliError> {
    let listen = args.listen.as_str();
    init_logging("info");
    runtime()?.block_on(async {
        let addr = crate::net::resolve(listen)
            .await
            .map_err(|e| CliError::runtime(e).context(format!("--listen {listen}")))?;
        let acceptor = crate::net::TcpAcceptor::bind(addr)
            .await
            .map_err(|e| CliError::runtime(e).context(format!("--listen {listen}: cannot bind")))?;
        tracing::info!(listen = %acceptor.local_addr(), "fixture target ready");
        let shutdown = shutdown_on_stop_signal(None);
        let stats = Arc::new(TargetStats::default());
        crate::target::serve(acceptor, stats.clone(), shutdown)
            .await
            .map_err(CliError::runtime)?;
        tracing::info!(requests = stats.requests(), "fixture target stopped");
        Ok(EXIT_OK)
    })
}
