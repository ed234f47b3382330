//! A wait that ends within a fraction of a millisecond of its deadline in
//! real time, without spinning, and exactly on it under a paused clock.
//!
//! tokio's timer wheel counts whole milliseconds: a `Sleep` wakes at the
//! next millisecond tick after its deadline and the driver parks in
//! `epoll_wait` with a millisecond timeout, so it ends up to about 2 ms late.
//! A latency fault must be honest to well under a millisecond.
//!
//! So every pending precise deadline of the process is kept, in order, by
//! one timer thread that parks until the earliest of them (a futex wait with
//! a nanosecond timeout) and wakes the tasks whose deadlines have passed.
//! Each [`PreciseSleep`] also keeps an ordinary tokio `Sleep` for the same
//! deadline. A sleep is over only when the tokio clock says the deadline has
//! passed: in real time that is the timer thread's wake-up, a fraction of a
//! millisecond after the deadline (never before); under a paused clock the
//! real-time wake-up finds the virtual deadline not reached yet and the
//! tokio `Sleep`, exact in virtual time, ends it. The timer thread only ever
//! wakes tasks; it makes no decision.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll, Waker};
use std::thread::Thread;

use tokio::time::{Instant, Sleep};

/// A real-time instant: what the timer thread parks against. The deadline
/// itself is a `tokio::time::Instant`; this is its real-time equivalent,
/// which a paused clock does not govern (it only decides when to look).
#[allow(clippy::disallowed_types)]
type RealInstant = std::time::Instant;

/// The real-time clock, for the timer thread's parking only.
#[allow(clippy::disallowed_methods)]
fn real_now() -> RealInstant {
    RealInstant::now()
}

/// A registration: the deadline, then a sequence number that keeps equal
/// deadlines apart.
type Key = (RealInstant, u64);

/// The process's timer thread and the deadlines it watches.
struct Timer {
    /// Pending deadlines, earliest first, with the task to wake.
    pending: Mutex<BTreeMap<Key, Waker>>,
    /// Numbers the registrations.
    next: AtomicU64,
    /// The timer thread, unparked when an earlier deadline arrives.
    thread: OnceLock<Thread>,
}

impl Timer {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<Key, Waker>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Watches `at` for `waker`; wakes the timer thread when `at` is the new
    /// earliest deadline.
    fn register(&self, at: RealInstant, waker: Waker) -> Key {
        let key = (at, self.next.fetch_add(1, Ordering::Relaxed));
        let earliest = {
            let mut pending = self.lock();
            pending.insert(key, waker);
            pending.first_key_value().is_some_and(|(k, _)| *k == key)
        };
        if earliest && let Some(thread) = self.thread.get() {
            thread.unpark();
        }
        key
    }

    /// Replaces the waker of a registration that has not fired yet.
    fn update(&self, key: &Key, waker: &Waker) {
        if let Some(w) = self.lock().get_mut(key) {
            w.clone_from(waker);
        }
    }

    /// Forgets a registration (no-op when it already fired).
    fn cancel(&self, key: &Key) {
        self.lock().remove(key);
    }

    /// Whether a registration is still waiting to fire.
    #[cfg(test)]
    fn is_pending(&self, key: &Key) -> bool {
        self.lock().contains_key(key)
    }

    /// The timer thread: wakes every task whose deadline passed, then parks
    /// until the next deadline (or until an earlier one is registered).
    fn run(&self) {
        least_timer_slack();
        let mut due = Vec::new();
        loop {
            let next = {
                let mut pending = self.lock();
                let now = real_now();
                while let Some(entry) = pending.first_entry() {
                    if entry.key().0 > now {
                        break;
                    }
                    due.push(entry.remove());
                }
                pending.first_key_value().map(|(k, _)| k.0)
            };
            for waker in due.drain(..) {
                waker.wake();
            }
            // A park may end early (spuriously, or for a new earliest
            // deadline): the loop looks at the clock again either way.
            match next {
                Some(at) => std::thread::park_timeout(at.saturating_duration_since(real_now())),
                None => std::thread::park(),
            }
        }
    }
}

/// Asks the kernel to end this thread's timed waits on time: by default
/// Linux may let a wait of a normal thread run up to 50 µs late, to fold
/// wake-ups together, which a latency fault would add to every delay.
fn least_timer_slack() {
    #[cfg(target_os = "linux")]
    if let Err(err) = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1)) {
        tracing::debug!(%err, "could not lower the timer thread's timer slack");
    }
}

/// The process's timer, its thread started on first use.
fn timer() -> &'static Timer {
    static TIMER: OnceLock<Timer> = OnceLock::new();
    static STARTED: OnceLock<()> = OnceLock::new();
    let timer = TIMER.get_or_init(|| Timer {
        pending: Mutex::new(BTreeMap::new()),
        next: AtomicU64::new(0),
        thread: OnceLock::new(),
    });
    STARTED.get_or_init(|| {
        let spawned = std::thread::Builder::new()
            .name("firedrill-timer".into())
            .spawn(move || timer.run());
        match spawned {
            Ok(handle) => {
                let _ = timer.thread.set(handle.thread().clone());
            }
            // Without the thread the tokio `Sleep` still ends every wait,
            // only less precisely.
            Err(err) => tracing::warn!(%err, "could not start the precise timer thread"),
        }
    });
    timer
}

