//! How a faulted connection ends: the verdict its faults reach first, and
//! closing its sockets accordingly.

use std::sync::atomic::{AtomicU8, Ordering};

use tokio::sync::Notify;

use crate::fault::FaultKind;
use crate::net::Transport;

/// How a connection ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Both sides closed normally.
    Normal = 0,
    /// Close both sides with FIN now.
    Close = 1,
    /// Close the client side with RST now.
    Reset = 2,
    /// Close both sides with RST now (Toxiproxy's `reset_peer` sets
    /// SO_LINGER 0 on both of its link's sockets).
    ResetBoth = 3,
}

impl Verdict {
    /// How a connection ends when either side failed (an RST, mostly): the
    /// abort passes on as RST to both sides, since a FIN would tell the
    /// other peer its stream ended cleanly. The side that failed is gone
    /// already; its RST on close changes nothing.
    pub(super) const ABORTED: Verdict = Verdict::ResetBoth;

    pub(super) fn of(kind: &FaultKind) -> Verdict {
        match kind {
            FaultKind::Reset(cut) if cut.stream.is_some() => Verdict::ResetBoth,
            FaultKind::Reset(_) => Verdict::Reset,
            _ => Verdict::Close,
        }
    }
}

pub(super) fn finish<S: Transport, U: Transport>(client: S, upstream: Option<U>, verdict: Verdict) {
    if matches!(verdict, Verdict::Reset | Verdict::ResetBoth) {
        client.reset_on_close();
    }
    if let Some(upstream) = &upstream
        && verdict == Verdict::ResetBoth
    {
        upstream.reset_on_close();
    }
    drop(upstream);
    drop(client);
}

/// The first cut decided by any part of a connection; wakes the others.
#[derive(Debug, Default)]
pub(super) struct CutSignal {
    /// A [`Verdict`] as a number, `Normal` until a fault cuts.
    verdict: AtomicU8,
    /// Wakes the pumps and timers when a cut is decided.
    pub(super) notify: Notify,
}

impl CutSignal {
    pub(super) fn cut(&self, verdict: Verdict) {
        let _ = self
            .verdict
            .compare_exchange(0, verdict as u8, Ordering::SeqCst, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    pub(super) fn get(&self) -> Verdict {
        match self.verdict.load(Ordering::SeqCst) {
            1 => Verdict::Close,
            2 => Verdict::Reset,
            3 => Verdict::ResetBoth,
            _ => Verdict::Normal,
        }
    }

    pub(super) async fn cancelled(&self) {
        loop {
            let notified = self.notify.notified();
            if self.get() != Verdict::Normal {
                return;
            }
            notified.await;
        }
    }
}
