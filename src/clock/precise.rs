//! A wait that ends within a fraction of a millisecond of its deadline in
//! real time, without spinning, and exactly on it under a paused clock.
//!
//! tokio's timer wheel counts whole milliseconds: a `Sleep` wakes at the
//! next millisecond tick after its deadline and the driver parks in
//! `epoll_wait` with a millisecond timeout, so it ends up to about 2 ms late.
//! A latency fault must be honest to well under a millisecond.
//!
//! So each event loop (each thread that polls a precise sleep, inside a
//! runtime with an I/O driver) keeps its pending precise deadlines in order
//! and one timerfd, registered with the runtime's own reactor and armed for
//! the earliest of them. When it expires, `epoll_wait` returns in the loop
//! itself: no other thread runs, and no wake-up crosses threads. A small
//! task of the loop reads the timerfd, wakes the tasks whose deadlines have
//! passed and arms it for the next one.
//!
//! Each [`PreciseSleep`] also keeps an ordinary tokio `Sleep` for the same
//! deadline. A sleep is over only when the tokio clock says the deadline has
//! passed: in real time that is the timerfd's wake-up, a fraction of a
//! millisecond after the deadline (never before); under a paused clock the
//! real-time wake-up finds the virtual deadline not reached yet and the
//! tokio `Sleep`, exact in virtual time, ends it. A runtime without an I/O
//! driver (the in-memory virtual drill) has no timerfd: the tokio `Sleep`
//! alone ends its waits. The timerfd only ever wakes tasks; it makes no
//! decision.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use tokio::time::{Instant, Sleep};

/// A real-time instant: what the timerfd is armed against. The deadline
/// itself is a `tokio::time::Instant`; this is its real-time equivalent,
/// which a paused clock does not govern (it only decides when to look).
#[allow(clippy::disallowed_types)]
type RealInstant = std::time::Instant;

/// The real-time clock, for arming the timerfd only.
#[allow(clippy::disallowed_methods)]
fn real_now() -> RealInstant {
    RealInstant::now()
}

/// A registration: the deadline, then a sequence number that keeps equal
/// deadlines apart.
type Key = (RealInstant, u64);

/// One event loop's precise deadlines and the timerfd armed for the
/// earliest of them.
struct LoopTimer {
    /// Pending deadlines, earliest first, with the task to wake.
    pending: Mutex<BTreeMap<Key, Waker>>,
    /// Numbers the registrations.
    next: AtomicU64,
    /// The timerfd (non-blocking, monotonic clock).
    fd: rustix::fd::OwnedFd,
    /// False once the loop's task is gone (its runtime shut down): the
    /// thread then sets up a new timer in the next runtime it polls in.
    alive: AtomicBool,
}

impl LoopTimer {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<Key, Waker>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Watches `at` for `waker`; arms the timerfd when `at` is the new
    /// earliest deadline.
    fn register(&self, at: RealInstant, waker: Waker) -> Key {
        let key = (at, self.next.fetch_add(1, Ordering::Relaxed));
        let mut pending = self.lock();
        pending.insert(key, waker);
        if pending.first_key_value().is_some_and(|(k, _)| *k == key) {
            self.arm(Some(at));
        }
        key
    }

    /// Replaces the waker of a registration that has not fired yet.
    fn update(&self, key: &Key, waker: &Waker) {
        if let Some(w) = self.lock().get_mut(key) {
            w.clone_from(waker);
        }
    }

    /// Forgets a registration (no-op when it already fired). The timerfd
    /// stays armed: an expiry that finds nothing due only re-arms it.
    fn cancel(&self, key: &Key) {
        self.lock().remove(key);
    }

    /// Whether a registration is still waiting to fire.
    #[cfg(test)]
    fn is_pending(&self, key: &Key) -> bool {
        self.lock().contains_key(key)
    }

    /// Wakes every task whose deadline passed and arms the timerfd for the
    /// next deadline (or disarms it).
    fn fire(&self) {
        let mut due = Vec::new();
        {
            let mut pending = self.lock();
            let now = real_now();
            while let Some(entry) = pending.first_entry() {
                if entry.key().0 > now {
                    break;
                }
                due.push(entry.remove());
            }
            self.arm(pending.first_key_value().map(|(k, _)| k.0));
        }
        for waker in due {
            waker.wake();
        }
    }

