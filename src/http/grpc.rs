//! gRPC as HTTP/2 carries it: a call is a `POST /package.Service/Method`
//! with `content-type: application/grpc…`, and its outcome is the
//! `grpc-status` (a code, 0 to 16) and `grpc-message` of the trailers, or
//! of the headers alone when the server answers without a body
//! ("trailers-only", as servers fail a call at once).

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode};

use super::body::{BoxBody, boxed, full};
use crate::schema::units::GrpcError;

/// Whether `headers` are a gRPC message's (`content-type:
/// application/grpc`, `application/grpc+proto`, ...).
pub fn is_grpc(headers: &HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| {
            ct.strip_prefix("application/grpc")
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['+', ';']))
        })
}

/// The `grpc-status` in `headers` (a response head that ends the call,
/// trailers-only, or the trailers), if they carry one: the code as sent
/// (a code past 16 is read as gRPC does, as UNKNOWN: 2).
pub fn status_in(headers: &HeaderMap) -> Option<u8> {
    let text = headers.get("grpc-status")?.to_str().ok()?;
    let code: u32 = text.trim().parse().ok()?;
    Some(u8::try_from(code).ok().filter(|c| *c <= 16).unwrap_or(2))
}

/// A gRPC answer's status: from its head (trailers-only), else from its
/// `trailers`; `None` for an answer that is not gRPC.
pub fn status_of(head: &HeaderMap, trailers: Option<&HeaderMap>) -> Option<u8> {
    if !is_grpc(head) {
        return None;
    }
    status_in(head).or_else(|| trailers.and_then(status_in))
}

/// The status a gRPC answer's head already gives: an HTTP 200 gRPC
/// response with `grpc-status` in its headers (a trailers-only answer);
/// `None` for any other response (the status, if any, comes in trailers).
pub fn answered_status<B>(resp: &Response<B>) -> Option<u8> {
    (resp.status() == StatusCode::OK)
        .then(|| status_of(resp.headers(), None))
        .flatten()
}

/// Whether a gRPC call's answer leaves its status to its trailers: an
/// HTTP 200 whose head carries no `grpc-status` (messages come first).
pub fn status_pending<B>(resp: &Response<B>) -> bool {
    resp.status() == http::StatusCode::OK && status_in(resp.headers()).is_none()
}

