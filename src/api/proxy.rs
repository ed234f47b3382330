//! One named proxy of the control plane: its settings, its toxics, and its
//! listener, which `enabled: false` closes together with every connection.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::error::ApiError;
use super::toxic::Toxic;
use crate::clock::{self, Duration};
use crate::fault::FaultPlan;
use crate::http::ShutdownSignal;
use crate::proxy::run::StartError;
use crate::proxy::{BoundProxy, ProxyMode, Recorder, Telemetry};

/// A proxy as a client sends it to create one.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ProxyInput {
    /// Unique name.
    #[serde(default)]
    pub name: Option<String>,
    /// Address to listen on; default `127.0.0.1:0` (a free port).
    #[serde(default)]
    pub listen: Option<String>,
    /// `host:port` of the dependency.
    #[serde(default)]
    pub upstream: Option<String>,
    /// Listen at once (default true).
    #[serde(default)]
    pub enabled: Option<bool>,
    /// firedrill's extension: `tcp` (default) or `http`, which takes the
    /// `http_*` toxics.
    #[serde(default)]
    pub mode: Option<String>,
}

/// A partial update of a proxy (PATCH, or POST as older clients send).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ProxyUpdate {
    /// New listen address (the proxy restarts).
    #[serde(default)]
    pub listen: Option<String>,
    /// New upstream (the proxy restarts).
    #[serde(default)]
    pub upstream: Option<String>,
    /// Open or close the listener.
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// A proxy as the API shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ProxyView {
    /// Unique name.
    pub name: String,
    /// The listen address, with the bound port when `:0` was asked.
    pub listen: String,
    /// The dependency.
    pub upstream: String,
    /// Whether it is listening.
    pub enabled: bool,
    /// Its toxics, in the order they were added.
    pub toxics: Vec<Toxic>,
    /// `http` for an HTTP-mode proxy; absent for TCP (Toxiproxy's only mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<&'static str>,
}

/// A listener task and the switch that stops it.
#[derive(Debug)]
struct Running {
    /// Fires the proxy's shutdown.
    stop: watch::Sender<bool>,
    /// The accept loop; finished once the listener and connections are gone.
    task: JoinHandle<std::io::Result<()>>,
}

/// A named proxy managed at runtime.
#[derive(Debug)]
pub struct ManagedProxy {
    /// Unique name.
    pub name: String,
    /// Listen address; after the first start, the bound one.
    pub listen: String,
    /// The dependency.
    pub upstream: String,
    /// TCP or HTTP.
    pub mode: ProxyMode,
    /// Toxics in the order they were added.
    pub toxics: Vec<Toxic>,
    /// The faults the proxy injects (the toxics, mapped); replaced on every
    /// toxic change while connections run.
    pub plan: Arc<FaultPlan>,
    /// Byte and request counters for /metrics; kept across restarts.
    pub telemetry: Telemetry,
    /// The listener while enabled.
    running: Option<Running>,
}

/// Parses the `mode` extension.
pub fn parse_mode(mode: Option<&str>) -> Result<ProxyMode, ApiError> {
    match mode {
        None | Some("tcp") => Ok(ProxyMode::Tcp),
        Some("http") => Ok(ProxyMode::Http),
        Some(other) => Err(ApiError::invalid(format!(
            "mode: must be tcp or http, got {other:?}"
        ))),
    }
}

impl ManagedProxy {
    /// A stopped proxy.
    pub fn new(name: String, listen: String, upstream: String, mode: ProxyMode, seed: u64) -> Self {
        let start = clock::now();
        ManagedProxy {
            telemetry: Telemetry {
                traffic: Default::default(),
                recorder: Recorder::new(&name, start, None),
            },
            name,
            listen,
            upstream,
            mode,
            toxics: Vec::new(),
            plan: Arc::new(FaultPlan::new(Vec::new(), seed, start).accepting_additions()),
            running: None,
        }
    }

    /// Whether the listener is open.
    pub fn enabled(&self) -> bool {
        self.running.is_some()
    }

    /// Binds and serves; a no-op when already running. An address that is
    /// not one is the caller's mistake, a 400 (Toxiproxy 2.12 answers 500
    /// for every failure here); a valid one that cannot be bound is a 500,
    /// as in Toxiproxy.
    pub async fn start(&mut self) -> Result<(), ApiError> {
        if self.running.is_some() {
            return Ok(());
        }
        let bound = BoundProxy::bind(&self.listen, &self.upstream, self.mode)
            .await
            .map_err(|e| match e {
                StartError::Listen { addr, source } => {
                    ApiError::invalid(format!("listen {addr}: not a valid address: {source}"))
                }
                StartError::Resolve { addr, source } => {
                    ApiError::invalid(format!("upstream {addr}: not a valid address: {source}"))
                }
                StartError::Bind { addr, source } => {
                    ApiError::internal(format!("listen {addr}: cannot bind: {source}"))
                }
            })?;
        self.listen = bound.local_addr().to_string();
        let (stop, shutdown) = ShutdownSignal::new();
        let task = tokio::spawn(bound.serve_with(
            self.plan.clone(),
            self.telemetry.clone(),
            shutdown,
            Duration::ZERO,
        ));
        tracing::info!(proxy = %self.name, listen = %self.listen, upstream = %self.upstream, "proxy started");
        self.running = Some(Running { stop, task });
        Ok(())
    }

    /// Closes the listener and every connection, and waits until they are.
    pub async fn stop(&mut self) {
        if let Some(running) = self.running.take() {
            let _ = running.stop.send(true);
            let _ = running.task.await;
            tracing::info!(proxy = %self.name, "proxy stopped");
        }
    }

    /// Publishes the toxics to the running connections.
    pub fn publish(&self) {
        let faults = self
            .toxics
            .iter()
            .flat_map(|t| t.faults(self.mode).unwrap_or_default())
            .collect();
        self.plan.replace(faults);
    }

    /// The API's view.
    pub fn view(&self) -> ProxyView {
        ProxyView {
            name: self.name.clone(),
            listen: self.listen.clone(),
            upstream: self.upstream.clone(),
            enabled: self.enabled(),
            toxics: self.toxics.clone(),
            mode: (self.mode == ProxyMode::Http).then_some("http"),
        }
    }
}
