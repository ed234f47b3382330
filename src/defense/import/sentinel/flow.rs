//! Sentinel flow rules: a thread-count rule → a bulkhead, a QPS rule → a
//! `buckets` rate limit, as `FlowRuleUtil` and `DefaultController` read
//! them.

use super::{Reader, default_of, from};
use crate::defense::import::resilience4j::values::{integer, number};
use crate::defense::import::source::Entry;
use crate::defense::import::tree::Node;

/// A flow rule → a bulkhead (thread count); QPS is refused.
pub(super) fn flow_rule(r: &mut Reader) -> Option<(&'static str, Node)> {
    let grade = r.value("grade", integer);
    let (grade_value, grade_from) = match grade {
        Some((g, e)) => (g, Some(e)),
        None => (1, None),
    };
    let strategy = r.value("strategy", integer);
    if let Some((s, e)) = strategy
        && s != 0
    {
        r.refuse(e, format!("strategy {s} (relate or chain) limits by another resource or entrance: not modelled (firedrill's bulkhead counts the route's own calls); use 0 (direct)"));
    }
    if let Some(e) = r.rule.get("clustermode")
        && e.value == "true"
    {
        r.refuse(e, "clusterMode counts every instance of the service against one token server: not modelled (firedrill's line is one instance)");
    }
    r.origin(true);
    match grade_value {
        0 => {}
        1 => return qps_rule(r, grade_from).map(|node| ("rate_limit", node)),
        other => {
            let e = grade_from.expect("set");
            r.refuse(e, format!("grade {other} is no flow grade: Sentinel drops the rule (expected 0 thread count, 1 QPS)"));
            return None;
        }
    }
    let (n, e) = flow_count(
        r,
        "a thread-count rule without count (0) admits no call: not modelled",
        "admits no call (a thread passes while threads + 1 <= count): not modelled (firedrill's bulkhead admits at least one)",
    )?;
    let mut node = Node::map();
    node.set(
        "max_concurrent",
        Node::leaf(
            (n.floor() as u64).to_string(),
            format!(
                "{}: a call passes while threads + 1 <= count (whole threads)",
                from(e)
            ),
        ),
    );
    node.set(
        "max_wait",
        Node::leaf(
            "0s",
            format!(
                "{}: Sentinel rejects a thread over the count at once",
                grade_from.map_or_else(|| "grade 0".to_string(), from)
            ),
        ),
    );
    for field in [
        "controlbehavior",
        "warmupperiodsec",
        "maxqueueingtimems",
        "refresource",
    ] {
        if let Some(e) = r.rule.get(field) {
            node.note(format!(
                "ignored: {}: a thread-count rule with strategy 0 reads only its count",
                from(e)
            ));
        }
    }
    note_identity(r, &mut node);
    Some(("bulkhead", node))
}

/// A flow rule's `count` (at least 1), or `None` with the refusal:
/// negative (Sentinel drops the rule), below one (`below_one` says what it
/// would do), or absent (refused with `absent`).
fn flow_count<'a>(
    r: &mut Reader<'_, 'a>,
    absent: &str,
    below_one: &str,
) -> Option<(f64, &'a Entry)> {
    let count = r.value("count", |t| {
        let c = number(t)?;
        if c < 0.0 {
            Err(format!(
                "count {t} is negative: Sentinel drops the rule (isValidRule)"
            ))
        } else if c < 1.0 {
            Err(format!("count {t} {below_one}"))
        } else {
            Ok(c)
        }
    });
    if count.is_none() && r.rule.get("count").is_none() {
        r.refuse(r.rule.first, absent);
    }
    count
}

/// The notes of a flow rule's `id` and `limitApp` (a `default` one: an
/// other is refused by [`Reader::origin`]), and of the fields written at
/// the value firedrill's limit is (`strategy` 0, `clusterMode` false, a
/// QPS rule's `controlBehavior` 0: any other is refused).
fn note_identity(r: &Reader, node: &mut Node) {
    for (field, what) in [
        (
            "strategy",
            "0 (direct): the rule counts the route's own calls, as firedrill's limit",
        ),
        (
            "clustermode",
            "false: this instance counts alone, as firedrill's line",
        ),
    ] {
        if let Some(e) = r.rule.get(field) {
            node.note(format!("{}: {what}", from(e)));
        }
    }
    for field in ["id", "limitapp"] {
        if let Some(e) = r.rule.get(field) {
            node.note(format!(
                "ignored: {}: {}",
                from(e),
                if field == "id" {
                    "the rule's id in the dashboard"
                } else {
                    "\"default\": every caller"
                }
            ));
        }
    }
}

/// A QPS flow rule → a `buckets` rate limit: Sentinel's one-second
/// `LeapArray` of two 500 ms buckets (`SampleCountProperty`,
/// `IntervalProperty`), read by `DefaultController.canPass`.
fn qps_rule(r: &mut Reader, grade_from: Option<&Entry>) -> Option<Node> {
    let grade = grade_from.map_or_else(|| default_of("grade", "1 (FLOW_GRADE_QPS)"), from);
    if let Some((behavior, e)) = r.value("controlbehavior", integer)
        && behavior != 0
    {
        let what = match behavior {
            1 => "1 (warm up) raises the limit from a third of count over warmUpPeriodSec",
            2 => {
                "2 (rate limiter) queues each request for its turn at count per second, up to maxQueueingTimeMs"
            }
            3 => "3 (warm up with rate limiter) queues the requests of a rising limit",
            _ => "is no control behaviour: Sentinel takes it as 0 only where it defaults it",
        };
        r.refuse(e, format!("controlBehavior {what}: not modelled (firedrill's `buckets` rate limit rejects at once, Sentinel's default 0); use 0"));
        return None;
    }
    let (_, e) = flow_count(
        r,
        "a QPS rule without count (0) admits no request: not modelled",
        "admits no request (a request passes while the passes of the last second + 1 <= count): not modelled (firedrill's rate is above 0)",
    )?;
    let count = e.value.trim();
    let mut node = Node::map();
    node.set(
        "rate",
        Node::leaf(
            format!("{count}/s"),
            format!(
                "{}: a request passes while the passes of the last second + 1 <= count",
                from(e)
            ),
        ),
    );
    node.set("model", Node::leaf("buckets", grade));
    node.set(
        "buckets",
        Node::leaf(
            "2",
            "Sentinel's one second in two 500 ms buckets (csp.sentinel.metric.sample.count 2)",
        ),
    );
    if let Some(e) = r.rule.get("controlbehavior") {
        node.note(format!(
            "{}: 0 (reject at once), as the buckets rate limit",
            from(e)
        ));
    }
    for field in ["warmupperiodsec", "maxqueueingtimems", "refresource"] {
        if let Some(e) = r.rule.get(field) {
            node.note(format!(
                "ignored: {}: a QPS rule with controlBehavior 0 and strategy 0 reads only its count",
                from(e)
            ));
        }
    }
    note_identity(r, &mut node);
    Some(node)
}
