//! The head clock's deadlines, on paused time: it notifies no one, so
//! each test checks the watch finds the deadline the notes set.

use std::sync::Arc;

use super::*;

/// Runs the clock's watch in a task of its own; `(when, how)` it expired.
fn watch(clock: &Arc<HeadClock>) -> tokio::task::JoinHandle<(Instant, Expired)> {
    let clock = clock.clone();
    tokio::spawn(async move {
        let expired = clock.expired().await;
        (clock::now(), expired)
    })
}

#[tokio::test(start_paused = true)]
async fn an_idle_connection_expires_quietly_a_head_timeout_after_it_opened() {
    let opened = clock::now();
    let clock = HeadClock::new();
    let (when, how) = watch(&clock).await.unwrap();
    assert_eq!((when - opened, how), (HEAD_TIMEOUT, Expired::Idle));
}

#[tokio::test(start_paused = true)]
async fn part_of_a_head_then_nothing_is_stalled_from_when_the_wait_began() {
    let opened = clock::now();
    let clock = HeadClock::new();
    let watched = watch(&clock);
    clock::sleep(Duration::from_secs(10)).await;
    clock.read(b"GET / HT");
    let (when, how) = watched.await.unwrap();
    assert_eq!((when - opened, how), (HEAD_TIMEOUT, Expired::Stalled));
}

#[tokio::test(start_paused = true)]
async fn a_request_in_service_never_expires_and_the_wait_after_its_answer_is_timed_from_the_answer()
{
    let clock = HeadClock::new();
    let watched = watch(&clock);
    clock::sleep(Duration::from_secs(5)).await;
    clock.read(b"GET / HTTP/1.1\r\n\r\n");
    clock.request();
    // In service for three timeouts and a bit: the watch looks and waits.
    clock::sleep(HEAD_TIMEOUT * 3 + Duration::from_secs(7)).await;
    assert!(!watched.is_finished());
    let answered = clock::now();
    clock.answered();
    let (when, how) = watched.await.unwrap();
    assert_eq!((when - answered, how), (HEAD_TIMEOUT, Expired::Idle));
}

#[tokio::test(start_paused = true)]
async fn a_second_request_moves_the_deadline_on_and_two_in_service_hold_it_until_both_are_answered()
{
    let clock = HeadClock::new();
    let watched = watch(&clock);
    clock::sleep(Duration::from_secs(20)).await;
    clock.read(b"GET /a HTTP/1.1\r\n\r\n");
    clock.request();
    clock.request();
    clock.answered();
    clock::sleep(HEAD_TIMEOUT * 2).await;
    assert!(!watched.is_finished(), "one request is still in service");
    let answered = clock::now();
    clock.answered();
    clock::sleep(Duration::from_secs(29)).await;
    assert!(!watched.is_finished());
    let (when, how) = watched.await.unwrap();
    assert_eq!((when - answered, how), (HEAD_TIMEOUT, Expired::Idle));
}

#[tokio::test(start_paused = true)]
async fn a_connection_that_opens_with_http2s_preface_is_never_timed() {
    let clock = HeadClock::new();
    let watched = watch(&clock);
    clock.read(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    clock::sleep(HEAD_TIMEOUT * 10).await;
    assert!(!watched.is_finished());
    // Only the first bytes tell HTTP/2: later ones are a head's.
    let other = HeadClock::new();
    other.read(b"GET / HTTP/1.1\r\n");
    other.read(b"PRI * HTTP/2.0\r\n");
    let (_, how) = watch(&other).await.unwrap();
    assert_eq!(how, Expired::Stalled);
}

#[tokio::test(start_paused = true)]
async fn an_answer_sent_whole_starts_the_wait_for_the_next_head_and_its_body_passes_untouched() {
    use http_body_util::BodyExt;
    let clock = HeadClock::new();
    let watched = watch(&clock);
    clock.read(b"GET / HTTP/1.1\r\n\r\n");
    clock.request();
    let answer = http::Response::new(http_body_util::Full::new(bytes::Bytes::from_static(
        b"the answer",
    )))
    .noting(Some(Ended(clock.clone())));
    clock::sleep(HEAD_TIMEOUT * 2).await;
    assert!(!watched.is_finished(), "the answer is still being sent");
    // What hyper asks of a body before it writes it is the inner body's.
    assert!(!answer.body().is_end_stream());
    assert_eq!(answer.body().size_hint().exact(), Some(10));
    let empty = http::Response::new(http_body_util::Empty::<bytes::Bytes>::new()).noting(None);
    assert!(empty.body().is_end_stream());
    assert_eq!(empty.body().size_hint().exact(), Some(0));
    let sent = clock::now();
    let body = answer.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], b"the answer");
    // hyper drops the body it wrote whole: the wait begins.
    let (when, how) = tokio::time::timeout(HEAD_TIMEOUT * 2, watched)
        .await
        .expect("the wait for the next head never began")
        .unwrap();
    assert_eq!((when - sent, how), (HEAD_TIMEOUT, Expired::Idle));
}
