//! Transports: the proxy runs over anything that reads and writes bytes, so
//! the same code serves real TCP sockets and in-memory pipes
//! (`tokio::io::duplex`) under paused time.

use std::future::Future;
use std::io;
use std::net::SocketAddr;

use tokio::io::{AsyncRead, AsyncWrite, DuplexStream};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use crate::clock::Duration;

mod shared;
pub use shared::SharedTcp;

/// A byte stream the proxy can carry.
pub trait Transport: AsyncRead + AsyncWrite + Unpin + Send + 'static {
    /// Arranges for the close of this stream to be an RST rather than a FIN
    /// (SO_LINGER 0 on TCP). A no-op where the transport has no such thing.
    fn reset_on_close(&self) {}
    /// The TCP socket under this stream when it may be shared with a
    /// watch for a client's hang-up (`http::fin`): an accepted
    /// connection's ([`SharedTcp`]), one descriptor for both.
    fn shared_tcp(&self) -> Option<std::sync::Arc<TcpStream>> {
        None
    }
    /// With [`Transport::shared_tcp`]: the flag the watch sets when it
    /// spent a read readiness the stream's reads may be waiting for.
    fn read_spent(&self) -> Option<std::sync::Arc<std::sync::atomic::AtomicBool>> {
        None
    }
    /// Whether TLS's ALPN settled on HTTP/2 (`h2`) for this stream: an
    /// `https://` upstream that chose it is spoken to in HTTP/2.
    fn alpn_h2(&self) -> bool {
        false
    }
}

impl Transport for TcpStream {
    fn reset_on_close(&self) {
        // SO_LINGER with a zero timeout makes close() send RST.
        if let Err(err) = socket2::SockRef::from(self).set_linger(Some(Duration::ZERO)) {
            tracing::debug!(%err, "could not set SO_LINGER 0");
        }
    }
}

impl Transport for DuplexStream {}

/// Opens connections to the upstream.
pub trait Connector: Send + Sync + 'static {
    /// The stream type it yields.
    type Stream: Transport;
    /// Opens one connection.
    fn connect(&self) -> impl Future<Output = io::Result<Self::Stream>> + Send;
}

/// Accepts connections from clients.
pub trait Acceptor: Send + 'static {
    /// The stream type it yields.
    type Stream: Transport;
    /// Waits for the next connection.
    fn accept(&mut self) -> impl Future<Output = io::Result<Self::Stream>> + Send;
    /// Stops accepting: new connections are refused (connection refused)
    /// until [`Acceptor::resume`].
    fn pause(&mut self) -> io::Result<()>;
    /// Accepts again after [`Acceptor::pause`].
    fn resume(&mut self) -> io::Result<()>;
}

/// Connects to a TCP address, with `TCP_NODELAY` (Nagle plus delayed ACK
/// would add 40 ms stalls that are not the target's).
#[derive(Debug, Clone)]
pub struct TcpConnector {
    /// The upstream address, resolved at start.
    pub addr: SocketAddr,
}

impl Connector for TcpConnector {
    type Stream = TcpStream;

    async fn connect(&self) -> io::Result<TcpStream> {
        let stream = TcpStream::connect(self.addr).await?;
        stream.set_nodelay(true)?;
        Ok(stream)
    }
}

/// Resolves `host:port` to one socket address, preferring IPv4. An
/// address with a space in it (`"  127.0.0.1:80"`) is a typo, refused
/// rather than handed to the system's resolver as a host name.
pub async fn resolve(addr: &str) -> io::Result<SocketAddr> {
    if let Some(refusal) = spaced(addr) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{refusal} (not resolved)"),
        ));
    }
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host(addr).await?.collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("{addr} resolves to no address"),
            )
        })
}

/// Why `addr`, with a space in it, is no `host:port`; `None` without one.
pub fn spaced(addr: &str) -> Option<String> {
    addr.contains(char::is_whitespace).then(|| {
        format!(
            "`{addr}` has a space in it: expected host:port without spaces, `{}`",
            addr.split_whitespace().collect::<String>()
        )
    })
}

/// A TCP listener that can be closed and rebound (for the `refuse` fault: a
/// closed port answers SYN with RST, which is what "connection refused" is).
#[derive(Debug)]
pub struct TcpAcceptor {
    /// The bound listener; `None` while paused.
    listener: Option<TcpListener>,
    /// The address actually bound (port resolved when `:0` was asked).
    addr: SocketAddr,
    /// Bound with `SO_REUSEPORT`, beside the listeners of other event
    /// loops on the same address (see [`TcpAcceptor::bind_shared`]).
    shared: bool,
}

impl TcpAcceptor {
    /// Binds `addr`.
    pub async fn bind(addr: SocketAddr) -> io::Result<TcpAcceptor> {
        let listener = bind_reusable(addr, false)?;
        let addr = listener.local_addr()?;
        Ok(TcpAcceptor {
            listener: Some(listener),
            addr,
            shared: false,
        })
    }

    /// `count` listeners on `addr` (one per event loop; at least one),
    /// each with `SO_REUSEPORT` when there are several, so the kernel
    /// spreads new connections over them. The first resolves a `:0` port;
    /// the others bind the port it got.
    pub async fn bind_shared(addr: SocketAddr, count: usize) -> io::Result<Vec<TcpAcceptor>> {
        if count <= 1 {
            return Ok(vec![TcpAcceptor::bind(addr).await?]);
        }
        let first = bind_reusable(addr, true)?;
        let addr = first.local_addr()?;
        let mut listeners = vec![first];
        for _ in 1..count {
            listeners.push(bind_reusable(addr, true)?);
        }
        Ok(listeners
            .into_iter()
            .map(|listener| TcpAcceptor {
                listener: Some(listener),
                addr,
                shared: true,
            })
            .collect())
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

/// A listener on `addr` that can be rebound at once after it closed
/// (`SO_REUSEADDR`); with `shared`, one of several on the same address
/// (`SO_REUSEPORT`).
fn bind_reusable(addr: SocketAddr, shared: bool) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    if shared {
        socket.set_reuseport(true)?;
    }
    socket.bind(addr)?;
    socket.listen(1024)
}

impl Acceptor for TcpAcceptor {
    type Stream = SharedTcp;

