//! The Envoy mapping: endpoints, the request limit, the route timeout, and
//! every refused key with its message.

use serde_yaml_ng::Value;

use super::{Format, test_support};

/// A bootstrap with one cluster (its extra keys `cluster`) and one route
/// to it (its extra keys `route`).
fn config(cluster: &str, route: &str) -> String {
    format!(
        "static_resources:\n  listeners:\n    - filter_chains:\n        - filters:\n            - typed_config:\n                route_config:\n                  virtual_hosts:\n                    - routes:\n                        - match: {{ prefix: /s/ }}\n                          route:\n                            cluster: s\n{route}\n  clusters:\n    - name: s\n{cluster}\n      load_assignment:\n        endpoints:\n          - lb_endpoints:\n              - endpoint: {{ address: {{ socket_address: {{ address: a, port_value: 1 }} }} }}\n              - endpoint: {{ address: {{ socket_address: {{ address: b, port_value: 2 }} }} }}\n"
    )
}

fn imported(text: &str) -> Value {
    test_support::imported(Format::Envoy, "envoy.yaml", text)
}

#[test]
fn defaults_are_envoys_and_the_request_limit_is_the_routes_bulkhead() {
    let doc = imported(&config("", ""));
    let route = &doc["routes"]["s"];
    assert_eq!(route["match"], Value::from("/s/*"));
    assert_eq!(route["timeout"], Value::from("15s"));
    assert_eq!(route["bulkhead"]["max_concurrent"], Value::from(1024));
    let pool = &doc["pools"]["s"];
    assert_eq!(pool["max_fails"], Value::from(0));
    assert_eq!(pool["servers"][1]["address"], Value::from("b:2"));
    let limited = imported(&config(
        "      circuit_breakers: { thresholds: [{ max_requests: 7 }] }",
        "                            timeout: 0.5s",
    ));
    assert_eq!(
        limited["routes"]["s"]["bulkhead"]["max_concurrent"],
        Value::from(7)
    );
    assert_eq!(limited["routes"]["s"]["timeout"], Value::from("500ms"));
    let off = imported(&config("", "                            timeout: 0s"));
    assert_eq!(off["routes"]["s"]["timeout"], Value::Null);
}

#[test]
fn every_refused_key_says_where_and_what_is_not_modelled() {
    let cases = [
        (config("      outlier_detection: { enforcing_consecutive_5xx: 50 }", ""), "envoy.yaml:15:55: static_resources.clusters[0].outlier_detection.enforcing_consecutive_5xx: enforcing_consecutive_5xx 50: Envoy enforces an ejection with a chance of 50 %"),
        (config("      outlier_detection: { enforcing_consecutive_gateway_failure: 30 }", ""), "enforcing_consecutive_gateway_failure 30: Envoy enforces an ejection with a chance of 30 %"),
        (config("      outlier_detection: { max_ejection_time_jitter: 1s }", ""), "a random jitter added to each ejection"),
        (config("      outlier_detection: { split_external_local_origin_errors: true }", ""), "split_external_local_origin_errors: local-origin errors"),
        (config("      outlier_detection: { success_rate_minimum_hosts: 2 }", ""), "success-rate ejection (enforcing_success_rate 100, on by default) is not modelled and can act here: 2 hosts"),
        (config("      outlier_detection: { enforcing_failure_percentage: 100 }", ""), "failure-percentage ejection (enforcing_failure_percentage 100)"),
        (config("      outlier_detection: { monitors: [] }", ""), "extension monitors are not modelled"),
        (config("      outlier_detection: { max_ejection_percent: 150 }", ""), "max_ejection_percent 150: expected at most 100"),
        (config("      outlier_detection: { ejections: 1 }", ""), "`ejections` of outlier_detection is not modelled"),
        (config("      outlier_detection: { interval: often }", ""), "invalid duration `often`"),
        (config("      outlier_detection: {}\n      common_lb_config: { healthy_panic_threshold: { value: 120 } }", ""), "invalid percentage `120`"),
        (config("      common_lb_config: { zone_aware_lb_config: {} }", ""), "`zone_aware_lb_config` of common_lb_config"),
        (config("      health_checks: [{ timeout: 1s }]", ""), "Envoy's active health checks are not modelled"),
        (config("      lb_policy: LEAST_REQUEST", ""), "lb_policy LEAST_REQUEST is not modelled"),
        (config("      lb_policy: RING_HASH", ""), "lb_policy RING_HASH is not modelled"),
        (config("      round_robin_lb_config: { slow_start_config: { slow_start_window: 30s } }", ""), "`round_robin_lb_config` (slow start, the choice of two) is not modelled"),
        (config("      eds_cluster_config: {}", ""), "EDS endpoints come from a management server"),
        (config("      upstream_bind_config: {}", ""), "`upstream_bind_config` of a cluster is not modelled"),
        (config("      circuit_breakers: { thresholds: [{ max_requests: 50, max_connections: 10 }] }", ""), "max_connections below max_requests queues requests for a connection"),
        (config("      circuit_breakers: { thresholds: [{ retry_budget: { budget_percent: { value: 20 } } }] }", ""), "a retry budget is not modelled"),
        (config("      circuit_breakers: { thresholds: [{ max_connection_pools: 3 }] }", ""), "`max_connection_pools` of circuit_breakers is not modelled"),
        (config("", "                            retry_policy: { retry_on: 5xx, num_retries: 2 }"), "Envoy's retries are not modelled: its backoff draws each wait uniformly in whole milliseconds"),
        (config("", "                            timeout: soon"), "invalid duration `soon`"),
        (config("      circuit_breakers: { thresholds: [{ max_requests: many }] }", ""), "invalid number `many`"),
        ("clusters:\n  - name: s\n    load_assignment: { endpoints: [{ priority: 1, lb_endpoints: [] }] }\n".to_string(), "a priority above 0 takes traffic as the higher priority's hosts become unhealthy"),
        ("clusters:\n  - name: s\n    load_assignment: { endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: a, port_value: 1 } } }, load_balancing_weight: 2 }, { endpoint: { address: { socket_address: { address: b, port_value: 1 } } } }] }] }\n".to_string(), "unequal load_balancing_weight"),
        ("clusters:\n  - name: s\n".to_string(), "a cluster without load_assignment.endpoints"),
        ("clusters:\n  - type: STATIC\n".to_string(), "a cluster without a name"),
        ("admin: {}\n".to_string(), "no cluster"),
        (config("", "").replace("                    - routes:", "                    - retry_policy: { num_retries: 2 }\n                      routes:"), "envoy.yaml:8:37: static_resources.listeners[0].filter_chains[0].filters[0].typed_config.route_config.virtual_hosts[0].retry_policy: Envoy's retries are not modelled"),
    ];
    test_support::assert_refused(Format::Envoy, "envoy.yaml", &cases);
}

