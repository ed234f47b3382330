//! opossum options (JSON): one options object, or an object of named
//! ones, each a route. `timeout` becomes the route's timeout; the circuit
//! (on unless `"enabled": false`) becomes a breaker of firedrill's
//! `opossum` model, which counts as opossum's `lib/circuit.js` and
//! `lib/status.js` do (see `defense/breaker/opossum.rs`), each option
//! mapped onto its key in opossum's own unit, milliseconds, and opossum's
//! default written where an option is left out. `capacity` becomes a
//! bulkhead only with the circuit off: opossum's semaphore sits behind
//! its open check and a call it turns away counts as a failure of the
//! circuit, where firedrill's bulkhead stands in front of the breaker.

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
    /// An option of the circuit: mapped while it is on, ignored when off.
    Circuit,
    /// Changes nothing about calls.
    Ignored(&'static str),
    /// Not modelled.
    Refused(&'static str),
}

fn handling(option: &str) -> Option<Handling> {
    use Handling::{Circuit, Ignored, Mapped, Refused};
    Some(match option {
        "timeout" | "capacity" | "enabled" | "name" | "group" => Mapped,
        "resetTimeout"
        | "errorThresholdPercentage"
        | "rollingCountTimeout"
        | "rollingCountBuckets"
        | "volumeThreshold"
        | "allowWarmUp" => Circuit,
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
        let mut reader = Reader {
            source,
            entries,
            problems: Vec::new(),
        };
        let node = reader.route();
        if reader.problems.is_empty() {
            routes.push((name.clone(), node));
        }
        problems.append(&mut reader.problems);
    }
    let imported = Imported {
        routes,
        pools: Vec::new(),
        notes: NOTES.iter().map(|s| s.to_string()).collect(),
        not_drilled: Vec::new(),
    };
    super::finish(imported, problems, || {
        source.whole("no opossum options: expected a JSON object such as {\"timeout\": 3000, \"enabled\": false}")
    })
}

const NOTES: [&str; 2] = [
    "opossum counts a failure where the action rejects: taken as a 5xx, a timeout or a connection",
    "error; a 4xx as a success (set count_4xx: true if your action rejects on it). See docs/import.md.",
];

const CAPACITY_REFUSED: &str = "capacity with the circuit on is not modelled: opossum's semaphore turns a call away behind the open check and counts it as a failure of the circuit, while firedrill's bulkhead stands in front of the breaker and its rejections never reach it; remove capacity, or set \"enabled\": false to import it as a bulkhead";

/// One options object being read; problems collect as it goes.
struct Reader<'a> {
    source: &'a Source,
    entries: &'a [&'a Entry],
    problems: Vec<SchemaError>,
}

