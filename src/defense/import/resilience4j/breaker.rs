//! `resilience4j.circuitbreaker` → a `window` breaker, value by value as
//! `CommonCircuitBreakerConfigurationProperties.buildConfig` and
//! `CircuitBreakerConfig.Builder` read them.

use super::values::{boolean, canonical, duration, integer, number};
use super::{Props, Read, Reader, default_of, exceptions, from};
use crate::clock::Duration;
use crate::defense::import::tree::Node;
use crate::schema::SchemaError;
use crate::schema::units::Dur;

/// The properties of a circuit breaker instance, canonical (the ones
/// that change nothing in how calls are judged are listed in
/// `others::IGNORED`).
pub(super) const PROPERTIES: &[&str] = &[
    "waitdurationinopenstate",
    "slowcalldurationthreshold",
    "maxwaitdurationinhalfopenstate",
    "transitiontostateafterwaitduration",
    "failureratethreshold",
    "slowcallratethreshold",
    "slidingwindowtype",
    "slidingwindowsize",
    "minimumnumberofcalls",
    "permittednumberofcallsinhalfopenstate",
    "automatictransitionfromopentohalfopenenabled",
    "initialstate",
    "writablestacktraceenabled",
    "allowhealthindicatortofail",
    "eventconsumerbuffersize",
    "registerhealthindicator",
    "recordfailurepredicate",
    "recordexceptions",
    "recordresultpredicate",
    "ignoreexceptionpredicate",
    "ignoreexceptions",
    "baseconfig",
    "enableexponentialbackoff",
    "exponentialbackoffmultiplier",
    "exponentialmaxwaitdurationinopenstate",
    "enablerandomizedwait",
    "randomizedwaitfactor",
    "ignoreclassbindingexceptions",
];

/// Library defaults (`CircuitBreakerConfig`).
const SLIDING_WINDOW_SIZE: i64 = 100;
const MINIMUM_NUMBER_OF_CALLS: i64 = 100;
const PERMITTED_IN_HALF_OPEN: i64 = 10;
const FAILURE_RATE_THRESHOLD: f64 = 50.0;
const SLOW_CALL_RATE_THRESHOLD: f64 = 100.0;
const SLOW_CALL_DURATION: Duration = Duration::from_secs(60);
const WAIT_IN_OPEN: Duration = Duration::from_secs(60);
/// `IntervalFunction.DEFAULT_MULTIPLIER`.
const BACKOFF_MULTIPLIER: f64 = 1.5;
/// Stands for resilience4j's unbounded backoff: no drill is longer.
const UNBOUNDED: Duration = Duration::from_secs(24 * 3600);

/// Adds the instance's `breaker:` to `route`; returns its exception
/// lists, for the route's retry.
pub(super) fn map<'a>(
    read: &mut Read<'_, 'a, '_>,
    route: &mut Node,
) -> Result<exceptions::Lists<'a>, Vec<SchemaError>> {
    let mut r = Reader::new(read.source, read.chain);
    r.user = read.user;
    let mut b = Node::map();
    b.set(
        "model",
        Node::leaf("window", "a resilience4j CircuitBreaker"),
    );
    window(&mut r, &mut b);
    thresholds(&mut r, &mut b);
    open_wait(&mut r, &mut b);
    half_open(&mut r, &mut b);
    refused_states(&mut r);
    let lists = exceptions::classify(&mut r, &mut b);
    b.set(
        "stragglers",
        Node::leaf(
            "count",
            "resilience4j records a call in the state current when it ends",
        ),
    );
    read.set_aside.append(&mut r.set_aside);
    r.finish(&mut b)?;
    route.set("breaker", b);
    Ok(lists)
}

/// A whole number of at least 1, as the builder demands.
fn positive(r: &mut Reader, property: &str, shown: &str, default: i64) -> Node {
    let found = r.value(property, |t| {
        let n = integer(t)?;
        if n < 1 {
            Err(format!(
                "{shown} must be greater than 0 (resilience4j refuses {n})"
            ))
        } else {
            Ok(n)
        }
    });
    match found {
        Some((n, e)) => Node::leaf(n.to_string(), from(e)),
        None => Node::leaf(default.to_string(), default_of(shown, &default.to_string())),
    }
}

