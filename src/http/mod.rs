//! The HTTP floor every server and client of firedrill builds on: the fault
//! proxy, the fixture target, the defense line, /metrics and the API serve
//! through it, and the load generator and the defense line call through it.
//!
//! * [`body`] — the one boxed body type.
//! * [`shutdown`] — the stop signal servers share.
//! * [`server`] — the accept loop with graceful shutdown, and the
//!   connection driver (HTTP/1.1, and HTTP/2 with prior knowledge).
//! * [`fin`] — telling a client's half-close from its hang-up while a
//!   request is held.
//! * [`client`] — the pooled client towards a dependency over any transport.
//! * [`headers`] — the `x-firedrill-*` header names.
//! * [`endpoint`] — a user's service as a URL (scheme, host, path prefix)
//!   and what changes in a request sent to it.
//! * [`upgrade`] — an upgraded connection (WebSocket) tunnelled through.
//! * [`version`] — a request sent on in the upstream's HTTP version.
//! * [`grpc`] — gRPC over HTTP/2: a call failed at once (trailers-only).

pub mod body;
pub mod client;
pub mod endpoint;
pub mod fin;
pub mod grpc;
pub mod head;
pub mod headers;
pub mod kept;
pub mod limit;
pub mod local;
pub mod server;
pub mod shutdown;
pub mod upgrade;
pub mod version;

pub use body::{BoxBody, BoxError, boxed, full};
pub use server::{ClientFin, Fin, Gate, Open, serve, serve_answers, serve_http, serve_limited};
pub use shutdown::ShutdownSignal;

/// `text` with every byte but RFC 3986's unreserved characters written as
/// `%XX`: a path segment, or a form value.
pub fn escape_unreserved(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