pin_project_lite::pin_project! {
    /// Ends when the tokio clock reaches `deadline`: in real time within a
    /// fraction of a millisecond after it, never before; under a paused
    /// clock exactly on it. See [`sleep_until_precise`](super::sleep_until_precise).
    #[must_use = "a sleep does nothing unless awaited"]
    pub struct PreciseSleep {
        deadline: Instant,
        // The tokio timer: exact in virtual time, and the fallback.
        #[pin]
        coarse: Sleep,
        // The timer thread's registration, once polled.
        registration: Registration,
    }
}

impl std::fmt::Debug for PreciseSleep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreciseSleep")
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

/// A registration with the timer thread, cancelled on drop.
#[derive(Default)]
struct Registration {
    /// The key and the waker it holds, once registered.
    entry: Option<(Key, Waker)>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some((key, _)) = &self.entry {
            timer().cancel(key);
        }
    }
}

impl PreciseSleep {
    pub(super) fn new(deadline: Instant) -> PreciseSleep {
        PreciseSleep {
            deadline,
            coarse: tokio::time::sleep_until(deadline),
            registration: Registration::default(),
        }
    }
}

impl Future for PreciseSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.project();
        if Instant::now() >= *this.deadline || this.coarse.poll(cx).is_ready() {
            return Poll::Ready(());
        }
        match &mut this.registration.entry {
            None => {
                let key = timer().register(this.deadline.into_std(), cx.waker().clone());
                this.registration.entry = Some((key, cx.waker().clone()));
            }
            Some((key, waker)) if !waker.will_wake(cx.waker()) => {
                timer().update(key, cx.waker());
                waker.clone_from(cx.waker());
            }
            Some(_) => {}
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Duration;

    #[cfg(target_os = "linux")]
    #[test]
    fn the_timer_thread_asks_for_the_least_timer_slack() {
        // On a thread of its own, as the timer thread does.
        let slack = std::thread::spawn(|| {
            least_timer_slack();
            rustix::thread::current_timer_slack().unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(slack, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn ends_exactly_on_the_deadline_under_a_paused_clock() {
        let start = Instant::now();
        for ms in [0u64, 1, 2, 3, 7, 100, 2_500] {
            let deadline = start + Duration::from_millis(ms);
            PreciseSleep::new(deadline).await;
            assert_eq!(Instant::now(), deadline.max(start), "deadline +{ms} ms");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn paused_sleeps_end_in_deadline_order_each_on_its_deadline() {
        let start = Instant::now();
        let order = std::sync::Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for ms in [5u64, 1, 4, 2, 3] {
            let order = order.clone();
            tasks.push(tokio::spawn(async move {
                PreciseSleep::new(start + Duration::from_millis(ms * 3)).await;
                order.lock().unwrap().push((ms, Instant::now() - start));
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let order = order.lock().unwrap().clone();
        let expected: Vec<_> = (1..=5u64)
            .map(|ms| (ms, Duration::from_millis(ms * 3)))
            .collect();
        assert_eq!(order, expected);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn real_time_sleeps_never_end_before_their_deadline() {
        let start = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..64u64 {
            let deadline = start + Duration::from_micros(300 + i * 97);
            tasks.spawn(async move {
                PreciseSleep::new(deadline).await;
                (deadline, Instant::now())
            });
        }
        let mut ended = 0;
        while let Some(r) = tasks.join_next().await {
            let (deadline, at) = r.unwrap();
            assert!(at >= deadline, "ended {:?} early", deadline - at);
            ended += 1;
        }
        assert_eq!(ended, 64);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_dropped_sleep_leaves_no_registration_behind() {
        let far = Instant::now() + Duration::from_secs(3600);
        let mut sleep = Box::pin(PreciseSleep::new(far));
        let polled = futures_util::poll!(sleep.as_mut());
        assert!(polled.is_pending());
        let key = sleep.registration.entry.as_ref().expect("registered").0;
        assert!(timer().is_pending(&key));
        drop(sleep);
        assert!(!timer().is_pending(&key));
    }

    /// Sends on a channel when woken.
    struct Flag(Mutex<std::sync::mpsc::Sender<()>>);

    impl std::task::Wake for Flag {
        fn wake(self: std::sync::Arc<Self>) {
            let _ = self.0.lock().unwrap().send(());
        }
    }

    #[test]
    fn the_timer_thread_wakes_a_due_registration_and_forgets_it() {
        let (tx, rx) = std::sync::mpsc::channel();
        let waker = Waker::from(std::sync::Arc::new(Flag(Mutex::new(tx))));
        let at = real_now() + Duration::from_millis(2);
        let key = timer().register(at, waker);
        // Generous: the thread fires within a fraction of a millisecond
        // unless the machine is very busy.
        rx.recv_timeout(Duration::from_secs(30))
            .expect("the timer thread woke the task");
        assert!(real_now() >= at, "woken before the deadline");
        assert!(!timer().is_pending(&key), "fired entries are removed");
    }
}
