//! A cluster's `outlier_detection` → the pool's `outlier_detection`: the
//! consecutive-error ejection is mapped key by key with Envoy's defaults
//! (`DetectorConfig`), the parts firedrill does not model are refused
//! where they could act and noted where they cannot.

use super::{At, Reader};
use crate::defense::import::tree::Node;
use crate::schema::units::Dur;

/// Keys that act only with `split_external_local_origin_errors: true`
/// (refused), so are inert without it.
const SPLIT_ONLY: &[&str] = &[
    "consecutive_local_origin_failure",
    "enforcing_consecutive_local_origin_failure",
    "enforcing_local_origin_success_rate",
];

/// Keys read where another decides whether they act.
const READ_ELSEWHERE: &[&str] = &[
    "success_rate_minimum_hosts",
    "success_rate_request_volume",
    "success_rate_stdev_factor",
    "failure_percentage_threshold",
    "failure_percentage_minimum_hosts",
    "failure_percentage_request_volume",
];

/// A whole number of the detector and where it came from (`default`
/// when absent).
fn number(r: &mut Reader, od: &At, key: &str, default: u64) -> (u64, String) {
    match od.get(key) {
        Some(at) => (r.whole(&at).unwrap_or(default), r.from(&at)),
        None => (default, format!("Envoy default: {key} {default}")),
    }
}

/// An `enforcing_*` percentage: 0 or 100, any other is a dice roll per
/// ejection (Envoy's `featureEnabled`) and refused.
fn enforced(r: &mut Reader, od: &At, key: &str, default: u64) -> (bool, String) {
    let (n, from) = number(r, od, key, default);
    if n != 0 && n != 100 {
        let at = od.get(key).expect("not a default");
        r.refuse(&at, format!("{key} {n}: Envoy enforces an ejection with a chance of {n} %, drawn from its own random source: not modelled (0 or 100)"));
    }
    (n != 0, from)
}

/// A duration of the detector, in firedrill's text, and where it came from.
fn duration(r: &mut Reader, od: &At, key: &str, default: &str) -> (String, String) {
    match od.get(key) {
        Some(at) => (
            r.duration(&at)
                .map_or(default.to_string(), |d| Dur(d).to_string()),
            r.from(&at),
        ),
        None => (
            default.to_string(),
            format!("Envoy default: {key} {default}"),
        ),
    }
}

/// The pool's `outlier_detection` for a cluster of `hosts` endpoints;
/// `panic` is the pool's `panic_threshold` (from `common_lb_config`).
pub(super) fn outlier(r: &mut Reader, od: &At, hosts: usize, panic: Node) -> Node {
    let mut node = Node::map();
    let (c5xx, from5xx) = number(r, od, "consecutive_5xx", 5);
    let (on5xx, why5xx) = enforced(r, od, "enforcing_consecutive_5xx", 100);
    node.set(
        "consecutive_5xx",
        match on5xx {
            true => Node::leaf(c5xx.to_string(), from5xx),
            false => Node::leaf("0", format!("off: {why5xx}")),
        },
    );
    let (cgw, fromgw) = number(r, od, "consecutive_gateway_failure", 5);
    let (ongw, whygw) = enforced(r, od, "enforcing_consecutive_gateway_failure", 0);
    node.set(
        "consecutive_gateway_failure",
        match ongw {
            true => Node::leaf(cgw.to_string(), fromgw),
            false => Node::leaf("0", format!("off: {whygw} (detected, never enforced)")),
        },
    );
    let (interval, from) = duration(r, od, "interval", "10s");
    node.set("interval", Node::leaf(interval, from));
    let (base, from) = duration(r, od, "base_ejection_time", "30s");
    node.set("base_ejection_time", Node::leaf(base, from));
    if od.get("max_ejection_time").is_some() {
        let (max, from) = duration(r, od, "max_ejection_time", "300s");
        node.set("max_ejection_time", Node::leaf(max, from));
    } else {
        node.note("max_ejection_time: Envoy default 300s, or base_ejection_time if longer");
    }
    let (pct, from) = number(r, od, "max_ejection_percent", 10);
    if pct > 100 {
        let at = od.get("max_ejection_percent").expect("not a default");
        r.refuse(
            &at,
            format!("max_ejection_percent {pct}: expected at most 100"),
        );
    }
    node.set("max_ejection_percent", Node::leaf(format!("{pct}%"), from));
    let one = od.get("always_eject_one_host");
    if let Some(at) = &one {
        node.set("always_eject_one_host", Node::leaf(at.text(), r.from(at)));
    }
    let one = one.is_some_and(|at| at.text() == "true");
    if !one && 100 > pct * hosts as u64 {
        node.note(format!(
            "no host can be ejected: one of {hosts} is more than {pct}%"
        ));
    }
    node.set("panic_threshold", panic);
    others(r, od, hosts, &mut node);
    node
}

