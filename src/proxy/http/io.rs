//! The streams of an HTTP-mode proxy: the client stream closes with RST
//! when a fault asks for it, and both sides count their bytes.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::fault::Direction;
use crate::net::Transport;
use crate::proxy::Traffic;

/// Wraps the client stream; on drop, if `reset` is set, the close is an RST.
pub(super) struct ResettableIo<S: Transport> {
    /// The client stream.
    inner: S,
    /// Set by a reset fault before hyper drops the connection.
    reset: Arc<AtomicBool>,
}

impl<S: Transport> ResettableIo<S> {
    pub(super) fn new(inner: S, reset: Arc<AtomicBool>) -> Self {
        ResettableIo { inner, reset }
    }
}

impl<S: Transport> Drop for ResettableIo<S> {
    fn drop(&mut self) {
        if self.reset.load(Ordering::SeqCst) {
            self.inner.reset_on_close();
        }
    }
}

impl<S: Transport> AsyncRead for ResettableIo<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: Transport> AsyncWrite for ResettableIo<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if self.reset.load(Ordering::SeqCst) {
            return Poll::Ready(Err(std::io::ErrorKind::ConnectionReset.into()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if self.reset.load(Ordering::SeqCst) {
            return Poll::Ready(Err(std::io::ErrorKind::ConnectionReset.into()));
        }
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// A stream whose reads and writes are counted in a proxy's [`Traffic`]:
/// the client side reads upstream bytes and writes downstream ones, the
/// upstream side the other way round.
pub(super) struct CountedIo<S> {
    /// The stream.
    inner: S,
    /// The proxy's counters.
    traffic: Arc<Traffic>,
    /// The direction of the bytes read (written: the other one).
    reads: Direction,
}

impl<S> CountedIo<S> {
    /// The client side: reads are the request, writes the response.
    pub(super) fn client(inner: S, traffic: Arc<Traffic>) -> Self {
        CountedIo {
            inner,
            traffic,
            reads: Direction::Upstream,
        }
    }

    /// The upstream side: writes are the request, reads the response.
    pub(super) fn upstream(inner: S, traffic: Arc<Traffic>) -> Self {
        CountedIo {
            inner,
            traffic,
            reads: Direction::Downstream,
        }
    }

    fn writes(&self) -> Direction {
        match self.reads {
            Direction::Upstream => Direction::Downstream,
            Direction::Downstream => Direction::Upstream,
        }
    }

    fn count_written(&self, written: &Poll<std::io::Result<usize>>) {
        if let Poll::Ready(Ok(n)) = written {
            self.traffic.add_sent(self.writes(), *n);
        }
    }
}

impl<S: Transport> Transport for CountedIo<S> {
    fn reset_on_close(&self) {
        self.inner.reset_on_close();
    }
    fn alpn_h2(&self) -> bool {
        self.inner.alpn_h2()
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for CountedIo<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let read = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = read {
            self.traffic
                .add_received(self.reads, buf.filled().len() - before);
        }
        read
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for CountedIo<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.count_written(&written);
        written
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.count_written(&written);
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
