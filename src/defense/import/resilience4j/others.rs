//! `resilience4j.bulkhead` → the route's `bulkhead`,
//! `resilience4j.timelimiter` → its `timeout`, `resilience4j.retry` → its
//! `retry`, as the `Common*ConfigurationProperties` build them.

use super::values::{boolean, duration, integer, number};
use super::{Chain, Entry, Props, Read, Reader, default_of, exceptions, from};
use crate::clock::Duration;
use crate::defense::import::source::Source;
use crate::defense::import::tree::Node;
use crate::schema::SchemaError;
use crate::schema::units::Dur;

/// Properties that change nothing in how calls are judged or limited:
/// read, and listed as ignored in the output.
pub(super) const IGNORED: &[&str] = &[
    "writablestacktraceenabled",
    "allowhealthindicatortofail",
    "eventconsumerbuffersize",
    "registerhealthindicator",
    "ignoreclassbindingexceptions",
    "failaftermaxattempts",
];

/// Why an [`IGNORED`] property changes nothing.
pub(super) fn ignored_because(property: &str) -> &'static str {
    match property {
        "writablestacktraceenabled" => "only the stack trace of resilience4j's own exceptions",
        "allowhealthindicatortofail" | "registerhealthindicator" => "only Spring's health endpoint",
        "eventconsumerbuffersize" => "only the buffer of the events endpoint",
        "ignoreclassbindingexceptions" => "only whether an unknown class name fails the start",
        "failaftermaxattempts" => {
            "only the exception thrown when a result predicate exhausts the attempts (no result predicate is imported)"
        }
        _ => "no effect on calls",
    }
}

/// Bulkhead properties, canonical.
pub(super) const BULKHEAD_PROPERTIES: &[&str] = &[
    "maxconcurrentcalls",
    "maxwaitduration",
    "writablestacktraceenabled",
    "baseconfig",
    "eventconsumerbuffersize",
];

/// Time limiter properties, canonical.
pub(super) const TIME_LIMITER_PROPERTIES: &[&str] = &[
    "timeoutduration",
    "cancelrunningfuture",
    "eventconsumerbuffersize",
    "baseconfig",
];

/// Retry properties, canonical.
pub(super) const RETRY_PROPERTIES: &[&str] = &[
    "waitduration",
    "intervalbifunction",
    "maxattempts",
    "retryexceptionpredicate",
    "resultpredicate",
    "consumeresultbeforeretryattempt",
    "retryexceptions",
    "ignoreexceptions",
    "eventconsumerbuffersize",
    "enableexponentialbackoff",
    "exponentialbackoffmultiplier",
    "exponentialmaxwaitduration",
    "enablerandomizedwait",
    "randomizedwaitfactor",
    "failaftermaxattempts",
    "baseconfig",
];

/// A duration firedrill writes exactly (whole microseconds).
fn micros(t: &str) -> Result<Duration, String> {
    let d = duration(t)?;
    if !d.subsec_nanos().is_multiple_of(1000) {
        return Err(format!(
            "{}ns is finer than firedrill's microsecond: not modelled; round it to whole microseconds",
            d.as_nanos()
        ));
    }
    Ok(d)
}

/// `maxConcurrentCalls` (25) and `maxWaitDuration` (0).
pub(super) fn bulkhead(
    source: &Source,
    chain: &Chain,
    route: &mut Node,
) -> Result<(), Vec<SchemaError>> {
    let mut r = Reader::new(source, chain);
    let mut node = Node::map();
    let max = r.value("maxconcurrentcalls", |t| match integer(t)? {
        n if n < 0 => Err(format!("maxConcurrentCalls must be an integer value >= 0 (resilience4j refuses {n})")),
        0 => Err("maxConcurrentCalls 0 rejects every call: not modelled (firedrill's bulkhead admits at least one call)".to_string()),
        n => Ok(n),
    });
    node.set(
        "max_concurrent",
        match max {
            Some((n, e)) => Node::leaf(n.to_string(), from(e)),
            None => Node::leaf("25", default_of("maxConcurrentCalls", "25")),
        },
    );
    let wait = r.value("maxwaitduration", micros);
    node.set(
        "max_wait",
        match wait {
            Some((d, e)) => Node::leaf(Dur(d).to_string(), from(e)),
            None => Node::leaf("0s", default_of("maxWaitDuration", "0")),
        },
    );
    r.finish(&mut node)?;
    route.set("bulkhead", node);
    Ok(())
}

