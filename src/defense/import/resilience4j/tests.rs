//! The resilience4j mapping, key by key: inheritance as
//! `resilience4j-framework-common` resolves it, the values' units and
//! quirks, and every refused key with its message.

use serde_yaml_ng::Value;

use crate::defense::import::{Format, Options, import_text, test_support};

/// The imported defense line of `text` (a `.properties` file) as YAML.
fn imported(text: &str) -> Value {
    test_support::imported(Format::Resilience4j, "app.properties", text)
}

/// `routes.ROUTE.PATH` of `text`'s import, as text.
fn value(text: &str, route: &str, path: &str) -> String {
    let doc = imported(text);
    let mut node = &doc["routes"][route];
    for key in path.split('.') {
        node = &node[key];
    }
    match node {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".to_string(),
        other => serde_yaml_ng::to_string(other).unwrap().trim().to_string(),
    }
}

const CB: &str = "resilience4j.circuitbreaker";

#[test]
fn an_instance_without_base_config_takes_configs_default_over_the_library_defaults() {
    let text = format!(
        "{CB}.configs.default.slidingWindowSize=20\n{CB}.instances.a.minimumNumberOfCalls=4\n"
    );
    assert_eq!(value(&text, "a", "breaker.sliding_window_size"), "20");
    assert_eq!(value(&text, "a", "breaker.minimum_calls"), "4");
    assert_eq!(value(&text, "a", "breaker.failure_rate_threshold"), "50%");
    assert_eq!(value(&text, "a", "breaker.wait_in_open"), "60s");
    assert_eq!(
        value(&text, "a", "breaker.permitted_calls_in_half_open"),
        "10"
    );
}

#[test]
fn a_breaker_base_config_replaces_configs_default_and_ends_the_chain() {
    let text = format!(
        "{CB}.configs.default.slidingWindowSize=20\n{CB}.configs.default.minimumNumberOfCalls=7\n{CB}.configs.fast.minimumNumberOfCalls=3\n{CB}.instances.a.baseConfig=fast\n"
    );
    assert_eq!(value(&text, "a", "breaker.sliding_window_size"), "100");
    assert_eq!(value(&text, "a", "breaker.minimum_calls"), "3");
}

#[test]
fn a_breaker_config_of_the_instance_name_is_its_base_without_its_own_base_config() {
    let text = format!(
        "{CB}.configs.default.minimumNumberOfCalls=7\n{CB}.configs.base.slidingWindowSize=9\n{CB}.configs.a.baseConfig=base\n{CB}.configs.a.minimumNumberOfCalls=2\n{CB}.instances.a.permittedNumberOfCallsInHalfOpenState=4\n"
    );
    assert_eq!(value(&text, "a", "breaker.minimum_calls"), "2");
    assert_eq!(value(&text, "a", "breaker.sliding_window_size"), "100");
    assert_eq!(
        value(&text, "a", "breaker.permitted_calls_in_half_open"),
        "4"
    );
}

#[test]
fn a_retry_base_config_sits_on_configs_default() {
    let text = "resilience4j.retry.configs.default.waitDuration=250ms\nresilience4j.retry.configs.slow.maxAttempts=5\nresilience4j.retry.instances.a.baseConfig=slow\n";
    assert_eq!(value(text, "a", "retry.attempts"), "5");
    assert_eq!(value(text, "a", "retry.backoff"), "250ms");
    assert_eq!(value(text, "a", "retry.max_backoff"), "250ms");
    assert_eq!(value(text, "a", "retry.jitter"), "0%");
}

