//! Starting a proxy on real sockets: bind, resolve, pick the mode, serve.

use std::net::SocketAddr;
use std::sync::Arc;

use super::mode::ProxyMode;
use super::record::Recorder;
use super::telemetry::Telemetry;
use super::traffic::Traffic;
use crate::clock::Duration;
use crate::fault::FaultPlan;
use crate::http::endpoint::Rewrite;
use crate::http::{ShutdownSignal, serve};
use crate::loops::Loop;
use crate::net::{self, TcpAcceptor, TcpConnector};
use crate::tls::ServiceConnector;

/// Why a proxy could not start (exit code 3).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The listen address is not an address (or a name that resolves to
    /// none): the caller's mistake.
    #[error("--listen {addr}: cannot resolve: {source}")]
    Listen {
        /// The address asked for.
        addr: String,
        /// The resolver's error.
        source: std::io::Error,
    },
    /// The listen address is valid but could not be bound (in use, not
    /// local): the machine's refusal.
    #[error("--listen {addr}: cannot bind: {source}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// An event loop's runtime could not be made (out of file
    /// descriptors or threads).
    #[error("--loops: cannot start an event loop: {source}")]
    Loop {
        /// The OS error.
        source: std::io::Error,
    },
    /// The upstream address does not resolve.
    #[error("--upstream {addr}: cannot resolve: {source}")]
    Resolve {
        /// The address asked for.
        addr: String,
        /// The resolver's error.
        source: std::io::Error,
    },
}

/// A proxy bound and ready to serve.
#[derive(Debug)]
pub struct BoundProxy {
    /// The listening side.
    acceptor: TcpAcceptor,
    /// The listeners of the other event loops on the same address, each
    /// with its runtime, served on a thread of its own ([`crate::loops`]);
    /// none by default.
    more: Vec<Loop<TcpAcceptor>>,
    /// The upstream side: how to dial it, what to change in each request.
    forward: Forward<ServiceConnector>,
    /// Protocol.
    mode: ProxyMode,
}

impl BoundProxy {
    /// Resolves `upstream` (`host:port`) and binds `listen`.
    pub async fn bind(
        listen: &str,
        upstream: &str,
        mode: ProxyMode,
    ) -> Result<BoundProxy, StartError> {
        let addr = net::resolve(upstream)
            .await
            .map_err(|source| StartError::Resolve {
                addr: upstream.to_string(),
                source,
            })?;
        BoundProxy::bind_forward(listen, Self::plain(addr), mode, 1).await
    }

    /// Binds `listen` for a proxy towards `upstream`, both resolved
    /// already: no name lookup (the control plane resolves before it
    /// takes its lock).
    pub async fn bind_resolved(
        listen: SocketAddr,
        upstream: SocketAddr,
        mode: ProxyMode,
    ) -> Result<BoundProxy, StartError> {
        Ok(BoundProxy {
            acceptor: Self::acceptor(listen).await?,
            more: Vec::new(),
            forward: Self::plain(upstream),
            mode,
        })
    }

    /// Plain TCP towards `addr`, requests unchanged.
    fn plain(addr: SocketAddr) -> Forward<ServiceConnector> {
        Forward {
            connector: Arc::new(ServiceConnector::plain(TcpConnector { addr })),
            rewrite: Rewrite::default(),
            client_fin: Default::default(),
            limit: None,
        }
    }

    /// Binds `listen` for a proxy towards `forward` (a user's service,
    /// perhaps over TLS and with a path prefix), served by `loops` event
    /// loops (one listener each, [`TcpAcceptor::bind_shared`]).
    pub async fn bind_forward(
        listen: &str,
        forward: Forward<ServiceConnector>,
        mode: ProxyMode,
        loops: usize,
    ) -> Result<BoundProxy, StartError> {
        // An address that does not resolve is the caller's mistake (the
        // API answers 400); a valid one that cannot be bound is not (500).
        let listen_addr: SocketAddr =
            net::resolve(listen)
                .await
                .map_err(|source| StartError::Listen {
                    addr: listen.to_string(),
                    source,
                })?;
        let mut listeners = TcpAcceptor::bind_shared(listen_addr, loops)
            .await
            .map_err(|source| StartError::Bind {
                addr: listen_addr.to_string(),
                source,
            })?
            .into_iter();
        let acceptor = listeners.next().expect("bind_shared binds at least one");
        // The other loops' runtimes are made now: a proxy that says it is
        // ready has every loop.
        let more = listeners
            .map(Loop::own)
            .collect::<std::io::Result<Vec<_>>>()
            .map_err(|source| StartError::Loop { source })?;
        Ok(BoundProxy {
            acceptor,
            more,
            forward,
            mode,
        })
    }

    /// A listener on `addr`.
    async fn acceptor(addr: SocketAddr) -> Result<TcpAcceptor, StartError> {
        TcpAcceptor::bind(addr)
            .await
            .map_err(|source| StartError::Bind {
                addr: addr.to_string(),
                source,
            })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.acceptor.local_addr()
    }

    /// How many event loops serve it.
    pub fn loops(&self) -> usize {
        1 + self.more.len()
    }