impl<'a> Reader<'a> {
    fn get(&self, option: &str) -> Option<&'a Entry> {
        self.entries
            .iter()
            .copied()
            .find(|e| e.path.last().is_some_and(|k| k == option))
    }

    fn refuse(&mut self, e: &Entry, message: impl Into<String>) {
        self.problems.push(self.source.error(e, message));
    }

    /// A whole number from `least` (`unit` names it in the message).
    fn whole(&mut self, e: &Entry, least: u64, unit: &str) -> Option<u64> {
        match number(&e.value) {
            Ok(n) if n >= least as f64 && n.fract() == 0.0 && n <= f64::from(u32::MAX) => {
                Some(n as u64)
            }
            Ok(_) => {
                self.refuse(
                    e,
                    format!("expected a whole number{unit} of at least {least}"),
                );
                None
            }
            Err(m) => {
                self.refuse(e, m);
                None
            }
        }
    }

    /// `option` as a whole number from `least`, with where it came from;
    /// opossum's `default` when left out.
    fn option(
        &mut self,
        option: &str,
        least: u64,
        unit: &str,
        default: u64,
    ) -> Option<(u64, String)> {
        match self.get(option) {
            Some(e) => {
                let from = format!("{} (line {})", e.key(), e.line);
                self.whole(e, least, unit).map(|n| (n, from))
            }
            None => Some((default, format!("opossum default: {option} {default}"))),
        }
    }

    fn route(&mut self) -> Node {
        let mut route = Node::map();
        let enabled = self.get("enabled");
        let off = enabled.is_some_and(|e| e.value == "false");
        for e in self.entries {
            let option = e.path.last().map_or("", String::as_str);
            match handling(option) {
                Some(Handling::Circuit) if off => route.note(format!(
                    "ignored: {} (line {}): the breaker is off (enabled: false)",
                    e.key(),
                    e.line
                )),
                Some(Handling::Ignored(why)) => {
                    route.note(format!("ignored: {} (line {}): {why}", e.key(), e.line))
                }
                Some(Handling::Refused(why)) => self.refuse(e, why),
                Some(Handling::Mapped | Handling::Circuit) | None => {}
            }
        }
        match enabled {
            Some(e) if off => route.note(format!("no breaker: {} (line {})", e.key(), e.line)),
            _ => {
                let breaker = self.circuit(enabled);
                route.set("breaker", breaker);
            }
        }
        self.timeout(&mut route);
        if let Some(e) = self.get("capacity") {
            if off {
                self.capacity(e, &mut route);
            } else {
                self.refuse(e, CAPACITY_REFUSED);
            }
        }
        route
    }

    fn timeout(&mut self, route: &mut Node) {
        match self.get("timeout") {
            Some(e) if e.value == "false" => {
                route.note(format!("no timeout: {} (line {})", e.key(), e.line))
            }
            Some(e) => {
                if let Some(ms) = self.whole(e, 1, " of milliseconds") {
                    let from = format!(
                        "{} (line {}), milliseconds; a timed-out call is a failure of the circuit",
                        e.key(),
                        e.line
                    );
                    route.set("timeout", Node::leaf(ms_text(ms), from));
                }
            }
            None => route.set(
                "timeout",
                Node::leaf("10s", "opossum default: timeout 10000 ms"),
            ),
        }
    }

    fn capacity(&mut self, e: &Entry, route: &mut Node) {
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
            _ => self.refuse(
                e,
                "expected a whole number of at least 1 (opossum's default is unlimited)",
            ),
        }
    }

    /// The circuit as a breaker of the `opossum` model.
    fn circuit(&mut self, enabled: Option<&Entry>) -> Node {
        let mut b = Node::map();
        let on = match enabled {
            Some(e) => format!("{} (line {})", e.key(), e.line),
            None => "opossum's circuit is on unless enabled is false".to_string(),
        };
        b.set("model", Node::leaf("opossum", on));
        self.threshold(&mut b);
        let ms = " of milliseconds";
        if let Some((n, from)) = self.option("resetTimeout", 1, ms, 30_000) {
            let from = format!("{from}, milliseconds; then one probe");
            b.set("wait_in_open", Node::leaf(ms_text(n), from));
        }
        self.window(&mut b);
        if let Some((n, from)) = self.option("volumeThreshold", 0, "", 0) {
            let from = format!("{from}: fires in the window before a failure can open");
            b.set("volume_threshold", Node::leaf(n.to_string(), from));
        }
        self.warm_up(&mut b);
        b.set(
            "stragglers",
            Node::leaf(
                "count",
                "opossum counts every result in its window, whichever state it ends in",
            ),
        );
        b.set(
            "failure_statuses",
            Node::List(vec![Node::leaf("5xx", "a failure: the action rejects")]),
        );
        b.set(
            "count_4xx",
            Node::leaf(
                "false",
                "a 4xx counts as a success (the action resolves, or errorFilter accepts it)",
            ),
        );
        b.note("count_cancelled: false, firedrill's default: a probe whose caller gave up frees the probe; opossum has no cancellation (docs/fidelity.md)");
        b
    }

    fn threshold(&mut self, b: &mut Node) {
        let rule = "a failure opens when failures / fires * 100 is strictly above it";
        let Some(e) = self.get("errorThresholdPercentage") else {
            let from = format!("opossum default: errorThresholdPercentage 50; {rule}");
            b.set("failure_rate_threshold", Node::leaf("50%", from));
            return;
        };
        match number(&e.value) {
            Ok(n) if (0.0..=100.0).contains(&n) => {
                let from = format!("{} (line {}): {rule}", e.key(), e.line);
                b.set(
                    "failure_rate_threshold",
                    Node::leaf(format!("{}%", e.value.trim()), from),
                );
            }
            Ok(_) => self.refuse(
                e,
                "expected a percentage from 0 to 100 (firedrill's percentages stop at 100%)",
            ),
            Err(m) => self.refuse(e, m),
        }
    }

    /// `rollingCountTimeout` and `rollingCountBuckets`: the window and its
    /// buckets, each `Math.floor(timeout / buckets)` ms wide.
    fn window(&mut self, b: &mut Node) {
        let ms = " of milliseconds";
        let window = self.option("rollingCountTimeout", 1, ms, 10_000);
        let buckets = self.option("rollingCountBuckets", 1, "", 10);
        let (Some((w, wfrom)), Some((n, nfrom))) = (window, buckets) else {
            return;
        };
        if w < n {
            let message = format!(
                "rollingCountTimeout {w} ms over rollingCountBuckets {n} makes buckets of 0 ms (opossum's Math.floor), which its timer rotates every millisecond: not modelled; give at least 1 ms per bucket"
            );
            // One of the two is in the file: opossum's defaults give 1000 ms.
            if let Some(e) = self
                .get("rollingCountTimeout")
                .or(self.get("rollingCountBuckets"))
            {
                self.refuse(e, message);
            }
            return;
        }
        let from = format!("{wfrom}, milliseconds; also the warm-up");
        b.set("rolling_window", Node::leaf(ms_text(w), from));
        let from = format!("{nfrom}: buckets of floor({w} / {n}) = {} ms", w / n);
        b.set("buckets", Node::leaf(n.to_string(), from));
    }

    fn warm_up(&mut self, b: &mut Node) {
        match self.get("allowWarmUp") {
            None => b.set(
                "warm_up",
                Node::leaf("false", "opossum default: allowWarmUp false"),
            ),
            Some(e) if e.value == "true" || e.value == "false" => {
                let does = if e.value == "true" {
                    "warm-up: no failure opens it during the first rolling window"
                } else {
                    "no warm-up: a failure may open it from the first call"
                };
                let from = format!("{} (line {}): {does}", e.key(), e.line);
                b.set("warm_up", Node::leaf(e.value.clone(), from));
            }
            Some(e) => self.refuse(e, "expected true or false (opossum warms up only for true)"),
        }
    }
}

/// Whole milliseconds as a firedrill duration.
fn ms_text(ms: u64) -> String {
    Dur(Duration::from_millis(ms)).to_string()
}