#[test]
fn a_retry_takes_its_bases_backoff_flags_but_a_wait_only_from_its_own_level() {
    // The flags reach the instance (mergePropertiesIfAny), but the wait
    // function changes only where a level sets waitDuration.
    let flags_below = "resilience4j.retry.configs.default.enableExponentialBackoff=true\nresilience4j.retry.configs.default.exponentialBackoffMultiplier=2\nresilience4j.retry.instances.a.maxAttempts=4\nresilience4j.retry.instances.a.waitDuration=100ms\n";
    assert_eq!(value(flags_below, "a", "retry.backoff"), "100ms");
    assert_eq!(value(flags_below, "a", "retry.max_backoff"), "400ms");
    let wait_below = "resilience4j.retry.configs.default.waitDuration=100ms\nresilience4j.retry.instances.a.maxAttempts=4\nresilience4j.retry.instances.a.enableExponentialBackoff=true\nresilience4j.retry.instances.a.exponentialBackoffMultiplier=2\n";
    assert_eq!(value(wait_below, "a", "retry.max_backoff"), "100ms");
    let doc = imported(wait_below);
    let text = serde_yaml_ng::to_string(&doc).unwrap();
    assert!(!text.contains("multiplier"), "{text}");
}

#[test]
fn a_max_attempts_of_0_keeps_the_inherited_value() {
    let text = "resilience4j.retry.configs.default.maxAttempts=5\nresilience4j.retry.instances.a.maxAttempts=0\n";
    assert_eq!(value(text, "a", "retry.attempts"), "5");
}

#[test]
fn an_exponential_retry_caps_at_its_maximum_or_at_its_longest_wait() {
    let capped = "resilience4j.retry.instances.a.maxAttempts=5\nresilience4j.retry.instances.a.waitDuration=100ms\nresilience4j.retry.instances.a.enableExponentialBackoff=true\nresilience4j.retry.instances.a.exponentialBackoffMultiplier=2\nresilience4j.retry.instances.a.exponentialMaxWaitDuration=300ms\n";
    assert_eq!(value(capped, "a", "retry.max_backoff"), "300ms");
    let below = capped.replace("300ms", "50ms");
    assert_eq!(value(&below, "a", "retry.backoff"), "50ms");
    assert_eq!(value(&below, "a", "retry.max_backoff"), "50ms");
    let one_wait = "resilience4j.retry.instances.a.maxAttempts=2\nresilience4j.retry.instances.a.waitDuration=1s\nresilience4j.retry.instances.a.enableExponentialBackoff=true\n";
    assert_eq!(value(one_wait, "a", "retry.backoff"), "1s");
    assert_eq!(value(one_wait, "a", "retry.max_backoff"), "1s");
}

#[test]
fn the_wait_in_open_keeps_whole_milliseconds_and_a_wait_under_1ms_is_refused_as_resilience4j_refuses_it()
 {
    let text = format!(
        "{CB}.configs.default.waitDurationInOpenState=5s\n{CB}.instances.a.waitDurationInOpenState=1500us\n"
    );
    assert_eq!(value(&text, "a", "breaker.wait_in_open"), "1ms");
    for wait in ["500us", "0"] {
        let text = format!(
            "{CB}.configs.default.waitDurationInOpenState=5s\n{CB}.instances.b.waitDurationInOpenState={wait}\n"
        );
        let said = test_support::refused(Format::Resilience4j, "app.properties", &text);
        assert_eq!(
            said,
            format!(
                "app.properties:2:65: {CB}.instances.b.waitDurationInOpenState: waitDurationInOpenState {wait} is under 1 ms: resilience4j refuses it at start-up (\"waitDurationInOpenStateMillis must be greater than or equal to 1 millis.\")"
            )
        );
        // Not a key firedrill does not model: refused without --strict too.
        assert!(
            import_text(
                Format::Resilience4j,
                "app.properties",
                &text,
                &[],
                &Options::strict(false)
            )
            .is_err()
        );
    }
}

#[test]
fn a_rate_threshold_under_1_is_refused_as_resilience4j_refuses_it() {
    for key in ["failureRateThreshold", "slowCallRateThreshold"] {
        let text = format!("{CB}.instances.a.{key}=0.5\n");
        let said = import_text(
            Format::Resilience4j,
            "app.properties",
            &text,
            &[],
            &Options::strict(false),
        )
        .unwrap_err()
        .to_string();
        assert!(
            said.contains(&format!(
                "{key} must be between 1 and 100 (resilience4j refuses 0.5 at start-up"
            )),
            "{said}"
        );
        let one = format!("{CB}.instances.a.{key}=1\n");
        assert!(
            import_text(
                Format::Resilience4j,
                "app.properties",
                &one,
                &[],
                &Options::strict(false)
            )
            .is_ok()
        );
    }
}

