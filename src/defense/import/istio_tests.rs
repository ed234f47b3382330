//! The Istio import: a DestinationRule reads as the Envoy cluster Istio
//! generates from it, each value located at its DestinationRule key.

use super::test_support::*;
use super::{Format, Options};

/// The DestinationRule of Istio's circuit-breaking task, as
/// `fixtures/import/real/istio/destination-rule.yaml` holds it.
const TASK: &str = include_str!("../../../fixtures/import/real/istio/destination-rule.yaml");

fn listed(text: &str) -> Vec<String> {
    import(Format::Istio, "dr.yaml", text, &Options::strict(false))
        .not_drilled
        .iter()
        .map(|n| format!("{}:{}", n.key, n.line))
        .collect()
}

#[test]
fn the_circuit_breaking_task_lists_exactly_its_connection_limit_and_the_default_balancer() {
    assert_eq!(
        listed(TASK),
        [
            "spec.trafficPolicy.loadBalancer:8",
            "spec.trafficPolicy.connectionPool.tcp.maxConnections:10",
        ]
    );
    let doc = doc(
        Format::Istio,
        &import(Format::Istio, "dr.yaml", TASK, &Options::strict(false)),
    );
    let od = &doc["pools"]["httpbin"]["outlier_detection"];
    assert_eq!(od["consecutive_5xx"].as_u64(), Some(1));
    assert_eq!(od["interval"].as_str(), Some("1s"));
    assert_eq!(od["base_ejection_time"].as_str(), Some("180s"));
    assert_eq!(od["max_ejection_percent"].as_str(), Some("100%"));
    assert_eq!(od["panic_threshold"].as_str(), Some("0%"));
}

#[test]
fn strict_refuses_the_task_at_each_listed_key() {
    let err = refused(Format::Istio, "dr.yaml", TASK);
    assert!(err.contains("dr.yaml:10:"), "{err}");
    assert!(err.contains("LEAST_REQUEST"), "{err}");
}

/// The Envoy cluster Istio writes for a rule, imported as Envoy, drills
/// what the rule imported as Istio drills.
#[test]
fn a_rule_and_the_envoy_cluster_istio_generates_from_it_import_alike() {
    let rule = "spec:\n  host: shop\n  trafficPolicy:\n    loadBalancer:\n      simple: ROUND_ROBIN\n    connectionPool:\n      http:\n        http2MaxRequests: 7\n    outlierDetection:\n      consecutiveGatewayErrors: 2\n      interval: 2m\n      baseEjectionTime: 1.5s\n      maxEjectionPercent: 100\n      minHealthPercent: 40\n";
    let cluster = "clusters:\n- name: shop\n  lb_policy: ROUND_ROBIN\n  load_assignment:\n    endpoints:\n    - lb_endpoints:\n      - endpoint: { address: { socket_address: { address: shop, port_value: 80 } } }\n  circuit_breakers:\n    thresholds:\n    - { max_requests: 7, max_connections: 4294967295, max_pending_requests: 4294967295, max_retries: 4294967295 }\n  common_lb_config: { healthy_panic_threshold: { value: 40 } }\n  outlier_detection:\n    enforcing_success_rate: 0\n    consecutive_gateway_failure: 2\n    enforcing_consecutive_gateway_failure: 100\n    interval: 120s\n    base_ejection_time: 1.5s\n    max_ejection_percent: 100\nvirtual_hosts:\n- routes:\n  - match: { prefix: / }\n    route: { cluster: shop, timeout: 0s }\n";
    let istio = imported(Format::Istio, "dr.yaml", rule);
    let envoy = imported(Format::Envoy, "envoy.yaml", cluster);
    assert_eq!(istio, envoy);
}

#[test]
fn least_request_and_least_conn_are_listed_as_envoy_lists_least_request() {
    let rule = |lb: &str| {
        format!("spec:\n  host: shop\n  trafficPolicy:\n    loadBalancer:\n      simple: {lb}\n")
    };
    for lb in ["LEAST_REQUEST", "LEAST_CONN"] {
        assert_eq!(
            listed(&rule(lb)),
            ["spec.trafficPolicy.loadBalancer.simple:5"]
        );
    }
    assert_eq!(listed(&rule("ROUND_ROBIN")), Vec::<String>::new());
}

#[test]
fn a_bad_duration_or_kind_is_refused_at_its_key() {
    assert_refused(
        Format::Istio,
        "dr.yaml",
        &[
            (
                "spec:\n  host: a\n  trafficPolicy:\n    outlierDetection:\n      interval: soon\n",
                "dr.yaml:5:17",
            ),
            (
                "kind: VirtualService\nspec:\n  host: a\n",
                "expected DestinationRule",
            ),
            ("spec:\n  trafficPolicy: {}\n", "expected spec.host"),
        ],
    );
}
