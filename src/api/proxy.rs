//! One named proxy of the control plane: its settings, its toxics, and its
//! listener, which `enabled: false` closes together with every connection.

use std::net::SocketAddr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::error::ApiError;
use super::journal::Journal;
use super::toxic::Toxic;
use super::toxics::ToxicList;
use crate::clock::{self, Duration};
use crate::fault::{FaultPlan, LogName};
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

/// How long a stop waits for a proxy's task before it abandons it (every
/// connection is dropped at once on a stop; only a task that never yields
/// could take longer).
pub const STOP_GRACE: Duration = Duration::from_secs(2);

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
    pub toxics: ToxicList,
    /// The faults the proxy injects (the toxics, mapped); replaced on every
    /// toxic change while connections run.
    pub plan: Arc<FaultPlan>,
    /// Byte and request counters for /metrics; kept across restarts.
    pub telemetry: Telemetry,
    /// `listen` and `upstream` resolved, when they were set (so a start
    /// under the registry's lock looks no name up).
    addrs: Addrs,
    /// The listener while enabled.
    running: Option<Running>,
    /// Every request it finished (HTTP mode), the newest kept.
    pub journal: Arc<Journal>,
    /// The toxics added with a lease, and when it runs out: past it they
    /// are removed unless the lease was renewed.
    pub lease: Lease,
}

/// The toxics of a proxy that a drill holds on a lease.
#[derive(Debug, Default)]
pub struct Lease {
    /// Their names.
    pub toxics: std::collections::BTreeSet<String>,
    /// When the lease runs out (none: no leased toxic).
    pub until: Option<clock::Instant>,
}

/// A proxy's listen and upstream addresses, resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Addrs {
    /// Where to listen.
    pub listen: SocketAddr,
    /// Where to connect.
    pub upstream: SocketAddr,
}

impl Addrs {
    /// Resolves both, before any lock is taken: an address that is not one
    /// is the caller's mistake, a 400 (Toxiproxy 2.12 answers a listen that
    /// does not resolve with 500, and looks the upstream up per
    /// connection).
    pub async fn resolve(listen: &str, upstream: &str) -> Result<Addrs, ApiError> {
        Ok(Addrs {
            listen: resolve_field("listen", listen).await?,
            upstream: resolve_field("upstream", upstream).await?,
        })
    }
}

/// Resolves the address of field `field` (400 when it is not one).
pub async fn resolve_field(field: &str, addr: &str) -> Result<SocketAddr, ApiError> {
    crate::net::resolve(addr)
        .await
        .map_err(|e| ApiError::invalid(format!("{field} {addr}: not a valid address: {e}")))
}

/// A proxy told to stop, its task still ending.
#[derive(Debug)]
#[must_use = "a stop is over once it is waited for"]
pub struct Stopping {
    /// The proxy's name, for the log.
    name: String,
    /// The accept loop's task.
    task: JoinHandle<std::io::Result<()>>,
}

impl Stopping {
    /// Waits for the task for up to [`STOP_GRACE`], then aborts and
    /// abandons it: no toxic keeps a stop (a DELETE, a shutdown) waiting.
    pub async fn wait(mut self) {
        if tokio::time::timeout(STOP_GRACE, &mut self.task)
            .await
            .is_err()
        {
            self.task.abort();
            tracing::warn!(proxy = %LogName(&self.name), "proxy did not stop within its grace; abandoned");
        } else {
            tracing::info!(proxy = %LogName(&self.name), "proxy stopped");
        }
    }
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
    /// A stopped proxy on these addresses, resolved by the caller.
    pub fn new(
        name: String,
        listen: String,
        upstream: String,
        addrs: Addrs,
        mode: ProxyMode,
        seed: u64,
        records_kept: usize,
    ) -> Self {
        let start = clock::now();
        let journal = Arc::new(Journal::new(
            clock::unix_micros() as f64 / 1000.0,
            records_kept,
        ));
        ManagedProxy {
            telemetry: Telemetry {
                traffic: Default::default(),
                recorder: Recorder::with_raw_correlation(&name, start, journal.clone()),
            },
            journal,
            lease: Lease::default(),
            name,
            listen,
            upstream,
            mode,
            addrs,
            toxics: ToxicList::default(),
            plan: Arc::new(FaultPlan::new(Vec::new(), seed, start).accepting_additions()),
            running: None,
        }
    }

