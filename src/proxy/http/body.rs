//! Bodies that faults shape: cut after N bytes (truncation faults), paced
//! (bandwidth), or held message by message (a gRPC call's latency `per:
//! message`).

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

/// Draws the delay of each message a [`PerMessage`] body holds.
pub type MessageDelay = Box<dyn FnMut() -> clock::Duration + Send + Sync>;

pin_project_lite::pin_project! {
    /// Holds each gRPC message (5-byte prefix: compressed flag and length,
    /// then the message) of `inner` for a delay of its own: a message
    /// leaves its delay after it came whole or after the message before it
    /// left, whichever is later. Trailers follow the last message; bytes
    /// that never make a whole message pass as they are at the end.
    pub struct PerMessage {
        #[pin]
        inner: BoxBody,
        delay: MessageDelay,
        // Bytes of messages not yet whole.
        buffer: bytes::BytesMut,
        // The next message and when it leaves.
        message: Option<(Bytes, Instant)>,
        // When the last message left.
        last: Option<Instant>,
        // The trailers (or another non-data frame), after the messages.
        tail: Option<Frame<Bytes>>,
        sleep: Pin<Box<tokio::time::Sleep>>,
        done: bool,
    }
}

impl PerMessage {
    /// Holds each message of `inner` for `delay()`.
    pub fn new(inner: BoxBody, delay: MessageDelay) -> PerMessage {
        PerMessage {
            inner,
            delay,
            buffer: bytes::BytesMut::new(),
            message: None,
            last: None,
            tail: None,
            sleep: Box::pin(clock::sleep_until(clock::now())),
            done: false,
        }
    }
}

/// The length of the first whole gRPC message in `buffer` (prefix
/// included), if it holds one.
fn whole_message(buffer: &[u8]) -> Option<usize> {
    let prefix = buffer.get(..5)?;
    let length = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]) as usize;
    let whole = 5 + length;
    (buffer.len() >= whole).then_some(whole)
}

impl Body for PerMessage {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let mut this = self.project();
        loop {
            if let Some((_, at)) = this.message {
                if clock::now() < *at {
                    this.sleep.as_mut().reset(*at);
                    ready!(this.sleep.as_mut().poll(cx));
                }
                let (message, _) = this.message.take().expect("checked above");
                return Poll::Ready(Some(Ok(Frame::data(message))));
            }
            if let Some(len) = whole_message(this.buffer) {
                let message = this.buffer.split_to(len).freeze();
                let from = this
                    .last
                    .map_or(clock::now(), |last| last.max(clock::now()));
                let at = from + (this.delay)();
                *this.last = Some(at);
                *this.message = Some((message, at));
                continue;
            }
            if *this.done {
                if !this.buffer.is_empty() {
                    let rest = this.buffer.split().freeze();
                    return Poll::Ready(Some(Ok(Frame::data(rest))));
                }
                return Poll::Ready(this.tail.take().map(Ok));
            }
            match ready!(this.inner.as_mut().poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => this.buffer.extend_from_slice(&data),
                    Err(frame) => {
                        *this.tail = Some(frame);
                        *this.done = true;
                    }
                },
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                None => *this.done = true,
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.message.is_none() && self.buffer.is_empty() && self.tail.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;
    use tokio::sync::mpsc;

    use super::*;

    /// A gRPC message: prefix and `payload`.
    fn message(payload: &[u8]) -> Vec<u8> {
        let mut m = vec![0];
        m.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        m.extend_from_slice(payload);
        m
    }

    /// A body fed frame by frame through the returned sender.
    fn fed() -> (mpsc::Sender<Frame<Bytes>>, BoxBody) {
        let (tx, rx) = mpsc::channel(16);
        let frames = futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|f| (Ok::<_, BoxError>(f), rx))
        });
        (tx, http_body_util::StreamBody::new(frames).boxed_unsync())
    }

    /// Each frame the body gives, with when (ms since the start).
    async fn timed(
        body: impl Body<Data = Bytes, Error = BoxError> + Unpin,
    ) -> Vec<(u128, Frame<Bytes>)> {
        let start = clock::now();
        let mut body = body;
        let mut seen = Vec::new();
        while let Some(frame) = body.frame().await {
            seen.push(((clock::now() - start).as_millis(), frame.unwrap()));
        }
        seen
    }

    fn steps<const N: usize>(delays: [u64; N]) -> MessageDelay {
        let mut delays = delays.into_iter();
        Box::new(move || clock::Duration::from_millis(delays.next().expect("a delay per message")))
    }

    #[tokio::test(start_paused = true)]
    async fn messages_that_came_together_leave_one_after_another_each_after_its_own_delay() {
        let (tx, inner) = fed();
        let mut bytes = message(b"one");
        bytes.extend(message(b"two"));
        bytes.extend(message(b""));
        // Split mid-prefix and mid-message: framing is the messages', not
        // the frames'.
        let (a, b) = bytes.split_at(7);
        tx.send(Frame::data(Bytes::copy_from_slice(a)))
            .await
            .unwrap();
        tx.send(Frame::data(Bytes::copy_from_slice(b)))
            .await
            .unwrap();
        let mut trailers = http::HeaderMap::new();
        trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
        tx.send(Frame::trailers(trailers)).await.unwrap();
        drop(tx);
        let seen = timed(PerMessage::new(inner, steps([100, 50, 10]))).await;
        let data: Vec<(u128, Vec<u8>)> = seen
            .iter()
            .filter_map(|(at, f)| f.data_ref().map(|d| (*at, d.to_vec())))
            .collect();
        assert_eq!(
            data,
            [
                (100, message(b"one")),
                (150, message(b"two")),
                (160, message(b"")),
            ]
        );
        let (at, last) = seen.last().unwrap();
        assert_eq!(*at, 160, "the trailers follow the last message at once");
        assert_eq!(last.trailers_ref().unwrap()["grpc-status"], "0");
    }

    #[tokio::test(start_paused = true)]
    async fn a_message_that_comes_after_the_last_one_left_waits_its_delay_from_its_arrival() {
        let (tx, inner) = fed();
        let feeder = tokio::spawn(async move {
            tx.send(Frame::data(message(b"a").into())).await.unwrap();
            clock::sleep(clock::Duration::from_millis(500)).await;
            tx.send(Frame::data(message(b"b").into())).await.unwrap();
        });
        let seen = timed(PerMessage::new(inner, steps([100, 100]))).await;
        feeder.await.unwrap();
        let at: Vec<u128> = seen.iter().map(|(at, _)| *at).collect();
        assert_eq!(at, [100, 600]);
    }

    #[tokio::test(start_paused = true)]
    async fn bytes_that_never_make_a_whole_message_pass_at_the_end_unheld() {
        let (tx, inner) = fed();
        let mut bytes = message(b"whole");
        bytes.extend_from_slice(&[0, 0, 0, 0, 9, 1, 2]);
        tx.send(Frame::data(bytes.into())).await.unwrap();
        drop(tx);
        let seen = timed(PerMessage::new(inner, steps([30]))).await;
        let data: Vec<(u128, Vec<u8>)> = seen
            .iter()
            .map(|(at, f)| (*at, f.data_ref().unwrap().to_vec()))
            .collect();
        assert_eq!(
            data,
            [(30, message(b"whole")), (30, vec![0, 0, 0, 0, 9, 1, 2])]
        );
    }
}
