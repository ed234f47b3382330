//! A request sent on in the upstream's HTTP version, whichever the client
//! spoke: an HTTP/2 request carries its host as the URI's authority
//! (`:authority`) where HTTP/1.1 carries it in `Host`, and its target as an
//! absolute URI where an HTTP/1.1 origin server reads the path.

use http::{HeaderValue, Request, Uri, Version};

/// Makes `req` an HTTP/1.1 request with the same meaning: the version
/// HTTP/1.1, the authority as `Host` (a `Host` already there is kept), the
/// target in origin form (path and query). An HTTP/1.x request is left as
/// it is.
pub fn to_http1<B>(req: &mut Request<B>) {
    if req.version() != Version::HTTP_2 {
        return;
    }
    *req.version_mut() = Version::HTTP_11;
    if !req.headers().contains_key(http::header::HOST)
        && let Some(host) = req
            .uri()
            .authority()
            .and_then(|a| HeaderValue::from_str(a.as_str()).ok())
    {
        req.headers_mut().insert(http::header::HOST, host);
    }
    let target = req.uri().path_and_query().map_or("/", |p| p.as_str());
    if let Ok(uri) = target.parse::<Uri>() {
        *req.uri_mut() = uri;
    }
}

/// Makes `req` an HTTP/2 request with the same meaning: the version
/// HTTP/2, the target an absolute URI (`scheme`: `http` or `https`, as
/// `:scheme`) whose authority is the `Host` header
/// (which goes: HTTP/2 carries it as `:authority`), or the URI's own
/// authority for a request that came over HTTP/2 already. A request with
/// neither keeps its URI (hyper refuses to send it: the caller answers
/// 502).
pub fn to_http2<B>(req: &mut Request<B>, scheme: &str) {
    *req.version_mut() = Version::HTTP_2;
    let authority = match req.headers_mut().remove(http::header::HOST) {
        Some(host) => host.to_str().ok().map(str::to_string),
        None => req.uri().authority().map(|a| a.as_str().to_string()),
    };
    let Some(authority) = authority else { return };
    let target = req.uri().path_and_query().map_or("/", |p| p.as_str());
    if let Ok(uri) = format!("{scheme}://{authority}{target}").parse::<Uri>() {
        *req.uri_mut() = uri;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(version: Version, uri: &str) -> Request<()> {
        let mut req = Request::new(());
        *req.version_mut() = version;
        *req.uri_mut() = uri.parse().unwrap();
        req
    }

    #[test]
    fn an_http2_request_gets_its_authority_as_host_and_an_origin_form_target() {
        let mut req = request(Version::HTTP_2, "http://127.0.0.1:8080/inventory/1?x=2");
        to_http1(&mut req);
        assert_eq!(req.version(), Version::HTTP_11);
        assert_eq!(req.uri().to_string(), "/inventory/1?x=2");
        assert_eq!(req.headers()[http::header::HOST], "127.0.0.1:8080");
    }

    #[test]
    fn a_host_the_http2_request_carried_is_kept_and_a_bare_authority_targets_the_root() {
        let mut req = request(Version::HTTP_2, "http://a.example");
        req.headers_mut()
            .insert(http::header::HOST, HeaderValue::from_static("b.example"));
        to_http1(&mut req);
        assert_eq!(req.uri().to_string(), "/");
        assert_eq!(req.headers()[http::header::HOST], "b.example");
    }

    #[test]
    fn an_http1_request_goes_as_http2_to_its_host_and_loses_the_host_header() {
        let mut req = request(Version::HTTP_11, "/inventory/1?x=2");
        req.headers_mut().insert(
            http::header::HOST,
            HeaderValue::from_static("up.example:50051"),
        );
        to_http2(&mut req, "http");
        assert_eq!(req.version(), Version::HTTP_2);
        assert_eq!(
            req.uri().to_string(),
            "http://up.example:50051/inventory/1?x=2"
        );
        assert!(!req.headers().contains_key(http::header::HOST));
        // An HTTP/2 request keeps its authority.
        let mut req = request(Version::HTTP_2, "http://a.example:1/x");
        to_http2(&mut req, "http");
        assert_eq!(req.uri().to_string(), "http://a.example:1/x");
    }

    #[test]
    fn an_http1_request_is_left_alone_even_in_absolute_form() {
        for version in [Version::HTTP_10, Version::HTTP_11] {
            let mut req = request(version, "http://a.example/x");
            to_http1(&mut req);
            assert_eq!(req.version(), version);
            assert_eq!(req.uri().to_string(), "http://a.example/x");
            assert!(!req.headers().contains_key(http::header::HOST));
        }
    }
}
