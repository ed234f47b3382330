//! Sentinel rules JSON (the array a file, Nacos or Apollo data source
//! holds): degrade rules become a `ratio` breaker, flow rules a bulkhead
//! (thread count) — each rule's resource a route. A rule is read as
//! `DegradeRuleManager.isValidRule` and `FlowRuleUtil.isValidRule` read
//! it: one Sentinel would drop is refused, not imported as nothing.
//! Field names match as fastjson matches them (case, `-` and `_` aside).

use indexmap::IndexMap;

use super::Imported;
use super::resilience4j::values::{canonical, integer, number};
use super::source::{Entry, Source};
use super::tree::Node;
use crate::clock::Duration;
use crate::schema::SchemaError;
use crate::schema::units::Dur;

mod flow;

use flow::flow_rule;

/// The fields of one rule, by canonical name.
struct Rule<'a> {
    /// The rule's index in the file.
    index: usize,
    /// Where the rule starts, for problems about the rule as a whole.
    first: &'a Entry,
    fields: IndexMap<String, &'a Entry>,
}

impl<'a> Rule<'a> {
    fn get(&self, field: &str) -> Option<&'a Entry> {
        self.fields.get(field).copied()
    }
}

const DEGRADE_FIELDS: &[&str] = &[
    "id",
    "resource",
    "limitapp",
    "regex",
    "grade",
    "count",
    "timewindow",
    "minrequestamount",
    "slowratiothreshold",
    "statintervalms",
];

const FLOW_FIELDS: &[&str] = &[
    "id",
    "resource",
    "limitapp",
    "regex",
    "grade",
    "count",
    "strategy",
    "refresource",
    "controlbehavior",
    "warmupperiodsec",
    "maxqueueingtimems",
    "clustermode",
    "clusterconfig",
];

/// Reads every rule of `source` into routes named after their resources.
pub(super) fn import(source: &Source) -> Result<Imported, Vec<SchemaError>> {
    let mut problems = Vec::new();
    let rules = group(source, &mut problems);
    let mut routes: Vec<(String, Node)> = Vec::new();
    // The QPS rules read: the route of each, and where the rule starts.
    let mut qps_rules: Vec<(usize, &Entry)> = Vec::new();
    for rule in &rules {
        let degrade = rule.get("timewindow").is_some();
        let fields = if degrade { DEGRADE_FIELDS } else { FLOW_FIELDS };
        let kind = if degrade { "degrade" } else { "flow" };
        for (name, entry) in &rule.fields {
            if !fields.contains(&name.as_str()) {
                problems.push(source.error(entry, format!(
                    "`{}` is not a field of a Sentinel {kind} rule (fastjson skips it, so it has no effect there either): correct or remove it",
                    entry.path.last().map_or("", String::as_str)
                )));
            }
        }
        let Some(resource) = resource(source, rule, &mut problems) else {
            continue;
        };
        let index = match routes.iter().position(|(n, _)| *n == resource) {
            Some(i) => i,
            None => {
                routes.push((resource.clone(), Node::map()));
                routes.len() - 1
            }
        };
        let route = &mut routes[index].1;
        let mut r = Reader {
            source,
            rule,
            problems: Vec::new(),
        };
        // Every rule's node names the resource it is the route of.
        let named = |mut node: Node| {
            if let Some(e) = rule.get("resource") {
                node.note(format!("{}: the route's name", from(e)));
            }
            node
        };
        if degrade {
            if has_key(route, "breaker") {
                r.refuse(rule.first, format!("a second degrade rule for resource `{resource}`: firedrill runs one breaker per route (Sentinel runs one circuit breaker per rule); keep one rule per resource"));
            } else if let Some(node) = degrade_rule(&mut r) {
                route.set("breaker", named(node));
            }
        } else if let Some((key, node)) = flow_rule(&mut r).map(|(k, n)| (k, named(n))) {
            if has_key(route, key) {
                let what = if key == "bulkhead" {
                    "thread-count flow rule for resource `{resource}`: firedrill has one bulkhead per route"
                } else {
                    "QPS flow rule for resource `{resource}`: firedrill has one rate limit per route"
                };
                let what = what.replace("{resource}", &resource);
                r.refuse(
                    rule.first,
                    format!("a second {what}; keep one rule per resource"),
                );
            } else {
                if key == "rate_limit" {
                    qps_rules.push((index, rule.first));
                }
                route.set(key, node);
            }
        }
        problems.append(&mut r.problems);
    }
    for &(index, first) in &qps_rules {
        let (resource, route) = &routes[index];
        if has_key(route, "breaker") || has_key(route, "bulkhead") {
            problems.push(source.error(first, format!("a QPS flow rule for resource `{resource}` beside its degrade or thread-count rule: Sentinel counts a pass only for a request every rule let through (StatisticSlot, after the whole slot chain), firedrill's rate limit counts the requests it lets on to the bulkhead and the breaker: not modelled; import the QPS rule alone, or drill the other rules without it")));
        }
    }
    let imported = Imported {
        routes,
        pools: Vec::new(),
        notes: NOTES.iter().map(|s| s.to_string()).collect(),
        not_drilled: Vec::new(),
    };
    super::finish(imported, problems, || {
        source.whole("no Sentinel rule: expected a JSON array of degrade or flow rules such as [{\"resource\": \"inventory\", \"grade\": 1, \"count\": 0.5, \"timeWindow\": 10}]")
    })
}

