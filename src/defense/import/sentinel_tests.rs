//! The Sentinel mapping: units, the decimal threshold, defaults, and
//! every refused field with its message.

use serde_yaml_ng::Value;

use super::{Format, test_support};

fn imported(text: &str) -> Value {
    test_support::imported(Format::Sentinel, "rules.json", text)
}

#[test]
fn a_ratio_count_becomes_its_exact_decimal_percentage() {
    let doc = imported(
        r#"[{"resource": "a", "grade": 1, "count": 0.3, "timeWindow": 1}, {"resource": "b", "grade": 0, "count": 10, "slowRatioThreshold": 0.125, "timeWindow": 1}]"#,
    );
    assert_eq!(
        doc["routes"]["a"]["breaker"]["threshold"],
        Value::from("30%")
    );
    assert_eq!(
        doc["routes"]["b"]["breaker"]["threshold"],
        Value::from("12.5%")
    );
}

#[test]
fn a_qps_rule_becomes_a_rate_limit_of_two_buckets_at_its_count() {
    let doc = imported(
        r#"[{"resource": "a", "count": 12.5, "limitApp": "default", "controlBehavior": 0}, {"resource": "b", "grade": 1, "count": 40}]"#,
    );
    let a = &doc["routes"]["a"]["rate_limit"];
    assert_eq!(a["rate"], Value::from("12.5/s"));
    assert_eq!(a["model"], Value::from("buckets"));
    assert_eq!(a["buckets"], Value::from(2));
    assert_eq!(
        doc["routes"]["b"]["rate_limit"]["rate"],
        Value::from("40/s")
    );
    assert!(doc["routes"]["a"].get("bulkhead").is_none());
}