#[test]
fn the_open_backoff_applies_only_at_the_level_that_sets_the_wait() {
    let below = format!(
        "{CB}.configs.default.waitDurationInOpenState=5s\n{CB}.configs.default.enableExponentialBackoff=true\n{CB}.instances.a.waitDurationInOpenState=2s\n"
    );
    assert_eq!(value(&below, "a", "breaker.wait_in_open"), "2s");
    assert_eq!(value(&below, "a", "breaker.wait_in_open_backoff"), "null");
    let same = format!(
        "{CB}.instances.a.waitDurationInOpenState=2s\n{CB}.instances.a.enableExponentialBackoff=true\n"
    );
    assert_eq!(
        value(&same, "a", "breaker.wait_in_open_backoff.multiplier"),
        "1.5"
    );
    assert_eq!(
        value(&same, "a", "breaker.wait_in_open_backoff.max"),
        "86400s"
    );
}

#[test]
fn an_open_backoff_maximum_counts_only_with_a_multiplier_and_one_below_the_wait_is_every_wait() {
    let no_multiplier = format!(
        "{CB}.instances.a.waitDurationInOpenState=2s\n{CB}.instances.a.enableExponentialBackoff=true\n{CB}.instances.a.exponentialMaxWaitDurationInOpenState=10s\n"
    );
    assert_eq!(
        value(&no_multiplier, "a", "breaker.wait_in_open_backoff.max"),
        "86400s"
    );
    let below = format!(
        "{CB}.instances.a.waitDurationInOpenState=20s\n{CB}.instances.a.enableExponentialBackoff=true\n{CB}.instances.a.exponentialBackoffMultiplier=2\n{CB}.instances.a.exponentialMaxWaitDurationInOpenState=10s\n"
    );
    assert_eq!(value(&below, "a", "breaker.wait_in_open"), "10s");
    assert_eq!(value(&below, "a", "breaker.wait_in_open_backoff"), "null");
}

#[test]
fn exception_lists_become_status_classes() {
    let ignore_404 = format!(
        "{CB}.instances.a.ignoreExceptions=org.springframework.web.client.HttpClientErrorException$NotFound\n"
    );
    assert_eq!(value(&ignore_404, "a", "breaker.count_4xx"), "true");
    assert_eq!(value(&ignore_404, "a", "breaker.ignore_statuses"), "- 404");
    let servers_only = format!(
        "{CB}.instances.a.recordExceptions=org.springframework.web.client.HttpServerErrorException,java.io.IOException,java.util.concurrent.TimeoutException\n{CB}.instances.a.ignoreExceptions[0]=org.springframework.web.client.HttpClientErrorException\n"
    );
    assert_eq!(value(&servers_only, "a", "breaker.count_4xx"), "false");
    assert_eq!(
        value(&servers_only, "a", "breaker.failure_statuses"),
        "- 5xx"
    );
    assert_eq!(
        value(&servers_only, "a", "breaker.ignore_statuses"),
        "- 4xx"
    );
    let limited = format!(
        "{CB}.instances.a.recordExceptions=java.lang.Exception\n{CB}.instances.a.ignoreExceptions=feign.FeignException$FeignClientException,feign.FeignException$ServiceUnavailable\n"
    );
    assert_eq!(
        value(&limited, "a", "breaker.ignore_statuses"),
        "- 4xx\n- 503"
    );
    let no_5xx = format!(
        "{CB}.instances.a.recordExceptions=java.io.IOException,java.util.concurrent.TimeoutException,org.springframework.web.client.HttpClientErrorException$TooManyRequests\n{CB}.instances.a.ignoreExceptions=org.springframework.web.client.HttpClientErrorException\n"
    );
    // The ignore list is read first: it takes the 429 too.
    assert_eq!(value(&no_5xx, "a", "breaker.failure_statuses"), "[]");
    assert_eq!(value(&no_5xx, "a", "breaker.ignore_statuses"), "- 4xx");
    let one_5xx = format!(
        "{CB}.instances.a.recordExceptions=java.io.IOException,java.util.concurrent.TimeoutException,org.springframework.web.client.HttpServerErrorException$BadGateway\n{CB}.instances.a.ignoreExceptions=org.springframework.web.client.HttpClientErrorException\n"
    );
    assert_eq!(value(&one_5xx, "a", "breaker.failure_statuses"), "- 502");
    let none = format!(
        "{CB}.instances.a.recordExceptions=java.io.IOException,java.util.concurrent.TimeoutException\n{CB}.instances.a.ignoreExceptions=org.springframework.web.client.HttpClientErrorException\n"
    );
    assert_eq!(value(&none, "a", "breaker.failure_statuses"), "[]");
}