const NOTES: [&str; 2] = [
    "Sentinel counts an error where the client traces an exception: taken as a 5xx, a timeout or a",
    "connection error; a 4xx is a good request, as in firedrill's ratio model. See docs/import.md.",
];

fn has_key(route: &Node, key: &str) -> bool {
    matches!(route, Node::Map(entries) if entries.iter().any(|(k, _)| k == key))
}

/// The rules of the array, each with its fields.
fn group<'a>(source: &'a Source, problems: &mut Vec<SchemaError>) -> Vec<Rule<'a>> {
    let mut rules: Vec<Rule<'a>> = Vec::new();
    for entry in &source.entries {
        if entry.path.is_empty() && entry.value.is_empty() {
            continue; // `[]`: no rule.
        }
        let index = entry
            .path
            .first()
            .and_then(|s| s.strip_prefix('['))
            .and_then(|s| s.strip_suffix(']'))
            .and_then(|s| s.parse::<usize>().ok());
        let (Some(index), Some(field)) = (index, entry.path.get(1)) else {
            problems.push(source.error(entry, "expected a JSON array of Sentinel rules (objects such as {\"resource\": \"inventory\", \"count\": 0.5, ...})"));
            continue;
        };
        let field = canonical(field);
        if field == "clusterconfig" && entry.path.len() > 2 {
            // The cluster settings are one field: refused with clusterMode.
        } else if entry.path.len() > 2 {
            problems.push(source.error(entry, "expected a number, a string or a boolean"));
            continue;
        }
        match rules.last_mut() {
            Some(rule) if rule.index == index => {
                rule.fields.entry(field).or_insert(entry);
            }
            _ => {
                let mut fields = IndexMap::new();
                fields.insert(field, entry);
                rules.push(Rule {
                    index,
                    first: entry,
                    fields,
                });
            }
        }
    }
    rules
}

fn resource(source: &Source, rule: &Rule, problems: &mut Vec<SchemaError>) -> Option<String> {
    let Some(e) = rule.get("resource").filter(|e| !e.value.trim().is_empty()) else {
        problems.push(source.error(
            rule.first,
            format!(
                "rule [{}] has no resource: Sentinel drops it (isValidRule)",
                rule.index
            ),
        ));
        return None;
    };
    if let Some(regex) = rule.get("regex")
        && regex.value == "true"
    {
        problems.push(source.error(regex, "a regex resource names every resource it matches: not modelled (a firedrill route is one resource; write one rule per resource)"));
        return None;
    }
    Some(e.value.clone())
}

/// Reads one rule's values.
struct Reader<'s, 'a> {
    source: &'s Source,
    rule: &'s Rule<'a>,
    problems: Vec<SchemaError>,
}