fn window(r: &mut Reader, b: &mut Node) {
    let kind = r.value("slidingwindowtype", |t| match canonical(t).as_str() {
        "countbased" => Ok("count"),
        "timebased" => Ok("time"),
        _ => Err(format!(
            "invalid slidingWindowType `{t}`: expected COUNT_BASED or TIME_BASED"
        )),
    });
    b.set(
        "sliding_window_type",
        match kind {
            Some((k, e)) => Node::leaf(k, from(e)),
            None => Node::leaf("count", default_of("slidingWindowType", "COUNT_BASED")),
        },
    );
    let size = positive(
        r,
        "slidingwindowsize",
        "slidingWindowSize",
        SLIDING_WINDOW_SIZE,
    );
    b.set("sliding_window_size", size);
    let minimum = positive(
        r,
        "minimumnumberofcalls",
        "minimumNumberOfCalls",
        MINIMUM_NUMBER_OF_CALLS,
    );
    b.set("minimum_calls", minimum);
}

fn thresholds(r: &mut Reader, b: &mut Node) {
    let rates = [
        (
            "failureratethreshold",
            "failureRateThreshold",
            "failure_rate_threshold",
            FAILURE_RATE_THRESHOLD,
        ),
        (
            "slowcallratethreshold",
            "slowCallRateThreshold",
            "slow_call_rate_threshold",
            SLOW_CALL_RATE_THRESHOLD,
        ),
    ];
    for (property, shown, key, default) in rates {
        let found = r.value(property, |t| {
            let f = number(t)?;
            // InstanceProperties.set{Failure,SlowCall}RateThreshold
            // (CommonCircuitBreakerConfigurationProperties): `< 1 || > 100`.
            if !(1.0..=100.0).contains(&f) {
                Err(format!(
                    "{shown} must be between 1 and 100 (resilience4j refuses {t} at start-up: \"{shown} must be between 1 and 100.\")"
                ))
            } else {
                Ok(f)
            }
        });
        b.set(
            key,
            match found {
                Some((f, e)) => Node::leaf(format!("{f}%"), from(e)),
                None => Node::leaf(
                    format!("{default}%"),
                    default_of(shown, &default.to_string()),
                ),
            },
        );
    }
    let slow = r.value("slowcalldurationthreshold", |t| {
        let d = duration(t)?;
        if d < Duration::from_nanos(1) {
            return Err(
                "slowCallDurationThreshold must be at least 1[ns] (resilience4j refuses 0)"
                    .to_string(),
            );
        }
        whole_micros(d)
    });
    b.set(
        "slow_call_duration",
        match slow {
            Some((d, e)) => Node::leaf(Dur(d).to_string(), from(e)),
            None => Node::leaf(
                Dur(SLOW_CALL_DURATION).to_string(),
                default_of("slowCallDurationThreshold", "60s"),
            ),
        },
    );
}

/// A duration firedrill can write: whole microseconds.
fn whole_micros(d: Duration) -> Result<Duration, String> {
    if d.subsec_nanos().is_multiple_of(1000) {
        Ok(d)
    } else {
        Err(format!(
            "{}ns is finer than firedrill's microsecond: not modelled; round it to whole microseconds",
            d.as_nanos()
        ))
    }
}

