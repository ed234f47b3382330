//! Standing up firedrill's own target: the fault proxy in front of the
//! fixture server (one of each per instance, with
//! `target.builtin.instances`) or in front of a real URL. Runs on either
//! network: in memory under the virtual clock, on loopback in real time.

use std::sync::Arc;

use super::dial::{self, Dialed};
use super::{Context, RunningDependency, Sides, spawn_fault_proxy};
use crate::clock::Instant;
use crate::experiment::config::instances::{InstanceServer, applies_on};
use crate::experiment::config::{Experiment, TargetSpec};
use crate::experiment::drill::network::Network;
use crate::experiment::error::RunError;
use crate::fault::FaultPlan;
use crate::http::client::{HttpUpstream, Upstream};
use crate::http::endpoint::Rewrite;
use crate::proxy::Forward;
use crate::target::TargetStats;

/// firedrill's own target, as the experiment declares it.
#[derive(Debug)]
pub struct Target<'a> {
    /// The experiment: its target, faults and seed.
    experiment: &'a Experiment,
}

impl<'a> Target<'a> {
    /// The target of `experiment`.
    pub fn new(experiment: &'a Experiment) -> Target<'a> {
        Target { experiment }
    }

    /// The fault proxy in front of a real target, or in front of the
    /// fixture server (one of each per instance, with instances).
    pub(super) async fn stand_up<N: Network>(
        &self,
        context: &Context<'_, N>,
        dialed: &mut Dialed,
    ) -> Result<Sides, RunError> {
        let experiment = self.experiment;
        let builtin = match &experiment.target {
            TargetSpec::Builtin(builtin) => builtin,
            TargetSpec::Url(service) => {
                let plan = target_plan(experiment, None, context.start);
                let (acceptor, connector, authority) =
                    context.network.listen().await.map_err(RunError::Listen)?;
                let forward = dial::take(dialed, service).await?;
                spawn_fault_proxy(context, acceptor, forward, &plan, Default::default());
                let entry = own_hop(connector, &authority, experiment.http2);
                return Ok(Sides {
                    entry,
                    dependencies: vec![target_dependency(None, plan)],
                    instances: Default::default(),
                });
            }
        };
        let (first, others) = builtin.servers();
        let (entry, dependency) = stand_up_instance(context, first).await?;
        let mut stood = vec![(entry.clone(), dependency)];
        for server in others {
            stood.push(stand_up_instance(context, server).await?);
        }
        let instances = stood
            .iter()
            .filter_map(|(client, d)| Some((d.instance.clone()?, client.clone())))
            .collect();
        let dependencies = stood.into_iter().map(|(_, d)| d).collect();
        Ok(Sides {
            entry,
            dependencies,
            instances,
        })
    }
}

/// One fixture server and the fault proxy in front of it, applying the
/// faults meant for its instance: the client towards the proxy, and the
/// proxy as a running dependency.
async fn stand_up_instance<N: Network>(
    context: &Context<'_, N>,
    server: InstanceServer,
) -> Result<(Arc<dyn Upstream>, RunningDependency), RunError> {
    let listen = || async { context.network.listen().await.map_err(RunError::Listen) };
    let plan = target_plan(context.experiment, server.name.as_deref(), context.start);
    let (proxy_acceptor, proxy_connector, proxy_authority) = listen().await?;
    let (acceptor, connector, _) = listen().await?;
    let stats = Arc::new(TargetStats::with_routes(server.routes));
    tokio::spawn(crate::target::serve(
        acceptor,
        stats,
        context.servers.clone(),
    ));
    let forward = Forward {
        connector: Arc::new(connector),
        rewrite: Rewrite::version(context.experiment.http2),
        client_fin: Default::default(),
        limit: None,
    };
    spawn_fault_proxy(context, proxy_acceptor, forward, &plan, Default::default());
    let client = own_hop(proxy_connector, &proxy_authority, context.experiment.http2);
    Ok((client, target_dependency(server.name, plan)))
}

/// The fault plan of the target's proxy in front of `instance` (none: the
/// target without instances): the scheduled faults that apply there,
/// recording every arrival. Manual faults join the plan only when started
/// through the control endpoint.
fn target_plan(experiment: &Experiment, instance: Option<&str>, start: Instant) -> Arc<FaultPlan> {
    let faults = experiment
        .faults
        .iter()
        .filter(|f| !f.manual && applies_on(f, instance))
        .cloned()
        .collect();
    Arc::new(FaultPlan::new(faults, experiment.seed, start).recording_arrivals())
}

/// The target's fault proxy (in front of `instance`, if named) as a
/// running dependency.
fn target_dependency(instance: Option<String>, plan: Arc<FaultPlan>) -> RunningDependency {
    RunningDependency {
        name: "target".to_string(),
        instance,
        plan,
        records: None,
        remote: None,
    }
}

#[cfg(test)]
#[path = "builtin_tests.rs"]
mod tests;

/// A client for one of firedrill's own hops in a drill (the defense line,
/// a fault proxy) at `authority`: HTTP/1.1, or HTTP/2 with prior knowledge
/// when the drill speaks HTTP/2.
pub(super) fn own_hop<C: crate::net::Connector>(
    connector: C,
    authority: &str,
    http2: bool,
) -> Arc<dyn Upstream> {
    Arc::new(HttpUpstream::new(Arc::new(connector), authority).rewriting(Rewrite::version(http2)))
}
