//! Bulkhead: a counting limit on concurrent calls. The permit travels with
//! the call and is released when it is dropped, on every path.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::clock::Duration;

/// Turns a full bulkhead gives calls ending at the same instant to release
/// their slots (enough for a response to travel proxy → defense line).
const RELEASE_TURNS: u32 = 32;

/// A limit of `max_concurrent` calls in flight.
#[derive(Debug)]
pub struct Bulkhead {
    /// The slots.
    slots: Arc<Semaphore>,
    /// The configured limit, for metrics and reports.
    max_concurrent: u32,
    /// How long a call may wait for a slot; zero rejects at once.
    max_wait: Duration,
    /// Calls turned away because every slot was taken.
    rejected: AtomicU64,
}

/// A call was turned away: every slot was taken (for `max_wait`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("bulkhead full ({0} in flight)")]
pub struct BulkheadFull(pub u32);

impl Bulkhead {
    /// A bulkhead of `max_concurrent` slots.
    pub fn new(max_concurrent: u32, max_wait: Duration) -> Bulkhead {
        Bulkhead {
            slots: Arc::new(Semaphore::new(max_concurrent as usize)),
            max_concurrent,
            max_wait,
            rejected: AtomicU64::new(0),
        }
    }

    /// Takes a slot, waiting up to `max_wait`.
    ///
    /// With no wait, a full bulkhead gives the tasks already woken a few
    /// turns before it rejects: a call that ends at this very instant
    /// releases its slot first (under a paused clock, arrivals and
    /// completions meet on the same millisecond; judging the arrival first
    /// would reject what a real bulkhead, where they never meet exactly,
    /// does not). The turns take no time: the clock cannot move while this
    /// task is runnable.
    pub async fn acquire(&self) -> Result<OwnedSemaphorePermit, BulkheadFull> {
        let got = if self.max_wait.is_zero() {
            let mut got = self.slots.clone().try_acquire_owned().ok();
            for _ in 0..RELEASE_TURNS {
                if got.is_some() {
                    break;
                }
                tokio::task::yield_now().await;
                got = self.slots.clone().try_acquire_owned().ok();
            }
            got
        } else {
            tokio::time::timeout(self.max_wait, self.slots.clone().acquire_owned())
                .await
                .ok()
                .and_then(Result::ok)
        };
        got.ok_or_else(|| {
            self.rejected.fetch_add(1, Ordering::Relaxed);
            BulkheadFull(self.max_concurrent)
        })
    }

    /// Free slots now.
    pub fn available(&self) -> u32 {
        self.slots.available_permits() as u32
    }

    /// The limit.
    pub fn max_concurrent(&self) -> u32 {
        self.max_concurrent
    }

    /// Calls rejected so far.
    pub fn rejected(&self) -> u64 {
        self.rejected.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[tokio::test(start_paused = true)]
    async fn a_call_ending_at_the_instant_another_arrives_releases_its_slot_first() {
        let b = Arc::new(Bulkhead::new(1, Duration::ZERO));
        let at = crate::clock::now() + Duration::from_millis(100);
        // The arrival's timer was set first, so it is woken first.
        let arrival = {
            let b = b.clone();
            tokio::spawn(async move {
                tokio::time::sleep_until(at).await;
                b.acquire().await.map(|_| ())
            })
        };
        let held = b.acquire().await.unwrap();
        let ending = tokio::spawn(async move {
            tokio::time::sleep_until(at).await;
            // The response still travels a few hops before the slot frees.
            for _ in 0..5 {
                tokio::task::yield_now().await;
            }
            drop(held);
        });
        assert_eq!(
            arrival.await.unwrap(),
            Ok(()),
            "released first, then judged"
        );
        ending.await.unwrap();
        assert_eq!(b.rejected(), 0);
    }

    #[test]
    fn a_bulkhead_reports_its_limit_and_its_free_slots() {
        let b = Bulkhead::new(7, Duration::ZERO);
        assert_eq!((b.max_concurrent(), b.available()), (7, 7));
    }

    #[tokio::test(start_paused = true)]
    async fn a_bulkhead_still_full_after_the_instants_turns_rejects() {
        let b = Bulkhead::new(1, Duration::ZERO);
        let _held = b.acquire().await.unwrap();
        let before = crate::clock::now();
        assert_eq!(b.acquire().await.unwrap_err(), BulkheadFull(1));
        assert_eq!(crate::clock::now(), before, "the turns take no time");
    }

    #[tokio::test(start_paused = true)]
    async fn full_bulkhead_rejects_at_once_and_a_dropped_permit_frees_its_slot() {
        let b = Bulkhead::new(2, Duration::ZERO);
        let p1 = b.acquire().await.unwrap();
        let _p2 = b.acquire().await.unwrap();
        assert_eq!(b.acquire().await.unwrap_err(), BulkheadFull(2));
        assert_eq!(b.rejected(), 1);
        drop(p1);
        assert!(b.acquire().await.is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn max_wait_lets_a_call_wait_for_a_slot_then_gives_up() {
        let b = Arc::new(Bulkhead::new(1, Duration::from_millis(500)));
        let held = b.acquire().await.unwrap();
        let start = tokio::time::Instant::now();
        assert!(b.acquire().await.is_err());
        assert_eq!(start.elapsed(), Duration::from_millis(500));
        let waiter = {
            let b = b.clone();
            tokio::spawn(async move { b.acquire().await.is_ok() })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        drop(held);
        assert!(waiter.await.unwrap());
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 64,
            rng_seed: proptest::test_runner::RngSeed::Fixed(0x00b1_1c4e),
            ..ProptestConfig::default()
        })]
        #[test]
        fn bulkhead_never_exceeds_its_limit(limit in 1u32..8, ops in prop::collection::vec(any::<bool>(), 1..200)) {
            let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
            rt.block_on(async {
                let b = Bulkhead::new(limit, Duration::ZERO);
                let mut held = Vec::new();
                for take in ops {
                    if take {
                        if let Ok(p) = b.acquire().await {
                            held.push(p);
                        }
                    } else {
                        held.pop();
                    }
                    prop_assert!(held.len() as u32 <= limit);
                    prop_assert_eq!(b.available() as usize, limit as usize - held.len());
                }
                Ok(())
            })?;
        }
    }
}
