//! Where a run's parts meet: in memory (virtual clock) or on loopback
//! sockets (real clock). Everything else is the same code.

use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::net::{self, Acceptor, Connector, MemoryConnector, TcpAcceptor, TcpConnector};

/// Makes listening endpoints and the connectors that reach them.
pub trait Network: Send + Sync + 'static {
    /// The listening side.
    type Acceptor: Acceptor;
    /// The dialing side.
    type Connector: Connector + Clone;
    /// Whether it runs on the wall clock (real sockets, real time).
    const WALL_CLOCK: bool;
    /// A new endpoint: its acceptor, a connector to it, and its authority
    /// (`host:port`) for `Host` headers and reports.
    fn listen(
        &self,
    ) -> impl Future<Output = io::Result<(Self::Acceptor, Self::Connector, String)>> + Send;
}

/// In-memory pipes; pair with a paused clock.
#[derive(Debug, Default)]
pub struct MemoryNetwork {
    /// Numbers the endpoints for their authorities.
    next: AtomicU64,
}

impl Network for MemoryNetwork {
    type Acceptor = net::MemoryAcceptor;
    type Connector = MemoryConnector;
    const WALL_CLOCK: bool = false;

    async fn listen(&self) -> io::Result<(net::MemoryAcceptor, MemoryConnector, String)> {
        let (connector, acceptor) = net::memory_pair(256 * 1024);
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        Ok((acceptor, connector, format!("memory-{n}:80")))
    }
}

/// TCP on 127.0.0.1 with ephemeral ports.
#[derive(Debug, Default)]
pub struct LoopbackNetwork;

impl Network for LoopbackNetwork {
    type Acceptor = TcpAcceptor;
    type Connector = TcpConnector;
    const WALL_CLOCK: bool = true;

    async fn listen(&self) -> io::Result<(TcpAcceptor, TcpConnector, String)> {
        let acceptor = TcpAcceptor::bind("127.0.0.1:0".parse().expect("literal address")).await?;
        let addr = acceptor.local_addr();
        Ok((acceptor, TcpConnector { addr }, addr.to_string()))
    }
}
