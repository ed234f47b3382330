//! `recordExceptions` / `ignoreExceptions` → firedrill's status classes.
//!
//! resilience4j judges a call by the exception it ends with: one that an
//! `ignoreExceptions` class covers is ignored; otherwise, with no
//! `recordExceptions`, every exception is a failure, and with some, only
//! those they cover (any other exception counts as a success)
//! (`CircuitBreakerConfig.Builder.createRecordExceptionPredicate`,
//! `createIgnoreFailurePredicate`, `isAssignableFrom`). firedrill judges
//! HTTP answers and transport errors, so each class is read as the answers
//! and errors the usual Spring HTTP clients raise it for.

use super::{Reader, from};
use crate::defense::import::options::Seen as Kind;
use crate::defense::import::tree::Node;

/// The kinds a class covers (itself and its subclasses): the
/// application's own mapping first; `None` for a class neither knows.
fn covers(class: &str, user: &super::UserExceptions) -> Option<Vec<Kind>> {
    use Kind::{Client, Server};
    if let Some(mapped) = user.get(class) {
        return Some(mapped.clone());
    }
    if let Some(known) = listed_class(class) {
        return Some(known);
    }
    let (outer, nested) = class.split_once('$')?;
    let simple = outer.rsplit('.').next().unwrap_or(outer);
    let code = status_of(nested)?;
    let fits = match simple {
        "HttpClientErrorException" => code < 500,
        "HttpServerErrorException" => code >= 500,
        "WebClientResponseException" | "FeignException" => true,
        _ => false,
    };
    fits.then(|| {
        vec![if code < 500 {
            Client(Some(code))
        } else {
            Server(Some(code))
        }]
    })
}

/// The classes known by their whole name.
fn listed_class(class: &str) -> Option<Vec<Kind>> {
    use Kind::{Client, Connect, Server, Timeout};
    let all_answers = vec![Client(None), Server(None)];
    Some(match class {
        "java.lang.Throwable" | "java.lang.Exception" => {
            vec![Client(None), Server(None), Connect, Timeout]
        }
        // Spring's clients wrap I/O errors in runtime exceptions
        // (ResourceAccessException, WebClientRequestException, Feign's
        // RetryableException); the time limiter's TimeoutException is
        // checked.
        "java.lang.RuntimeException" => vec![Client(None), Server(None), Connect],
        "org.springframework.web.client.RestClientException" => {
            vec![Client(None), Server(None), Connect]
        }
        "org.springframework.web.client.RestClientResponseException"
        | "org.springframework.web.client.HttpStatusCodeException"
        | "org.springframework.web.reactive.function.client.WebClientResponseException"
        | "feign.FeignException" => all_answers,
        "org.springframework.web.client.HttpClientErrorException"
        | "feign.FeignException$FeignClientException" => vec![Client(None)],
        "org.springframework.web.client.HttpServerErrorException"
        | "feign.FeignException$FeignServerException" => vec![Server(None)],
        "org.springframework.web.client.ResourceAccessException"
        | "org.springframework.web.reactive.function.client.WebClientRequestException"
        | "feign.RetryableException"
        | "java.io.IOException"
        | "java.net.ConnectException"
        | "java.net.SocketException"
        | "java.net.UnknownHostException" => vec![Connect],
        "java.util.concurrent.TimeoutException" | "java.net.SocketTimeoutException" => {
            vec![Timeout]
        }
        _ => return None,
    })
}

/// The status of a nested status exception (`HttpClientErrorException$NotFound`).
fn status_of(nested: &str) -> Option<u16> {
    Some(match nested {
        "BadRequest" => 400,
        "Unauthorized" => 401,
        "Forbidden" => 403,
        "NotFound" => 404,
        "MethodNotAllowed" => 405,
        "NotAcceptable" => 406,
        "Conflict" => 409,
        "Gone" => 410,
        "UnsupportedMediaType" => 415,
        "UnprocessableEntity" => 422,
        "TooManyRequests" => 429,
        "InternalServerError" => 500,
        "NotImplemented" => 501,
        "BadGateway" => 502,
        "ServiceUnavailable" => 503,
        "GatewayTimeout" => 504,
        _ => return None,
    })
}

/// Whether the class covering `a` covers `b` too (a class of all 4xx
/// covers 404; 404 does not cover every 4xx).
fn includes(a: Kind, b: Kind) -> bool {
    match (a, b) {
        (Kind::Client(None), Kind::Client(_)) | (Kind::Server(None), Kind::Server(_)) => true,
        _ => a == b,
    }
}

/// How resilience4j judges an outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Failure,
    Ignored,
    Success,
}

/// One list's classes with their entries.
struct Listed<'a> {
    kinds: Vec<(Kind, &'a super::Entry)>,
    given: bool,
}

