//! How long an HTTP/1.1 connection may wait for a request's head: a client
//! that sends part of a head and stalls (slowloris) is answered
//! `408 Request Timeout` before the close, one that sends nothing at all
//! (an idle keep-alive connection) is closed quietly, each
//! [`HEAD_TIMEOUT`] after the connection began to wait (it opened, or the
//! previous answer's body ended). A connection that speaks HTTP/2 is never
//! timed here (its streams come and go), nor a request in service or an
//! answer being sent.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use http_body::{Body, Frame, SizeHint};

use crate::clock::{self, Duration, Instant};

/// How long a connection may wait for a request's head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(30);

/// The answer to a head that did not come whole in time.
pub const REQUEST_TIMEOUT: &[u8] =
    b"HTTP/1.1 408 Request Timeout\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";

/// What a connection is waiting for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Waiting {
    /// Since when it waits for a head; `None` while a request is in
    /// service or its answer is sent, and for good on HTTP/2.
    since: Option<Instant>,
    /// Whether bytes of the head came.
    started: bool,
    /// Requests in service or being answered.
    serving: u32,
    /// Whether the connection speaks HTTP/2 (never timed).
    http2: bool,
}

/// One connection's wait for its next request head, seen by its reads
/// ([`HeadClock::read`]) and by its service (a head whole, an answer sent).
///
/// Nothing here wakes anyone: a request costs a connection three notes
/// (its first bytes, its head whole, its answer sent), and waking the
/// connection's task for each made it poll its codec again for nothing.
/// The watch ([`HeadClock::expired`]) sleeps until the deadline it knew
/// and looks again: a wait that began later moved the deadline on, and
/// one in service is looked at again a [`HEAD_TIMEOUT`] later (a wait
/// that begins meanwhile ends no sooner than that).
#[derive(Debug)]
pub struct HeadClock {
    /// The wait, read by the connection's watch.
    waiting: Mutex<Waiting>,
    /// Whether the connection's first bytes were read (HTTP/2's preface is
    /// told from them).
    first_read: AtomicBool,
}

/// How a wait for a head ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expired {
    /// Part of a head came, and then nothing: answer 408.
    Stalled,
    /// Nothing came: close quietly.
    Idle,
}

impl HeadClock {
    /// A connection that opened now.
    pub fn new() -> Arc<HeadClock> {
        Arc::new(HeadClock {
            waiting: Mutex::new(Waiting {
                since: Some(clock::now()),
                started: false,
                serving: 0,
                http2: false,
            }),
            first_read: AtomicBool::new(false),
        })
    }

    /// The wait, changed by `change`.
    fn change(&self, change: impl FnOnce(&mut Waiting)) {
        change(&mut self.waiting.lock().unwrap_or_else(|e| e.into_inner()));
    }

    /// The wait as it is now.
    fn now(&self) -> Waiting {
        *self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Notes `bytes` read from the client.
    pub fn read(&self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if !self.first_read.swap(true, Ordering::SeqCst) && bytes.starts_with(b"PRI ") {
            self.change(|w| {
                w.http2 = true;
                w.since = None;
            });
            return;
        }
        self.change(|w| w.started |= w.since.is_some());
    }

    /// A head came whole: its request is in service.
    fn request(&self) {
        self.change(|w| {
            w.serving += 1;
            w.since = None;
            w.started = false;
        });
    }

    /// An answer's body ended (or was dropped): with none left in service,
    /// wait for the next head.
    fn answered(&self) {
        self.change(|w| {
            w.serving = w.serving.saturating_sub(1);
            if w.serving == 0 && !w.http2 {
                w.since = Some(clock::now());
            }
        });
    }

    /// Resolves when the connection has waited [`HEAD_TIMEOUT`] for a head;
    /// never while it waits for nothing.
    pub async fn expired(&self) -> Expired {
        loop {
            let seen = self.now();
            if seen.http2 {
                return std::future::pending().await;
            }
            let since = seen.since.unwrap_or_else(clock::now);
            clock::sleep_until(since + HEAD_TIMEOUT).await;
            let now = self.now();
            if let Some(since) = now.since
                && since + HEAD_TIMEOUT <= clock::now()
            {
                return match now.started {
                    true => Expired::Stalled,
                    false => Expired::Idle,
                };
            }
        }
    }
}

/// The service, telling the clock when a head came whole and when its
/// answer's body ended.
#[derive(Debug)]
pub struct Timed<S> {
    /// The connection's service.
    pub inner: S,
    /// The connection's clock.
    pub clock: Arc<HeadClock>,
}

impl<S, B> hyper::service::Service<http::Request<B>> for Timed<S>
where
    S: hyper::service::Service<http::Request<B>>,
    S::Response: Sent,
{
    type Response = <S::Response as Sent>::Noted;
    type Error = S::Error;
    type Future = Answer<S::Future>;

    fn call(&self, req: http::Request<B>) -> Self::Future {
        self.clock.request();
        Answer {
            inner: self.inner.call(req),
            ended: Some(Ended(self.clock.clone())),
        }
    }
}

pin_project_lite::pin_project! {
    /// A request's answer, its body carrying the note that it was sent.
    pub struct Answer<F> {
        #[pin]
        inner: F,
        ended: Option<Ended>,
    }
}

impl<F, R, E> Future for Answer<F>
where
    F: Future<Output = Result<R, E>>,
    R: Sent,
{
    type Output = Result<R::Noted, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let answer = std::task::ready!(this.inner.poll(cx));
        let ended = this.ended.take();
        Poll::Ready(answer.map(|r| r.noting(ended)))
    }
}

/// A response whose body can carry the note that it was sent.
pub trait Sent {
    /// The response with the note.
    type Noted;
    /// The response, `ended` dropped with its body.
    fn noting(self, ended: Option<Ended>) -> Self::Noted;
}

impl<B> Sent for http::Response<B> {
    type Noted = http::Response<Sending<B>>;

    fn noting(self, ended: Option<Ended>) -> Self::Noted {
        self.map(|body| Sending {
            body,
            _ended: ended,
        })
    }
}

/// Tells the clock the answer was sent when dropped (hyper drops a body it
/// wrote whole, or gave up on).
#[derive(Debug)]
pub struct Ended(Arc<HeadClock>);

impl Drop for Ended {
    fn drop(&mut self) {
        self.0.answered();
    }
}

pin_project_lite::pin_project! {
    /// An answer's body, ending the clock's pause when dropped.
    pub struct Sending<B> {
        #[pin]
        body: B,
        _ended: Option<Ended>,
    }
}

impl<B: Body> Body for Sending<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        self.project().body.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
#[path = "head_tests.rs"]
mod tests;