/// The resilience4j demo's lists (issue 44): only the listed exceptions
/// are failures, a 4xx is a success, and an application class in
/// `ignoreExceptions` leaves the record list standing.
#[test]
fn what_the_drill_counts_as_a_failure_follows_record_exceptions() {
    let demo = format!(
        "{CB}.configs.default.recordExceptions=org.springframework.web.client.HttpServerErrorException,java.util.concurrent.TimeoutException,java.io.IOException\n{CB}.configs.default.ignoreExceptions=io.github.robwin.exception.BusinessException\n{CB}.instances.a.baseConfig=default\n"
    );
    let imported = test_support::import(
        Format::Resilience4j,
        "app.properties",
        &demo,
        &Options::strict(false),
    );
    let doc = test_support::doc(Format::Resilience4j, &imported);
    let b = &doc["routes"]["a"]["breaker"];
    assert_eq!(b["count_4xx"], Value::Bool(false));
    assert_eq!(b["failure_statuses"][0].as_str(), Some("5xx"));
    assert_eq!(b["success_statuses"][0].as_str(), Some("4xx"));
    assert_eq!(
        b["ignore_errors"],
        Value::Null,
        "timeouts and connection errors are failures"
    );
    assert_eq!(b["success_errors"], Value::Null);
    let keys: Vec<&str> = imported
        .not_drilled
        .iter()
        .map(|n| n.key.as_str())
        .collect();
    assert_eq!(keys, [format!("{CB}.configs.default.ignoreExceptions")]);
    // The breaker the drill runs counts as resilience4j counts.
    let defense: crate::defense::DefenseConfig =
        crate::schema::from_yaml_str("out.yaml", &imported.render(Format::Resilience4j, "x"))
            .unwrap();
    let c = defense.routes["a"]
        .breaker
        .as_ref()
        .unwrap()
        .classifier
        .clone();
    use crate::defense::breaker::{FailureKind, Outcome};
    assert_eq!(c.classify_status(404), Outcome::Success);
    assert_eq!(
        c.classify_status(503),
        Outcome::Failure(FailureKind::Status(503))
    );
    assert_eq!(
        c.classify_error(FailureKind::Timeout),
        Outcome::Failure(FailureKind::Timeout)
    );
}

