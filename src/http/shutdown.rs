//! The stop signal every server shares: one trigger, any number of
//! listeners, each of which sees the stop even if it subscribed late.

use tokio::sync::watch;

/// Tells connection handlers that the proxy is shutting down.
#[derive(Debug, Clone)]
pub struct ShutdownSignal(watch::Receiver<bool>);

impl ShutdownSignal {
    /// A signal and the trigger that fires it.
    pub fn new() -> (watch::Sender<bool>, ShutdownSignal) {
        let (tx, rx) = watch::channel(false);
        (tx, ShutdownSignal(rx))
    }

    /// Waits until shutdown starts (at once if it already has, or if the
    /// trigger is gone).
    pub async fn wait(&mut self) {
        let _ = self.0.wait_for(|stop| *stop).await;
    }

    /// Whether shutdown has started.
    pub fn is_set(&self) -> bool {
        *self.0.borrow()
    }
}
