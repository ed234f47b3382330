//! The defense line as a server: hyper on the client side, the line's
//! pooled client towards the dependency (`firedrill defend` and
//! experiments serve it through this).

use std::sync::Arc;

use super::line::DefenseLine;
use super::pool::config::ServerTarget;
use crate::clock::Duration;
use crate::http::ShutdownSignal;
use crate::http::body::{BoxBody, boxed};
use crate::http::client::BoxFuture;
use crate::http::local::Local;
use crate::net::Acceptor;

/// Builds a defense line of `config` calling `upstream` (its backups and
/// `address:` pool servers too: in a drill every call goes through the
/// fault proxy; `instance:` pool servers through `instances`), reporting
/// to `observer`, and serves it on `acceptor` in a task of its own. An
/// unknown instance is an error naming it.
#[allow(clippy::too_many_arguments)]
pub fn start<A: Acceptor>(
    config: &super::DefenseConfig,
    upstream: Arc<dyn crate::http::client::Upstream>,
    instances: &dyn Fn(&str) -> Option<Arc<dyn crate::http::client::Upstream>>,
    acceptor: A,
    seed: u64,
    run_start: crate::clock::Instant,
    observer: &Arc<dyn super::report::Observer>,
    shutdown: &ShutdownSignal,
    grace: Duration,
) -> Result<Arc<DefenseLine>, String> {
    let backup = |_: &str| upstream.clone();
    let server = |target: &ServerTarget| match target {
        ServerTarget::Address(_) => Some(upstream.clone()),
        ServerTarget::Instance(name) => instances(name),
    };
    let line = DefenseLine::new(
        config,
        upstream.clone(),
        &backup,
        &server,
        seed,
        run_start,
        observer.clone(),
    )?;
    // The drill's load generator never half-closes: a FIN is a caller
    // giving up.
    let fin = crate::http::ClientFin::HangUp;
    tokio::spawn(serve(
        acceptor,
        line.clone(),
        fin,
        None,
        shutdown.clone(),
        grace,
    ));
    Ok(line)
}

/// The line called in-process (a drill's load generator in virtual time).
impl crate::http::client::Handler for DefenseLine {
    fn answer(&self, req: http::Request<BoxBody>) -> BoxFuture<'_, http::Response<BoxBody>> {
        Box::pin(self.handle(req))
    }
}

/// Serves `line` on `acceptor` until `shutdown`, then drains for `grace`;
/// `fin` says what a client's FIN with a request in flight means, `limit`
/// how many connections are held at once.
pub async fn serve<A: Acceptor>(
    acceptor: A,
    line: Arc<DefenseLine>,
    fin: crate::http::ClientFin,
    limit: Option<crate::http::limit::Limit>,
    shutdown: ShutdownSignal,
    grace: Duration,
) -> std::io::Result<()> {
    crate::http::serve_limited(
        acceptor,
        Arc::new(crate::http::Open),
        move |stream, shutdown| {
            let line = line.clone();
            let tunnel_shutdown = shutdown.clone();
            async move {
                let service = hyper::service::service_fn(move |mut req| {
                    let line = line.clone();
                    let shutdown = tunnel_shutdown.clone();
                    async move {
                        let client = hyper::upgrade::on(&mut req);
                        // Boxed, as the proxy's (`proxy::http::handle`): hyper
                        // moves the service's future, and the line's is large.
                        let mut response = Box::pin(line.handle(req.map(boxed))).await;
                        crate::http::upgrade::tunnel(client, &mut response, shutdown);
                        Ok::<_, std::convert::Infallible>(response)
                    }
                });
                let fin = fin.on(&stream);
                crate::http::serve_http(Local::new(), stream, service, fin, shutdown).await;
            }
        },
        limit,
        shutdown,
        grace,
    )
    .await
}
