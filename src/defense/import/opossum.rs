//! opossum options (JSON): one options object, or an object of named
//! ones. `timeout` becomes the route's timeout and `capacity` its
//! bulkhead; opossum's breaker itself is not modelled (below), so every
//! options object whose breaker is on is refused at the key that says so.
//!
//! What firedrill's `window` model does not do that opossum's circuit
//! (`lib/circuit.js`, `lib/status.js`) does: the error rate is failures
//! over *fires*, and a fire is every call, the ones rejected while open
//! and by the semaphore included; the rolling window keeps counting across
//! open and close (it is never reset); a failure opens it only strictly
//! above `errorThresholdPercentage`; buckets rotate every
//! `floor(rollingCountTimeout / rollingCountBuckets)` ms on a timer. A
//! reference model of it and a model in firedrill would be the way to
//! import it; until then it is refused rather than approximated.

use indexmap::IndexMap;

use super::Imported;
use super::resilience4j::values::number;
use super::source::{Entry, Source};
use super::tree::Node;
use crate::clock::Duration;
use crate::schema::SchemaError;
use crate::schema::units::Dur;

/// opossum's options and what the import does with each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handling {
    /// Read by the import.
    Mapped,
    /// The breaker: refused while it is on.
    Breaker,
    /// Changes nothing about calls.
    Ignored(&'static str),
    /// Not modelled.
    Refused(&'static str),
}

fn handling(option: &str) -> Option<Handling> {
    use Handling::{Breaker, Ignored, Mapped, Refused};
    Some(match option {
        "timeout" | "capacity" | "enabled" | "name" | "group" => Mapped,
        "resetTimeout"
        | "errorThresholdPercentage"
        | "rollingCountTimeout"
        | "rollingCountBuckets"
        | "volumeThreshold"
        | "allowWarmUp" => Breaker,
        "rollingPercentilesEnabled" | "enableSnapshots" => {
            Ignored("latency percentiles and snapshot events only")
        }
        "maxFailures" => Ignored("deprecated: opossum only logs a warning for it"),
        "autoRenewAbortController" => Ignored("renews the AbortController the action sees"),
        "cache" | "cacheTTL" | "cacheSize" | "cacheGetKey" | "cacheTransport" => Refused(
            "opossum's cache answers a call from an earlier result without calling: not modelled (a stale fallback answers only when the call fails)",
        ),
        "coalesce" | "coalesceTTL" | "coalesceSize" | "coalesceResetOn" => {
            Refused("coalescing answers concurrent equal calls with one call: not modelled")
        }
        "errorFilter" => Refused(
            "errorFilter is JavaScript code: not modelled; set ignore_statuses on the route",
        ),
        "status" | "state" => {
            Refused("a breaker started from saved state is not modelled: firedrill's starts closed")
        }
        "abortController" | "rotateBucketController" => {
            Refused("an object of the application: not modelled")
        }
        _ => return None,
    })
}

/// Reads the options of `source` into one route per breaker.
pub(super) fn import(source: &Source) -> Result<Imported, Vec<SchemaError>> {
    let mut problems = Vec::new();
    let mut breakers: IndexMap<String, Vec<&Entry>> = IndexMap::new();
    let named = source
        .entries
        .first()
        .and_then(|e| e.path.first())
        .is_some_and(|k| handling(k).is_none());
    for entry in source.entries.iter().filter(|e| !e.path.is_empty()) {
        let (name, option) = match (named, entry.path.as_slice()) {
            (false, [option]) => ("default".to_string(), option),
            (true, [name, option]) => (name.clone(), option),
            _ => {
                problems.push(source.error(entry, "expected opossum options ({\"timeout\": 3000, ...}) or named ones ({\"inventory\": {\"timeout\": 3000}})"));
                continue;
            }
        };
        if handling(option).is_none() {
            problems.push(source.error(entry, format!("`{option}` is not an opossum option (opossum ignores it, so it has no effect there either): correct or remove it")));
            continue;
        }
        breakers.entry(name).or_default().push(entry);
    }
    let mut routes = Vec::new();
    for (name, entries) in &breakers {
        match breaker(source, entries) {
            Ok(node) => routes.push((name.clone(), node)),
            Err(mut p) => problems.append(&mut p),
        }
    }
    let imported = Imported {
        routes,
        pools: Vec::new(),
        notes: Vec::new(),
    };
    super::finish(imported, problems, || {
        source.whole("no opossum options: expected a JSON object such as {\"timeout\": 3000, \"enabled\": false}")
    })
}

fn get<'a>(entries: &[&'a Entry], option: &str) -> Option<&'a Entry> {
    entries
        .iter()
        .copied()
        .find(|e| e.path.last().is_some_and(|k| k == option))
}