    /// Serves until `shutdown` fires, then drains for up to `grace`.
    pub async fn serve(
        self,
        plan: Arc<FaultPlan>,
        shutdown: ShutdownSignal,
        grace: Duration,
    ) -> std::io::Result<()> {
        self.serve_counted(plan, Arc::new(Traffic::default()), shutdown, grace)
            .await
    }

    /// [`BoundProxy::serve`], counting bytes in `traffic`.
    pub async fn serve_counted(
        self,
        plan: Arc<FaultPlan>,
        traffic: Arc<Traffic>,
        shutdown: ShutdownSignal,
        grace: Duration,
    ) -> std::io::Result<()> {
        let telemetry = Telemetry {
            traffic,
            recorder: Recorder::default(),
        };
        self.serve_with(plan, telemetry, shutdown, grace).await
    }

    /// [`BoundProxy::serve`], counting and recording in `telemetry`.
    pub async fn serve_with(
        self,
        plan: Arc<FaultPlan>,
        telemetry: Telemetry,
        shutdown: ShutdownSignal,
        grace: Duration,
    ) -> std::io::Result<()> {
        if self.more.is_empty() {
            return serve_forward(
                self.acceptor,
                self.forward,
                plan,
                self.mode,
                shutdown,
                grace,
                telemetry,
            )
            .await;
        }
        let (forward, mode) = (self.forward, self.mode);
        let mut loops = vec![Loop::caller(self.acceptor)];
        loops.extend(self.more);
        crate::loops::serve_each(loops, move |acceptor| {
            serve_forward(
                acceptor,
                forward.clone(),
                plan.clone(),
                mode,
                shutdown.clone(),
                grace,
                telemetry.clone(),
            )
        })
        .await
    }
}

/// Serves `mode` over any transport pair.
pub async fn serve_mode<A, C>(
    acceptor: A,
    connector: Arc<C>,
    plan: Arc<FaultPlan>,
    mode: ProxyMode,
    shutdown: ShutdownSignal,
    grace: Duration,
) -> std::io::Result<()>
where
    A: net::Acceptor,
    C: net::Connector,
{
    let telemetry = Telemetry::default();
    serve_mode_with(acceptor, connector, plan, mode, shutdown, grace, telemetry).await
}

/// [`serve_mode`], counting bytes (both modes) and requests (HTTP mode) in
/// `telemetry`, and recording requests when its recorder has a sink.
pub async fn serve_mode_with<A, C>(
    acceptor: A,
    connector: Arc<C>,
    plan: Arc<FaultPlan>,
    mode: ProxyMode,
    shutdown: ShutdownSignal,
    grace: Duration,
    telemetry: Telemetry,
) -> std::io::Result<()>
where
    A: net::Acceptor,
    C: net::Connector,
{
    let forward = Forward {
        connector,
        rewrite: Rewrite::default(),
        client_fin: Default::default(),
        limit: None,
    };
    serve_forward(acceptor, forward, plan, mode, shutdown, grace, telemetry).await
}

/// Where a proxy forwards: how it dials, and what it changes in each
/// request on the way (HTTP mode; a real service's path prefix and `Host`).
#[derive(Debug)]
pub struct Forward<C> {
    /// Opens upstream connections.
    pub connector: Arc<C>,
    /// Applied to every request forwarded in HTTP mode.
    pub rewrite: Rewrite,
    /// What a client's FIN with a request in flight means (HTTP mode).
    pub client_fin: crate::http::ClientFin,
    /// The most client connections held at once (HTTP mode); none: no
    /// limit.
    pub limit: Option<crate::http::limit::Limit>,
}

impl<C> Clone for Forward<C> {
    fn clone(&self) -> Self {
        Forward {
            connector: self.connector.clone(),
            rewrite: self.rewrite.clone(),
            client_fin: self.client_fin,
            limit: self.limit.clone(),
        }
    }
}

/// [`serve_mode_with`] towards `forward`.
pub async fn serve_forward<A, C>(
    acceptor: A,
    forward: Forward<C>,
    plan: Arc<FaultPlan>,
    mode: ProxyMode,
    shutdown: ShutdownSignal,
    grace: Duration,
    telemetry: Telemetry,
) -> std::io::Result<()>
where
    A: net::Acceptor,
    C: net::Connector,
{
    let Forward {
        connector,
        rewrite,
        client_fin,
        limit,
    } = forward;
    let rewrite = Arc::new(rewrite);
    let handler_plan = plan.clone();
    match mode {
        ProxyMode::Tcp => {
            serve(
                acceptor,
                plan,
                move |s, sd| {
                    super::tcp::handle(
                        s,
                        connector.clone(),
                        handler_plan.clone(),
                        sd,
                        telemetry.traffic.clone(),
                    )
                },
                shutdown,
                grace,
            )
            .await
        }
        ProxyMode::Http => {
            crate::http::serve_limited(
                acceptor,
                plan,
                move |s, sd| {
                    let telemetry = telemetry.clone();
                    super::http::handle(
                        s,
                        connector.clone(),
                        rewrite.clone(),
                        handler_plan.clone(),
                        client_fin,
                        sd,
                        telemetry,
                    )
                },
                limit,
                shutdown,
                grace,
            )
            .await
        }
    }
}