/// A gRPC call failed at once, as a server does it: HTTP 200 with
/// `content-type: application/grpc`, the status and message in the
/// headers, no body (HTTP/2 ends the stream with these headers: a
/// trailers-only answer).
pub fn failed_call(status: GrpcError, message: &str) -> Response<BoxBody> {
    let mut resp = Response::new(full(Bytes::new()));
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

/// The caller's deadline a gRPC request carries in `grpc-timeout` (1 to 8
/// digits and a unit: `H`, `M`, `S`, `m` milliseconds, `u`, `n`), if it
/// carries a valid one.
pub fn timeout_in(headers: &HeaderMap) -> Option<crate::clock::Duration> {
    use crate::clock::Duration;
    let text = headers.get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = text.split_at(text.len().checked_sub(1)?);
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

/// The caller's deadline of a gRPC call (`grpc-timeout` on a request
/// whose content type is gRPC's), if it gives one.
pub fn deadline_of(headers: &HeaderMap) -> Option<crate::clock::Duration> {
    is_grpc(headers).then(|| timeout_in(headers)).flatten()
}

/// One gRPC message on the wire: a flag byte (0, not compressed), the
/// message's length as 4 big-endian bytes, then the message.
pub fn frame(message: &[u8]) -> Bytes {
    let len = u32::try_from(message.len()).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(5 + message.len());
    out.push(0);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(message);
    Bytes::from(out)
}

/// A gRPC call answered with one message, as a server answers a unary
/// call: HTTP 200 with `content-type: application/grpc`, the framed
/// `message`, then trailers with `grpc-status: 0`.
pub fn answered_call(message: &[u8]) -> Response<BoxBody> {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    let body = Unary {
        message: Some(frame(message)),
        trailers: Some(trailers),
    };
    let mut resp = Response::new(boxed(body));
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    // HTTP/1.1 sends only the trailers a response announces.
    resp.headers_mut().insert(
        http::header::TRAILER,
        HeaderValue::from_static("grpc-status, grpc-message"),
    );
    resp
}

/// One framed message, then the trailers. Its length is not announced
/// (the size hint stays open), so that HTTP/1.1 sends it chunked, the
/// only framing that carries trailers, as it does for a streamed answer.
struct Unary {
    message: Option<Bytes>,
    trailers: Option<HeaderMap>,
}

impl http_body::Body for Unary {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        let frame = match self.message.take() {
            Some(data) => Some(http_body::Frame::data(data)),
            None => self.trailers.take().map(http_body::Frame::trailers),
        };
        std::task::Poll::Ready(frame.map(Ok))
    }

    fn is_end_stream(&self) -> bool {
        self.message.is_none() && self.trailers.is_none()
    }
}

/// `grpc-message` as the gRPC protocol writes it: UTF-8, every byte
/// outside printable ASCII, and `%`, as `%XX`.
fn percent_encode(message: &str) -> String {
    percent_encoded(message, |b| (0x20..=0x7e).contains(&b) && b != b'%')
}

/// `text` with every byte `keep` refuses written `%XX` (upper-case hex):
/// a gRPC message's encoding and a URL query's share it.
pub fn percent_encoded(text: &str, keep: impl Fn(u8) -> bool) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if keep(b) {
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
    use http_body_util::BodyExt;

    #[test]
    fn grpc_content_types_are_told_from_lookalikes() {
        let with = |ct: &str| {
            let mut h = HeaderMap::new();
            h.insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_str(ct).unwrap(),
            );
            is_grpc(&h)
        };
        for yes in [
            "application/grpc",
            "application/grpc+proto",
            "application/grpc; x=1",
        ] {
            assert!(with(yes), "{yes}");
        }
        for no in [
            "application/grpc-web",
            "application/grpcx",
            "application/json",
        ] {
            assert!(!with(no), "{no}");
        }
        assert!(!is_grpc(&HeaderMap::new()));
    }

    #[test]
    fn a_trailers_only_answer_gives_its_status_and_a_code_past_16_reads_as_unknown() {
        let failed = failed_call("UNAVAILABLE".parse().unwrap(), "down");
        assert_eq!(answered_status(&failed), Some(14));
        let mut odd = failed_call("INTERNAL".parse().unwrap(), "");
        odd.headers_mut()
            .insert("grpc-status", HeaderValue::from_static("99"));
        assert_eq!(answered_status(&odd), Some(2));
        let mut not_200 = failed_call("INTERNAL".parse().unwrap(), "");
        *not_200.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
        assert_eq!(
            answered_status(&not_200),
            None,
            "an HTTP failure, not a gRPC one"
        );
        let mut streaming = failed_call("INTERNAL".parse().unwrap(), "");
        streaming.headers_mut().remove("grpc-status");
        assert_eq!(answered_status(&streaming), None);
    }

    #[test]
    fn grpc_timeout_reads_every_unit_and_refuses_what_the_protocol_does_not_allow() {
        use crate::clock::Duration;
        let read = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert("grpc-timeout", HeaderValue::from_str(v).unwrap());
            timeout_in(&h)
        };
        assert_eq!(read("2H"), Some(Duration::from_secs(7200)));
        assert_eq!(read("3M"), Some(Duration::from_secs(180)));
        assert_eq!(read("5S"), Some(Duration::from_secs(5)));
        assert_eq!(read("250m"), Some(Duration::from_millis(250)));
        assert_eq!(read("99999999u"), Some(Duration::from_micros(99_999_999)));
        assert_eq!(read("7n"), Some(Duration::from_nanos(7)));
        for bad in [
            "",
            "S",
            "100",
            "123456789m",
            "1.5S",
            "-1S",
            "10s",
            "10 m",
            "x5m",
        ] {
            assert_eq!(read(bad), None, "{bad:?}");
        }
        assert_eq!(timeout_in(&HeaderMap::new()), None);
    }

    #[tokio::test]
    async fn an_answered_call_frames_its_message_and_ends_with_status_ok_in_the_trailers() {
        assert_eq!(&frame(b"")[..], &[0, 0, 0, 0, 0]);
        let resp = answered_call(b"sku-1");
        assert_eq!(resp.status(), 200);
        assert!(is_grpc(resp.headers()));
        assert_eq!(
            answered_status(&resp),
            None,
            "the status is in the trailers"
        );
        let got = resp.into_body().collect().await.unwrap();
        assert_eq!(got.trailers().and_then(status_in), Some(0));
        assert_eq!(&got.to_bytes()[..], b"\0\0\0\0\x05sku-1");
    }

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