/// The detector's other keys: refused where they could act, noted where
/// they cannot.
fn others(r: &mut Reader, od: &At, hosts: usize, node: &mut Node) {
    let (success_rate, _) = number(r, od, "enforcing_success_rate", 100);
    let (minimum, _) = number(r, od, "success_rate_minimum_hosts", 5);
    let split = od.get("split_external_local_origin_errors");
    let split_on = split.as_ref().is_some_and(|s| s.text() == "true");
    if success_rate > 0 && hosts as u64 >= minimum {
        r.refuse(od, format!("success-rate ejection (enforcing_success_rate {success_rate}, on by default) is not modelled and can act here: {hosts} hosts, success_rate_minimum_hosts {minimum}; set enforcing_success_rate: 0 to drill the consecutive-error ejection alone"));
    } else {
        node.note(format!(
            "success-rate ejection cannot act: {}",
            if success_rate == 0 {
                "enforcing_success_rate 0".to_string()
            } else {
                format!("{hosts} hosts, fewer than success_rate_minimum_hosts {minimum}")
            }
        ));
    }
    for key in od.keys() {
        let at = od.get(&key).expect("a key");
        let text = at.text();
        match key.as_str() {
            "consecutive_5xx" | "enforcing_consecutive_5xx" | "consecutive_gateway_failure"
            | "enforcing_consecutive_gateway_failure" | "interval" | "base_ejection_time"
            | "max_ejection_time" | "max_ejection_percent" | "always_eject_one_host"
            | "enforcing_success_rate" => {}
            "max_ejection_time_jitter" if r.duration(&at).is_some_and(|d| d.is_zero()) => {}
            "max_ejection_time_jitter" => r.refuse(&at, "a random jitter added to each ejection, drawn from Envoy's own random source: not modelled (0s)"),
            "split_external_local_origin_errors" if !split_on => {}
            "split_external_local_origin_errors" => r.refuse(&at, "split_external_local_origin_errors: local-origin errors (connect failures, timeouts) counted apart from the answers' 5xx is not modelled: firedrill counts a refused connection as a 503 and a timeout as a 504, as Envoy does without the split"),
            "enforcing_failure_percentage" | "enforcing_failure_percentage_local_origin" if text == "0" => {}
            "enforcing_failure_percentage" | "enforcing_failure_percentage_local_origin" => r.refuse(&at, format!("failure-percentage ejection ({key} {text}) judges each host's failures over an interval: not modelled (0)")),
            "monitors" => r.refuse(&at, "outlier detection extension monitors are not modelled"),
            "successful_active_health_check_uneject_host" => node.note(format!("ignored: {}: acts only with active health checks (refused)", r.from(&at))),
            k if SPLIT_ONLY.contains(&k) && !split_on => node.note(format!("ignored: {}: acts only with split_external_local_origin_errors", r.from(&at))),
            k if READ_ELSEWHERE.contains(&k) => node.note(format!("ignored: {}: a setting of the success-rate or failure-percentage ejection, which cannot act here", r.from(&at))),
            k if SPLIT_ONLY.contains(&k) => {}
            other => r.refuse(&at, format!("`{other}` of outlier_detection is not modelled")),
        }
    }
}