impl<'a> Reader<'_, 'a> {
    fn refuse(&mut self, e: &Entry, message: impl Into<String>) {
        self.problems.push(self.source.error(e, message));
    }

    fn value<T>(
        &mut self,
        field: &str,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Option<(T, &'a Entry)> {
        let e = self.rule.get(field)?;
        match parse(&e.value) {
            Ok(v) => Some((v, e)),
            Err(m) => {
                self.refuse(e, m);
                None
            }
        }
    }

    /// `limitApp` other than `default` (a rule for one caller) is refused.
    fn origin(&mut self, applies: bool) -> Option<Node> {
        let e = self.rule.get("limitapp")?;
        let all = e.value.trim().is_empty() || e.value == "default";
        if !applies {
            return Some(Node::Note(format!(
                "ignored: {}: a degrade rule applies to every caller whatever its limitApp",
                from(e)
            )));
        }
        if !all {
            self.refuse(e, format!("limitApp `{}` limits only the calls of one origin: not modelled (a firedrill route sees every caller); use \"default\"", e.value));
        }
        None
    }
}

fn from(e: &Entry) -> String {
    format!("{} (line {})", e.key(), e.line)
}

fn default_of(field: &str, value: &str) -> String {
    format!("Sentinel default: {field} {value}")
}

