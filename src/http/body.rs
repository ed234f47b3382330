//! The body type every HTTP server and client of firedrill passes around:
//! boxed, so a fixture response, a proxied stream and a fault-shaped body
//! are one type.

use bytes::Bytes;
use http_body::Body;
use http_body_util::BodyExt;
use http_body_util::combinators::UnsyncBoxBody;

/// Errors of bodies in flight.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The one body type every server and client of firedrill passes around.
pub type BoxBody = UnsyncBoxBody<Bytes, BoxError>;

/// A complete body from bytes.
pub fn full(bytes: impl Into<Bytes>) -> BoxBody {
    http_body_util::Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// Boxes any body whose errors are standard errors.
pub fn boxed<B>(body: B) -> BoxBody
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    body.map_err(|e| -> BoxError { Box::new(e) }).boxed_unsync()
}
