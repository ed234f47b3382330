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
use crate::defense::import::tree::Node;

/// What a call can end with, as firedrill tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A 4xx answer; `Some(code)` for one status only.
    Client(Option<u16>),
    /// A 5xx answer; `Some(code)` for one status only.
    Server(Option<u16>),
    /// No answer: a refused or reset connection.
    Connect,
    /// No answer in time (the time limiter's `TimeoutException`).
    Timeout,
}

/// The kinds a class covers (itself and its subclasses); `None` for a
/// class the import does not know.
fn covers(class: &str) -> Option<Vec<Kind>> {
    use Kind::{Client, Server};
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

/// Reads one list property into kinds; an unknown class is refused.
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
            match covers(class) {
                Some(found) => kinds.extend(found.into_iter().map(|k| (k, e))),
                None => r.refuse(e, format!(
                    "{shown}: `{class}` is not an exception firedrill can tell from an HTTP answer: firedrill judges statuses, timeouts and connection errors (known: the Spring and Feign HTTP exceptions, their status subclasses such as HttpClientErrorException$NotFound, java.io.IOException, java.util.concurrent.TimeoutException, java.lang.Exception); remove it, or set failure_statuses/ignore_statuses on the route"
                )),
            }
        }
    }
    Listed { kinds, given: true }
}

/// Sets `count_4xx`, `failure_statuses` and `ignore_statuses` on `b`.
pub(super) fn classify(r: &mut Reader, b: &mut Node) {
    let record = listed(r, "recordexceptions", "recordExceptions");
    let ignore = listed(r, "ignoreexceptions", "ignoreExceptions");
    let why = |source: Option<String>| {
        source.unwrap_or_else(|| {
            "resilience4j records every exception (no recordExceptions or ignoreExceptions)"
                .to_string()
        })
    };
    for kind in [Kind::Connect, Kind::Timeout] {
        let (verdict, _) = judge(kind, &record, &ignore);
        if verdict != Verdict::Failure {
            let what = if kind == Kind::Connect {
                "a connection error"
            } else {
                "a timeout"
            };
            let seen = if verdict == Verdict::Ignored {
                "ignored"
            } else {
                "a success"
            };
            let message = format!(
                "with these lists resilience4j counts {what} as {seen}: not modelled, firedrill counts timeouts and connection errors as failures always"
            );
            refuse_at(r, &ignore, &record, kind, verdict, message);
        }
    }
    let (client, client_from) = judge(Kind::Client(None), &record, &ignore);
    let (server, server_from) = judge(Kind::Server(None), &record, &ignore);
    let mut failures = Vec::new();
    let mut ignored = Vec::new();
    match server {
        Verdict::Failure => failures.push(Node::leaf("5xx", why(server_from))),
        Verdict::Ignored => ignored.push(Node::leaf("5xx", why(server_from))),
        Verdict::Success => {}
    }
    match client {
        Verdict::Ignored => ignored.push(Node::leaf("4xx", why(client_from.clone()))),
        Verdict::Success => {
            let message = "with these lists resilience4j counts a 4xx answer as a success (recordExceptions does not cover HttpClientErrorException): not modelled, firedrill ignores a 4xx or counts it as a failure; add HttpClientErrorException to ignoreExceptions or recordExceptions".to_string();
            refuse_at(r, &ignore, &record, Kind::Client(None), client, message);
        }
        Verdict::Failure => {}
    }
    for kind in named(&record, &ignore) {
        let (verdict, source) = judge(kind, &record, &ignore);
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
    if !ignored.is_empty() {
        b.set("ignore_statuses", Node::List(ignored));
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

/// Refuses at the entry that decided `kind` (the ignoring class, or the
/// record list that leaves it out), else at the file.
fn refuse_at(
    r: &mut Reader,
    ignore: &Listed,
    record: &Listed,
    kind: Kind,
    verdict: Verdict,
    message: String,
) {
    let culprit = match verdict {
        Verdict::Ignored => ignore.kinds.iter().find(|(k, _)| includes(*k, kind)),
        _ => record.kinds.first(),
    };
    match culprit {
        Some((_, e)) => {
            let e = *e;
            r.refuse(e, message);
        }
        None => r.problems.push(r.source.whole(message)),
    }
}
