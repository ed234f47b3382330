//! Telling a client that half-closed after a whole request from one that
//! hung up, while the server holds its request (a blackhole, a latency
//! fault, a slow upstream).
//!
//! A FIN alone says only that the client will send no more. What tells the
//! two apart is writing to it: a socket its owner closed answers data with
//! an RST, a half-closed one takes it. So when a FIN arrives while a
//! request is held, the server writes an interim `100 Continue` (every
//! HTTP/1.1 client must read and skip a 1xx before the final response) and
//! watches the socket: an RST that follows means the client is gone, and
//! the connection is dropped at once, with the request it held; no RST, and
//! the request is answered when its answer is ready. A client that
//! half-closed and gives up later sends nothing when it closes, so it is
//! asked again after 1 s, 2 s, 4 s, ... (at most every 16 s) while its
//! request is held.
//!
//! The watch shares the connection's one descriptor and registration with
//! the HTTP codec ([`SharedTcp`](crate::net::SharedTcp), whose reads never
//! trust a readiness the watch may have spent); it only peeks, and writes
//! the probe only when the codec has flushed all it wrote (it never splits
//! the codec's output). An HTTP/1.0 request may not be sent a 1xx: it is
//! answered, as before this watch existed.

use std::future::Future;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::Notify;

use super::head::HeadClock;

/// The probe: an interim response every HTTP/1.1 client skips.
const PROBE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// A watch on a client's TCP socket while a request is held.
#[derive(Debug)]
pub struct FinProbe {
    /// The connection's socket, shared with the codec (a FIN, then the RST
    /// that answers the probe, each make it readable).
    socket: Arc<TcpStream>,
    /// Set when a look spent a read readiness the codec's reads may wait
    /// for ([`crate::net::SharedTcp`]).
    spent: Option<Arc<AtomicBool>>,
}

impl FinProbe {
    /// A probe of `socket`, the one the codec reads and writes; `spent` is
    /// set whenever a look spends a read readiness.
    pub fn of(socket: Arc<TcpStream>, spent: Option<Arc<AtomicBool>>) -> FinProbe {
        FinProbe { socket, spent }
    }

    /// Waits until the socket is ready for `interest` and then looks at it
    /// with `look`; the readiness is spent, so that the next wait is for
    /// the next event. A FIN is never spent (tokio keeps a read-closed
    /// socket readable), so `look` is told whether one came.
    async fn next<T>(
        &self,
        interest: Interest,
        look: impl FnOnce(&TcpStream, bool) -> T,
    ) -> Option<T> {
        let ready = self.socket.ready(interest).await.ok()?;
        let mut seen = None;
        let _ = self.socket.try_io(interest, || {
            seen = Some(look(&self.socket, ready.is_read_closed()));
            if interest.is_readable()
                && let Some(spent) = &self.spent
            {
                spent.store(true, Ordering::Release);
            }
            Err::<(), _>(std::io::ErrorKind::WouldBlock.into())
        });
        seen
    }

    /// Watches the socket for one held request: `true` once the client is
    /// known gone, `false` once it cannot be told (then the request is
    /// answered).
    async fn tell(&self, probeable: bool, flushed: &AtomicBool) -> bool {
        loop {
            let mut byte = [MaybeUninit::<u8>::uninit(); 1];
            let peeked = self
                .next(Interest::READABLE, |s, fin| {
                    (socket2::SockRef::from(s).peek(&mut byte), fin)
                })
                .await;
            match peeked {
                // The client closed its side (with nothing left unread, or
                // behind bytes the server has not read yet: a pipelined
                // request).
                Some((Ok(0), _) | (Ok(_), true)) => break,
                // Bytes the server has not read yet (a body still coming),
                // or a spurious wake: look again at the next event.
                Some((Ok(_), false)) => continue,
                Some((Err(err), _)) if err.kind() == std::io::ErrorKind::WouldBlock => continue,
                Some((Err(_), _)) => return true,
                None => return false,
            }
        }
        if !probeable {
            return false;
        }
        // A client that half-closed may still give up later, and its close
        // then sends nothing: ask again, less and less often.
        let mut again = FIRST_REPROBE;
        loop {
            if !flushed.load(Ordering::SeqCst) {
                return false;
            }
            // Written past the runtime, whose write readiness is the
            // codec's.
            match socket2::SockRef::from(&*self.socket).send(PROBE) {
                Ok(n) if n == PROBE.len() => {}
                // Nothing written (the client reads nothing and its window
                // is full): cannot tell.
                Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => return false,
                // A part of the probe went out: the stream cannot carry an
                // answer any more. Or the write failed: the client is gone.
                Ok(_) | Err(_) => return true,
            }
            let asked = crate::clock::now();
            loop {
                // After a FIN a read says 0 whatever follows; the RST that
                // answers the probe shows as the socket's error.
                tokio::select! {
                    error = self.next(Interest::ERROR, |s, _| s.take_error()) => match error {
                        Some(Ok(None)) => continue,
                        Some(Ok(Some(_)) | Err(_)) => return true,
                        None => return false,
                    },
                    () = crate::clock::sleep_until(asked + again) => break,
                }
            }
            again = (again * 2).min(LAST_REPROBE);
        }
    }
}

