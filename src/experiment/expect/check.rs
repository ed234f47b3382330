//! Checking the names an expectation refers to against an experiment, so
//! `firedrill validate` reports an unknown breaker, fault, route or phase
//! before anything runs.

use std::collections::BTreeSet;

use crate::experiment::timeline::Timeline;

use super::ast::{
    Anchor, Expectation, Measure, Name, PoolRule, Regress, Rule, Server, Wait, Window,
};
use super::grammar::closest;

/// The names an experiment defines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Names {
    /// Breakers of the defense line.
    pub breakers: BTreeSet<String>,
    /// Faults of the fault timeline.
    pub faults: BTreeSet<String>,
    /// Load routes (`load[].name`).
    pub routes: BTreeSet<String>,
    /// Phases.
    pub phases: BTreeSet<String>,
    /// Pools of the defense line.
    pub pools: BTreeSet<String>,
    /// Servers of every pool.
    pub servers: BTreeSet<String>,
    /// Servers per pool.
    pub pool_servers: std::collections::BTreeMap<String, BTreeSet<String>>,
    /// Instances of the built-in target.
    pub instances: BTreeSet<String>,
    /// PromQL queries of `queries:`.
    pub queries: BTreeSet<String>,
    /// Breakers whose wait in open is not known (an inferred breaker
    /// declared without `wait_in_open`): a sentence measured against it
    /// has nothing to be measured against.
    pub unknown_waits: BTreeSet<String>,
}

impl Names {
    /// The names a recorded run shows (routes: those that sent requests).
    pub fn of(timeline: &Timeline) -> Names {
        let mut routes = BTreeSet::new();
        timeline.each_request(&mut |r| {
            if !routes.contains(&r.route) {
                routes.insert(r.route.clone());
            }
        });
        let mut instances = BTreeSet::new();
        timeline.each_hit(&mut |h, _| instances.extend(h.instance.clone()));
        Names {
            breakers: timeline.breakers.iter().map(|b| b.name.clone()).collect(),
            faults: timeline.faults.iter().map(|f| f.name.clone()).collect(),
            routes,
            phases: timeline.phases.iter().map(|p| p.name.clone()).collect(),
            instances,
            ..Names::default()
        }
        .with_pools(
            timeline
                .pools
                .iter()
                .map(|p| (p.name.as_str(), p.servers.iter().map(|(s, _)| s.as_str()))),
        )
    }

