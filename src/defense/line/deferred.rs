//! A gRPC answer whose status comes in its trailers (messages first, then
//! `grpc-status`): the breaker's verdict waits for the end of the body.
//! The trailers' status is classified as one in the head would be; a body
//! that breaks off is a reset; one that ends with no status at all is
//! UNKNOWN, as gRPC clients take it. A caller that leaves before the end
//! cancels the call (its guard is dropped), as it does before the head.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::sync::Notify;

use crate::clock::{self, Instant};
use crate::defense::breaker::{CallGuard, FailureKind, SharedBreaker};
use crate::defense::report::Observer;
use crate::http::body::{BoxBody, BoxError};
use crate::http::grpc;

/// The gRPC status a call that ended without one is taken as (UNKNOWN).
const NO_STATUS: u8 = 2;

/// What records the verdict once the body ends.
pub(super) struct Verdict {
    /// The admitted call.
    pub(super) guard: CallGuard,
    /// Its breaker: the classifier, and the transitions to publish.
    pub(super) breaker: SharedBreaker,
    /// Woken after the step, for the breaker's timer task.
    pub(super) stepped: Arc<Notify>,
    /// Where transitions go.
    pub(super) observer: Arc<dyn Observer>,
    /// When the attempt was sent: the call's duration runs to the end.
    pub(super) sent: Instant,
}

impl Verdict {
    /// Records `outcome` (a gRPC status, or a broken body) and publishes
    /// the transitions it caused.
    fn record(self, status: Result<u8, ()>) {
        let outcome = match status {
            Ok(code) => self.breaker.lock().classifier().classify_grpc(code),
            Err(()) => self
                .breaker
                .lock()
                .classifier()
                .classify_error(FailureKind::Reset),
        };
        let now = clock::now();
        self.guard.record(outcome, now - self.sent, now);
        for t in self.breaker.take_journal() {
            self.observer.transition(&t);
        }
        self.stepped.notify_one();
    }
}

pin_project_lite::pin_project! {
    /// Passes `inner` on as it is and records the verdict at its end.
    pub(super) struct Deferred {
        #[pin]
        inner: BoxBody,
        verdict: Option<Verdict>,
    }
}

impl Deferred {
    pub(super) fn new(inner: BoxBody, verdict: Verdict) -> Deferred {
        Deferred {
            inner,
            verdict: Some(verdict),
        }
    }
}