    /// A proxy whose listener task never ends, whatever it is told: what a
    /// connection stuck in a toxic would make of it.
    #[cfg(test)]
    pub fn stuck(name: &str) -> Self {
        let addrs = Addrs {
            listen: ([127, 0, 0, 1], 0).into(),
            upstream: ([127, 0, 0, 1], 9).into(),
        };
        let mut proxy = ManagedProxy::new(
            name.to_string(),
            addrs.listen.to_string(),
            addrs.upstream.to_string(),
            addrs,
            ProxyMode::Tcp,
            1,
            super::journal::KEPT,
        );
        let (stop, _shutdown) = ShutdownSignal::new();
        let task = tokio::spawn(std::future::pending());
        proxy.running = Some(Running { stop, task });
        proxy
    }

    /// The resolved addresses.
    pub fn addrs(&self) -> Addrs {
        self.addrs
    }

    /// Whether the listener is open.
    pub fn enabled(&self) -> bool {
        self.running.is_some()
    }

    /// Moves the proxy to new addresses (resolved by the caller); it must
    /// be stopped.
    pub fn readdress(&mut self, listen: String, upstream: String, addrs: Addrs) {
        self.listen = listen;
        self.upstream = upstream;
        self.addrs = addrs;
    }

    /// Binds and serves on the resolved addresses (no name lookup); a
    /// no-op when already running. A valid address that cannot be bound is
    /// a 500, as in Toxiproxy.
    pub async fn start(&mut self) -> Result<(), ApiError> {
        if self.running.is_some() {
            return Ok(());
        }
        let bound = BoundProxy::bind_resolved(self.addrs.listen, self.addrs.upstream, self.mode)
            .await
            .map_err(|e| match e {
                StartError::Bind { source, .. } => {
                    ApiError::internal(format!("listen {}: cannot bind: {source}", self.listen))
                }
                other => ApiError::invalid(other.to_string()),
            })?;
        self.listen = bound.local_addr().to_string();
        // A restart binds the same port again, not a new free one.
        self.addrs.listen = bound.local_addr();
        let (stop, shutdown) = ShutdownSignal::new();
        let task = tokio::spawn(bound.serve_with(
            self.plan.clone(),
            self.telemetry.clone(),
            shutdown,
            Duration::ZERO,
        ));
        tracing::info!(proxy = %LogName(&self.name), listen = %self.listen, upstream = %LogName(&self.upstream), "proxy started");
        self.running = Some(Running { stop, task });
        Ok(())
    }

    /// Tells the listener and every connection to close, and hands back
    /// the stop to wait for (outside the registry's lock where it can).
    pub fn halt(&mut self) -> Option<Stopping> {
        let running = self.running.take()?;
        let _ = running.stop.send(true);
        Some(Stopping {
            name: self.name.clone(),
            task: running.task,
        })
    }

    /// Closes the listener and every connection, and waits until they are,
    /// for up to [`STOP_GRACE`].
    pub async fn stop(&mut self) {
        if let Some(stopping) = self.halt() {
            stopping.wait().await;
        }
    }

    /// Publishes the toxics to the running connections.
    pub fn publish(&self) {
        let faults = self
            .toxics
            .as_slice()
            .iter()
            .flat_map(|t| t.faults(self.mode).unwrap_or_default())
            .collect();
        self.plan.replace(faults);
    }

    /// Adds `toxic` after the others and publishes it to the running
    /// connections, at the cost of the one toxic (the others are neither
    /// copied nor looked at); `false` when one of its name is there.
    pub fn add_toxic(&mut self, toxic: Toxic) -> bool {
        let faults = toxic.faults(self.mode).unwrap_or_default();
        if !self.toxics.push(toxic) {
            return false;
        }
        self.plan.add(faults);
        true
    }

    /// Removes the toxic named `name` and its faults, which running
    /// connections stop applying; `false` when there is none.
    pub fn remove_toxic(&mut self, name: &str) -> bool {
        if !self.toxics.remove(name) {
            return false;
        }
        // A toxic's faults carry its name, and names are unique.
        self.plan.remove_named(name);
        self.lease.toxics.remove(name);
        if self.lease.toxics.is_empty() {
            self.lease.until = None;
        }
        true
    }

    /// The API's view.
    pub fn view(&self) -> ProxyView {
        ProxyView {
            name: self.name.clone(),
            listen: self.listen.clone(),
            upstream: self.upstream.clone(),
            enabled: self.enabled(),
            toxics: self.toxics.as_slice().to_vec(),
            mode: (self.mode == ProxyMode::Http).then_some("http"),
        }
    }
}