    /// Arms the timerfd to expire at `at` (relative to now, so never before
    /// it), or disarms it. An error leaves the tokio `Sleep` to end the wait.
    fn arm(&self, at: Option<RealInstant>) {
        use rustix::time::{Itimerspec, TimerfdTimerFlags, Timespec};
        let zero = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let value = match at {
            // A zero value disarms: a deadline already passed fires at once.
            Some(at) => {
                let wait = at.saturating_duration_since(real_now());
                Timespec {
                    tv_sec: wait.as_secs().try_into().unwrap_or(i64::MAX),
                    tv_nsec: i64::from(wait.subsec_nanos()).max(i64::from(wait.is_zero())),
                }
            }
            None => zero,
        };
        let spec = Itimerspec {
            it_interval: zero,
            it_value: value,
        };
        if let Err(err) = rustix::time::timerfd_settime(&self.fd, TimerfdTimerFlags::empty(), &spec)
        {
            tracing::debug!(%err, "could not arm the precise timer");
        }
    }
}

/// The timerfd as the reactor sees it.
struct TimerFd(Arc<LoopTimer>);

impl std::os::fd::AsRawFd for TimerFd {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.0.fd.as_raw_fd()
    }
}

/// Dropped with the loop's task (its runtime shut down, also before the
/// task ever ran): the timer is dead from then on.
impl Drop for TimerFd {
    fn drop(&mut self) {
        self.0.alive.store(false, Ordering::Release);
    }
}

/// The loop's task: waits for the timerfd's expiry in the reactor, then
/// wakes what is due and re-arms it.
async fn drive(fd: tokio::io::unix::AsyncFd<TimerFd>) {
    loop {
        let Ok(mut ready) = fd.readable().await else {
            return;
        };
        let mut expirations = [0u8; 8];
        match rustix::io::read(&ready.get_inner().0.fd, &mut expirations) {
            Ok(_) => {}
            // Not expired after all (disarmed or re-armed meanwhile).
            Err(rustix::io::Errno::AGAIN) => {}
            Err(err) => {
                tracing::debug!(%err, "the precise timer stopped");
                return;
            }
        }
        ready.clear_ready();
        ready.get_inner().0.fire();
    }
}

impl LoopTimer {
    /// A timer for the loop of the current runtime, its task spawned on
    /// it; none outside a runtime. The runtime must have an I/O driver.
    fn start() -> Option<Arc<LoopTimer>> {
        use rustix::time::{TimerfdClockId, TimerfdFlags};
        let handle = tokio::runtime::Handle::try_current().ok()?;
        let fd = rustix::time::timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )
        .ok()?;
        let timer = Arc::new(LoopTimer {
            pending: Mutex::new(BTreeMap::new()),
            next: AtomicU64::new(0),
            fd,
            alive: AtomicBool::new(true),
        });
        let _entered = handle.enter();
        // SAFETY: `TimerFd` holds the `LoopTimer` that owns the timerfd, so
        // the descriptor stays open and the same for as long as the
        // `AsyncFd` lives, and `as_raw_fd` always returns it.
        #[allow(unsafe_code)]
        let registered = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(
                TimerFd(timer.clone()),
                tokio::io::Interest::READABLE,
            )
        }
        .ok()?;
        handle.spawn(drive(registered));
        Some(timer)
    }
}

