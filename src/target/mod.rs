//! The embedded fixture server: a real HTTP target so that firedrill runs
//! with nothing else installed. It counts every request it serves, which is
//! what "calls that reached the dependency" are measured against.
//!
//! Routes: `GET /health` → 200; `/status/{code}` → that status;
//! `/bytes/{n}` → `n` bytes, streamed; `/delay/{duration}` → 200 after the
//! delay (`150ms`, `2s`); `/echo` → the request body, streamed back; any
//! other path → 200 `ok`. A gRPC call (`content-type: application/grpc`)
//! to any path but a configured route's is answered with the message `ok`
//! and status OK.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;

use crate::clock;
use crate::http::ShutdownSignal;
use crate::http::body::{BoxBody, boxed, full};
use crate::http::grpc;
use crate::http::local::Local;
use crate::net::Acceptor;
use crate::schema::units::{Dur, GrpcError};

/// Counters and configured routes of the fixture server, shared with
/// whoever started it.
#[derive(Debug, Default)]
pub struct TargetStats {
    /// Requests received (whatever their answer).
    requests: AtomicU64,
    /// Connections accepted.
    connections: AtomicU64,
    /// Routes configured by an experiment, tried before the fixed ones.
    routes: Vec<TargetRoute>,
}

/// A configured route: requests whose path matches `path` are answered
/// with `status` and `body` after `latency`.
#[derive(Debug, Clone, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetRoute {
    /// Path glob, e.g. `/inventory/*`.
    pub path: crate::fault::HttpMatch,
    /// Time the route takes to answer.
    #[serde(default)]
    pub latency: Dur,
    /// Status of the answer (default 200).
    #[serde(default = "ok_status")]
    #[schemars(range(min = 100, max = 599))]
    pub status: u16,
    /// Body of the answer (default `ok`); to a gRPC call, the message of
    /// its answer.
    #[serde(default = "ok_body")]
    pub body: String,
    /// Fail a gRPC call to this route with this status (a name such as
    /// `NOT_FOUND`, or a number), as a server does at once (trailers-only);
    /// default: answer it with `body` as its message and status OK.
    #[serde(default)]
    pub grpc_status: Option<GrpcError>,
}

fn ok_status() -> u16 {
    200
}

fn ok_body() -> String {
    "ok\n".to_string()
}

impl TargetStats {
    /// A target that answers `routes` before its fixed routes.
    pub fn with_routes(routes: Vec<TargetRoute>) -> TargetStats {
        TargetStats {
            routes,
            ..TargetStats::default()
        }
    }

    /// Requests received so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::SeqCst)
    }
}

/// Serves the fixture routes on `acceptor` until `shutdown` fires.
pub async fn serve<A: Acceptor>(
    acceptor: A,
    stats: Arc<TargetStats>,
    shutdown: ShutdownSignal,
) -> std::io::Result<()> {
    crate::http::serve(
        acceptor,
        Arc::new(crate::http::Open),
        move |stream, shutdown| {
            let stats = stats.clone();
            stats.connections.fetch_add(1, Ordering::SeqCst);
            async move {
                let service = hyper::service::service_fn(move |req| respond(req, stats.clone()));
                let fin = crate::http::ClientFin::HalfClose.on(&stream);
                crate::http::serve_http(Local::new(), stream, service, fin, shutdown).await;
            }
        },
        shutdown,
        clock::Duration::from_secs(1),
    )
    .await
}

async fn respond(
    req: Request<Incoming>,
    stats: Arc<TargetStats>,
) -> Result<Response<BoxBody>, std::convert::Infallible> {
    stats.requests.fetch_add(1, Ordering::SeqCst);
    let path = req.uri().path().to_string();
    let route = stats
        .routes
        .iter()
        .find(|r| r.path.matches(req.method(), &path, req.headers()));
    if let Some(route) = route {
        clock::sleep(route.latency.get()).await;
        let status = StatusCode::from_u16(route.status).unwrap_or(StatusCode::OK);
        if grpc::is_grpc(req.headers()) && status == StatusCode::OK {
            return Ok(match route.grpc_status {
                Some(failed) => grpc::failed_call(failed, ""),
                None => grpc::answered_call(route.body.as_bytes()),
            });
        }
        return Ok(text(status, &route.body));
    }
    if grpc::is_grpc(req.headers()) {
        return Ok(grpc::answered_call(b"ok"));
    }
    let mut parts = path.trim_start_matches('/').splitn(2, '/');
    let (head, arg) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let response = match head {
        "health" => text(StatusCode::OK, "ok\n"),
        "status" => match arg
            .parse::<u16>()
            .ok()
            .and_then(|c| StatusCode::from_u16(c).ok())
        {
            Some(code) => text(code, &format!("status {}\n", code.as_u16())),
            None => text(StatusCode::BAD_REQUEST, "expected /status/{code}\n"),
        },
        "bytes" => match arg.parse::<u64>() {
            Ok(n) => {
                let mut resp = Response::new(boxed(PatternBody { remaining: n }));
                resp.headers_mut()
                    .insert(http::header::CONTENT_LENGTH, n.into());
                resp
            }
            Err(_) => text(StatusCode::BAD_REQUEST, "expected /bytes/{n}\n"),
        },
        "delay" => match arg.parse::<Dur>() {
            Ok(d) => {
                clock::sleep(d.get()).await;
                text(StatusCode::OK, "ok\n")
            }
            Err(e) => text(StatusCode::BAD_REQUEST, &format!("{e}\n")),
        },
        "echo" => Response::new(boxed(req.into_body())),
        _ => text(StatusCode::OK, "ok\n"),
    };
    Ok(response)
}

fn text(status: StatusCode, body: &str) -> Response<BoxBody> {
    let mut resp = Response::new(full(Bytes::copy_from_slice(body.as_bytes())));
    *resp.status_mut() = status;
    resp
}

/// `remaining` bytes of a repeating pattern, in 64 KiB frames.
struct PatternBody {
    /// Bytes still to send.
    remaining: u64,
}

impl http_body::Body for PatternBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        static PATTERN: [u8; 65536] = {
            let mut p = [0u8; 65536];
            let mut i = 0;
            while i < p.len() {
                p[i] = (i % 251) as u8;
                i += 1;
            }
            p
        };
        if self.remaining == 0 {
            return std::task::Poll::Ready(None);
        }
        let n = self.remaining.min(PATTERN.len() as u64) as usize;
        self.remaining -= n as u64;
        std::task::Poll::Ready(Some(Ok(http_body::Frame::data(Bytes::from_static(
            &PATTERN[..n],
        )))))
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.remaining)
    }
}

/// The byte at offset `i` of a `/bytes/{n}` body, for checking it.
pub fn pattern_byte(i: u64) -> u8 {
    ((i % 65536) % 251) as u8
}
