//! Bodies that faults shape: cut after N bytes (truncation faults) or
//! paced (bandwidth).

use std::future::Future as _;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use crate::clock::{self, Instant};
use crate::http::body::{BoxBody, BoxError};
use crate::proxy::pace::Pace;

/// The error a cut body (or request) ends with; hyper then aborts the
/// HTTP/1.1 connection, or resets the HTTP/2 stream with `code` (none:
/// INTERNAL_ERROR): hyper finds the code in the error's source.
#[derive(Debug, thiserror::Error)]
#[error("body cut by fault after {passed} bytes")]
pub struct Cut {
    /// Body bytes passed before the cut.
    pub passed: u64,
    /// The HTTP/2 error code to reset the stream with.
    #[source]
    pub code: Option<h2::Error>,
}

impl Cut {
    /// A cut after `passed` bytes, resetting an HTTP/2 stream with `code`.
    pub fn new(passed: u64, code: Option<crate::schema::units::H2Error>) -> Cut {
        Cut {
            passed,
            code: code.map(|c| h2::Error::from(h2::Reason::from(c.code()))),
        }
    }
}

pin_project_lite::pin_project! {
    /// Passes `limit` bytes, then fails (so the connection is aborted); when
    /// `reset` is given, the abort is an RST; an HTTP/2 stream is reset
    /// with `code`.
    pub struct Truncated {
        #[pin]
        inner: BoxBody,
        limit: u64,
        passed: u64,
        reset: Option<Arc<AtomicBool>>,
        code: Option<crate::schema::units::H2Error>,
        flushed: bool,
    }
}

impl Truncated {
    /// Cuts `inner` after `limit` bytes.
    pub fn new(
        inner: BoxBody,
        limit: u64,
        reset: Option<Arc<AtomicBool>>,
        code: Option<crate::schema::units::H2Error>,
    ) -> Truncated {
        Truncated {
            inner,
            limit,
            passed: 0,
            reset,
            code,
            flushed: false,
        }
    }
}

impl Body for Truncated {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.project();
        if *this.passed >= *this.limit {
            if !*this.flushed {
                // hyper flushes what it buffered when the body is pending;
                // pause once so the prefix reaches the wire before the cut.
                *this.flushed = true;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            if let Some(flag) = this.reset {
                flag.store(true, Ordering::SeqCst);
            }
            return Poll::Ready(Some(Err(Box::new(Cut::new(*this.passed, *this.code)))));
        }
        match ready!(this.inner.poll_frame(cx)) {
            Some(Ok(frame)) => match frame.into_data() {
                Ok(mut data) => {
                    let room = (*this.limit - *this.passed) as usize;
                    data.truncate(room);
                    *this.passed += data.len() as u64;
                    Poll::Ready(Some(Ok(Frame::data(data))))
                }
                Err(frame) => Poll::Ready(Some(Ok(frame))),
            },
            other => Poll::Ready(other),
        }
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

pin_project_lite::pin_project! {
    /// Paces data to `rate` bytes per second, as [`Pace`] says.
    pub struct Throttled {
        #[pin]
        inner: BoxBody,
        bytes_per_second: f64,
        pace: Pace,
        held: Option<Bytes>,
        // The next piece and when it leaves.
        piece: Option<(Bytes, Instant)>,
        sleep: Pin<Box<tokio::time::Sleep>>,
        done: bool,
    }
}

impl Throttled {
    /// Paces `inner` to `bytes_per_second`.
    pub fn new(inner: BoxBody, bytes_per_second: f64) -> Throttled {
        Throttled {
            inner,
            bytes_per_second,
            pace: Pace::default(),
            held: None,
            piece: None,
            sleep: Box::pin(clock::sleep_until(clock::now())),
            done: false,
        }
    }
}

impl Body for Throttled {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let mut this = self.project();
        loop {
            if let Some((_, at)) = this.piece {
                if clock::now() < *at {
                    this.sleep.as_mut().reset(*at);
                    ready!(this.sleep.as_mut().poll(cx));
                }
                let (piece, _) = this.piece.take().expect("checked above");
                return Poll::Ready(Some(Ok(Frame::data(piece))));
            }
            if let Some(held) = this.held.as_mut() {
                let len = Pace::piece_len(*this.bytes_per_second).min(held.len());
                let piece = held.split_to(len);
                if held.is_empty() {
                    *this.held = None;
                }
                let at = this.pace.release(piece.len(), *this.bytes_per_second);
                *this.piece = Some((piece, at));
                continue;
            }
            if *this.done {
                return Poll::Ready(None);
            }
            match ready!(this.inner.as_mut().poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) if data.is_empty() => continue,
                    Ok(data) => *this.held = Some(data),
                    Err(frame) => return Poll::Ready(Some(Ok(frame))),
                },
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                None => *this.done = true,
            }
        }
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
