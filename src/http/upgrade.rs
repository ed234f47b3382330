//! Upgraded connections (WebSocket and the like) carried through a server
//! that forwards requests: after the upstream's `101 Switching Protocols`,
//! the client's connection and the upstream's are joined by a copy both
//! ways.

use http::{Response, StatusCode};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;

use super::shutdown::ShutdownSignal;

/// When `response` (the upstream's, as it goes back to the client) switches
/// protocols, joins the client's upgraded connection (`client`, taken from
/// its request with `hyper::upgrade::on` before it was forwarded) to the
/// upstream's, copying both ways in a task of its own until either side
/// closes or `shutdown` fires. Any other response leaves both alone.
///
/// Whatever acted on the handshake (a fault on the request or the 101)
/// has acted already; the bytes of the tunnel pass untouched.
pub fn tunnel<B>(client: OnUpgrade, response: &mut Response<B>, mut shutdown: ShutdownSignal) {
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        return;
    }
    let upstream = hyper::upgrade::on(response);
    tokio::spawn(async move {
        let (client, upstream) = match tokio::try_join!(client, upstream) {
            Ok(both) => both,
            Err(err) => {
                tracing::debug!(%err, "upgrade failed; no tunnel");
                return;
            }
        };
        let (mut client, mut upstream) = (TokioIo::new(client), TokioIo::new(upstream));
        tokio::select! {
            biased;
            _ = shutdown.wait() => {}
            copied = tokio::io::copy_bidirectional(&mut client, &mut upstream) => {
                if let Err(err) = copied {
                    tracing::trace!(%err, "upgraded connection ended with an error");
                }
            }
        }
    });
}