#[test]
fn lists_that_leave_out_timeouts_or_connection_errors_count_them_as_resilience4j_does() {
    let only_app = format!("{CB}.instances.a.recordExceptions=com.shop.StockException\n");
    let imported = test_support::import(
        Format::Resilience4j,
        "app.properties",
        &only_app,
        &Options::strict(false),
    );
    let doc = test_support::doc(Format::Resilience4j, &imported);
    let b = &doc["routes"]["a"]["breaker"];
    // Only an exception firedrill never sees is recorded: every outcome it
    // sees is a success, as in resilience4j.
    assert_eq!(b["failure_statuses"], Value::Sequence(vec![]));
    assert_eq!(b["success_statuses"][0].as_str(), Some("4xx"));
    assert_eq!(b["success_errors"][0].as_str(), Some("timeout"));
    assert_eq!(b["success_errors"][1].as_str(), Some("connection"));
    assert_eq!(imported.not_drilled.len(), 1);
    let ignore_io = format!("{CB}.instances.a.ignoreExceptions=java.io.IOException\n");
    assert_eq!(
        value(&ignore_io, "a", "breaker.ignore_errors"),
        "- connection"
    );
    assert_eq!(value(&ignore_io, "a", "breaker.count_4xx"), "true");
}

#[test]
fn an_application_class_mapped_in_the_experiment_is_the_outcome_it_names() {
    let mut options = Options::strict(true);
    options
        .add_exception("com.shop.StockException=503")
        .unwrap();
    let text = format!(
        "{CB}.instances.a.recordExceptions=com.shop.StockException,java.io.IOException,java.util.concurrent.TimeoutException\n"
    );
    let imported =
        import_text(Format::Resilience4j, "app.properties", &text, &[], &options).unwrap();
    assert!(imported.not_drilled.is_empty());
    let doc = test_support::doc(Format::Resilience4j, &imported);
    let b = &doc["routes"]["a"]["breaker"];
    assert_eq!(b["failure_statuses"][0].as_u64(), Some(503));
    assert_eq!(b["success_statuses"][0].as_str(), Some("4xx"));
    // Unmapped, strict refuses it at its place.
    let err = test_support::refused(Format::Resilience4j, "app.properties", &text);
    assert!(err.starts_with("app.properties:1:"), "{err}");
    assert!(
        err.contains("`com.shop.StockException` is not an exception firedrill can tell"),
        "{err}"
    );
}

#[test]
fn retry_lists_are_drilled_when_they_retry_what_the_route_s_breaker_counts_as_failures() {
    let lists = "org.springframework.web.client.HttpServerErrorException,java.util.concurrent.TimeoutException,java.io.IOException";
    let text = format!(
        "{CB}.instances.a.recordExceptions={lists}\nresilience4j.retry.instances.a.retryExceptions={lists}\n"
    );
    let imported = test_support::import(
        Format::Resilience4j,
        "app.properties",
        &text,
        &Options::strict(true),
    );
    let printed = imported.render(Format::Resilience4j, "x");
    assert!(printed.contains("retryExceptions (line 2): resilience4j retries exactly what firedrill's retry retries here"), "{printed}");
}

#[test]
fn yaml_and_properties_with_relaxed_names_import_the_same() {
    let properties = format!(
        "{CB}.instances.a.sliding-window-size=12\n{CB}.instances.a.SLIDING_WINDOW_TYPE=time-based\n"
    );
    let yaml = "resilience4j:\n  circuitbreaker:\n    instances:\n      a:\n        slidingWindowSize: 12\n        slidingWindowType: TIME_BASED\n";
    let from_yaml = import_text(
        Format::Resilience4j,
        "app.yml",
        yaml,
        &[],
        &Options::strict(true),
    )
    .unwrap();
    let a: Value =
        serde_yaml_ng::from_str(&from_yaml.render(Format::Resilience4j, "app.yml")).unwrap();
    assert_eq!(
        a["routes"]["a"]["breaker"],
        imported(&properties)["routes"]["a"]["breaker"]
    );
    assert_eq!(
        a["routes"]["a"]["breaker"]["sliding_window_type"],
        Value::from("time")
    );
}

#[test]
fn a_key_that_changes_nothing_is_listed_as_ignored_with_why() {
    let text = format!(
        "{CB}.instances.a.registerHealthIndicator=true\n{CB}.instances.a.exponentialBackoffMultiplier=3\n"
    );
    let imported = test_support::import(
        Format::Resilience4j,
        "app.properties",
        &text,
        &Options::strict(true),
    );
    let out = imported.render(Format::Resilience4j, "app.properties");
    assert!(out.contains("# ignored: resilience4j.circuitbreaker.instances.a.registerHealthIndicator (line 1): only Spring's health endpoint"), "{out}");
    assert!(out.contains("# ignored: resilience4j.circuitbreaker.instances.a.exponentialBackoffMultiplier (line 2): no effect"), "{out}");
}

