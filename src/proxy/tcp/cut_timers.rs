//! The connection's timed cuts: `reset`/`close` faults that cut `after` a
//! delay, re-armed when the fault list changes, until both pumps are done.

use std::sync::atomic::Ordering;

use super::Conn;
use super::verdict::Verdict;
use crate::clock::{self, Instant};
use crate::fault::{FaultKind, Hit};

impl Conn<'_> {
    /// Fires `reset`/`close` faults that cut `after` a delay (from the
    /// connection's start; a `timeout`'s from when it began acting);
    /// re-armed when the fault list changes; done when both pumps are.
    pub(super) async fn cut_timers(&self) {
        let mut changes = self.plan.subscribe();
        loop {
            let rolls = self.rolls();
            let mut earliest: Option<(Hit, Instant)> = None;
            for hit in rolls.hits() {
                let from = match &hit.fault().kind {
                    // reset_peer's timer starts at its stream's first data.
                    FaultKind::Reset(c) if c.stream.is_some() => continue,
                    // timeout's, when the toxic began acting (Toxiproxy
                    // starts its Pipe with the link, or when it is added).
                    FaultKind::Close(c) if c.stream.is_some() => rolls.since(&hit),
                    _ => self.opened,
                };
                if let FaultKind::Reset(c) | FaultKind::Close(c) = &hit.fault().kind
                    && let Some(after) = c.after
                {
                    let at = clock::later(from, after.get());
                    if earliest.as_ref().is_none_or(|(_, e)| at < *e) {
                        earliest = Some((hit, at));
                    }
                }
            }
            let timer = async {
                match &earliest {
                    Some((_, at)) => clock::sleep_until(*at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                _ = self.cut.cancelled() => return,
                _ = self.pumps_done() => return,
                _ = timer => {
                    if let Some((hit, _)) = earliest
                        && self.plan.hit_active(&hit)
                    {
                        self.plan.record_hit(&hit, "connection");
                        self.cut.cut(Verdict::of(&hit.fault().kind));
                    }
                    return;
                }
                _ = changes.changed() => {}
            }
        }
    }

    /// Resolves once both pumps have returned.
    async fn pumps_done(&self) {
        loop {
            let notified = self.cut.notify.notified();
            if self.pumps_left.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}
