//! gRPC as HTTP/2 carries it: a call is a `POST /package.Service/Method`
//! with `content-type: application/grpc…`, and its outcome is the
//! `grpc-status` (a code, 0 to 16) and `grpc-message` of the trailers, or
//! of the headers alone when the server answers without a body
//! ("trailers-only", as servers fail a call at once).

use http::{HeaderValue, Response, StatusCode};

use super::body::{BoxBody, full};
use crate::schema::units::GrpcError;

/// A gRPC call failed at once, as a server does it: HTTP 200 with
/// `content-type: application/grpc`, the status and message in the
/// headers, no body (HTTP/2 ends the stream with these headers: a
/// trailers-only answer).
pub fn failed_call(status: GrpcError, message: &str) -> Response<BoxBody> {
    let mut resp = Response::new(full(bytes::Bytes::new()));
    *resp.status_mut() = StatusCode::OK;
    let headers = resp.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    headers.insert("grpc-status", HeaderValue::from(u16::from(status.code())));
    if !message.is_empty()
        && let Ok(v) = HeaderValue::from_str(&percent_encode(message))
    {
        headers.insert("grpc-message", v);
    }
    resp
}

/// `grpc-message` as the gRPC protocol writes it: UTF-8, every byte
/// outside printable ASCII, and `%`, as `%XX`.
fn percent_encode(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for b in message.bytes() {
        if (0x20..=0x7e).contains(&b) && b != b'%' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_call_is_a_trailers_only_answer_with_its_message_percent_encoded() {
        let resp = failed_call("UNAVAILABLE".parse().unwrap(), "inventory down: 100% über");
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-type"], "application/grpc");
        assert_eq!(resp.headers()["grpc-status"], "14");
        assert_eq!(
            resp.headers()["grpc-message"],
            "inventory down: 100%25 %C3%BCber"
        );
        assert!(hyper::body::Body::is_end_stream(resp.body()), "no body");
        let bare = failed_call("RESOURCE_EXHAUSTED".parse().unwrap(), "");
        assert!(!bare.headers().contains_key("grpc-message"));
    }
}