impl Body for Deferred {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.project();
        let frame = ready!(this.inner.poll_frame(cx));
        let status = match &frame {
            Some(Ok(f)) => f
                .trailers_ref()
                .map(|trailers| Ok(grpc::status_in(trailers).unwrap_or(NO_STATUS))),
            Some(Err(_)) => Some(Err(())),
            None => Some(Ok(NO_STATUS)),
        };
        if let Some(status) = status
            && let Some(verdict) = this.verdict.take()
        {
            verdict.record(status);
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        // Polled once more at the end, so the verdict is recorded.
        self.verdict.is_none() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;
    use crate::defense::breaker::config::{BreakerConfig, ModelConfig, WindowConfig};
    use crate::defense::breaker::{Breaker, Counters};
    use crate::defense::report::NoObserver;

    /// A body of `frames`, then an error when `broken`.
    fn body(frames: Vec<Frame<Bytes>>, broken: bool) -> BoxBody {
        let mut items: Vec<Result<Frame<Bytes>, BoxError>> = frames.into_iter().map(Ok).collect();
        if broken {
            items.push(Err("connection reset".into()));
        }
        http_body_util::StreamBody::new(futures_util::stream::iter(items)).boxed_unsync()
    }

    fn trailers(status: Option<&'static str>) -> Frame<Bytes> {
        let mut t = http::HeaderMap::new();
        if let Some(s) = status {
            t.insert("grpc-status", http::HeaderValue::from_static(s));
        }
        Frame::trailers(t)
    }

    /// Reads `inner` through a deferred verdict (all of it, or the first
    /// frame only when `all` is false); the breaker's counters after.
    async fn judged(inner: BoxBody, all: bool) -> Counters {
        let breaker = window_breaker();
        let mut deferred = Deferred::new(inner, verdict_on(&breaker));
        if all {
            while let Some(frame) = deferred.frame().await {
                if frame.is_err() {
                    break;
                }
            }
        } else {
            let _ = deferred.frame().await;
            assert_eq!(breaker.counters().cancelled, 0, "nothing judged mid-stream");
            drop(deferred);
        }
        breaker.counters()
    }

    fn data() -> Frame<Bytes> {
        Frame::data(crate::http::grpc::frame(b"item"))
    }

    #[tokio::test(start_paused = true)]
    async fn the_trailers_status_is_the_verdict_ok_a_success_unavailable_a_failure_not_found_ignored()
     {
        let ok = judged(body(vec![data(), trailers(Some("0"))], false), true).await;
        assert_eq!((ok.successes, ok.failures, ok.ignored), (1, 0, 0));
        let down = judged(body(vec![data(), trailers(Some("14"))], false), true).await;
        assert_eq!((down.successes, down.failures, down.ignored), (0, 1, 0));
        let missing = judged(body(vec![data(), trailers(Some("5"))], false), true).await;
        assert_eq!(
            (missing.successes, missing.failures, missing.ignored),
            (0, 0, 1)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_breaks_off_or_ends_without_a_status_is_a_failure() {
        let broken = judged(body(vec![data()], true), true).await;
        assert_eq!((broken.successes, broken.failures), (0, 1));
        let no_trailers = judged(body(vec![data()], false), true).await;
        assert_eq!((no_trailers.successes, no_trailers.failures), (0, 1));
        let no_status = judged(body(vec![data(), trailers(None)], false), true).await;
        assert_eq!((no_status.successes, no_status.failures), (0, 1));
    }

    #[tokio::test(start_paused = true)]
    async fn a_caller_that_leaves_mid_stream_cancels_the_call() {
        let left = judged(body(vec![data(), trailers(Some("14"))], false), false).await;
        assert_eq!((left.successes, left.failures, left.cancelled), (0, 0, 1));
    }
    fn verdict_on(breaker: &SharedBreaker) -> Verdict {
        Verdict {
            guard: breaker.try_acquire(clock::now()).unwrap(),
            breaker: breaker.clone(),
            stepped: Arc::new(Notify::new()),
            observer: Arc::new(NoObserver),
            sent: clock::now(),
        }
    }

    fn window_breaker() -> SharedBreaker {
        SharedBreaker::new(Breaker::new(
            &BreakerConfig::new("dep", ModelConfig::Window(WindowConfig::default())),
            clock::now(),
        ))
    }

    #[tokio::test(start_paused = true)]
    async fn an_ended_inner_body_is_not_the_end_until_the_verdict_is_recorded() {
        let breaker = window_breaker();
        let empty = http_body_util::Empty::<Bytes>::new()
            .map_err(|never| match never {})
            .boxed_unsync();
        assert!(empty.is_end_stream());
        let mut deferred = Deferred::new(empty, verdict_on(&breaker));
        assert!(!deferred.is_end_stream(), "polled once more to judge");
        assert!(deferred.frame().await.is_none());
        assert!(deferred.is_end_stream());
        assert_eq!(breaker.counters().failures, 1, "no status is UNKNOWN");
    }

    #[tokio::test(start_paused = true)]
    async fn a_judged_body_still_streaming_is_not_at_its_end() {
        let breaker = window_breaker();
        let inner = body(vec![trailers(Some("0")), data()], false);
        let mut deferred = Deferred::new(inner, verdict_on(&breaker));
        let _ = deferred.frame().await;
        assert_eq!(breaker.counters().successes, 1);
        assert!(!deferred.is_end_stream(), "the inner body has more");
    }

    #[tokio::test(start_paused = true)]
    async fn the_size_hint_is_the_inner_body_s() {
        let breaker = window_breaker();
        let full = http_body_util::Full::new(Bytes::from_static(b"twelve bytes"))
            .map_err(|never| match never {})
            .boxed_unsync();
        let deferred = Deferred::new(full, verdict_on(&breaker));
        assert_eq!(deferred.size_hint().exact(), Some(12));
    }
}
