//! A user's service as a URL: `http://`, `https://` or `h2c://` (HTTP/2
//! without TLS, with prior knowledge), host and port, and a path prefix put
//! in front of every request path sent to it (`https://h/api` +
//! `/stock/1` is `/api/stock/1`).

use http::{HeaderValue, Request, Uri};

/// A parsed service URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `https://`: dial TLS.
    pub https: bool,
    /// `h2c://`: speak HTTP/2 from the first byte.
    pub h2c: bool,
    /// `host:port` (the port filled in: 80 or 443 when the URL has none).
    pub authority: String,
    /// The host alone: the TLS server name and the certificate's name.
    pub host: String,
    /// The path prefix without a trailing `/` (`/api`), or empty.
    pub prefix: String,
}

impl Endpoint {
    /// Reads `http[s]://host[:port][/prefix]` or `host:port` (plain HTTP);
    /// the error names `key`.
    pub fn parse(key: &str, url: &str) -> Result<Endpoint, String> {
        let expected = || {
            format!(
                "{key}: `{url}`: expected http://host:port, https://host[:port], h2c://host:port (HTTP/2 without TLS), optionally with a path prefix (https://host/api), or host:port"
            )
        };
        let (https, h2c, rest) = match url.split_once("://") {
            Some(("http", rest)) => (false, false, rest),
            Some(("https", rest)) => (true, false, rest),
            Some(("h2c", rest)) => (false, true, rest),
            Some(_) => return Err(expected()),
            None => (false, false, url),
        };
        if url.contains(['?', '#']) || url.contains(char::is_whitespace) {
            return Err(expected());
        }
        let (authority, prefix) = match rest.find('/') {
            Some(i) => rest.split_at(i),
            None => (rest, ""),
        };
        if !url.contains("://") && !prefix.is_empty() {
            return Err(expected());
        }
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !host.ends_with(':') => match port.parse::<u16>() {
                Ok(port) => (host, port),
                Err(_) => return Err(expected()),
            },
            _ if url.contains("://") => (authority, if https { 443 } else { 80 }),
            _ => return Err(expected()),
        };
        if host.is_empty() || host.contains('@') {
            return Err(expected());
        }
        Ok(Endpoint {
            https,
            h2c,
            authority: format!("{host}:{port}"),
            host: host.to_string(),
            prefix: prefix.trim_end_matches('/').to_string(),
        })
    }

    /// The URL, normalised: `https://host:port/prefix`.
    pub fn url(&self) -> String {
        let scheme = match (self.https, self.h2c) {
            (true, _) => "https",
            (false, true) => "h2c",
            (false, false) => "http",
        };
        format!("{scheme}://{}{}", self.authority, self.prefix)
    }

    /// What to change in each request sent to the service.
    pub fn rewrite(&self) -> Rewrite {
        Rewrite {
            prefix: self.prefix.clone(),
            host: HeaderValue::from_str(&self.authority).ok(),
            http2: self.h2c,
            tls: self.https,
            grpc_over_http2: false,
            http1_given: !self.h2c && !self.https,
        }
    }
}

/// What changes in a request on its way to a user's service: the path
/// prefix in front of its path, the `Host` header (a virtual host behind
/// TLS answers by name), and the HTTP version it goes in.
#[derive(Debug, Clone, Default)]
pub struct Rewrite {
    /// Put in front of every path; empty: none.
    prefix: String,
    /// The `Host` header to send; none: keep the caller's.
    host: Option<HeaderValue>,
    /// Send it over HTTP/2 (an `h2c://` service); otherwise HTTP/1.1,
    /// unless the connection's ALPN chose HTTP/2.
    http2: bool,
    /// The service is `https://`: an HTTP/2 request's `:scheme`.
    tls: bool,
    /// The upstream's HTTP version was not given (`host:port`): a gRPC
    /// call, which only HTTP/2 carries, goes over HTTP/2 with prior
    /// knowledge, other requests over HTTP/1.1.
    grpc_over_http2: bool,
    /// The user gave the upstream as `http://`: HTTP/1.1 only, which no
    /// gRPC call crosses. Not so for firedrill's own hops inside a drill
    /// (the default), which carry gRPC over HTTP/1.1 to its own target.
    http1_given: bool,
}

impl Rewrite {
    /// Nothing rewritten; HTTP/2 (h2c, prior knowledge) when `http2`:
    /// firedrill's own hops in a drill that speaks HTTP/2.
    pub fn version(http2: bool) -> Rewrite {
        Rewrite {
            http2,
            ..Rewrite::default()
        }
    }