/// `count` × 100 as a percentage, by moving the decimal point of the
/// text (so `0.3` is `30%`, not `30.000000000000004%`).
fn percent_of(text: &str) -> Result<String, String> {
    let f = number(text)?;
    let digits = text.trim();
    let (whole, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.contains(['e', 'E']) || frac.contains(['e', 'E']) {
        return Ok(format!("{}%", f * 100.0));
    }
    let frac = format!("{frac:0<2}");
    let (moved, rest) = frac.split_at(2);
    let whole = format!("{whole}{moved}")
        .trim_start_matches('0')
        .to_string();
    let whole = if whole.is_empty() {
        "0".to_string()
    } else {
        whole
    };
    let rest = rest.trim_end_matches('0');
    Ok(if rest.is_empty() {
        format!("{whole}%")
    } else {
        format!("{whole}.{rest}%")
    })
}

/// A degrade rule → a `ratio` breaker.
fn degrade_rule(r: &mut Reader) -> Option<Node> {
    let mut b = Node::map();
    b.set("model", Node::leaf("ratio", "a Sentinel degrade rule"));
    let grade = r.value("grade", integer);
    let (grade_value, grade_from) = match grade {
        Some((g, e)) => (g, from(e)),
        None => (0, default_of("grade", "0 (DEGRADE_GRADE_RT, slow ratio)")),
    };
    let count = r.value("count", |t| {
        let c = number(t)?;
        if c < 0.0 {
            Err(format!(
                "count {t} is negative: Sentinel drops the rule (isValidRule)"
            ))
        } else {
            Ok(c)
        }
    });
    match grade_value {
        0 => slow_ratio(r, &mut b, grade_from, count),
        1 => {
            b.set("threshold_type", Node::leaf("error_ratio", grade_from));
            match count {
                Some((c, e)) if c <= 1.0 => b.set("threshold", Node::leaf(percent_of(&e.value).ok()?, format!("{}: errors / total strictly above it open", from(e)))),
                Some((_, e)) => r.refuse(e, format!("count {} above 1 for an exception ratio: Sentinel drops the rule (isValidRule)", e.value)),
                None => b.set("threshold", Node::leaf("0%", format!("{}: the first error opens once minRequestAmount came", default_of("count", "0")))),
            }
            if let Some(e) = r.rule.get("slowratiothreshold") {
                b.note(format!(
                    "ignored: {}: only a slow-ratio rule (grade 0) reads it",
                    from(e)
                ));
            }
        }
        2 => {
            let e = r.rule.get("grade").expect("set");
            r.refuse(e, "grade 2 (DEGRADE_GRADE_EXCEPTION_COUNT) opens on a number of errors in the interval: not modelled (firedrill's ratio model judges a ratio; its consecutive model counts errors in a row, which is not the same)");
            return None;
        }
        other => {
            let e = r.rule.get("grade").expect("set");
            r.refuse(e, format!("grade {other} is no degrade strategy: Sentinel drops the rule (expected 0 slow ratio, 1 exception ratio, 2 exception count)"));
            return None;
        }
    }
    window_and_wait(r, &mut b);
    if let Some(Node::Note(text)) = r.origin(false) {
        b.note(text);
    }
    if let Some(e) = r.rule.get("id") {
        b.note(format!(
            "ignored: {}: the rule's id in the dashboard",
            from(e)
        ));
    }
    Some(b)
}

fn slow_ratio(r: &mut Reader, b: &mut Node, grade_from: String, count: Option<(f64, &Entry)>) {
    b.set("threshold_type", Node::leaf("slow_ratio", grade_from));
    // `maxAllowedRt = Math.round(rule.getCount())`.
    let (rt, rt_from) = match count {
        Some((c, e)) => (
            (c + 0.5).floor() as u64,
            format!(
                "{}: Math.round to whole ms; slower is strictly longer",
                from(e)
            ),
        ),
        None => (
            0,
            default_of("count", "0 (every request slower than 0 ms is slow)"),
        ),
    };
    b.set(
        "max_rt",
        Node::leaf(Dur(Duration::from_millis(rt)).to_string(), rt_from),
    );
    let threshold = r.value("slowratiothreshold", |t| {
        let f = number(t)?;
        if (0.0..=1.0).contains(&f) {
            percent_of(t)
        } else {
            Err(format!(
                "slowRatioThreshold {t} is outside 0 to 1: Sentinel drops the rule (isValidRule)"
            ))
        }
    });
    b.set(
        "threshold",
        match threshold {
            Some((p, e)) => Node::leaf(
                p,
                format!(
                    "{}: slow / total strictly above it open (at 100% also equal)",
                    from(e)
                ),
            ),
            None => Node::leaf("100%", default_of("slowRatioThreshold", "1.0")),
        },
    );
}

fn window_and_wait(r: &mut Reader, b: &mut Node) {
    let interval = r.value("statintervalms", |t| match integer(t)? {
        n if n <= 0 => Err(format!(
            "statIntervalMs {n} is not above 0: Sentinel drops the rule (isValidRule)"
        )),
        n if n > 120 * 60 * 1000 => Err(format!(
            "statIntervalMs {n} is longer than firedrill's 120 minutes: not modelled"
        )),
        n => Ok(n as u64),
    });
    b.set(
        "stat_window",
        match interval {
            Some((ms, e)) => Node::leaf(Dur(Duration::from_millis(ms)).to_string(), from(e)),
            None => Node::leaf("1s", default_of("statIntervalMs", "1000")),
        },
    );
    b.set(
        "stat_window_shape",
        Node::leaf(
            "tumbling",
            "Sentinel's one-bucket LeapArray of statIntervalMs",
        ),
    );
    let minimum = r.value("minrequestamount", |t| match integer(t)? {
        n if n <= 0 => Err(format!(
            "minRequestAmount {n} is not above 0: Sentinel drops the rule (isValidRule)"
        )),
        n => Ok(n),
    });
    b.set(
        "minimum_requests",
        match minimum {
            Some((n, e)) => Node::leaf(n.to_string(), from(e)),
            None => Node::leaf("5", default_of("minRequestAmount", "5")),
        },
    );
    let window = r.value("timewindow", |t| match integer(t)? {
        n if n <= 0 => Err(format!(
            "timeWindow {n} is not above 0: Sentinel drops the rule (isValidRule)"
        )),
        n => Ok(n as u64),
    });
    if let Some((s, e)) = window {
        b.set(
            "breaker_duration",
            Node::leaf(
                Dur(Duration::from_secs(s)).to_string(),
                format!("{}, seconds", from(e)),
            ),
        );
    }
    b.set(
        "recovery",
        Node::leaf(
            "single_probe",
            "Sentinel lets one request through after timeWindow",
        ),
    );
    b.set(
        "stragglers",
        Node::leaf(
            "count",
            "Sentinel adds every completed request to the current bucket",
        ),
    );
    b.set(
        "failure_statuses",
        Node::List(vec![Node::leaf(
            "5xx",
            "an error: an exception the client traces",
        )]),
    );
    b.set(
        "count_4xx",
        Node::leaf(
            "false",
            "a 4xx is a normal request in Sentinel (no traced exception)",
        ),
    );
    b.note("count_cancelled: false, firedrill's default: a probe whose caller gave up gives no result, where Sentinel's would still complete (docs/fidelity.md)");
}
