//! Dialling every real service of an experiment (`target.url`, the
//! dependencies' upstreams, `system.url`) once before the drill's clock
//! starts, so a service that cannot be reached stops the run before it
//! begins.

use std::sync::Arc;

use crate::experiment::config::Experiment;
use crate::experiment::config::Service;
use crate::experiment::error::RunError;
use crate::net::{self, Connector, TcpConnector};
use crate::proxy::Forward;
use crate::tls::{ServiceConnector, TlsClient, TlsKeys};

/// How to forward to each real service of an experiment (`target.url`,
/// the dependencies' upstreams), by [`Service::at`].
pub type Dialed = std::collections::BTreeMap<String, Forward<ServiceConnector>>;

/// Connects once to every real service before the drill's clock starts
/// (for `https://`, a handshake and a short wait for the alert of a server
/// that rejects the client certificate), so a service that cannot be
/// reached stops the run before it begins (exit 3). The user's own service
/// (`system.url`) gets one TCP connection only: it may take its first call
/// late, so nothing is asked of it yet.
pub async fn dial_all(experiment: &Experiment) -> Result<Dialed, RunError> {
    let mut dialed = Dialed::new();
    let (system, others): (Vec<&Service>, Vec<&Service>) =
        experiment.services().partition(|s| s.at == "system");
    for service in others {
        dialed.insert(service.at.clone(), dial_one(service).await?);
    }
    // Last: what the service calls is checked first.
    for service in system {
        accepts(service).await?;
    }
    Ok(dialed)
}

/// Whether `service` takes a TCP connection (resolved, connected, closed).
async fn accepts(service: &Service) -> Result<(), RunError> {
    let fail = |(step, source)| located(service, step, source);
    let addr = net::resolve(&service.endpoint.authority)
        .await
        .map_err(|e| fail((Step::Resolve, e)))?;
    TcpConnector { addr }
        .connect()
        .await
        .map_err(|e| fail((Step::Connect, e)))?;
    Ok(())
}

/// How to forward to `service`: dialled before the start, or now.
pub async fn take(
    dialed: &mut Dialed,
    service: &Service,
) -> Result<Forward<ServiceConnector>, RunError> {
    match dialed.remove(&service.at) {
        Some(forward) => Ok(forward),
        None => dial_one(service).await,
    }
}

/// [`dial`], its error naming the key at fault.
async fn dial_one(service: &Service) -> Result<Forward<ServiceConnector>, RunError> {
    dial(service)
        .await
        .map_err(|(step, source)| located(service, step, source))
}

/// Why `service` could not be dialled, naming its key: `target.url`,
/// `system.url` or `dependencies.NAME.upstream`.
fn located(service: &Service, step: Step, source: std::io::Error) -> RunError {
    let url = service.endpoint.url();
    match (service.at.as_str(), step) {
        ("target", Step::Resolve) => RunError::TargetResolve { url, source },
        ("target", Step::Connect) => RunError::TargetUnreachable { url, source },
        (at, step) => RunError::Topology {
            key: format!("{at}.{}", if at == "system" { "url" } else { "upstream" }),
            message: format!("{url}: {step}"),
            source,
        },
    }
}

/// Where dialling a real service failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// Its host does not resolve.
    Resolve,
    /// Its TLS settings, the connection or the handshake.
    Connect,
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Step::Resolve => "cannot resolve",
            Step::Connect => "unreachable at start",
        })
    }
}

/// Resolves a real service, connects once (for `https://`, a whole
/// handshake) and returns how to forward to it; an error says at which
/// step it failed.
async fn dial(service: &Service) -> Result<Forward<ServiceConnector>, (Step, std::io::Error)> {
    let connector = connector(service).await?;
    connector.probe().await.map_err(|e| (Step::Connect, e))?;
    Ok(Forward {
        connector: Arc::new(connector),
        rewrite: service.endpoint.rewrite(),
        client_fin: Default::default(),
        limit: None,
    })
}

/// Resolves a real service and returns how to dial it, over TLS for
/// `https://`.
pub(super) async fn connector(
    service: &Service,
) -> Result<ServiceConnector, (Step, std::io::Error)> {
    let endpoint = &service.endpoint;
    let addr = net::resolve(&endpoint.authority)
        .await
        .map_err(|e| (Step::Resolve, e))?;
    let tls = match (&service.client, endpoint.https) {
        (_, false) => None,
        (Some(client), true) => Some(client.clone()),
        // Not read with the file (a library caller): the files are
        // relative to the working directory.
        (None, true) => Some(
            TlsClient::load(
                &service.tls,
                std::path::Path::new(""),
                TlsKeys::yaml(&format!("{}.tls", service.at)),
            )
            .map_err(|e| {
                (
                    Step::Connect,
                    std::io::Error::new(std::io::ErrorKind::InvalidInput, e),
                )
            })?,
        ),
    };
    ServiceConnector::new(
        TcpConnector { addr },
        tls.map(|c| (c, endpoint.host.as_str())),
    )
    .map_err(|e| (Step::Connect, e))
}