    /// Nothing rewritten, towards an upstream whose HTTP version was not
    /// given (`host:port`): HTTP/1.1, but a gRPC call over HTTP/2 (prior
    /// knowledge), the only version that carries it.
    pub fn version_not_given() -> Rewrite {
        Rewrite {
            grpc_over_http2: true,
            ..Rewrite::default()
        }
    }

    /// Whether requests go upstream over HTTP/2.
    pub fn http2(&self) -> bool {
        self.http2
    }

    /// Whether a request with these headers goes upstream over HTTP/2
    /// from the first byte: every one towards an `h2c://` upstream, a gRPC
    /// call towards one whose version was not given.
    pub fn http2_for(&self, headers: &http::HeaderMap) -> bool {
        self.http2 || (self.grpc_over_http2 && super::grpc::is_grpc(headers))
    }

    /// Whether the user gave the upstream as HTTP/1.1 only (`http://`):
    /// no gRPC call can reach it. firedrill's own hops inside a drill are
    /// not: they carry gRPC over HTTP/1.1 to firedrill's own target.
    pub fn http1_only(&self) -> bool {
        self.http1_given
    }

    /// Whether the service is reached over TLS (`https://`).
    pub fn tls(&self) -> bool {
        self.tls
    }

    /// Makes `req`, as a client sent it (HTTP/1.1 or HTTP/2), the request
    /// to send upstream: rewritten ([`Rewrite::apply`]) and in the
    /// upstream's version ([`super::version`]).
    pub fn prepare<B>(&self, req: &mut Request<B>) {
        self.prepare_for(req, self.http2);
    }

    /// As [`Rewrite::prepare`], for a connection that speaks HTTP/2 when
    /// `http2` (h2c, or ALPN's choice), else HTTP/1.1.
    pub fn prepare_for<B>(&self, req: &mut Request<B>, http2: bool) {
        if http2 {
            self.apply(req);
            let scheme = if self.tls { "https" } else { "http" };
            super::version::to_http2(req, scheme);
        } else {
            super::version::to_http1(req);
            self.apply(req);
        }
    }

    /// Rewrites `req` (origin-form URI) in place.
    pub fn apply<B>(&self, req: &mut Request<B>) {
        if let Some(host) = &self.host {
            req.headers_mut().insert(http::header::HOST, host.clone());
        }
        if self.prefix.is_empty() {
            return;
        }
        let path = req.uri().path_and_query().map_or("/", |p| p.as_str());
        if let Ok(uri) = format!("{}{path}", self.prefix).parse::<Uri>() {
            *req.uri_mut() = uri;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_upstream_the_user_gave_as_http_refuses_grpc_not_firedrills_own_hops() {
        let given = |url: &str| Endpoint::parse("k", url).unwrap().rewrite().http1_only();
        assert!(given("http://127.0.0.1:9000"));
        assert!(!given("h2c://127.0.0.1:9000"));
        assert!(!given("https://staging.example"));
        // A drill's own hops carry gRPC over HTTP/1.1 to its own target.
        assert!(!Rewrite::default().http1_only());
        assert!(!Rewrite::version(false).http1_only());
        assert!(!Rewrite::version_not_given().http1_only());
    }

    #[test]
    fn https_url_with_a_prefix_gets_port_443_and_its_prefix_without_a_trailing_slash() {
        let e = Endpoint::parse("k", "https://staging.example/api/").unwrap();
        assert!(e.https);
        assert_eq!(e.authority, "staging.example:443");
        assert_eq!(e.host, "staging.example");
        assert_eq!(e.prefix, "/api");
        assert_eq!(e.url(), "https://staging.example:443/api");
    }

    #[test]
    fn host_port_alone_is_plain_http_without_prefix() {
        let e = Endpoint::parse("k", "127.0.0.1:9000").unwrap();
        assert!(!e.https);
        assert_eq!(e.url(), "http://127.0.0.1:9000");
    }

    #[test]
    fn other_schemes_queries_and_missing_ports_are_refused_naming_the_key() {
        for bad in [
            "ftp://h:1",
            "http://h:1/a?b=1",
            "h",
            "h:x",
            "https://:443",
            "h:1/api",
        ] {
            let err = Endpoint::parse("target.url", bad).unwrap_err();
            assert!(err.starts_with("target.url: `"), "{bad}: {err}");
        }
    }

    #[test]
    fn rewrite_puts_the_prefix_before_path_and_query_and_sets_host() {
        let rewrite = Endpoint::parse("k", "https://h:8443/api")
            .unwrap()
            .rewrite();
        let mut req = Request::get("/stock/1?x=2").body(()).unwrap();
        rewrite.apply(&mut req);
        assert_eq!(req.uri().to_string(), "/api/stock/1?x=2");
        assert_eq!(req.headers()[http::header::HOST], "h:8443");
    }
}