/// How a record (or retry) list and an ignore list judge `kind`: ignore
/// first, then record; outside a non-empty record list, a success
/// (`CircuitBreakerStateMachine.handleThrowable`; a retry is not retried).
fn judge(kind: Kind, record: &Listed, ignore: &Listed) -> (Verdict, Option<String>) {
    if let Some((_, e)) = ignore.kinds.iter().find(|(k, _)| includes(*k, kind)) {
        return (Verdict::Ignored, Some(from(e)));
    }
    if !record.given {
        return (Verdict::Failure, None);
    }
    match record.kinds.iter().find(|(k, _)| includes(*k, kind)) {
        Some((_, e)) => (Verdict::Failure, Some(from(e))),
        None => (Verdict::Success, None),
    }
}

/// Reads one list property into kinds; a class neither the application's
/// mapping nor the import knows is set aside as not drilled, the list
/// standing without it (the class is an application exception no answer
/// raises, so it changes nothing firedrill sees).
fn listed<'a>(r: &mut Reader<'_, 'a, '_>, property: &str, shown: &str) -> Listed<'a> {
    let Some(entries) = r.chain.get(property) else {
        return Listed {
            kinds: Vec::new(),
            given: false,
        };
    };
    let entries: Vec<&'a super::Entry> = entries.to_vec();
    let mut kinds = Vec::new();
    for e in entries {
        r.mark(e);
        for class in e.value.split(',').map(str::trim).filter(|c| !c.is_empty()) {
            match covers(class, r.user) {
                Some(found) => kinds.extend(found.into_iter().map(|k| (k, e))),
                None => r.set_aside(e, format!(
                    "{shown}: `{class}` is not an exception firedrill can tell from an HTTP answer: firedrill judges statuses, timeouts and connection errors (known: the Spring and Feign HTTP exceptions, their status subclasses such as HttpClientErrorException$NotFound, java.io.IOException, java.util.concurrent.TimeoutException, java.lang.Exception); the list is drilled without it; map it to what it is raised for with `exceptions: {{ {class}: 503 }}` under `import:` (or `--exception {class}=503`)"
                )),
            }
        }
    }
    Listed { kinds, given: true }
}

/// What one instance's lists make of every outcome firedrill sees.
pub(super) struct Lists<'a> {
    record: Listed<'a>,
    ignore: Listed<'a>,
}

impl Lists<'_> {
    fn verdict(&self, kind: Kind) -> (Verdict, Option<String>) {
        judge(kind, &self.record, &self.ignore)
    }
}

/// Sets `count_4xx`, `failure_statuses`, `success_statuses`,
/// `ignore_statuses`, `ignore_errors` and `success_errors` on `b` as
/// `recordExceptions` and `ignoreExceptions` judge each outcome; returns
/// the lists, for the retry of the same route.
pub(super) fn classify<'a>(r: &mut Reader<'_, 'a, '_>, b: &mut Node) -> Lists<'a> {
    let lists = Lists {
        record: listed(r, "recordexceptions", "recordExceptions"),
        ignore: listed(r, "ignoreexceptions", "ignoreExceptions"),
    };
    let why = |source: Option<String>| {
        source.unwrap_or_else(|| {
            "resilience4j records every exception (no recordExceptions or ignoreExceptions)"
                .to_string()
        })
    };
    let outside = match lists
        .record
        .kinds
        .first()
        .map(|(_, e)| *e)
        .or_else(|| r.chain.one("recordexceptions"))
    {
        Some(e) => format!("outside {}: resilience4j counts it as a success", from(e)),
        None => "outside recordExceptions: resilience4j counts it as a success".to_string(),
    };
    let (client, client_from) = lists.verdict(Kind::Client(None));
    let (server, server_from) = lists.verdict(Kind::Server(None));
    let mut failures = Vec::new();
    let mut ignored = Vec::new();
    let mut successes = Vec::new();
    match server {
        Verdict::Failure => failures.push(Node::leaf("5xx", why(server_from))),
        Verdict::Ignored => ignored.push(Node::leaf("5xx", why(server_from))),
        Verdict::Success => {}
    }
    match client {
        Verdict::Ignored => ignored.push(Node::leaf("4xx", why(client_from.clone()))),
        Verdict::Success => successes.push(Node::leaf("4xx", outside.clone())),
        Verdict::Failure => {}
    }
    for kind in named(&lists.record, &lists.ignore) {
        let (verdict, source) = lists.verdict(kind);
        let (code, family) = match kind {
            Kind::Client(Some(c)) => (c, client),
            Kind::Server(Some(c)) => (c, server),
            _ => continue,
        };
        match verdict {
            v if v == family => {}
            Verdict::Failure => failures.push(Node::leaf(code.to_string(), why(source))),
            Verdict::Ignored => ignored.push(Node::leaf(code.to_string(), why(source))),
            // A single status is a success only where its whole class is
            // (a list that leaves it out leaves its class out too).
            Verdict::Success => {}
        }
    }
    let count_4xx_from = match client {
        Verdict::Failure => why(client_from),
        _ => "a 4xx is not a failure in resilience4j with these lists".to_string(),
    };
    b.set(
        "count_4xx",
        Node::leaf((client == Verdict::Failure).to_string(), count_4xx_from),
    );
    if failures.is_empty() {
        b.note("no status is a failure: resilience4j counts no 5xx with these lists");
    }
    b.set("failure_statuses", Node::List(failures));
    if !successes.is_empty() {
        b.set("success_statuses", Node::List(successes));
    }
    if !ignored.is_empty() {
        b.set("ignore_statuses", Node::List(ignored));
    }
    let mut ignore_errors = Vec::new();
    let mut success_errors = Vec::new();
    for (kind, name) in [(Kind::Timeout, "timeout"), (Kind::Connect, "connection")] {
        match lists.verdict(kind) {
            (Verdict::Failure, _) => {}
            (Verdict::Ignored, source) => ignore_errors.push(Node::leaf(name, why(source))),
            (Verdict::Success, _) => success_errors.push(Node::leaf(name, outside.clone())),
        }
    }
    if !ignore_errors.is_empty() {
        b.set("ignore_errors", Node::List(ignore_errors));
    }
    if !success_errors.is_empty() {
        b.set("success_errors", Node::List(success_errors));
    }
    lists
}

