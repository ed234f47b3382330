//! The opossum mapping: timeout, the circuit as an `opossum` breaker
//! (every option in milliseconds, opossum's defaults where left out),
//! capacity with the circuit off, and every refused option with its
//! message.

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
fn every_circuit_option_maps_onto_its_opossum_key_in_milliseconds() {
    let doc = imported(
        r#"{"errorThresholdPercentage": 12.5, "resetTimeout": 1500, "rollingCountTimeout": 1000,
            "rollingCountBuckets": 3, "volumeThreshold": 4, "allowWarmUp": true}"#,
    );
    let b = &doc["routes"]["default"]["breaker"];
    assert_eq!(b["model"], Value::from("opossum"));
    assert_eq!(b["failure_rate_threshold"], Value::from("12.5%"));
    assert_eq!(b["wait_in_open"], Value::from("1500ms"));
    assert_eq!(b["rolling_window"], Value::from("1s"));
    assert_eq!(b["buckets"], Value::from(3));
    assert_eq!(b["volume_threshold"], Value::from(4));
    assert_eq!(b["warm_up"], Value::from(true));
    assert_eq!(b["stragglers"], Value::from("count"));
}

#[test]
fn a_circuit_left_at_its_defaults_gets_opossums_defaults() {
    let doc = imported(r#"{"timeout": 100}"#);
    let b = &doc["routes"]["default"]["breaker"];
    assert_eq!(b["failure_rate_threshold"], Value::from("50%"));
    assert_eq!(b["wait_in_open"], Value::from("30s"));
    assert_eq!(b["rolling_window"], Value::from("10s"));
    assert_eq!(b["buckets"], Value::from(10));
    assert_eq!(b["volume_threshold"], Value::from(0));
    assert_eq!(b["warm_up"], Value::from(false));
    assert_eq!(doc["routes"]["default"]["timeout"], Value::from("100ms"));
}

#[test]
fn the_circuits_options_are_ignored_with_a_note_when_it_is_off() {
    let text = test_support::refused(Format::Opossum, "o.json", "{}");
    assert!(text.contains("no opossum options"), "{text}");
    let doc = imported(r#"{"enabled": false, "resetTimeout": 5}"#);
    assert_eq!(doc["routes"]["default"]["breaker"], Value::Null);
    let printed = super::import_text(
        Format::Opossum,
        "o.json",
        r#"{"enabled": false, "resetTimeout": 5}"#,
        &[],
        &super::Options::strict(true),
    )
    .map(|i| i.render(Format::Opossum, "o.json"))
    .unwrap_or_default();
    assert!(
        printed.contains("ignored: resetTimeout (line 1): the breaker is off"),
        "{printed}"
    );
}

#[test]
fn every_refused_option_says_where_and_what_is_not_modelled() {
    let cases = [
        (
            r#"{"timeout": 100, "capacity": 5}"#,
            "o.json:1:30: capacity: capacity with the circuit on is not modelled: opossum's semaphore",
        ),
        (
            r#"{"errorThresholdPercentage": 150}"#,
            "errorThresholdPercentage: expected a percentage from 0 to 100",
        ),
        (
            r#"{"errorThresholdPercentage": "half"}"#,
            "invalid number `half`",
        ),
        (
            r#"{"resetTimeout": 0}"#,
            "resetTimeout: expected a whole number of milliseconds of at least 1",
        ),
        (
            r#"{"rollingCountTimeout": 2.5}"#,
            "rollingCountTimeout: expected a whole number of milliseconds of at least 1",
        ),
        (
            r#"{"rollingCountBuckets": 0}"#,
            "rollingCountBuckets: expected a whole number of at least 1",
        ),
        (
            r#"{"rollingCountTimeout": 5, "rollingCountBuckets": 10}"#,
            "rollingCountTimeout: rollingCountTimeout 5 ms over rollingCountBuckets 10 makes buckets of 0 ms",
        ),
        (
            r#"{"rollingCountBuckets": 20000}"#,
            "o.json:1:25: rollingCountBuckets: rollingCountTimeout 10000 ms over rollingCountBuckets 20000",
        ),
        (
            r#"{"volumeThreshold": 2.5}"#,
            "volumeThreshold: expected a whole number of at least 0",
        ),
        (
            r#"{"allowWarmUp": "yes"}"#,
            "allowWarmUp: expected true or false",
        ),
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

#[test]
fn allow_warm_up_false_is_commented_as_no_warm_up() {
    for (value, says) in [
        ("false", "no warm-up"),
        ("true", "warm-up: no failure opens it"),
    ] {
        let text = format!(r#"{{"allowWarmUp": {value}}}"#);
        let printed = super::import_text(
            Format::Opossum,
            "o.json",
            &text,
            &[],
            &super::Options::strict(true),
        )
        .unwrap()
        .render(Format::Opossum, "o.json");
        let line = printed.lines().find(|l| l.contains("warm_up:")).unwrap();
        assert!(line.contains(says), "{line}");
    }
}
