//! The fault plan as the accept loop's gate: while a `refuse` fault is
//! active the proxy's listener is closed.

use tokio::sync::watch;

use crate::clock::Instant;
use crate::fault::FaultPlan;
use crate::http::Gate;

impl Gate for FaultPlan {
    fn refusing(&self) -> (bool, Option<Instant>) {
        FaultPlan::refusing(self)
    }

    fn subscribe(&self) -> Option<watch::Receiver<u64>> {
        Some(FaultPlan::subscribe(self))
    }
}
