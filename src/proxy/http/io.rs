//! A client stream that closes with RST when a fault asks for it.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::net::Transport;

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
