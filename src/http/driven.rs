//! An HTTP/1.1 client connection with no task of its own: its connection
//! future is polled by whoever waits on it, in the task of the client
//! connection being served (a request until its response head is back,
//! then the response's body until its end). A request crosses no task on
//! its way to the upstream and its answer none on the way back. When the
//! body ends, the connection goes back to where it was taken from (its
//! [`Home`]) for the next request.
//!
//! The task yields once after it queues a request and once after the
//! answer's head is read, so that the other connections ready at the same
//! moment go first: on a core the upstream shares, writing each request
//! at once would wake the upstream once per request (twice the context
//! switches per request, measured in BENCHMARKS.md).

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::client::conn::http1;

use super::body::{BoxBody, boxed};

/// A connection's future: it reads and writes the connection's bytes.
type Driving = Pin<Box<dyn Future<Output = Result<(), hyper::Error>> + Send>>;

/// Where a connection goes back when its response's body has been read.
pub trait Home: Send + Unpin + 'static {
    /// Takes the connection back for a next request.
    fn put_back(&self, connection: Driven);
}

/// An HTTP/1.1 connection: its sending side and its future, which whoever
/// waits on the connection polls.
pub struct Driven {
    /// Sends requests.
    sender: http1::SendRequest<BoxBody>,
    /// The connection itself; `None` once it ended.
    connection: Option<Driving>,
}

impl std::fmt::Debug for Driven {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driven")
            .field("closed", &self.is_closed())
            .finish()
    }
}

/// A failed send: the error, and the request when none of it was written.
pub type Unsent = (Option<Request<BoxBody>>, hyper::Error);

impl Driven {
    /// Opens HTTP/1.1 on `io`; the connection (with upgrades) is polled in
    /// the tasks that use it.
    pub async fn handshake<T>(io: T) -> Result<Driven, hyper::Error>
    where
        T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    {
        let (sender, connection) = http1::handshake(io).await?;
        Ok(Driven {
            sender,
            connection: Some(Box::pin(connection.with_upgrades())),
        })
    }

    /// Whether the connection ended (or its sending side did).
    pub fn is_closed(&self) -> bool {
        self.connection.is_none() || self.sender.is_closed()
    }

    /// Reads and writes what the connection can; lets it go once it ended
    /// (its error, if any, is the waiting request's).
    fn drive(&mut self, cx: &mut Context<'_>) {
        if let Some(connection) = self.connection.as_mut()
            && connection.as_mut().poll(cx).is_ready()
        {
            self.connection = None;
        }
    }

    /// Waits until the connection can take a request, driving it.
    pub async fn ready(&mut self) -> Result<(), hyper::Error> {
        std::future::poll_fn(|cx| {
            self.drive(cx);
            self.sender.poll_ready(cx)
        })
        .await
    }

    /// Sends `req` and waits for the answer's head, driving the
    /// connection. Yields once after queueing the request and once after
    /// the head is read (see the module's notes).
    pub async fn send(&mut self, req: Request<BoxBody>) -> Result<Response<Incoming>, Unsent> {
        let mut answer = std::pin::pin!(self.sender.try_send_request(req));
        let mut queued = false;
        let mut answered = None;
        let sent = std::future::poll_fn(|cx| {
            if let Some(a) = answered.take() {
                return Poll::Ready(a);
            }
            if !queued {
                queued = true;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            self.drive(cx);
            answered = Some(ready!(answer.as_mut().poll(cx)));
            cx.waker().wake_by_ref();
            Poll::Pending
        })
        .await;
        sent.map_err(|mut e| (e.take_message(), e.into_error()))
    }

    /// `response`, its body driving this connection until it ends and then
    /// putting it back `home`. A 101 hands the connection to a task of its
    /// own, which runs until the upgraded stream is given away.
    pub fn carry(self, response: Response<Incoming>, home: impl Home) -> Response<BoxBody> {
        if response.status() == StatusCode::SWITCHING_PROTOCOLS {
            if let Some(connection) = self.connection {
                tokio::spawn(async move {
                    if let Err(err) = connection.await {
                        tracing::trace!(%err, "upgraded connection ended with an error");
                    }
                });
            }
            return response.map(boxed);
        }
        response.map(|inner| {
            let mut body = Carried {
                inner,
                connection: Some(self),
                home,
            };
            // Nothing to read (HEAD, 204, 304, an empty body): the
            // connection is free at once.
            if body.inner.is_end_stream() {
                body.put_back();
            }
            boxed(body)
        })
    }
}

/// A response's body that drives its connection while it is read, and
/// puts the connection back home at its end. Dropped before its end (the
/// client hung up, a fault cut it), it closes the connection, whose state
/// is then unknown.
struct Carried<H: Home> {
    /// The response's body.
    inner: Incoming,
    /// The connection it comes on; `None` once put back.
    connection: Option<Driven>,
    /// Where the connection goes back.
    home: H,
}

impl<H: Home> Carried<H> {
    fn put_back(&mut self) {
        if let Some(connection) = self.connection.take() {
            self.home.put_back(connection);
        }
    }
}

impl<H: Home> Body for Carried<H> {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = &mut *self;
        if let Some(connection) = this.connection.as_mut() {
            connection.drive(cx);
        }
        let frame = ready!(Pin::new(&mut this.inner).poll_frame(cx));
        match &frame {
            None => this.put_back(),
            Some(Err(_)) => this.connection = None,
            Some(Ok(_)) => {}
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl<H: Home> Drop for Carried<H> {
    fn drop(&mut self) {
        // Read to its end without a last poll (its length was reached).
        if self.inner.is_end_stream() {
            self.put_back();
        }
    }
}