/// `timeoutDuration` (1s); `cancelRunningFuture: false` is refused.
pub(super) fn time_limiter(
    source: &Source,
    chain: &Chain,
    route: &mut Node,
) -> Result<(), Vec<SchemaError>> {
    let mut r = Reader::new(source, chain);
    let cancel = r.value("cancelrunningfuture", boolean);
    if let Some((false, e)) = cancel {
        r.refuse(e, "cancelRunningFuture false lets a timed-out call run on at the dependency: not modelled (firedrill's timeout abandons the call)");
    }
    let timeout = r.value("timeoutduration", |t| {
        let d = micros(t)?;
        if d.is_zero() {
            return Err("timeoutDuration 0 times out every call: not modelled (firedrill's timeout is longer than 0s)".to_string());
        }
        Ok(d)
    });
    let cancels = match cancel {
        Some((_, e)) => format!("; {}", from(e)),
        None => "; resilience4j default: cancelRunningFuture true".to_string(),
    };
    let node = match timeout {
        Some((d, e)) => Node::leaf(Dur(d).to_string(), format!("{}{cancels}", from(e))),
        None => Node::leaf(
            "1s",
            format!("{}{cancels}", default_of("timeoutDuration", "1s")),
        ),
    };
    let mut notes = Node::map();
    r.finish(&mut notes)?;
    if let Node::Map(entries) = notes {
        for (_, note) in entries {
            if let Node::Note(text) = note {
                route.note(text);
            }
        }
    }
    route.set("timeout", node);
    Ok(())
}

/// The retry's wait function, level by level.
#[derive(Debug, Clone)]
enum Wait {
    /// The same wait before every retry (whole milliseconds).
    Fixed(Duration, String),
    /// `ofExponentialBackoff`: first wait, multiplier, maximum.
    Exponential {
        first: Duration,
        first_from: String,
        multiplier: f64,
        multiplier_from: String,
        max: Option<(Duration, String)>,
    },
}

/// The nearest level at or below `i` that sets `property` (Spring Boot
/// copies the backoff flags of a retry's base into it).
fn nearest<'a>(levels: &[&Props<'a>], i: usize, property: &str) -> Option<&'a Entry> {
    levels[..=i].iter().rev().find_map(|l| l.first(property))
}

/// The wait function as `configureRetryIntervalFunction` leaves it.
fn retry_wait(r: &mut Reader) -> Option<Wait> {
    let levels: Vec<&Props> = r.chain.levels.clone();
    let mut wait = Wait::Fixed(
        Duration::from_millis(500),
        default_of("waitDuration", "500ms"),
    );
    for i in 0..levels.len() {
        let Some(entry) = levels[i].first("waitduration") else {
            continue;
        };
        r.mark(entry);
        let d = match duration(&entry.value) {
            Ok(d) => Duration::from_millis(d.as_millis() as u64),
            Err(m) => {
                r.refuse(entry, m);
                return None;
            }
        };
        let flag = |r: &mut Reader, property: &str| -> Option<bool> {
            let e = nearest(&levels, i, property)?;
            r.mark(e);
            boolean(&e.value).map_err(|m| r.refuse(e, m)).ok()
        };
        let exponential = flag(r, "enableexponentialbackoff") == Some(true);
        if flag(r, "enablerandomizedwait") == Some(true) {
            let e = nearest(&levels, i, "enablerandomizedwait").expect("set");
            r.refuse(e, "a randomized retry wait (IntervalFunction.ofRandomized / ofExponentialRandomBackoff) is not modelled: firedrill's jitter only shortens the wait, resilience4j's spreads it both ways");
            return None;
        }
        wait = if exponential {
            exponential_retry(r, &levels, i, d, from(entry))?
        } else {
            Wait::Fixed(d, from(entry))
        };
    }
    Some(wait)
}

fn exponential_retry(
    r: &mut Reader,
    levels: &[&Props],
    i: usize,
    first: Duration,
    first_from: String,
) -> Option<Wait> {
    let multiplier = nearest(levels, i, "exponentialbackoffmultiplier");
    let max = nearest(levels, i, "exponentialmaxwaitduration");
    if first.is_zero() {
        let e = nearest(levels, i, "enableexponentialbackoff").expect("set");
        r.refuse(e, "an exponential backoff from a wait under 1 ms: resilience4j refuses it (\"millis is less than 1\")");
        return None;
    }
    let (m, m_from) = match multiplier {
        Some(e) => {
            r.mark(e);
            (
                number(&e.value).map_err(|msg| r.refuse(e, msg)).ok()?,
                from(e),
            )
        }
        None => (1.5, default_of("exponentialBackoffMultiplier", "1.5")),
    };
    let max = match (multiplier, max) {
        (Some(_), Some(e)) => {
            r.mark(e);
            let d = duration(&e.value).map_err(|msg| r.refuse(e, msg)).ok()?;
            Some((Duration::from_millis(d.as_millis() as u64), from(e)))
        }
        _ => None,
    };
    Some(Wait::Exponential {
        first,
        first_from,
        multiplier: m,
        multiplier_from: m_from,
        max,
    })
}

/// `maxAttempts` as Spring Boot applies it: the last level with a value
/// other than 0.
fn attempts(r: &mut Reader) -> Option<(i64, String)> {
    let levels: Vec<&Props> = r.chain.levels.clone();
    let mut found = (3, default_of("maxAttempts", "3"));
    for level in levels {
        let Some(e) = level.first("maxattempts") else {
            continue;
        };
        r.mark(e);
        match integer(&e.value) {
            Ok(0) => {}
            Ok(n) if n < 0 => {
                r.refuse(
                    e,
                    format!(
                        "maxAttempts must be greater than or equal to 1 (resilience4j refuses {n})"
                    ),
                );
                return None;
            }
            Ok(n) => found = (n, from(e)),
            Err(m) => {
                r.refuse(e, m);
                return None;
            }
        }
    }
    Some(found)
}

