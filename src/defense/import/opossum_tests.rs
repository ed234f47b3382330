//! The opossum mapping: timeout and capacity, the breaker refused while
//! it is on, and every refused option with its message.

use serde_yaml_ng::Value;

use super::{Format, test_support};

fn imported(text: &str) -> Value {
    test_support::imported(Format::Opossum, "o.json", text)
}

#[test]
fn with_the_breaker_off_timeout_and_capacity_are_mapped() {
    let doc = imported(r#"{"timeout": 1500, "capacity": 7, "enabled": false}"#);
    assert_eq!(doc["routes"]["default"]["timeout"], Value::from("1500ms"));
    assert_eq!(
        doc["routes"]["default"]["bulkhead"]["max_concurrent"],
        Value::from(7)
    );
    assert_eq!(doc["routes"]["default"]["breaker"], Value::Null);
    let named = imported(r#"{"a": {"enabled": false}, "b": {"enabled": false, "timeout": false}}"#);
    assert_eq!(named["routes"]["a"]["timeout"], Value::from("10s"));
    assert_eq!(named["routes"]["b"]["timeout"], Value::Null);
}

#[test]
fn every_refused_option_says_where_and_what_is_not_modelled() {
    let breaker =
        "opossum's circuit breaker is not modelled: its error rate is failures over fires";
    let cases = [
        (
            r#"{"timeout": 100}"#,
            "o.json:1:13: timeout: opossum's circuit breaker is not modelled",
        ),
        (r#"{"errorThresholdPercentage": 50}"#, breaker),
        (r#"{"resetTimeout": 5000}"#, breaker),
        (r#"{"rollingCountTimeout": 10000}"#, breaker),
        (r#"{"rollingCountBuckets": 10}"#, breaker),
        (r#"{"volumeThreshold": 10}"#, breaker),
        (r#"{"allowWarmUp": true}"#, breaker),
        (
            r#"{"enabled": false, "cache": true}"#,
            "opossum's cache answers a call from an earlier result",
        ),
        (
            r#"{"enabled": false, "coalesce": true}"#,
            "coalescing answers concurrent equal calls with one call",
        ),
        (
            r#"{"enabled": false, "errorFilter": "x"}"#,
            "errorFilter is JavaScript code",
        ),
        (
            r#"{"enabled": false, "state": {}}"#,
            "a breaker started from saved state is not modelled",
        ),
        (
            r#"{"enabled": false, "status": "x"}"#,
            "a breaker started from saved state is not modelled",
        ),
        (
            r#"{"enabled": false, "abortController": "x"}"#,
            "an object of the application: not modelled",
        ),
        (
            r#"{"enabled": false, "timeout": 0.5}"#,
            "expected a whole number of milliseconds",
        ),
        (
            r#"{"enabled": false, "capacity": 0}"#,
            "expected a whole number of at least 1",
        ),
        (
            r#"{"a": {"enabled": false, "timeoutt": 5}}"#,
            "`timeoutt` is not an opossum option",
        ),
        (r#"{}"#, "no opossum options"),
    ];
    test_support::assert_refused(Format::Opossum, "o.json", &cases);
}