    /// These names and the pools given as (pool, its servers).
    pub fn with_pools<'a, S: IntoIterator<Item = &'a str>>(
        mut self,
        pools: impl IntoIterator<Item = (&'a str, S)>,
    ) -> Names {
        for (pool, servers) in pools {
            let servers: BTreeSet<String> = servers.into_iter().map(str::to_string).collect();
            self.servers.extend(servers.iter().cloned());
            self.pools.insert(pool.to_string());
            self.pool_servers.insert(pool.to_string(), servers);
        }
        self
    }
}

/// Every name in `expectation` that `names` does not define, each with its
/// column and the closest known name, joined with `; `.
pub fn check(expectation: &Expectation, names: &Names) -> Result<(), String> {
    let mut refs: Vec<Reference<'_>> = Vec::new();
    let mut problems = Vec::new();
    let window = |w| window_name(w, names);
    match &expectation.rule {
        Rule::Sequence { breaker, .. } => refs.push(("breaker", breaker, &names.breakers)),
        Rule::WaitInOpen { breaker, wait, .. } => {
            refs.push(("breaker", breaker, &names.breakers));
            if *wait == Wait::Configured && names.unknown_waits.contains(&breaker.text) {
                problems.push(unknown_wait(breaker));
            }
        }
        Rule::Reaches {
            breaker, anchor, ..
        } => {
            refs.push(("breaker", breaker, &names.breakers));
            if let Anchor::FaultStart(f) | Anchor::FaultEnd(f) = anchor {
                refs.push(("fault", f, &names.faults));
            }
        }
        Rule::Count {
            breaker, window: w, ..
        }
        | Rule::Stays {
            breaker, window: w, ..
        } => {
            refs.push(("breaker", breaker, &names.breakers));
            refs.extend(window(w));
        }
        Rule::Calls {
            window: w,
            instance,
            ..
        } => {
            refs.extend(window(w));
            if let Some(i) = instance {
                refs.push(("instance", i, &names.instances));
            }
        }
        Rule::Pool(rule) => refs.extend(pool_refs(rule, names)),
        Rule::Route {
            route, window: w, ..
        }
        | Rule::Regress(Regress {
            measure: Measure::Route {
                route, window: w, ..
            },
            ..
        }) => {
            refs.push(("route", route, &names.routes));
            refs.extend(window(w));
        }
        Rule::Query(super::ast::QueryRule { measure: q, .. })
        | Rule::Regress(Regress {
            measure: Measure::Query(q),
            ..
        }) => {
            refs.push(("query", &q.query, &names.queries));
            if let super::query::QueryWindow::Drill(w) = &q.window {
                refs.extend(window_name(w, names));
            }
        }
        Rule::Regress(Regress {
            measure: Measure::Transition {
                breaker, anchor, ..
            },
            ..
        }) => {
            refs.push(("breaker", breaker, &names.breakers));
            if let Some(Anchor::FaultStart(f) | Anchor::FaultEnd(f)) = anchor {
                refs.push(("fault", f, &names.faults));
            }
        }
    }
    problems.splice(
        0..0,
        refs.into_iter()
            .filter(|(_, name, known)| !known.contains(&name.text))
            .map(|(kind, name, known)| unknown(kind, name, known)),
    );
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// The names a pool sentence refers to.
fn pool_refs<'a>(rule: &'a PoolRule, names: &'a Names) -> Vec<Reference<'a>> {
    let mut refs = Vec::new();
    let (server, w, anchor) = match rule {
        PoolRule::Health { server, anchor, .. } => (Some(server), None, Some(anchor)),
        PoolRule::NeverEjected { server, window } | PoolRule::Share { server, window, .. } => {
            (Some(server), Some(window), None)
        }
        PoolRule::Backup { pool, window, .. } => {
            refs.push(("pool", pool, &names.pools));
            (None, Some(window), None)
        }
    };
    if let Some(server) = server {
        refs.extend(server_refs(server, names));
    }
    if let Some(w) = w {
        refs.extend(window_name(w, names));
    }
    if let Some(Anchor::FaultStart(f) | Anchor::FaultEnd(f)) = anchor {
        refs.push(("fault", f, &names.faults));
    }
    refs
}

/// `breaker "inventory" at column 9 has no known wait_in_open: give
/// system.breakers.inventory.wait_in_open, or write the wait out`.
fn unknown_wait(breaker: &Name) -> String {
    format!(
        "breaker \"{}\" at column {} has no known wait_in_open: give system.breakers.{}.wait_in_open (the service's own wait in open), or write the wait out (`within 2s ± 500ms after opening`)",
        breaker.text, breaker.column, breaker.text
    )
}

/// The name a window refers to, its kind and the names it must be among.
fn window_name<'a>(window: &'a Window, names: &'a Names) -> Option<Reference<'a>> {
    match window {
        Window::Run | Window::Between(..) => None,
        Window::During(f) => Some(("fault", f, &names.faults)),
        Window::While { breaker, .. } => Some(("breaker", breaker, &names.breakers)),
        Window::Phase(p) => Some(("phase", p, &names.phases)),
        Window::Ejected(server) => server_refs(server, names).into_iter().next(),
    }
}

/// The names a pool server reference uses: its pool (when written) and
/// the server, which must be one of that pool's (or of any pool's).
fn server_refs<'a>(server: &'a Server, names: &'a Names) -> Vec<Reference<'a>> {
    match &server.pool {
        Some(pool) => match names.pool_servers.get(&pool.text) {
            Some(servers) => vec![("pool server", &server.name, servers)],
            None => vec![("pool", pool, &names.pools)],
        },
        None => vec![("pool server", &server.name, &names.servers)],
    }
}

/// A name referred to: its kind, the name, and the known names of its kind.
type Reference<'a> = (&'static str, &'a Name, &'a BTreeSet<String>);

/// `unknown breaker "inventori" at column 9 (did you mean "inventory"?);
/// the breakers are: inventory`.
pub(crate) fn unknown(kind: &str, name: &Name, known: &BTreeSet<String>) -> String {
    let hint = closest(&name.text, known.iter().map(String::as_str))
        .map(|c| format!(" (did you mean \"{c}\"?)"))
        .unwrap_or_default();
    let list = if known.is_empty() {
        format!("the experiment has no {kind}s")
    } else {
        format!(
            "the {kind}s are: {}",
            known.iter().cloned().collect::<Vec<_>>().join(", ")
        )
    };
    format!(
        "unknown {kind} \"{}\" at column {}{hint}; {list}",
        name.text, name.column
    )
}