/// `maxAttempts` (3), the wait (500 ms fixed) and its backoff; the
/// exception lists and predicates are refused.
pub(super) fn retry(
    read: &mut Read,
    breaker: Option<&exceptions::Lists>,
    route: &mut Node,
) -> Result<(), Vec<SchemaError>> {
    let mut r = Reader::new(read.source, read.chain);
    r.user = read.user;
    for (property, shown) in [
        ("retryexceptionpredicate", "retryExceptionPredicate"),
        ("resultpredicate", "resultPredicate"),
        ("intervalbifunction", "intervalBiFunction"),
        (
            "consumeresultbeforeretryattempt",
            "consumeResultBeforeRetryAttempt",
        ),
    ] {
        if let Some(e) = r.chain.one(property) {
            r.refuse(e, format!("{shown} is not modelled: firedrill retries an attempt that the route judges a failure (its breaker's failure_statuses and count_4xx, else a 5xx), timeouts and connection errors included"));
        }
    }
    let attempts = attempts(&mut r);
    let wait = retry_wait(&mut r);
    let (Some((n, n_from)), Some(wait)) = (attempts, wait) else {
        return Err(r.problems);
    };
    let mut node = Node::map();
    node.set("attempts", Node::leaf(n.to_string(), n_from));
    let (backoff, max_backoff) = match wait {
        Wait::Fixed(d, why) => {
            let b = Node::leaf(Dur(d).to_string(), why.clone());
            (
                b,
                Node::leaf(Dur(d).to_string(), format!("a fixed wait: {why}")),
            )
        }
        Wait::Exponential {
            first,
            first_from,
            multiplier,
            multiplier_from,
            max,
        } => {
            match exponential_nodes(
                &mut r,
                n,
                first,
                first_from,
                multiplier,
                &multiplier_from,
                max,
            ) {
                Some(pair) => pair,
                None => return Err(r.problems),
            }
        }
    };
    node.set("backoff", backoff);
    node.set("max_backoff", max_backoff);
    node.set(
        "jitter",
        Node::leaf(
            "0%",
            "resilience4j's wait is not random without enableRandomizedWait",
        ),
    );
    let all = ["GET", "HEAD", "OPTIONS", "PUT", "DELETE", "POST", "PATCH"];
    node.set(
        "methods",
        Node::List(
            all.iter()
                .map(|m| {
                    Node::leaf(
                        *m,
                        "resilience4j retries every call it wraps, whatever its method",
                    )
                })
                .collect(),
        ),
    );
    node.set(
        "allow_non_idempotent",
        Node::leaf("true", "resilience4j retries POST and PATCH too"),
    );
    exceptions::retried(&mut r, breaker, &mut node);
    read.set_aside.append(&mut r.set_aside);
    r.finish(&mut node)?;
    route.set("retry", node);
    Ok(())
}

/// firedrill's doubling backoff for resilience4j's exponential one:
/// exact for a multiplier of 2 (or 1: fixed), or whatever the multiplier
/// when only one retry waits.
fn exponential_nodes(
    r: &mut Reader,
    attempts: i64,
    first: Duration,
    first_from: String,
    multiplier: f64,
    multiplier_from: &str,
    max: Option<(Duration, String)>,
) -> Option<(Node, Node)> {
    let cap = max.as_ref().map(|(d, _)| *d);
    let first_wait = cap.map_or(first, |c| first.min(c));
    let first_node = Node::leaf(Dur(first_wait).to_string(), first_from.clone());
    if attempts <= 2 || multiplier == 1.0 {
        let why = format!("one wait only ({first_from}; {multiplier_from})");
        return Some((first_node, Node::leaf(Dur(first_wait).to_string(), why)));
    }
    if multiplier != 2.0 {
        let message = format!(
            "an exponential retry backoff with multiplier {multiplier} ({multiplier_from}) over {attempts} attempts is not modelled: firedrill's backoff doubles (set exponentialBackoffMultiplier to 2, or 1 for a fixed wait)"
        );
        match r
            .chain
            .one("exponentialbackoffmultiplier")
            .or_else(|| r.chain.one("enableexponentialbackoff"))
        {
            Some(e) => r.refuse(e, message),
            None => r.problems.push(r.source.whole(message)),
        }
        return None;
    }
    let last = first.saturating_mul(1 << (attempts - 2).min(30) as u32);
    let max_node = match max {
        Some((d, why)) if d < last => Node::leaf(Dur(d.max(first_wait)).to_string(), why),
        _ => Node::leaf(
            Dur(last).to_string(),
            format!(
                "the longest wait of {attempts} attempts doubling from {}",
                Dur(first)
            ),
        ),
    };
    Some((first_node, max_node))
}