#[test]
fn only_the_instances_asked_for_are_imported_and_an_unknown_one_is_an_error() {
    let text =
        format!("{CB}.instances.a.slidingWindowSize=5\n{CB}.instances.b.slidingWindowSize=6\n");
    let one = import_text(
        Format::Resilience4j,
        "app.properties",
        &text,
        &["b".to_string()],
        &Options::strict(true),
    )
    .unwrap();
    assert_eq!(one.instance_names(), ["b"]);
    let err = import_text(
        Format::Resilience4j,
        "app.properties",
        &text,
        &["c".to_string()],
        &Options::strict(true),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "app.properties:1:1: --instance c: the file has no such instance: expected one of a, b"
    );
}

/// Each refused key: the file, the place, the key in resilience4j's terms
/// and what is not modelled.
#[test]
fn every_refused_key_says_where_and_what_is_not_modelled() {
    let i = "resilience4j.circuitbreaker.instances.a";
    let r = "resilience4j.retry.instances.a";
    let cases: Vec<(String, &str)> = vec![
        ("resilience4j.ratelimiter.instances.a.limitForPeriod=5".into(), "app.properties:1:53: resilience4j.ratelimiter.instances.a.limitForPeriod: resilience4j's RateLimiter is not modelled"),
        ("resilience4j.thread-pool-bulkhead.instances.a.queueCapacity=5".into(), "resilience4j's thread-pool bulkhead is not modelled"),
        ("resilience4j.scheduled.x=1".into(), "unknown resilience4j module `scheduled`"),
        ("resilience4j.retry.retryAspectOrder=1".into(), "the retry aspect order is not modelled"),
        (format!("{i}.slidingWindowSise=5"), "`slidingWindowSise` is not a property of a resilience4j circuitbreaker instance"),
        (format!("{i}.slidingWindowSize=0"), "slidingWindowSize must be greater than 0"),
        (format!("{i}.minimumNumberOfCalls=-1"), "minimumNumberOfCalls must be greater than 0"),
        (format!("{i}.permittedNumberOfCallsInHalfOpenState=0"), "permittedNumberOfCallsInHalfOpenState must be greater than 0"),
        (format!("{i}.failureRateThreshold=0"), "failureRateThreshold must be between 1 and 100"),
        (format!("{i}.slowCallRateThreshold=101"), "slowCallRateThreshold must be between 1 and 100"),
        (format!("{i}.slowCallDurationThreshold=0"), "slowCallDurationThreshold must be at least 1[ns]"),
        (format!("{i}.slowCallDurationThreshold=1500ns"), "1500ns is finer than firedrill's microsecond"),
        (format!("{i}.slidingWindowType=SESSION"), "invalid slidingWindowType `SESSION`"),
        (format!("{i}.waitDurationInOpenState=ten"), "invalid duration `ten`"),
        (format!("{i}.waitDurationInOpenState=1s\n{i}.enableRandomizedWait=true"), "a randomized wait in open (IntervalFunction.ofRandomized) is not modelled"),
        (format!("{i}.enableExponentialBackoff=true\n{i}.enableRandomizedWait=true"), "resilience4j refuses exponential backoff and randomized wait together"),
        (format!("{i}.waitDurationInOpenState=1s\n{i}.enableExponentialBackoff=yes\n{i}.exponentialBackoffMultiplier=0.5"), "a multiplier below 1 (0.5) shrinks the wait"),
        (format!("{i}.waitDurationInOpenState=1s\n{i}.enableExponentialBackoff=on\n{i}.exponentialBackoffMultiplier=2\n{i}.exponentialMaxWaitDurationInOpenState=100us"), "exponentialMaxWaitDurationInOpenState must be at least 1 ms"),
        (format!("{i}.automaticTransitionFromOpenToHalfOpenEnabled=sometimes"), "invalid boolean `sometimes`"),
        (format!("{i}.transitionToStateAfterWaitDuration=CLOSED"), "transitionToStateAfterWaitDuration `CLOSED` is not modelled"),
        (format!("{i}.initialState=FORCED_OPEN"), "initialState `FORCED_OPEN` is not modelled"),
        (format!("{i}.recordFailurePredicate=com.acme.Pred"), "recordFailurePredicate is Java code (com.acme.Pred): not modelled"),
        (format!("{i}.recordResultPredicate=com.acme.Pred"), "recordResultPredicate is Java code"),
        (format!("{i}.ignoreExceptionPredicate=com.acme.Pred"), "ignoreExceptionPredicate is Java code"),
        (format!("{i}.ignoreExceptions=com.acme.OutOfStock"), "ignoreExceptions: `com.acme.OutOfStock` is not an exception firedrill can tell from an HTTP answer"),
        (format!("{i}.baseConfig=missing"), "baseConfig: no config `missing` in resilience4j.circuitbreaker.configs"),
        (format!("{i}.baseConfig=a"), "`a` names the instance itself"),
        ("resilience4j.retry.configs.x.baseConfig=y\nresilience4j.retry.configs.y.baseConfig=x\nresilience4j.retry.instances.a.baseConfig=x".into(), "goes round in a circle"),
        ("resilience4j.bulkhead.instances.a.maxConcurrentCalls=0".into(), "maxConcurrentCalls 0 rejects every call: not modelled"),
        ("resilience4j.bulkhead.instances.a.maxConcurrentCalls=-2".into(), "maxConcurrentCalls must be an integer value >= 0"),
        ("resilience4j.timelimiter.instances.a.cancelRunningFuture=false".into(), "cancelRunningFuture false lets a timed-out call run on at the dependency: not modelled"),
        ("resilience4j.timelimiter.instances.a.timeoutDuration=0".into(), "timeoutDuration 0 times out every call: not modelled"),
        (format!("{r}.retryExceptions=java.io.IOException"), "retryExceptions/ignoreExceptions do not retry a timeout where firedrill's retry does: not modelled"),
        (format!("{r}.ignoreExceptions=java.io.IOException"), "do not retry a connection error where firedrill's retry does: not modelled"),
        (format!("{r}.retryExceptions=java.lang.Exception"), "retry a 4xx answer where firedrill's retry does not: not modelled"),
        (format!("{r}.retryExceptionPredicate=com.acme.P"), "retryExceptionPredicate is not modelled"),
        (format!("{r}.resultPredicate=com.acme.P"), "resultPredicate is not modelled"),
        (format!("{r}.intervalBiFunction=com.acme.F"), "intervalBiFunction is not modelled"),
        (format!("{r}.consumeResultBeforeRetryAttempt=com.acme.C"), "consumeResultBeforeRetryAttempt is not modelled"),
        (format!("{r}.maxAttempts=-1"), "maxAttempts must be greater than or equal to 1"),
        (format!("{r}.waitDuration=1s\n{r}.enableRandomizedWait=true"), "a randomized retry wait (IntervalFunction.ofRandomized / ofExponentialRandomBackoff) is not modelled"),
        (format!("{r}.waitDuration=1s\n{r}.enableExponentialBackoff=true"), "an exponential retry backoff with multiplier 1.5"),
        (format!("{r}.waitDuration=0\n{r}.enableExponentialBackoff=true"), "an exponential backoff from a wait under 1 ms"),
        (format!("{i}.permittedNumberOfCallsInHalfOpenState=\\u12"), "invalid escape"),
        ("spring.application.name=shop".into(), "no resilience4j instance"),
    ];
    test_support::assert_refused(Format::Resilience4j, "app.properties", &cases);
}