/// How the wait in open is computed at one level: the level's own
/// `waitDurationInOpenState` (when at least 1 ms; Spring Boot skips a
/// shorter one) with that level's own backoff flags; a level without a
/// wait keeps the wait function of the level below
/// (`configureCircuitBreakerOpenStateIntervalFunction`).
fn open_wait(r: &mut Reader, b: &mut Node) {
    let mut wait = Node::leaf(
        Dur(WAIT_IN_OPEN).to_string(),
        default_of("waitDurationInOpenState", "60s"),
    );
    let mut backoff: Option<Node> = None;
    let levels: Vec<&Props> = r.chain.levels.clone();
    for level in levels {
        let exponential = flag(r, level, "enableexponentialbackoff");
        let randomized = flag(r, level, "enablerandomizedwait");
        if let (Some(true), Some(true)) = (exponential, randomized) {
            let e = level.first("enablerandomizedwait").expect("set");
            r.refuse(e, "resilience4j refuses exponential backoff and randomized wait together (IllegalStateException)");
            continue;
        }
        let Some(entry) = level.first("waitdurationinopenstate") else {
            continue;
        };
        r.mark(entry);
        let Ok(d) = duration(&entry.value).map_err(|m| r.refuse(entry, m)) else {
            continue;
        };
        let millis = Duration::from_millis(d.as_millis() as u64);
        if millis.is_zero() {
            // InstanceProperties.setWaitDurationInOpenState refuses
            // `toMillis() < 1`: the application does not start.
            r.refuse(entry, format!("waitDurationInOpenState {} is under 1 ms: resilience4j refuses it at start-up (\"waitDurationInOpenStateMillis must be greater than or equal to 1 millis.\")", entry.value));
            continue;
        }
        if randomized == Some(true) {
            let e = level.first("enablerandomizedwait").expect("set");
            r.refuse(e, "a randomized wait in open (IntervalFunction.ofRandomized) is not modelled: firedrill's wait in open is fixed or grows exponentially");
            continue;
        }
        let truncated = if millis == d {
            String::new()
        } else {
            ", whole milliseconds as resilience4j keeps it".to_string()
        };
        wait = Node::leaf(
            Dur(millis).to_string(),
            format!("{}{truncated}", from(entry)),
        );
        backoff = None;
        if exponential == Some(true) {
            let (w, bo) = exponential_wait(r, level, millis, entry);
            wait = w.unwrap_or(wait);
            backoff = bo;
        }
    }
    b.set("wait_in_open", wait);
    match backoff {
        Some(node) => b.set("wait_in_open_backoff", node),
        None => b.note("wait_in_open_backoff: none (the wait in open does not grow)"),
    }
}

fn flag(r: &mut Reader, level: &Props, property: &str) -> Option<bool> {
    let e = level.first(property)?;
    r.mark(e);
    boolean(&e.value).map_err(|m| r.refuse(e, m)).ok()
}

/// `IntervalFunction.ofExponentialBackoff(wait, multiplier[, max])` as
/// `configureEnableExponentialBackoff` picks it: the maximum only with a
/// multiplier, 1.5 without one. Returns a replaced wait when the maximum
/// is below the wait (every wait is then the maximum).
fn exponential_wait(
    r: &mut Reader,
    level: &Props,
    wait: Duration,
    wait_entry: &super::Entry,
) -> (Option<Node>, Option<Node>) {
    let multiplier = level.first("exponentialbackoffmultiplier");
    let max = level.first("exponentialmaxwaitdurationinopenstate");
    for e in multiplier.iter().chain(max.iter()) {
        r.mark(e);
    }
    let (m, m_from) = match multiplier {
        Some(e) => match number(&e.value) {
            Ok(m) if m >= 1.0 => (m, from(e)),
            Ok(m) => {
                r.refuse(e, format!("a multiplier below 1 ({m}) shrinks the wait at each open: not modelled (firedrill's backoff multiplier is at least 1)"));
                return (None, None);
            }
            Err(msg) => {
                r.refuse(e, msg);
                return (None, None);
            }
        },
        None => (
            BACKOFF_MULTIPLIER,
            default_of("exponentialBackoffMultiplier", "1.5"),
        ),
    };
    let mut node = Node::map();
    node.set("multiplier", Node::leaf(m.to_string(), m_from));
    let bound = match (multiplier, max) {
        (Some(_), Some(e)) => match duration(&e.value) {
            Ok(d) if d.as_millis() >= 1 => Some((Duration::from_millis(d.as_millis() as u64), e)),
            Ok(_) => {
                r.refuse(e, "exponentialMaxWaitDurationInOpenState must be at least 1 ms (resilience4j: \"millis is less than 1\")");
                return (None, None);
            }
            Err(msg) => {
                r.refuse(e, msg);
                return (None, None);
            }
        },
        _ => None,
    };
    match bound {
        Some((max, e)) if max <= wait => {
            let replaced = Node::leaf(
                Dur(max).to_string(),
                format!(
                    "{}: below {} ({}), so every wait is the maximum",
                    from(e),
                    wait_entry.key(),
                    Dur(wait)
                ),
            );
            (Some(replaced), None)
        }
        Some((max, e)) => {
            node.set("max", Node::leaf(Dur(max).to_string(), from(e)));
            (None, Some(node))
        }
        None => {
            let why = match max {
                Some(e) => format!("{} is ignored by resilience4j without exponentialBackoffMultiplier: unbounded, and no drill runs longer than 24h", e.key()),
                None => "resilience4j's backoff without exponentialMaxWaitDurationInOpenState is unbounded; no drill runs longer than 24h".to_string(),
            };
            node.set("max", Node::leaf(Dur(UNBOUNDED).to_string(), why));
            (None, Some(node))
        }
    }
}