    async fn accept(&mut self) -> io::Result<SharedTcp> {
        match &self.listener {
            Some(l) => {
                let (stream, _) = l.accept().await?;
                stream.set_nodelay(true)?;
                Ok(SharedTcp::new(stream))
            }
            None => std::future::pending().await,
        }
    }

    fn pause(&mut self) -> io::Result<()> {
        self.listener = None;
        Ok(())
    }

    fn resume(&mut self) -> io::Result<()> {
        if self.listener.is_none() {
            self.listener = Some(bind_reusable(self.addr, self.shared)?);
        }
        Ok(())
    }
}

/// An in-memory network: a connector and an acceptor joined by a channel of
/// `tokio::io::duplex` pipes.
pub fn memory_pair(buffer: usize) -> (MemoryConnector, MemoryAcceptor) {
    let (tx, rx) = mpsc::unbounded_channel();
    let refusing = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    (
        MemoryConnector {
            tx,
            buffer,
            refusing: refusing.clone(),
        },
        MemoryAcceptor { rx, refusing },
    )
}

/// The dialing side of [`memory_pair`].
#[derive(Debug, Clone)]
pub struct MemoryConnector {
    /// Hands the server end of each new pipe to the acceptor.
    tx: mpsc::UnboundedSender<DuplexStream>,
    /// Pipe buffer size in bytes.
    buffer: usize,
    /// Set while the acceptor is paused: connects fail as refused.
    refusing: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Connector for MemoryConnector {
    type Stream = DuplexStream;

    async fn connect(&self) -> io::Result<DuplexStream> {
        if self.refusing.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(io::ErrorKind::ConnectionRefused.into());
        }
        let (client, server) = tokio::io::duplex(self.buffer);
        self.tx
            .send(server)
            .map_err(|_| io::Error::from(io::ErrorKind::ConnectionRefused))?;
        Ok(client)
    }
}

/// The listening side of [`memory_pair`].
#[derive(Debug)]
pub struct MemoryAcceptor {
    /// New pipes from connectors.
    rx: mpsc::UnboundedReceiver<DuplexStream>,
    /// Shared with the connectors: refuse while paused.
    refusing: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Acceptor for MemoryAcceptor {
    type Stream = DuplexStream;

    async fn accept(&mut self) -> io::Result<DuplexStream> {
        match self.rx.recv().await {
            Some(s) => Ok(s),
            None => std::future::pending().await,
        }
    }

    fn pause(&mut self) -> io::Result<()> {
        self.refusing
            .store(true, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }

    fn resume(&mut self) -> io::Result<()> {
        self.refusing
            .store(false, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_address_with_a_space_is_refused_before_any_resolver_sees_it() {
        let err = resolve("  127.0.0.1:80").await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(
            err.to_string(),
            "`  127.0.0.1:80` has a space in it: expected host:port without spaces, `127.0.0.1:80` (not resolved)"
        );
        assert!(resolve("localhost :80").await.is_err());
        assert_eq!(
            resolve("127.0.0.1:80").await.unwrap(),
            "127.0.0.1:80".parse::<SocketAddr>().unwrap()
        );
    }

    /// Accepts one connection on whichever of `listeners` gets it; returns
    /// its index.
    async fn accepted_by(listeners: &mut [TcpAcceptor]) -> usize {
        let (a, b) = listeners.split_at_mut(1);
        tokio::select! {
            Ok(_) = a[0].accept() => 0,
            Ok(_) = b[0].accept() => 1,
        }
    }

    #[tokio::test]
    async fn shared_listeners_take_the_same_port_and_one_closed_leaves_the_other_accepting() {
        let mut listeners = TcpAcceptor::bind_shared("127.0.0.1:0".parse().unwrap(), 2)
            .await
            .unwrap();
        assert_eq!(listeners.len(), 2);
        let addr = listeners[0].local_addr();
        assert_ne!(addr.port(), 0);
        assert_eq!(listeners[1].local_addr(), addr);
        // The kernel spreads connections by their source port: over
        // enough of them, both listeners get some.
        let mut by = [0usize; 2];
        let mut clients = Vec::new();
        for _ in 0..64 {
            clients.push(TcpStream::connect(addr).await.unwrap());
            by[accepted_by(&mut listeners).await] += 1;
        }
        assert!(by[0] > 0 && by[1] > 0, "{by:?}");
        // With the first closed (a `refuse` fault on its loop), the second
        // takes every connection; reopened, the first binds beside it again.
        listeners[0].pause().unwrap();
        for _ in 0..8 {
            clients.push(TcpStream::connect(addr).await.unwrap());
            assert_eq!(accepted_by(&mut listeners).await, 1);
        }
        listeners[0].resume().unwrap();
        assert_eq!(listeners[0].local_addr(), addr);
    }

    #[tokio::test]
    async fn one_listener_is_not_shared_so_a_second_bind_of_its_port_fails() {
        let listeners = TcpAcceptor::bind_shared("127.0.0.1:0".parse().unwrap(), 1)
            .await
            .unwrap();
        assert_eq!(listeners.len(), 1);
        let taken = TcpAcceptor::bind(listeners[0].local_addr()).await;
        assert!(taken.is_err(), "the port was bound twice");
    }
}
