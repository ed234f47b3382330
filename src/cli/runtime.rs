//! What every long-running subcommand sets up: the tokio runtime, logging
//! on stderr, and the stop signal (Ctrl-C or SIGTERM).

use super::exit::CliError;

/// A multi-threaded tokio runtime (one worker per available core, so
/// `taskset -c 0` gives one).
pub fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    // On one core (e.g. under `taskset -c 0`) a current-thread runtime does
    // the same work without the work-stealing machinery.
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let mut builder = if cores == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    builder
        .enable_all()
        .build()
        .map_err(|e| CliError::runtime(e).context("cannot start the runtime"))
}

/// Sets up `tracing` on stderr; `RUST_LOG` overrides `default`.
pub fn init_logging(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Colours only on a terminal: logs piped to a file stay plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    // A log that cannot be written (stderr closed: a supervisor's pipe gone,
    // `2>&-`) is dropped: tracing-subscriber would report it with
    // `eprintln!`, which panics on the same closed stderr, in whichever task
    // logged (a request's, whose stream the panic then resets).
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| MaskedStderr)
        .with_ansi(ansi)
        .log_internal_errors(false)
        .try_init();
}

/// Standard error with every secret variable's value masked: tracing
/// writes each event in one call, so a value is never split.
struct MaskedStderr;

impl std::io::Write for MaskedStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        std::io::stderr().write_all(crate::schema::vars::mask(&text).as_bytes())?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// Resolves when Ctrl-C or SIGTERM arrives.
pub async fn stop_signal() {
    match StopSignals::register() {
        Ok(mut signals) => signals.recv().await,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Ctrl-C and SIGTERM, caught from the moment they are registered (inside
/// a tokio runtime): from then on neither ends the process by itself.
#[derive(Debug)]
pub struct StopSignals {
    /// SIGINT.
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    /// SIGTERM.
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl StopSignals {
    /// Catches both signals now; must be called inside a tokio runtime.
    pub fn register() -> std::io::Result<StopSignals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(StopSignals {
                interrupt: signal(SignalKind::interrupt())?,
                terminate: signal(SignalKind::terminate())?,
            })
        }
        #[cfg(not(unix))]
        Ok(StopSignals {})
    }

    /// Resolves when either arrives.
    pub async fn recv(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            biased;
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// A stop flag that turns true on the first Ctrl-C or SIGTERM, for work
/// outside a tokio runtime (a sweep's threads). The signals are caught
/// before it returns; a thread of its own waits for them.
pub fn stop_flag() -> Result<tokio::sync::watch::Receiver<bool>, CliError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::runtime(e).context("cannot start the signal thread"))?;
    let mut signals = runtime
        .block_on(async { StopSignals::register() })
        .map_err(|e| CliError::runtime(e).context("cannot catch Ctrl-C and SIGTERM"))?;
    let (stop, flag) = tokio::sync::watch::channel(false);
    std::thread::spawn(move || {
        runtime.block_on(signals.recv());
        let _ = stop.send(true);
    });
    Ok(flag)
}

/// A shutdown signal for servers that fires on the first stop signal;
/// `note` is logged when it does.
pub fn shutdown_on_stop_signal(note: Option<&'static str>) -> crate::http::ShutdownSignal {
    let (stop, shutdown) = crate::http::ShutdownSignal::new();
    tokio::spawn(async move {
        stop_signal().await;
        if let Some(note) = note {
            tracing::info!("{note}");
        }
        let _ = stop.send(true);
    });
    shutdown
}

/// Binds `addr` and serves `source` on /metrics until `shutdown`.
pub async fn serve_metrics(
    addr: std::net::SocketAddr,
    source: std::sync::Arc<dyn crate::metrics::MetricSource>,
    shutdown: crate::http::ShutdownSignal,
) -> Result<(), CliError> {
    let acceptor = crate::net::TcpAcceptor::bind(addr).await.map_err(|e| {
        CliError::runtime(e).context(format!("--metrics-listen {addr}: cannot bind"))
    })?;
    let registry = std::sync::Arc::new(crate::metrics::MetricsRegistry::default());
    registry.register(source);
    tracing::info!(listen = %acceptor.local_addr(), "metrics ready at /metrics");
    tokio::spawn(crate::metrics::serve(acceptor, registry, shutdown));
    Ok(())
}

/// `--abort-on-close` of the subcommands that serve HTTP clients in front
/// of a user's service (`proxy --mode http`, `defend`).
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct ClientCloseArgs {
    /// Take a client's FIN while its request is in flight as a hang-up:
    /// the call is dropped at once, as nginx and Envoy do. Without it the
    /// proxy asks: after the FIN it writes an interim `100 Continue`, which
    /// a client that closed its socket answers with an RST (then the
    /// request is dropped at once) and a client that half-closed after a
    /// whole request takes (then it is answered). An HTTP/1.0 request,
    /// which may not be sent a 1xx, is answered.
    #[arg(long)]
    pub abort_on_close: bool,
}

impl ClientCloseArgs {
    /// What the server makes of a client's FIN.
    pub fn fin(&self) -> crate::http::ClientFin {
        match self.abort_on_close {
            true => crate::http::ClientFin::HangUp,
            false => crate::http::ClientFin::Probe,
        }
    }
}

/// `--max-connections` of the subcommands that serve HTTP clients in
/// front of a user's service (`proxy --mode http`, `defend`).
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct ConnectionLimitArgs {
    /// The most client connections held at once; past it a new connection
    /// is answered 503 and closed (one warning per 10 s), so that the
    /// connections in flight keep the descriptors they need. Default:
    /// three quarters of the open-file limit (`ulimit -n`; 768 of 1024).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections: Option<u64>,
}

impl ConnectionLimitArgs {
    /// The limit these flags set.
    pub fn limit(&self) -> crate::http::limit::Limit {
        let max = self
            .max_connections
            .map_or_else(crate::http::limit::Limit::default_max, |n| {
                usize::try_from(n).unwrap_or(usize::MAX)
            });
        crate::http::limit::Limit::new(max)
    }
}

/// `--loops` of the subcommands that serve traffic (`proxy`, `defend`).
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct LoopsArgs {
    /// Event loops: each a thread of its own with its own listener on the
    /// address (SO_REUSEPORT), serving the connections the kernel gives
    /// it. Default: one per core this process may use (`taskset -c 0`:
    /// one).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub loops: Option<u16>,
}

impl LoopsArgs {
    /// How many event loops to run.
    pub fn count(&self) -> usize {
        self.loops.map_or_else(crate::loops::per_core, usize::from)
    }
}
