//! A client connection's upstream connection, in the upstream's HTTP
//! version. An HTTP/1.1 one has no task of its own
//! ([`crate::http::driven`]): the client connection's task drives it while
//! a request waits for its answer and the answer's body is read, then it
//! goes back to the client connection's slot. An HTTP/2 one carries many
//! streams at once and runs beside them in the client connection's task
//! ([`crate::http::local::Local`]).

use std::sync::{Arc, Mutex};

use http::{Request, Response};
use hyper::client::conn::http2;

use crate::http::driven::{Driven, Home};
use crate::http::{BoxBody, BoxError, boxed};

/// The slot a client connection keeps its upstream connection in between
/// requests.
#[derive(Clone, Default)]
pub(super) struct Slot(Arc<Mutex<Option<Sender>>>);

impl Slot {
    /// The slot, locked (a panic while it was held leaves a value to use).
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Option<Sender>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Home for Slot {
    fn put_back(&self, connection: Driven) {
        *self.lock() = Some(Sender::H1(connection));
    }
}

/// An upstream connection's sending side, in the upstream's HTTP version.
pub(super) enum Sender {
    /// HTTP/1.1: one request at a time, driven in the client's task.
    H1(Driven),
    /// HTTP/2 (`h2c://`): many streams at once, driven beside them.
    H2(http2::SendRequest<BoxBody>),
}

/// Runs an upstream connection until it ends.
pub(super) async fn run_to_end(connection: impl Future<Output = Result<(), hyper::Error>>) {
    if let Err(err) = connection.await {
        tracing::trace!(%err, "upstream connection ended with an error");
    }
}

impl Sender {
    pub(super) fn is_closed(&self) -> bool {
        match self {
            Sender::H1(c) => c.is_closed(),
            Sender::H2(s) => s.is_closed(),
        }
    }

    pub(super) fn is_h2(&self) -> bool {
        matches!(self, Sender::H2(_))
    }

    /// Waits until the connection can take a request.
    pub(super) async fn ready(&mut self) -> Result<(), hyper::Error> {
        match self {
            Sender::H1(c) => c.ready().await,
            Sender::H2(s) => s.ready().await,
        }
    }
}

/// Sends `req` on the connection taken out of `slot` (`upstream`), and
/// puts the connection back: an HTTP/2 one at once, an HTTP/1.1 one when
/// the response's body has been read to its end (the body drives it until
/// then). A connection that failed is not put back. On failure, the error
/// and the request when none of it was written.
pub(super) async fn exchange(
    slot: &Slot,
    upstream: &mut Option<Sender>,
    req: Request<BoxBody>,
) -> Result<Response<BoxBody>, (Option<Request<BoxBody>>, BoxError)> {
    let failed =
        |(request, error): (Option<Request<BoxBody>>, hyper::Error)| (request, boxed_error(error));
    match upstream.take() {
        Some(Sender::H1(mut connection)) => {
            let response = connection.send(req).await.map_err(failed)?;
            Ok(connection.carry(response, slot.clone()))
        }
        Some(Sender::H2(mut sender)) => {
            let response = sender
                .try_send_request(req)
                .await
                .map_err(|mut e| failed((e.take_message(), e.into_error())))?;
            *slot.lock() = Some(Sender::H2(sender));
            Ok(response.map(boxed))
        }
        None => unreachable!("a connection is open"),
    }
}

pub(super) fn boxed_error<E: std::error::Error + Send + Sync + 'static>(err: E) -> BoxError {
    Box::new(err)
}