const BREAKER_REFUSED: &str = "opossum's circuit breaker is not modelled: its error rate is failures over fires, rejected calls included, over a rolling window that is never reset and rotates every rollingCountTimeout / rollingCountBuckets ms, and it opens strictly above errorThresholdPercentage (firedrill's window model counts only the calls it lets through and starts afresh on every transition); set \"enabled\": false to import only timeout and capacity";

fn breaker(source: &Source, entries: &[&Entry]) -> Result<Node, Vec<SchemaError>> {
    let mut problems = Vec::new();
    let mut route = Node::map();
    let enabled = get(entries, "enabled");
    let off = enabled.is_some_and(|e| e.value == "false");
    for e in entries {
        let option = e.path.last().map_or("", String::as_str);
        match handling(option) {
            Some(Handling::Breaker) if !off => problems.push(source.error(e, BREAKER_REFUSED)),
            Some(Handling::Breaker) => route.note(format!(
                "ignored: {} (line {}): the breaker is off (enabled: false)",
                e.key(),
                e.line
            )),
            Some(Handling::Ignored(why)) => {
                route.note(format!("ignored: {} (line {}): {why}", e.key(), e.line))
            }
            Some(Handling::Refused(why)) => problems.push(source.error(e, why)),
            Some(Handling::Mapped) | None => {}
        }
    }
    if !off && problems.is_empty() {
        let at = entries.first().copied();
        let message =
            format!("{BREAKER_REFUSED} (opossum's breaker is on unless enabled is false)");
        problems.push(match at {
            Some(e) => source.error(e, message),
            None => source.whole(message),
        });
    }
    if let Some(e) = enabled {
        route.note(format!("no breaker: {} (line {})", e.key(), e.line));
    }
    match get(entries, "timeout") {
        Some(e) if e.value == "false" => {
            route.note(format!("no timeout: {} (line {})", e.key(), e.line))
        }
        Some(e) => match number(&e.value) {
            Ok(ms) if ms >= 1.0 && ms.fract() == 0.0 => route.set(
                "timeout",
                Node::leaf(
                    Dur(Duration::from_millis(ms as u64)).to_string(),
                    format!("{} (line {}), milliseconds", e.key(), e.line),
                ),
            ),
            Ok(_) => problems.push(source.error(
                e,
                "expected a whole number of milliseconds of at least 1, or false",
            )),
            Err(m) => problems.push(source.error(e, m)),
        },
        None => route.set(
            "timeout",
            Node::leaf("10s", "opossum default: timeout 10000 ms"),
        ),
    }
    if let Some(e) = get(entries, "capacity") {
        match e.value.parse::<u32>() {
            Ok(n) if n >= 1 => {
                let mut bulkhead = Node::map();
                bulkhead.set(
                    "max_concurrent",
                    Node::leaf(n.to_string(), format!("{} (line {})", e.key(), e.line)),
                );
                bulkhead.set(
                    "max_wait",
                    Node::leaf("0s", "opossum's semaphore rejects at once"),
                );
                route.set("bulkhead", bulkhead);
            }
            _ => problems.push(source.error(
                e,
                "expected a whole number of at least 1 (opossum's default is unlimited)",
            )),
        }
    }
    if problems.is_empty() {
        Ok(route)
    } else {
        Err(problems)
    }
}
