//! `load: { locust: ... }`: the load comes from Locust (a master and its
//! workers, headless), started by the drill on its clock; each request's
//! outcome comes back through ci/locust/firedrill_hook.py and is counted as
//! the built-in load's are.
//!
//! ```yaml
//! load:
//!   locust:
//!     locustfile: locustfile.py     # relative to this file
//!     users: 20
//!     spawn_rate: 20                # users started per second
//!     workers: 2                    # local worker processes (0: the master runs the users)
//!     routes:                       # Locust request names, as expectations name them
//!       - { name: stock, success: [200], fallback: { header: "x-fallback: cached" } }
//! ```

use serde::Deserialize;

use super::LoadRoute;
use crate::clock::Duration;

/// `load.locust`, checked.
#[derive(Debug, Clone)]
pub struct LocustSpec {
    /// The user's locustfile, as written (relative to the experiment file).
    pub locustfile: String,
    /// The locustfile resolved against the experiment's folder (set when
    /// the file is loaded).
    pub locustfile_path: std::path::PathBuf,
    /// How many users.
    pub users: u32,
    /// Users started per second.
    pub spawn_rate: f64,
    /// Local worker processes the drill starts (0: the master runs them).
    pub workers: u32,
    /// More workers that join from other machines, waited for before the
    /// drill starts.
    pub remote_workers: u32,
    /// The `locust` command.
    pub program: String,
    /// The longest wait for the master and every worker to be ready.
    pub ready_within: Duration,
}

/// One route of Locust's requests (its request name).
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawLocustRoute {
    /// The Locust request name (`name=` of the request, else its URL
    /// path); expectations name the route by it.
    name: String,
    /// The statuses that count as success (default: 2xx and 3xx).
    #[serde(default)]
    #[schemars(length(min = 1))]
    success: Option<Vec<crate::defense::breaker::StatusPattern>>,
    /// How to recognise your service's fallback (header, status, body).
    #[serde(default)]
    fallback: Option<crate::experiment::blackbox::classify::FallbackRule>,
}

/// `load.locust` as written.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLocust {
    /// The locustfile (relative to this file); the drill adds
    /// ci/locust/firedrill_hook.py beside it.
    locustfile: String,
    /// How many users (at least 1).
    #[schemars(range(min = 1))]
    users: u32,
    /// Users started per second (default: all at once).
    #[serde(default)]
    spawn_rate: Option<f64>,
    /// Local worker processes (default 0: the master runs the users).
    #[serde(default)]
    workers: Option<u32>,
    /// Workers started elsewhere (`locust --worker --master-host ...`) the
    /// drill waits for (default 0).
    #[serde(default)]
    remote_workers: Option<u32>,
    /// The `locust` command (default `locust`).
    #[serde(default)]
    program: Option<String>,
    /// The longest wait for the master and every worker (default 60s).
    #[serde(default)]
    ready_within: Option<crate::schema::units::Dur>,
    /// The request names, each a route of the report (at least one).
    #[schemars(length(min = 1))]
    routes: Vec<RawLocustRoute>,
}

/// `load: { locust: ... }` as written.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLocustLoad {
    /// Locust drives the load.
    pub(super) locust: RawLocust,
}

/// Checks `load.locust`: its spec, and its routes as load routes (named,
/// with their success and fallback; they send nothing themselves).
pub(super) fn read(raw: RawLocust) -> Result<(LocustSpec, Vec<LoadRoute>), String> {
    if raw.users == 0 {
        return Err("load.locust.users: at least 1".to_string());
    }
    let spawn_rate = raw.spawn_rate.unwrap_or(raw.users as f64);
    if !(spawn_rate.is_finite() && spawn_rate > 0.0) {
        return Err(format!(
            "load.locust.spawn_rate: {spawn_rate}: users started per second, above 0"
        ));
    }
    if raw.routes.is_empty() {
        return Err("load.locust.routes: name at least one request name".to_string());
    }
    let mut routes: Vec<LoadRoute> = Vec::new();
    for (i, route) in raw.routes.into_iter().enumerate() {
        if routes.iter().any(|r| r.name == route.name) {
            return Err(format!(
                "load.locust.routes[{i}].name: `{}` is named twice",
                route.name
            ));
        }
        routes.push(LoadRoute {
            fallback: route.fallback,
            success: route.success,
            ..LoadRoute::sent_elsewhere(route.name)
        });
    }
    Ok((
        LocustSpec {
            locustfile: raw.locustfile,
            locustfile_path: Default::default(),
            users: raw.users,
            spawn_rate,
            workers: raw.workers.unwrap_or(0),
            remote_workers: raw.remote_workers.unwrap_or(0),
            program: raw.program.unwrap_or_else(|| "locust".to_string()),
            ready_within: raw
                .ready_within
                .map_or(Duration::from_secs(60), |d| d.get()),
        },
        routes,
    ))
}