fn half_open(r: &mut Reader, b: &mut Node) {
    let automatic = r.value("automatictransitionfromopentohalfopenenabled", boolean);
    b.set(
        "automatic_half_open",
        match automatic {
            Some((a, e)) => Node::leaf(a.to_string(), from(e)),
            None => Node::leaf(
                "false",
                default_of("automaticTransitionFromOpenToHalfOpenEnabled", "false"),
            ),
        },
    );
    let permitted = positive(
        r,
        "permittednumberofcallsinhalfopenstate",
        "permittedNumberOfCallsInHalfOpenState",
        PERMITTED_IN_HALF_OPEN,
    );
    b.set("permitted_calls_in_half_open", permitted);
    let max_wait = r.value("maxwaitdurationinhalfopenstate", duration);
    match max_wait {
        Some((d, e)) if d.as_millis() >= 1 => {
            let ms = Duration::from_millis(d.as_millis() as u64);
            b.set("max_wait_in_half_open", Node::leaf(Dur(ms).to_string(), from(e)));
        }
        Some((_, e)) => b.note(format!(
            "max_wait_in_half_open: none ({} under 1 ms: resilience4j waits for every trial call)",
            e.key()
        )),
        None => b.note("max_wait_in_half_open: none (resilience4j default maxWaitDurationInHalfOpenState 0: wait for every trial call)"),
    }
}

/// States resilience4j can start in or move to that firedrill's breaker
/// does not model as configuration.
fn refused_states(r: &mut Reader) {
    if let Some((state, e)) = r.value("transitiontostateafterwaitduration", |t| Ok(canonical(t)))
        && state != "open"
    {
        r.refuse(e, format!("transitionToStateAfterWaitDuration `{}` is not modelled: after maxWaitDurationInHalfOpenState firedrill's breaker goes back to open (resilience4j's default OPEN)", e.value));
    }
    if let Some((state, e)) = r.value("initialstate", |t| Ok(canonical(t)))
        && state != "closed"
    {
        r.refuse(e, format!("initialState `{}` is not modelled: firedrill's breaker starts closed (force a state during a run through the control endpoint instead)", e.value));
    }
    for (property, what) in [
        ("recordfailurepredicate", "recordFailurePredicate"),
        ("recordresultpredicate", "recordResultPredicate"),
        ("ignoreexceptionpredicate", "ignoreExceptionPredicate"),
    ] {
        if let Some(e) = r.chain.one(property) {
            r.refuse(e, format!("{what} is Java code ({}): not modelled; express it as recordExceptions/ignoreExceptions, or set failure_statuses/ignore_statuses on the route", e.value));
        }
    }
}
