//! Where the load's requests go: over HTTP/1.1 (to the defense line's
//! listener, the fault proxy or the user's service), or into firedrill's
//! own defense line in-process in a virtual-time drill, taking the turns
//! the HTTP hop would have taken so every report stays the same.

use std::sync::Arc;

use http::header::{CONTENT_LENGTH, HOST, TRANSFER_ENCODING};
use http::{HeaderValue, Request, Response};

use crate::experiment::config::LoadRoute;
use crate::experiment::timeline::ClientError;
use crate::http::body::{BoxBody, boxed};
use crate::http::client::{Handler, Upstream};

/// Where the generator's requests go.
#[derive(Clone)]
pub enum Entry {
    /// Over HTTP/1.1: to the defense line's listener, the fault proxy or
    /// the user's service.
    Http(Arc<dyn Upstream>),
    /// Into firedrill's own defense line in-process (a virtual-clock
    /// drill): each request as the line's HTTP server would hand it over
    /// (see [`Entry::in_process`]), without encoding and parsing it in
    /// between.
    InProcess {
        /// The line.
        server: Arc<dyn Handler>,
        /// The `Host` an HTTP client puts on requests to the line.
        host: HeaderValue,
    },
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Entry::Http(_) => f.write_str("Entry::Http"),
            Entry::InProcess { host, .. } => f
                .debug_struct("Entry::InProcess")
                .field("host", host)
                .finish(),
        }
    }
}

impl Entry {
    /// The in-process entry into `server` (the defense line), which
    /// listens on `authority`
    /// (`host:port`), for `routes`; none when a route needs what only the
    /// HTTP hop gives: a `fallback:` rule (it may read any response header,
    /// such as those the line's HTTP server adds) or its own
    /// `content-length` / `transfer-encoding` header (HTTP framing).
    pub fn in_process(
        server: Arc<dyn Handler>,
        authority: &str,
        routes: &[LoadRoute],
    ) -> Option<Entry> {
        in_process_host(authority, routes).map(|host| Entry::InProcess { server, host })
    }

    /// Whether requests go to the line in-process.
    pub(crate) fn is_in_process(&self) -> bool {
        matches!(self, Entry::InProcess { .. })
    }

    /// Sends `req` (origin-form URI) and returns the response head, or why
    /// none came.
    pub(crate) async fn send(
        &self,
        mut req: Request<BoxBody>,
    ) -> Result<Response<BoxBody>, ClientError> {
        match self {
            Entry::Http(client) => match client.send(req).await {
                Ok(resp) => Ok(resp.map(boxed)),
                Err(err) if err.is_connect() => Err(ClientError::Connect),
                Err(_) => Err(ClientError::Broken),
            },
            Entry::InProcess { server, host } => {
                // The headers an HTTP/1.1 client adds, in its order: `Host`
                // after the request's own, then the body's length.
                let len = http_body::Body::size_hint(req.body()).exact().unwrap_or(0);
                let headers = req.headers_mut();
                headers.entry(HOST).or_insert_with(|| host.clone());
                if len > 0 {
                    headers.insert(CONTENT_LENGTH, HeaderValue::from(len));
                }
                // Each way, the tasks an HTTP exchange passes through take
                // their turns (see [`HOPS`]) before the other end sees it.
                hops().await;
                let resp = server.answer(req).await;
                hops().await;
                Ok(resp)
            }
        }
    }
}

/// The `Host` an HTTP/1.1 client sends to `authority` (the port only when
/// not 80), if every route can go in-process (see [`Entry::in_process`]).
fn in_process_host(authority: &str, routes: &[LoadRoute]) -> Option<HeaderValue> {
    let framing = |k: &String| {
        k.eq_ignore_ascii_case(CONTENT_LENGTH.as_str())
            || k.eq_ignore_ascii_case(TRANSFER_ENCODING.as_str())
    };
    let plain = routes
        .iter()
        .all(|r| r.fallback.is_none() && !r.headers.keys().any(framing));
    let host = authority.strip_suffix(":80").unwrap_or(authority);
    plain.then(|| HeaderValue::from_str(host).ok()).flatten()
}

/// The turns a message takes each way between the load generator and the
/// defense line over HTTP/1.1: the client connection's task, then the
/// other end's (the line's server connection, or the request's own task).
/// Taking them in-process keeps the order of everything that happens at
/// one virtual instant (a request and a breaker's timer, an answer and
/// the next arrival) as it was over the wire, so reports stay the same.
const HOPS: usize = 2;

/// Goes to the back of the run queue [`HOPS`] times.
pub(crate) async fn hops() {
    for _ in 0..HOPS {
        Requeue(false).await;
    }
}

/// Goes to the back of the run queue once: every task already woken runs
/// first, as a task woken by this one would run after them.
struct Requeue(bool);

impl std::future::Future for Requeue {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// The load routes of a drill whose `load:` is `load`.
    fn routes(load: &str) -> Vec<LoadRoute> {
        let yaml = format!(
            "name: x\nduration: 1s\ntarget: {{ builtin: {{ routes: [{{ path: /a }}] }} }}\nload:\n{load}"
        );
        let experiment: crate::experiment::config::Experiment =
            crate::schema::from_yaml_str("x.yaml", &yaml).unwrap();
        experiment.load
    }

    #[test]
    fn the_in_process_host_is_the_authority_without_the_default_port() {
        let plain = routes("  - { name: a, request: GET /a, rate: 1/s }");
        let host = |authority| in_process_host(authority, &plain);
        assert_eq!(
            host("memory-3:80"),
            Some(HeaderValue::from_static("memory-3"))
        );
        assert_eq!(
            host("memory-3:8080"),
            Some(HeaderValue::from_static("memory-3:8080"))
        );
    }

    #[test]
    fn a_fallback_rule_or_a_framing_header_keeps_the_load_on_http() {
        let with = |route: &str| in_process_host("memory-0:80", &routes(route));
        let plain = "  - { name: a, request: GET /a, rate: 1/s, headers: { x-a: b } }";
        assert!(with(plain).is_some());
        let rule = "  - { name: a, request: GET /a, rate: 1/s, fallback: { status: 203 } }";
        assert_eq!(with(rule), None);
        for header in ["Content-Length: '0'", "transfer-encoding: chunked"] {
            let framed =
                format!("  - {{ name: a, request: POST /a, rate: 1/s, headers: {{ {header} }} }}");
            assert_eq!(with(&framed), None, "{header}");
        }
    }

    /// What `order` records: `first` spawned, then `first` spawning
    /// `second` when it runs, while this task takes its [`hops`].
    #[tokio::test(start_paused = true)]
    async fn the_hops_let_a_two_task_chain_woken_first_finish_first() {
        let order = Arc::new(Mutex::new(Vec::new()));
        let push = |o: &Arc<Mutex<Vec<&'static str>>>, what| o.lock().unwrap().push(what);
        let chain = order.clone();
        tokio::spawn(async move {
            push(&chain, "first");
            let second = chain.clone();
            tokio::spawn(async move { push(&second, "second") });
        });
        hops().await;
        push(&order, "in-process");
        assert_eq!(*order.lock().unwrap(), ["first", "second", "in-process"]);
    }
}