/// A retry's `retryExceptions` and `ignoreExceptions`: drilled when they
/// retry exactly what firedrill's retry retries on the route (every
/// timeout and connection error, and each answer the route's breaker
/// judges a failure: `breaker`, else a 5xx); otherwise set aside as not
/// modelled, naming the first outcome they judge otherwise.
pub(super) fn retried(r: &mut Reader, breaker: Option<&Lists>, retry: &mut Node) {
    let record = listed(r, "retryexceptions", "retryExceptions");
    let ignore = listed(r, "ignoreexceptions", "ignoreExceptions");
    if !record.given && !ignore.given {
        return;
    }
    let firedrill_retries = |kind: Kind| match (kind, breaker) {
        (Kind::Connect | Kind::Timeout, _) => true,
        (_, Some(b)) => b.verdict(kind).0 == Verdict::Failure,
        (kind, None) => matches!(kind, Kind::Server(_)),
    };
    let mut kinds = vec![
        Kind::Timeout,
        Kind::Connect,
        Kind::Server(None),
        Kind::Client(None),
    ];
    kinds.extend(named(&record, &ignore));
    if let Some(b) = breaker {
        kinds.extend(named(&b.record, &b.ignore));
    }
    let differs = kinds
        .into_iter()
        .find(|k| (judge(*k, &record, &ignore).0 == Verdict::Failure) != firedrill_retries(*k));
    let entries: Vec<&super::Entry> = ["retryexceptions", "ignoreexceptions"]
        .iter()
        .filter_map(|p| r.chain.get(p))
        .flatten()
        .copied()
        .collect();
    let set_aside: Vec<(usize, usize)> = r.set_aside.iter().map(|p| (p.line, p.column)).collect();
    match differs {
        None => {
            for e in entries
                .iter()
                .filter(|e| !set_aside.contains(&(e.line, e.column)))
            {
                retry.note(format!(
                    "{}: resilience4j retries exactly what firedrill's retry retries here (the outcomes the route's breaker counts as failures, timeouts and connection errors)",
                    from(e)
                ));
            }
        }
        Some(kind) => {
            let retried = judge(kind, &record, &ignore).0 == Verdict::Failure;
            let message = format!(
                "retryExceptions/ignoreExceptions {} {} where firedrill's retry {}: not modelled; firedrill retries every timeout and connection error and each answer the route's breaker counts as a failure",
                if retried { "retry" } else { "do not retry" },
                words(kind),
                if retried { "does not" } else { "does" },
            );
            for e in entries {
                r.refuse(e, message.clone());
            }
        }
    }
}

/// An outcome in words.
fn words(kind: Kind) -> String {
    match kind {
        Kind::Client(None) => "a 4xx answer".to_string(),
        Kind::Server(None) => "a 5xx answer".to_string(),
        Kind::Client(Some(c)) | Kind::Server(Some(c)) => format!("a {c} answer"),
        Kind::Connect => "a connection error".to_string(),
        Kind::Timeout => "a timeout".to_string(),
    }
}

/// The single statuses either list names, in order.
fn named(record: &Listed, ignore: &Listed) -> Vec<Kind> {
    let mut named: Vec<Kind> = record
        .kinds
        .iter()
        .chain(ignore.kinds.iter())
        .map(|(k, _)| *k)
        .filter(|k| matches!(k, Kind::Client(Some(_)) | Kind::Server(Some(_))))
        .collect();
    named.sort_by_key(|k| match k {
        Kind::Client(c) | Kind::Server(c) => c.unwrap_or(0),
        _ => 0,
    });
    named.dedup();
    named
}
