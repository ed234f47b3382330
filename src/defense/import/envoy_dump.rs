//! An Envoy configuration as Envoy prints it back: `istioctl proxy-config
//! cluster -o yaml` (or `-o json`) and Envoy's own dumps write protobuf's
//! JSON names (`lbPolicy`, `outlierDetection`), print a bare list of
//! clusters, and a mesh's clusters take their endpoints from EDS. This
//! translates such a file into the names the reader reads, each node with
//! the key of the file it came from, so every value and every refusal
//! still names the file's own key and line.

use serde_yaml_ng::{Mapping, Value};

use super::reader::Origin;
use crate::schema::Segment;

/// Each translated path and the key of the file it came from.
pub(super) type Origins = Vec<(Vec<Segment>, Origin)>;

/// `root` in the reader's names, with each node's origin; `None` when the
/// file already uses them (a bootstrap as written by hand).
pub(super) fn translate(root: &Value) -> Option<(Value, Origins)> {
    let listed = matches!(root, Value::Sequence(_));
    if !listed && !camel_anywhere(root) {
        return None;
    }
    let mut origins = Origins::new();
    let key = |k: &str| Segment::Key(k.to_string());
    let (mut translated, at) = if listed {
        let at = vec![key("clusters")];
        let mut top = Mapping::new();
        top.insert(Value::from("clusters"), snake(root, &[], &at, &mut origins));
        (Value::Mapping(top), at)
    } else {
        let translated = snake(root, &[], &[], &mut origins);
        let at = match translated.get("static_resources") {
            Some(_) => vec![key("static_resources"), key("clusters")],
            None => vec![key("clusters")],
        };
        (translated, at)
    };
    mesh_endpoints(&mut translated, &at, &mut origins);
    Some((translated, origins))
}

/// Whether a key of `value` is written in protobuf's JSON names.
fn camel_anywhere(value: &Value) -> bool {
    match value {
        Value::Mapping(m) => m.iter().any(|(k, v)| {
            k.as_str()
                .is_some_and(|k| !k.starts_with('@') && k.chars().any(|c| c.is_ascii_uppercase()))
                || camel_anywhere(v)
        }),
        Value::Sequence(items) => items.iter().any(camel_anywhere),
        _ => false,
    }
}

/// `lbPolicy` → `lb_policy`; `@type` and snake names as they are.
fn snake_key(key: &str) -> String {
    if key.starts_with('@') {
        return key.to_string();
    }
    let mut out = String::with_capacity(key.len() + 4);
    for (i, c) in key.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    // protobuf's JSON name of `consecutive_5xx` is `consecutive5xx`.
    out.replace("consecutive5xx", "consecutive_5xx")
}

