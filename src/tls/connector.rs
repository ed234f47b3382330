//! The connector towards a user's service: TCP, then TLS when its URL is
//! `https://`, and the stream it yields.

use std::io;

use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::TlsClient;
use crate::clock::Duration;
use crate::net::{Connector, TcpConnector, Transport};

impl<S: Transport> Transport for tokio_rustls::client::TlsStream<S> {
    fn reset_on_close(&self) {
        self.get_ref().0.reset_on_close();
    }
    fn alpn_h2(&self) -> bool {
        self.get_ref().1.alpn_protocol() == Some(b"h2")
    }
}

/// Dials a user's service: TCP, then TLS when its URL is `https://`.
#[derive(Debug, Clone)]
pub struct ServiceConnector {
    /// The TCP side.
    tcp: TcpConnector,
    /// The TLS client and the name sent as SNI and verified; none: plain.
    tls: Option<(TlsClient, ServerName<'static>)>,
}

impl ServiceConnector {
    /// Plain TCP to `tcp`.
    pub fn plain(tcp: TcpConnector) -> ServiceConnector {
        ServiceConnector { tcp, tls: None }
    }

    /// Plain TCP to `tcp`, or TLS on top for `host` (the URL's host: SNI and
    /// the name the certificate must hold).
    pub fn new(tcp: TcpConnector, tls: Option<(TlsClient, &str)>) -> io::Result<ServiceConnector> {
        let tls = match tls {
            None => None,
            Some((client, host)) => {
                let bare = host.trim_start_matches('[').trim_end_matches(']');
                let name = ServerName::try_from(bare.to_string()).map_err(|e| {
                    io::Error::new(io::ErrorKind::InvalidInput, format!("{host}: {e}"))
                })?;
                Some((client, name))
            }
        };
        Ok(ServiceConnector { tcp, tls })
    }

    /// Connects once, as a run does before it starts: for TLS, the
    /// handshake, then a short wait for the alert a server sends when it
    /// rejects the client certificate (TLS 1.3 tells the client only after
    /// its side of the handshake is done).
    pub async fn probe(&self) -> io::Result<()> {
        let mut stream = self.connect().await?;
        let (ServiceStream::Tls(tls), Some((client, name))) = (&mut stream, &self.tls) else {
            return Ok(());
        };
        // A server that accepted us sends session tickets first (rustls,
        // OpenSSL); one that rejected us, an alert. A server that sends
        // neither is waited for `PATIENCE`, before the drill's clock starts.
        // TLS 1.2 settles the client certificate inside the handshake.
        if tls.get_ref().1.protocol_version() != Some(rustls::ProtocolVersion::TLSv1_3) {
            return Ok(());
        }
        let deadline = crate::clock::now() + PATIENCE;
        let mut byte = [0u8; 1];
        while crate::clock::now() < deadline {
            match tokio::time::timeout(SLICE, tls.read(&mut byte)).await {
                Ok(Err(err)) => return Err(client.explain(&name.to_str(), err)),
                Ok(Ok(_)) => return Ok(()),
                Err(_) if tls.get_ref().1.tls13_tickets_received() > 0 => return Ok(()),
                Err(_) => {}
            }
        }
        Ok(())
    }
}

/// How long [`ServiceConnector::probe`] waits at most for the server's
/// word after the handshake.
const PATIENCE: Duration = Duration::from_secs(2);

/// How often it looks whether session tickets arrived meanwhile.
const SLICE: Duration = Duration::from_millis(20);

impl Connector for ServiceConnector {
    type Stream = ServiceStream;

    async fn connect(&self) -> io::Result<ServiceStream> {
        let tcp = self.tcp.connect().await?;
        let Some((client, name)) = &self.tls else {
            return Ok(ServiceStream::Plain(tcp));
        };
        tokio_rustls::TlsConnector::from(client.config.clone())
            .connect(name.clone(), tcp)
            .await
            .map(|s| ServiceStream::Tls(Box::new(s)))
            .map_err(|e| client.explain(&name.to_str(), e))
    }
}

/// A connection to a user's service, plain or TLS.
#[derive(Debug)]
pub enum ServiceStream {
    /// `http://`.
    Plain(TcpStream),
    /// `https://`.
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl Transport for ServiceStream {
    fn reset_on_close(&self) {
        match self {
            ServiceStream::Plain(s) => s.reset_on_close(),
            ServiceStream::Tls(s) => s.reset_on_close(),
        }
    }
    fn alpn_h2(&self) -> bool {
        matches!(self, ServiceStream::Tls(s) if s.alpn_h2())
    }
}

impl AsyncRead for ServiceStream {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        match self.get_mut() {
            ServiceStream::Plain(s) => std::pin::Pin::new(s).poll_read(cx, buf),
            ServiceStream::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for ServiceStream {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<io::Result<usize>> {
        match self.get_mut() {
            ServiceStream::Plain(s) => std::pin::Pin::new(s).poll_write(cx, buf),
            ServiceStream::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        match self.get_mut() {
            ServiceStream::Plain(s) => std::pin::Pin::new(s).poll_flush(cx),
            ServiceStream::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        match self.get_mut() {
            ServiceStream::Plain(s) => std::pin::Pin::new(s).poll_shutdown(cx),
            ServiceStream::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
