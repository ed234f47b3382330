//! The stop signal every server shares: one trigger, any number of
//! listeners, each of which sees the stop even if it subscribed late. A
//! connection may add a trigger of its own ([`ShutdownSignal::or_local`]):
//! the fault proxy's `goaway` ends one client connection gracefully, as the
//! server's stop ends them all.

use tokio::sync::watch;

/// Tells connection handlers that the proxy is shutting down (or, with a
/// local trigger, that this connection is to end).
#[derive(Debug, Clone)]
pub struct ShutdownSignal {
    /// The server's stop.
    all: watch::Receiver<bool>,
    /// One connection's own stop, if it has one.
    local: Option<watch::Receiver<bool>>,
}

impl ShutdownSignal {
    /// A signal and the trigger that fires it.
    pub fn new() -> (watch::Sender<bool>, ShutdownSignal) {
        let (tx, rx) = watch::channel(false);
        (
            tx,
            ShutdownSignal {
                all: rx,
                local: None,
            },
        )
    }

    /// This signal, also fired by a trigger of its own (returned): one
    /// connection's stop.
    pub fn or_local(&self) -> (watch::Sender<bool>, ShutdownSignal) {
        let (tx, rx) = watch::channel(false);
        (
            tx,
            ShutdownSignal {
                all: self.all.clone(),
                local: Some(rx),
            },
        )
    }

    /// Waits until shutdown starts (at once if it already has, or if the
    /// trigger is gone). A local trigger dropped unfired never fires.
    pub async fn wait(&mut self) {
        let ShutdownSignal { all, local } = self;
        let local = async {
            match local {
                Some(rx) => {
                    if rx.wait_for(|stop| *stop).await.is_err() {
                        std::future::pending::<()>().await;
                    }
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = all.wait_for(|stop| *stop) => {}
            () = local => {}
        }
    }

    /// Whether shutdown has started.
    pub fn is_set(&self) -> bool {
        *self.all.borrow() || self.local.as_ref().is_some_and(|rx| *rx.borrow())
    }
}