/// `value` (at `from` in the file) with snake-case keys, at `to`; every
/// node's origin recorded.
fn snake(value: &Value, from: &[Segment], to: &[Segment], origins: &mut Origins) -> Value {
    origins.push((to.to_vec(), Origin::Key(from.to_vec())));
    match value {
        Value::Mapping(m) => {
            let mut out = Mapping::new();
            for (k, v) in m {
                let Some(key) = k.as_str() else {
                    out.insert(k.clone(), v.clone());
                    continue;
                };
                let name = snake_key(key);
                let child_from = [from, &[Segment::Key(key.to_string())]].concat();
                let child_to = [to, &[Segment::Key(name.clone())]].concat();
                out.insert(Value::from(name), snake(v, &child_from, &child_to, origins));
            }
            Value::Mapping(out)
        }
        Value::Sequence(items) => Value::Sequence(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let child_from = [from, &[Segment::Index(i)]].concat();
                    let child_to = [to, &[Segment::Index(i)]].concat();
                    snake(v, &child_from, &child_to, origins)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The service a mesh cluster's name carries: Istio names an outbound
/// cluster `outbound|PORT|SUBSET|HOST`.
fn mesh_service(name: &str) -> Option<(String, u16)> {
    let mut parts = name.split('|');
    let (Some("outbound"), Some(port), Some(_subset), Some(host), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return None;
    };
    Some((host.to_string(), port.parse().ok()?))
}

/// Each EDS cluster of a mesh gets the one server its name carries (the
/// service, as the mesh's clients call it) in place of the endpoints EDS
/// would send, its origin the name; its `eds_cluster_config` is read as
/// that.
fn mesh_endpoints(root: &mut Value, at: &[Segment], origins: &mut Origins) {
    let mut node = Some(&mut *root);
    for segment in at {
        node = match (node, segment) {
            (Some(v), Segment::Key(k)) => v.get_mut(k.as_str()),
            _ => None,
        };
    }
    let Some(Value::Sequence(clusters)) = node else {
        return;
    };
    for (i, cluster) in clusters.iter_mut().enumerate() {
        let Value::Mapping(c) = cluster else { continue };
        if c.contains_key("load_assignment") {
            continue;
        }
        let eds_name = c
            .get("eds_cluster_config")
            .and_then(|e| e.get("service_name"))
            .and_then(Value::as_str);
        let (named, key) = match eds_name {
            Some(n) => (n, vec!["eds_cluster_config", "service_name"]),
            None => match c.get("name").and_then(Value::as_str) {
                Some(n) => (n, vec!["name"]),
                None => continue,
            },
        };
        let Some((host, port)) = mesh_service(named) else {
            continue;
        };
        let cluster_at = [at, &[Segment::Index(i)]].concat();
        let name_at: Vec<Segment> = [
            cluster_at.clone(),
            key.iter().map(|k| Segment::Key((*k).to_string())).collect(),
        ]
        .concat();
        let from = origins
            .iter()
            .find(|(p, _)| *p == name_at)
            .map(|(_, o)| o.clone());
        let assignment: Value = serde_yaml_ng::from_str(&format!(
            "endpoints: [{{ lb_endpoints: [{{ endpoint: {{ address: {{ socket_address: {{ address: '{host}', port_value: {port} }} }} }} }}] }}]"
        ))
        .expect("a literal");
        c.remove("eds_cluster_config");
        c.insert(Value::from("load_assignment"), assignment);
        if let Some(from) = from {
            let to = [
                cluster_at,
                vec![Segment::Key("load_assignment".to_string())],
            ]
            .concat();
            origins.push((to, from));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one server a translated cluster got: its address and port.
    fn server(cluster: &Value) -> (&Value, &Value) {
        let socket = &cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]
            ["socket_address"];
        (&socket["address"], &socket["port_value"])
    }

    #[test]
    fn protobuf_json_names_become_the_readers_names() {
        assert_eq!(snake_key("lbPolicy"), "lb_policy");
        assert_eq!(snake_key("consecutive5xx"), "consecutive_5xx");
        assert_eq!(
            snake_key("enforcingConsecutive5xx"),
            "enforcing_consecutive_5xx"
        );
        assert_eq!(snake_key("maxEjectionPercent"), "max_ejection_percent");
        assert_eq!(snake_key("@type"), "@type");
        assert_eq!(snake_key("max_requests"), "max_requests");
    }

    #[test]
    fn an_istio_cluster_name_carries_its_service_and_port() {
        assert_eq!(
            mesh_service("outbound|8000||httpbin.default.svc.cluster.local"),
            Some(("httpbin.default.svc.cluster.local".to_string(), 8000))
        );
        assert_eq!(
            mesh_service("outbound|9080|v1|reviews.default.svc.cluster.local").map(|s| s.1),
            Some(9080)
        );
        assert_eq!(mesh_service("inbound|8080||"), None);
        assert_eq!(mesh_service("BlackHoleCluster"), None);
        assert_eq!(mesh_service("outbound|port||h"), None);
    }

    #[test]
    fn a_dumped_bootstrap_keeps_its_static_resources_and_gets_its_mesh_servers() {
        let root: Value = serde_yaml_ng::from_str(
            "staticResources:\n  clusters:\n  - name: outbound|9080||reviews.default.svc.cluster.local\n    type: EDS\n",
        )
        .unwrap();
        let (t, _) = translate(&root).unwrap();
        let (address, port) = server(&t["static_resources"]["clusters"][0]);
        assert_eq!(*address, Value::from("reviews.default.svc.cluster.local"));
        assert_eq!(*port, Value::from(9080));
    }

    #[test]
    fn a_hand_written_bootstrap_is_read_as_it_is() {
        let root: Value =
            serde_yaml_ng::from_str("clusters:\n- name: a\n  lb_policy: ROUND_ROBIN\n").unwrap();
        assert!(translate(&root).is_none());
    }

    #[test]
    fn a_listed_mesh_cluster_gets_its_service_as_its_server_with_its_origin() {
        let root: Value = serde_yaml_ng::from_str(
            "- name: outbound|8000||httpbin.default.svc.cluster.local\n  type: EDS\n  edsClusterConfig:\n    serviceName: outbound|8000||httpbin.default.svc.cluster.local\n  lbPolicy: LEAST_REQUEST\n",
        )
        .unwrap();
        let (t, origins) = translate(&root).unwrap();
        let c = &t["clusters"][0];
        assert_eq!(c["lb_policy"], Value::from("LEAST_REQUEST"));
        assert!(c.get("eds_cluster_config").is_none());
        let (address, port) = server(c);
        assert_eq!(*address, Value::from("httpbin.default.svc.cluster.local"));
        assert_eq!(*port, Value::from(8000));
        let key = |k: &str| Segment::Key(k.to_string());
        let assignment = vec![key("clusters"), Segment::Index(0), key("load_assignment")];
        let from = origins
            .iter()
            .find(|(p, _)| *p == assignment)
            .map(|(_, o)| o);
        assert!(
            matches!(from, Some(Origin::Key(p)) if *p == vec![Segment::Index(0), key("edsClusterConfig"), key("serviceName")]),
            "{from:?}"
        );
    }
}