/// When a half-closed client holding a request is asked again after the
/// first probe; each later ask waits twice as long, up to
/// [`LAST_REPROBE`].
const FIRST_REPROBE: crate::clock::Duration = crate::clock::Duration::from_secs(1);

/// The longest wait between two probes of a half-closed client.
const LAST_REPROBE: crate::clock::Duration = crate::clock::Duration::from_secs(16);

/// What the watch knows of the connection: whether the codec has flushed
/// all it wrote, and whether a held request found its client gone.
#[derive(Debug)]
pub(crate) struct Held {
    /// The socket the held requests' watches look at.
    probe: FinProbe,
    /// Whether the codec has flushed all it wrote.
    flushed: AtomicBool,
    /// Set once a held request's watch found its client gone.
    gone: AtomicBool,
    /// Wakes [`Held::hung_up`] when `gone` is set.
    told: Notify,
}

impl Held {
    pub(crate) fn new(probe: FinProbe) -> Arc<Held> {
        Arc::new(Held {
            probe,
            flushed: AtomicBool::new(true),
            gone: AtomicBool::new(false),
            told: Notify::new(),
        })
    }

    /// Resolves when the client is known to have hung up while one of its
    /// requests was held; never otherwise.
    pub(crate) async fn hung_up(&self) {
        loop {
            let told = self.told.notified();
            if self.gone.load(Ordering::SeqCst) {
                return;
            }
            told.await;
        }
    }

    /// The watch on a held request of `version`'s client, as a future of
    /// its own: `true` once the client is known gone, `false` once it
    /// cannot be told. `None` for HTTP/2, whose codec reads the socket
    /// all along and ends the connection's streams when it closes.
    fn watch(self: &Arc<Held>, version: http::Version) -> Option<Watch> {
        let probeable = match version {
            http::Version::HTTP_11 => true,
            http::Version::HTTP_2 | http::Version::HTTP_3 => return None,
            _ => false,
        };
        let held = self.clone();
        Some(Box::pin(async move {
            held.probe.tell(probeable, &held.flushed).await
        }))
    }

    /// Notes that the client is gone and wakes the connection's driver.
    fn tell_gone(&self) {
        self.gone.store(true, Ordering::SeqCst);
        self.told.notify_one();
    }
}

/// A held request's watch on its client.
type Watch = Pin<Box<dyn Future<Output = bool> + Send>>;

/// The service, watching each request's client while its answer is not
/// ready (once hyper polled it and it was not); without a watch, the
/// service itself.
pub(crate) struct Holding<S> {
    pub(crate) inner: S,
    pub(crate) held: Option<Arc<Held>>,
}

impl<S, B> hyper::service::Service<http::Request<B>> for Holding<S>
where
    S: hyper::service::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = HeldFuture<S::Future>;

    fn call(&self, req: http::Request<B>) -> Self::Future {
        let version = req.version();
        HeldFuture {
            inner: self.inner.call(req),
            watch: match &self.held {
                Some(held) => Watching::Later(held.clone(), version),
                None => Watching::Never,
            },
        }
    }
}

/// Where a held request's watch is.
enum Watching {
    /// No watch: none on this connection, or it could not tell.
    Never,
    /// Not begun: the answer was ready when first asked, or not asked yet.
    /// A request answered at once (an injected status, the built-in
    /// target) costs the watch nothing; a proxied one waits for its
    /// upstream, and its watch begins.
    Later(Arc<Held>, http::Version),
    /// Watching the client.
    On(Arc<Held>, Watch),
}

pin_project_lite::pin_project! {
    /// A held request's answer, its client watched while it is not ready.
    pub(crate) struct HeldFuture<F> {
        #[pin]
        inner: F,
        watch: Watching,
    }
}

impl<F: Future> Future for HeldFuture<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        if let Poll::Ready(out) = this.inner.poll(cx) {
            return Poll::Ready(out);
        }
        if let Watching::Later(held, version) = this.watch {
            *this.watch = match held.watch(*version) {
                Some(watch) => Watching::On(held.clone(), watch),
                None => Watching::Never,
            };
        }
        if let Watching::On(held, watch) = this.watch
            && let Poll::Ready(gone) = watch.as_mut().poll(cx)
        {
            if gone {
                held.tell_gone();
            }
            // Told, or it cannot be: the answer is waited for alone.
            *this.watch = Watching::Never;
        }
        Poll::Pending
    }
}

/// The client stream as the codec sees it, noting whether everything
/// written has been flushed (where a watch asks), and showing what it
/// reads to the connection's [`HeadClock`].
pub(crate) struct Flushed<I> {
    pub(crate) inner: I,
    pub(crate) held: Option<Arc<Held>>,
    pub(crate) head: Arc<HeadClock>,
}

impl<I> Flushed<I> {
    fn note(&self, flushed: bool) {
        if let Some(held) = &self.held {
            held.flushed.store(flushed, Ordering::SeqCst);
        }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Flushed<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let read = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = read {
            self.head.read(&buf.filled()[before..]);
        }
        read
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Flushed<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.note(false);
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        self.note(false);
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let flushed = Pin::new(&mut self.inner).poll_flush(cx);
        if let Poll::Ready(Ok(())) = flushed {
            self.note(true);
        }
        flushed
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