#[test]
fn a_slow_count_rounds_half_up_to_whole_milliseconds_and_time_window_is_seconds() {
    let doc = imported(r#"[{"resource": "a", "count": 1.5, "timeWindow": 7}]"#);
    let b = &doc["routes"]["a"]["breaker"];
    assert_eq!(b["max_rt"], Value::from("2ms"));
    assert_eq!(b["threshold_type"], Value::from("slow_ratio"));
    assert_eq!(b["breaker_duration"], Value::from("7s"));
    assert_eq!(b["stat_window"], Value::from("1s"));
    assert_eq!(b["minimum_requests"], Value::from(5));
}

#[test]
fn field_names_match_as_fastjson_matches_them() {
    let doc = imported(
        r#"[{"resource": "a", "grade": 1, "count": 0.5, "time_window": 3, "StatIntervalMs": 2000}]"#,
    );
    assert_eq!(
        doc["routes"]["a"]["breaker"]["breaker_duration"],
        Value::from("3s")
    );
    assert_eq!(
        doc["routes"]["a"]["breaker"]["stat_window"],
        Value::from("2s")
    );
}

#[test]
fn a_thread_count_flow_rule_admits_whole_threads_up_to_its_count() {
    let doc = imported(r#"[{"resource": "a", "grade": 0, "count": 10.7}]"#);
    assert_eq!(
        doc["routes"]["a"]["bulkhead"]["max_concurrent"],
        Value::from(10)
    );
    assert_eq!(
        doc["routes"]["a"]["bulkhead"]["max_wait"],
        Value::from("0s")
    );
}

/// Each refused field: a rule, and what the error must say.
const REFUSED: &[(&str, &str)] = &[
    (
        r#"[{"resource": "a", "grade": 2, "count": 5, "timeWindow": 10}]"#,
        "rules.json:1:29: [0].grade: grade 2 (DEGRADE_GRADE_EXCEPTION_COUNT) opens on a number of errors in the interval: not modelled",
    ),
    (
        r#"[{"resource": "a", "grade": 7, "count": 5, "timeWindow": 10}]"#,
        "grade 7 is no degrade strategy: Sentinel drops the rule",
    ),
    (
        r#"[{"resource": "a", "grade": 1, "count": 1.5, "timeWindow": 10}]"#,
        "count 1.5 above 1 for an exception ratio: Sentinel drops the rule",
    ),
    (
        r#"[{"resource": "a", "count": -1, "timeWindow": 10}]"#,
        "count -1 is negative: Sentinel drops the rule",
    ),
    (
        r#"[{"resource": "a", "count": 5, "slowRatioThreshold": 1.5, "timeWindow": 10}]"#,
        "slowRatioThreshold 1.5 is outside 0 to 1",
    ),
    (
        r#"[{"resource": "a", "count": 5, "timeWindow": 0}]"#,
        "timeWindow 0 is not above 0: Sentinel drops the rule",
    ),
    (
        r#"[{"resource": "a", "count": 5, "timeWindow": 1, "minRequestAmount": 0}]"#,
        "minRequestAmount 0 is not above 0",
    ),
    (
        r#"[{"resource": "a", "count": 5, "timeWindow": 1, "statIntervalMs": 0}]"#,
        "statIntervalMs 0 is not above 0",
    ),
    (
        r#"[{"resource": "a", "count": 5, "timeWindow": 1, "statIntervalMs": 7300000}]"#,
        "statIntervalMs 7300000 is longer than firedrill's 120 minutes: not modelled",
    ),
    (
        r#"[{"resource": "a", "count": 5, "timeWindow": 1}, {"resource": "a", "grade": 1, "count": 0.5, "timeWindow": 1}]"#,
        "a second degrade rule for resource `a`: firedrill runs one breaker per route",
    ),
    (
        r#"[{"resource": "a", "count": 5, "timeWindow": 1, "regex": true}]"#,
        "a regex resource names every resource it matches: not modelled",
    ),
    (
        r#"[{"count": 5, "timeWindow": 1}]"#,
        "rule [0] has no resource: Sentinel drops it",
    ),
    (
        r#"[{"resource": "a", "count": 5, "timeWindow": 1, "halfOpen": 3}]"#,
        "`halfOpen` is not a field of a Sentinel degrade rule",
    ),
    (
        r#"[{"resource": "a", "count": 50, "controlBehavior": 2, "maxQueueingTimeMs": 500}]"#,
        "controlBehavior 2 (rate limiter) queues each request for its turn",
    ),
    (
        r#"[{"resource": "a", "count": 50, "controlBehavior": 1, "warmUpPeriodSec": 10}]"#,
        "controlBehavior 1 (warm up) raises the limit",
    ),
    (
        r#"[{"resource": "a", "count": 0.5}]"#,
        "count 0.5 admits no request",
    ),
    (
        r#"[{"resource": "a"}]"#,
        "a QPS rule without count (0) admits no request: not modelled",
    ),
    (
        r#"[{"resource": "a", "count": 50}, {"resource": "a", "count": 9}]"#,
        "a second QPS flow rule for resource `a`: firedrill has one rate limit per route",
    ),
    (
        r#"[{"resource": "a", "count": 50}, {"resource": "a", "grade": 1, "count": 0.5, "timeWindow": 10}]"#,
        "a QPS flow rule for resource `a` beside its degrade or thread-count rule",
    ),
    (
        r#"[{"resource": "a", "grade": 0, "count": 5}, {"resource": "a", "count": 50}]"#,
        "a QPS flow rule for resource `a` beside its degrade or thread-count rule",
    ),
    (
        r#"[{"resource": "a", "grade": 3, "count": 50}]"#,
        "grade 3 is no flow grade",
    ),
    (
        r#"[{"resource": "a", "grade": 0, "count": 0.5}]"#,
        "count 0.5 admits no call",
    ),
    (
        r#"[{"resource": "a", "grade": 0}]"#,
        "a thread-count rule without count (0) admits no call",
    ),
    (
        r#"[{"resource": "a", "grade": 0, "count": 5, "strategy": 1, "refResource": "b"}]"#,
        "strategy 1 (relate or chain) limits by another resource or entrance: not modelled",
    ),
    (
        r#"[{"resource": "a", "grade": 0, "count": 5, "clusterMode": true}]"#,
        "clusterMode counts every instance of the service against one token server: not modelled",
    ),
    (
        r#"[{"resource": "a", "grade": 0, "count": 5, "limitApp": "checkout"}]"#,
        "limitApp `checkout` limits only the calls of one origin: not modelled",
    ),
    (
        r#"[{"resource": "a", "grade": 0, "count": 5}, {"resource": "a", "grade": 0, "count": 9}]"#,
        "a second thread-count flow rule for resource `a`",
    ),
    (
        r#"[{"resource": "a", "grade": 0, "count": 5, "burst": 9}]"#,
        "`burst` is not a field of a Sentinel flow rule",
    ),
    (
        r#"{"resource": "a"}"#,
        "expected a JSON array of Sentinel rules",
    ),
    (r#"[]"#, "no Sentinel rule"),
    (
        r#"[{"resource": "a", "count": "fast", "timeWindow": 1}]"#,
        "invalid number `fast`",
    ),
];

#[test]
fn every_refused_field_says_where_and_what_is_not_modelled() {
    test_support::assert_refused(Format::Sentinel, "rules.json", REFUSED);
}
