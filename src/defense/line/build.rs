//! Building the line from its configuration: the pools and their servers,
//! one route per configured route with its protections, and the catch-all
//! `default` route; then the breakers' timer tasks and the pools' checks
//! start.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use super::timers::breaker_timers;
use super::{DefenseLine, Route};
use crate::clock::{self, Duration, Instant};
use crate::defense::breaker::{Breaker, SharedBreaker};
use crate::defense::bulkhead::Bulkhead;
use crate::defense::config::{DefenseConfig, RouteConfig};
use crate::defense::fallback::StaleCache;
use crate::defense::pool::Pool;
use crate::defense::pool::config::ServerTarget;
use crate::defense::rate_limit::RateLimit;
use crate::defense::report::Observer;
use crate::fault::HttpMatch;
use crate::http::client::Upstream;

impl DefenseLine {
    /// Builds the line. `backup` opens an upstream for a fallback's backup
    /// address, `server` one for a pool server (`None`: it cannot be
    /// reached, an error naming it); `run_start` is time zero of the
    /// journal.
    pub fn new(
        config: &DefenseConfig,
        upstream: Arc<dyn Upstream>,
        backup: &dyn Fn(&str) -> Arc<dyn Upstream>,
        server: &dyn Fn(&ServerTarget) -> Option<Arc<dyn Upstream>>,
        seed: u64,
        run_start: Instant,
        observer: Arc<dyn Observer>,
    ) -> Result<Arc<DefenseLine>, String> {
        let now = clock::now();
        let pools = open_pools(config, server, run_start, &observer)?;
        let mut routes: Vec<Route> = config
            .routes
            .iter()
            .map(|(name, r)| Route::configured(name, r, config, &pools, backup, run_start, now))
            .collect();
        routes.push(Route::catch_all(config.timeout));
        let line = Arc::new(DefenseLine {
            routes,
            workers: config
                .max_concurrent
                .map(|n| Bulkhead::new(n, Duration::ZERO)),
            rate_limit: config.rate_limit.map(|c| RateLimit::new(c, now)),
            request_timeout: config.request_timeout,
            upstream,
            pools,
            rng: Mutex::new(clock::seeded_rng(seed, 0xdefe)),
            observer,
            requests: AtomicU64::new(0),
            attempts: AtomicU64::new(0),
        });
        for index in 0..line.routes.len() {
            if line.routes[index].breaker.is_some() {
                tokio::spawn(breaker_timers(Arc::downgrade(&line), index));
            }
        }
        for pool in &line.pools {
            pool.start();
        }
        Ok(line)
    }
}

/// The configured pools, each server opened with `server`; an error names
/// the first server that cannot be reached.
fn open_pools(
    config: &DefenseConfig,
    server: &dyn Fn(&ServerTarget) -> Option<Arc<dyn Upstream>>,
    run_start: Instant,
    observer: &Arc<dyn Observer>,
) -> Result<Vec<Arc<Pool>>, String> {
    let mut pools = Vec::new();
    for (name, pool) in &config.pools {
        let mut upstreams = Vec::new();
        for (i, s) in pool.servers.iter().enumerate() {
            let open = server(&s.target).ok_or_else(|| match &s.target {
                ServerTarget::Instance(instance) => {
                    format!("pools.{name}.servers[{i}].instance: no target instance `{instance}`")
                }
                ServerTarget::Address(address) => {
                    format!("pools.{name}.servers[{i}].address: cannot reach `{address}`")
                }
            })?;
            upstreams.push(open);
        }
        pools.push(Pool::new(
            name,
            pool,
            upstreams,
            run_start,
            observer.clone(),
        ));
    }
    Ok(pools)
}

impl Route {
    /// A configured route with its protections (its timeout, else the
    /// line's); its pool is looked up by name among `pools`.
    fn configured(
        name: &str,
        r: &RouteConfig,
        config: &DefenseConfig,
        pools: &[Arc<Pool>],
        backup: &dyn Fn(&str) -> Arc<dyn Upstream>,
        run_start: Instant,
        now: Instant,
    ) -> Route {
        Route {
            name: name.to_string(),
            matcher: r.matcher.clone(),
            timeout: r.timeout.or(config.timeout),
            bulkhead: r
                .bulkhead
                .map(|b| Bulkhead::new(b.max_concurrent, b.max_wait.get())),
            breaker: r
                .breaker
                .as_ref()
                .map(|b| SharedBreaker::new(Breaker::new(b, run_start))),
            breaker_stepped: Arc::new(Notify::new()),
            retry: r.retry.clone(),
            fallback: r.fallback.clone(),
            stale: r
                .fallback
                .as_ref()
                .and_then(|f| f.stale)
                .map(StaleCache::new),
            backup: r
                .fallback
                .as_ref()
                .and_then(|f| f.backup.as_deref())
                .map(backup),
            rate_limit: r.rate_limit.map(|c| RateLimit::new(c, now)),
            pool: r
                .pool
                .as_ref()
                .and_then(|n| pools.iter().find(|p| p.name() == n))
                .cloned(),
            next_upstream: r.next_upstream.clone(),
        }
    }

    /// The catch-all `default` route: every request no other route
    /// matches, with only the line's timeout.
    fn catch_all(timeout: Option<Duration>) -> Route {
        Route {
            name: "default".to_string(),
            matcher: HttpMatch::default(),
            timeout,
            bulkhead: None,
            breaker: None,
            breaker_stepped: Arc::new(Notify::new()),
            retry: None,
            fallback: None,
            stale: None,
            backup: None,
            rate_limit: None,
            pool: None,
            next_upstream: None,
        }
    }
}