thread_local! {
    /// This thread's loop timer, once a precise sleep was polled on it.
    static LOOP_TIMER: RefCell<Option<Arc<LoopTimer>>> = const { RefCell::new(None) };
    /// Set while [`coarse_only`] runs: no loop timer on this thread.
    static COARSE_ONLY: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` (which drives a runtime on this thread) with precise sleeps
/// ended by the tokio timer alone: for a runtime under a paused clock,
/// where that timer is exact, and for one without an I/O driver, where a
/// timerfd cannot be registered (tokio cannot be asked whether a runtime
/// has one; it panics when it has none).
pub fn coarse_only<R>(f: impl FnOnce() -> R) -> R {
    /// Restores the flag, also when `f` panics.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            COARSE_ONLY.set(self.0);
        }
    }
    let _restore = Restore(COARSE_ONLY.replace(true));
    f()
}

/// The timer of the loop polling now, set up on first use (and again after
/// the runtime it belonged to shut down).
fn loop_timer() -> Option<Arc<LoopTimer>> {
    if COARSE_ONLY.get() {
        return None;
    }
    LOOP_TIMER.with(|slot| {
        let mut slot = slot.borrow_mut();
        if let Some(timer) = slot.as_ref()
            && timer.alive.load(Ordering::Acquire)
        {
            return Some(timer.clone());
        }
        *slot = LoopTimer::start();
        slot.clone()
    })
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
        // The loop timer's registration, once polled.
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

/// A registration with a loop timer, cancelled on drop.
#[derive(Default)]
enum Registration {
    /// Not polled yet.
    #[default]
    Unregistered,
    /// No loop timer here: the tokio `Sleep` alone ends the wait.
    Coarse,
    /// Registered (it may have fired since: then it is not registered
    /// again, so a wake-up in real time ahead of a paused clock's deadline
    /// cannot turn into a loop).
    With {
        timer: Arc<LoopTimer>,
        key: Key,
        waker: Waker,
    },
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Registration::With { timer, key, .. } = self {
            timer.cancel(key);
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
        match this.registration {
            Registration::Unregistered => {
                *this.registration = match loop_timer() {
                    Some(timer) => {
                        let key = timer.register(this.deadline.into_std(), cx.waker().clone());
                        Registration::With {
                            timer,
                            key,
                            waker: cx.waker().clone(),
                        }
                    }
                    None => Registration::Coarse,
                };
            }
            Registration::With { timer, key, waker } if !waker.will_wake(cx.waker()) => {
                timer.update(key, cx.waker());
                waker.clone_from(cx.waker());
            }
            _ => {}
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Duration;

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

    /// The registration of a polled sleep, with its timer.
    fn registered(sleep: &PreciseSleep) -> (Arc<LoopTimer>, Key) {
        match &sleep.registration {
            Registration::With { timer, key, .. } => (timer.clone(), *key),
            _ => panic!("the sleep is not registered with a loop timer"),
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_dropped_sleep_leaves_no_registration_behind() {
        let far = Instant::now() + Duration::from_secs(3600);
        let mut sleep = Box::pin(PreciseSleep::new(far));
        let polled = futures_util::poll!(sleep.as_mut());
        assert!(polled.is_pending());
        let (timer, key) = registered(&sleep);
        assert!(timer.is_pending(&key));
        drop(sleep);
        assert!(!timer.is_pending(&key));
    }

    /// Notifies when woken.
    struct Flag(tokio::sync::Notify);

    impl std::task::Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.notify_one();
        }
    }

    /// Registers a bare waker (no tokio `Sleep` beside it) 2 ms ahead and
    /// waits for it: only the loop's timerfd can wake it.
    async fn the_timerfd_wakes_a_bare_registration() {
        let flag = Arc::new(Flag(tokio::sync::Notify::new()));
        let timer = loop_timer().expect("a runtime with an I/O driver has a loop timer");
        let at = real_now() + Duration::from_millis(2);
        let key = timer.register(at, Waker::from(flag.clone()));
        // Generous: the timerfd fires within a fraction of a millisecond
        // unless the machine is very busy.
        tokio::time::timeout(Duration::from_secs(30), flag.0.notified())
            .await
            .expect("the loop's timerfd woke the task");
        assert!(real_now() >= at, "woken before the deadline");
        assert!(!timer.is_pending(&key), "fired entries are removed");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_loops_timerfd_wakes_a_due_registration_and_forgets_it() {
        the_timerfd_wakes_a_bare_registration().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_timerfd_wakes_registrations_on_a_multi_threaded_runtime_too() {
        the_timerfd_wakes_a_bare_registration().await;
    }

    #[test]
    fn a_thread_gets_a_working_timer_again_in_its_next_runtime() {
        let runtime = || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
        };
        let first = runtime().block_on(async { loop_timer().unwrap() });
        // That runtime is gone, and its loop's task with it.
        assert!(!first.alive.load(Ordering::Acquire));
        runtime().block_on(async {
            let second = loop_timer().unwrap();
            assert!(!Arc::ptr_eq(&first, &second), "a dead timer was reused");
            the_timerfd_wakes_a_bare_registration().await;
        });
    }

    #[test]
    fn without_an_io_driver_the_tokio_timer_alone_ends_the_wait() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        coarse_only(|| {
            runtime.block_on(async {
                let deadline = Instant::now() + Duration::from_millis(3);
                let mut sleep = Box::pin(PreciseSleep::new(deadline));
                assert!(futures_util::poll!(sleep.as_mut()).is_pending());
                assert!(matches!(sleep.registration, Registration::Coarse));
                sleep.await;
                assert!(Instant::now() >= deadline);
            })
        });
        // Outside it, the thread has a loop timer again.
        assert!(!COARSE_ONLY.get());
    }
}