#[test]
fn a_second_route_to_one_cluster_and_a_weighted_split_are_refused() {
    let two = config(
        "",
        "                        - match: { prefix: /t/ }\n                          route: { cluster: s }",
    );
    assert!(
        test_support::refused(Format::Envoy, "envoy.yaml", &two)
            .contains("a second route to cluster `s`"),
        "{}",
        test_support::refused(Format::Envoy, "envoy.yaml", &two)
    );
    let split = config(
        "",
        "                        - match: { prefix: /t/ }\n                          route: { weighted_clusters: { clusters: [{ name: s, weight: 1 }] } }",
    );
    assert!(
        test_support::refused(Format::Envoy, "envoy.yaml", &split)
            .contains("weighted_clusters split a route's calls"),
        "{}",
        test_support::refused(Format::Envoy, "envoy.yaml", &split)
    );
}

#[test]
fn outlier_detection_takes_envoys_defaults_and_its_enforcement() {
    let doc = imported(&config("      outlier_detection: {}", ""));
    let od = &doc["pools"]["s"]["outlier_detection"];
    assert_eq!(doc["pools"]["s"]["max_fails"], Value::from(0));
    assert_eq!(od["consecutive_5xx"], Value::from(5));
    // Detected by default, never enforced (enforcing_consecutive_gateway_failure 0).
    assert_eq!(od["consecutive_gateway_failure"], Value::from(0));
    assert_eq!(od["interval"], Value::from("10s"));
    assert_eq!(od["base_ejection_time"], Value::from("30s"));
    assert_eq!(od["max_ejection_percent"], Value::from("10%"));
    assert_eq!(od["panic_threshold"], Value::from("50%"));
    let set = imported(&config(
        "      outlier_detection: { consecutive_5xx: 2, enforcing_consecutive_5xx: 0, consecutive_gateway_failure: 4, enforcing_consecutive_gateway_failure: 100, max_ejection_time: 90s, max_ejection_percent: 100, always_eject_one_host: true, enforcing_success_rate: 0 }\n      common_lb_config: { healthy_panic_threshold: { value: 25 } }",
        "",
    ));
    let od = &set["pools"]["s"]["outlier_detection"];
    assert_eq!(od["consecutive_5xx"], Value::from(0), "enforcing 0: off");
    assert_eq!(od["consecutive_gateway_failure"], Value::from(4));
    assert_eq!(od["max_ejection_time"], Value::from("90s"));
    assert_eq!(od["max_ejection_percent"], Value::from("100%"));
    assert_eq!(od["always_eject_one_host"], Value::from(true));
    assert_eq!(od["panic_threshold"], Value::from("25%"));
}
