//! The control plane's state, shared by every request: the named proxies,
//! the extra metric sources, and the request checks.

use super::guard::Guard;
use super::registry::Registry;
use crate::metrics::MetricsRegistry;

/// Everything a request handler needs.
#[derive(Debug)]
pub struct Api {
    /// The named proxies.
    pub registry: Registry,
    /// Extra metric sources (defense lines) for /metrics.
    pub metrics: MetricsRegistry,
    /// Browser, token and body-size checks.
    pub guard: Guard,
}

impl Api {
    /// A server state with no proxies.
    pub fn new(guard: Guard, seed: u64) -> Api {
        Api {
            registry: Registry::new(seed),
            metrics: MetricsRegistry::default(),
            guard,
        }
    }
}
