//! Istio `DestinationRule` YAML: translated into the Envoy cluster Istio
//! generates from it (pilot's `cluster_traffic_policy.go`:
//! `applyConnectionPool`, `applyOutlierDetection`, `applyLoadBalancer`)
//! and read by the Envoy import, so each setting is drilled exactly as its
//! Envoy counterpart is; every value is commented and every refusal located
//! at the DestinationRule key it came from (docs/import.md).

use serde_yaml_ng::{Mapping, Value};

use super::Imported;
use super::envoy::{self, Origin, Reader, lb_refusal};
use super::envoy_keys;
use super::not_drilled::{NotDrilled, Why};
use super::source::{Entry, Source};
use crate::schema::{self, SchemaError, Segment};

#[path = "istio_value.rs"]
mod value;
use value::{segments, set};

/// Istio's circuit-breaker thresholds when the DestinationRule leaves
/// them out (`getDefaultCircuitBreakerThresholds`: `math.MaxUint32`).
const UNLIMITED: u64 = 4_294_967_295;

/// The Envoy cluster being written, with where each of its keys came from.
struct Translation<'a> {
    /// The file as the user named it.
    file: &'a str,
    /// Its text, where keys are located.
    text: &'a str,
    /// The Envoy configuration: `clusters` and `virtual_hosts`.
    envoy: Value,
    /// Where each Envoy key came from.
    origins: Vec<(Vec<Segment>, Origin)>,
    /// Keys of the DestinationRule refused (not modelled, or invalid).
    problems: Vec<SchemaError>,
}

/// A duration as Kubernetes takes it for a protobuf `Duration` (`1s`,
/// `3m`, `180.000s`, `1h30m`, `500ms`) → seconds as Envoy's YAML writes
/// them (`180s`).
fn envoy_seconds(text: &str) -> Option<String> {
    let mut rest = text.trim();
    let mut total = 0.0;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let n: f64 = rest[..number_end].parse().ok()?;
        let unit_end = rest[number_end..]
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .map_or(rest.len(), |i| number_end + i);
        let unit = match &rest[number_end..unit_end] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        total += n * unit;
        rest = &rest[unit_end..];
    }
    Some(format!("{total}s"))
}

impl Translation<'_> {
    /// Sets the Envoy key `envoy` to `value`, from `origin`.
    fn put(&mut self, envoy: &str, value: Value, origin: Origin) {
        let path = segments(envoy);
        set(&mut self.envoy, &path, value);
        self.origins.push((path, origin));
    }

    /// Sets the Envoy key `envoy` to the value of the DestinationRule's
    /// key `at` (a duration translated), from that key.
    fn take(&mut self, envoy: &str, at: &[Segment], value: &Value, duration: bool) {
        let value = match duration {
            false => value.clone(),
            true => {
                match envoy_seconds(value.as_str().unwrap_or_default()) {
                    Some(s) => Value::from(s),
                    None => {
                        self.refuse(at, format!("invalid duration `{}`: expected a duration such as 1s, 3m or 500ms", scalar(value)));
                        return;
                    }
                }
            }
        };
        self.put(envoy, value, Origin::Key(at.to_vec()));
    }

    fn refuse(&mut self, at: &[Segment], message: impl Into<String>) {
        self.problems
            .push(SchemaError::at(self.file, self.text, at, message));
    }

    /// Refuses every value under the key `at` (each leaf, so that setting
    /// one aside blanks its lines alone).
    fn refuse_all(&mut self, at: &[Segment], value: &Value, message: &str) {
        match value {
            Value::Mapping(m) if !m.is_empty() => {
                for (k, v) in m {
                    let key = k.as_str().map_or_else(|| scalar(k), str::to_string);
                    self.refuse_all(&under(at, &key), v, message);
                }
            }
            Value::Sequence(items) if !items.is_empty() => {
                for (i, v) in items.iter().enumerate() {
                    let mut p = at.to_vec();
                    p.push(Segment::Index(i));
                    self.refuse_all(&p, v, message);
                }
            }
            _ => self.refuse(at, message),
        }
    }
}

/// A scalar's text.
fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => String::new(),
    }
}

/// `path` with `key` added.
fn under(path: &[Segment], key: &str) -> Vec<Segment> {
    let mut p = path.to_vec();
    p.push(Segment::Key(key.to_string()));
    p
}

/// Each key of the mapping at `path`, with its value and path.
fn entries(value: Option<&Value>, path: &[Segment]) -> Vec<(String, Value, Vec<Segment>)> {
    let Some(Value::Mapping(m)) = value else {
        return Vec::new();
    };
    // A key left empty had every line under it set aside (listed).
    m.iter()
        .filter(|(_, v)| !v.is_null())
        .filter_map(|(k, v)| {
            k.as_str()
                .map(|k| (k.to_string(), v.clone(), under(path, k)))
        })
        .collect()
}

/// The cluster's Envoy path.
const CLUSTER: &str = "clusters[0]";
/// Its circuit-breaker thresholds' Envoy path.
const LIMITS: &str = "clusters[0].circuit_breakers.thresholds[0]";
/// Its outlier detection's Envoy path.
const OUTLIER: &str = "clusters[0].outlier_detection";

/// The rule's `spec.host`, unless the file is another kind or has none.
fn host_of<'v>(
    file: &str,
    text: &str,
    root: &'v Value,
    spec_path: &[Segment],
) -> Result<&'v str, Vec<SchemaError>> {
    if let Some(kind) = root
        .get("kind")
        .filter(|k| k.as_str() != Some("DestinationRule"))
    {
        let message = format!("kind {}: expected DestinationRule", scalar(kind));
        return Err(vec![SchemaError::at(
            file,
            text,
            &[Segment::Key("kind".into())],
            message,
        )]);
    }
    match root
        .get("spec")
        .and_then(|s| s.get("host"))
        .and_then(Value::as_str)
    {
        Some(host) => Ok(host),
        None => Err(vec![SchemaError::at(
            file,
            text,
            spec_path,
            "expected spec.host: a DestinationRule names the service it applies to",
        )]),
    }
}

/// Reads the DestinationRule of the file.
pub(super) fn import(file: &str, text: &str) -> Result<Imported, Vec<SchemaError>> {
    let root: Value = schema::from_yaml_str(file, text).map_err(|e| vec![e])?;
    let spec_path = vec![Segment::Key("spec".to_string())];
    let host_path = under(&spec_path, "host");
    let mut t = Translation {
        file,
        text,
        envoy: Value::Mapping(Mapping::new()),
        origins: vec![(Vec::new(), Origin::Key(host_path.clone()))],
        problems: Vec::new(),
    };
    let host = host_of(file, text, &root, &spec_path)?;
    for (key, value, at) in entries(Some(&root), &[]) {
        if !["apiVersion", "kind", "metadata", "spec"].contains(&key.as_str()) {
            t.refuse_all(
                &at,
                &value,
                &format!("`{key}` of a DestinationRule is not modelled"),
            );
        }
    }
    let spec = root.get("spec");
    for (key, value, at) in entries(spec, &spec_path) {
        if !["host", "trafficPolicy"].contains(&key.as_str()) {
            t.refuse_all(
                &at,
                &value,
                &format!(
                    "spec.{key} is not modelled (firedrill imports the host's own trafficPolicy)"
                ),
            );
        }
    }
    let host_line = schema::locate(text, &host_path).map_or(0, |(l, _)| l);
    let from_host = |words: &str| {
        Origin::Default(
            format!("spec.host (line {host_line}): {words}"),
            host_path.clone(),
        )
    };
    service(&mut t, host, &host_path, &from_host);
    let policy_path = under(&spec_path, "trafficPolicy");
    let policy = spec.and_then(|s| s.get("trafficPolicy"));
    for (key, value, at) in entries(policy, &policy_path) {
        if !["connectionPool", "outlierDetection", "loadBalancer"].contains(&key.as_str()) {
            t.refuse_all(&at, &value, &format!("trafficPolicy.{key} is not modelled"));
        }
    }
    connection_pool(&mut t, policy, &policy_path);
    let mut not_drilled = Vec::new();
    load_balancer(&mut t, policy, &policy_path, &from_host, &mut not_drilled);
    if let Some(od) = policy.and_then(|p| p.get("outlierDetection")) {
        outlier_detection(&mut t, od, &under(&policy_path, "outlierDetection"));
    }
    let origins = std::mem::take(&mut t.origins);
    let mut r = Reader::new(file, text, &origins);
    let read = envoy::read(&mut r, &t.envoy);
    let (routes, pools) = match (read, t.problems.is_empty()) {
        (Ok(read), true) => read,
        (read, _) => {
            let mut problems = t.problems;
            problems.extend(read.err().unwrap_or_default());
            return Err(problems);
        }
    };
    let mut shown = String::new();
    for (_, node) in routes.iter().chain(pools.iter()) {
        node.render(0, &mut shown);
    }
    let mut notes = vec![
        "Istio's Envoy cluster for the host, read as the Envoy import reads it: each value names"
            .to_string(),
        "the DestinationRule key it came from, or Istio's default. See docs/import.md.".to_string(),
    ];
    notes.extend(envoy_keys::uncited(file, text, &shown, why));
    Ok(Imported {
        routes,
        pools,
        notes,
        not_drilled,
    })
}

/// The cluster of `host` (its name and the one server standing for its
/// endpoints) and the route that sends every call to it.
fn service(
    t: &mut Translation,
    host: &str,
    host_path: &[Segment],
    from_host: &dyn Fn(&str) -> Origin,
) {
    t.put(
        &format!("{CLUSTER}.name"),
        Value::from(host),
        Origin::Key(host_path.to_vec()),
    );
    let address = format!(
        "{CLUSTER}.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address"
    );
    t.put(
        &format!("{address}.address"),
        Value::from(host),
        Origin::Key(host_path.to_vec()),
    );
    t.put(
        &format!("{address}.port_value"),
        Value::from(80),
        Origin::Key(host_path.to_vec()),
    );
    let words = format!(
        "the service's endpoints are Kubernetes's, not the file's: one server, {host}:80, stands for them (map it with import: {{ istio: FILE, servers: {{ \"{host}:80\": INSTANCE }} }})"
    );
    t.origins.push((segments(&address), from_host(&words)));
    let route = "virtual_hosts[0].routes[0]";
    t.put(
        &format!("{route}.match.prefix"),
        Value::from("/"),
        from_host("a DestinationRule applies to every call to its host"),
    );
    t.put(
        &format!("{route}.route.cluster"),
        Value::from(host),
        Origin::Key(host_path.to_vec()),
    );
    t.put(
        &format!("{route}.route.timeout"),
        Value::from("0s"),
        from_host("Istio default: no route timeout (a VirtualService's timeout sets one)"),
    );
}

/// What a DestinationRule key no value cites is to the import.
fn why(_: &Source, e: &Entry) -> &'static str {
    if e.value.is_empty() {
        return "the keys under it are set aside (listed as not drilled)";
    }
    match e.path.first().map(String::as_str) {
        Some("apiVersion" | "kind" | "metadata") => "not read: the resource's own identity",
        _ => match e.path.last().map(String::as_str) {
            Some("http1MaxPendingRequests" | "maxConnections") => {
                "checked: at or above max_requests, a request never waits for a connection (docs/import.md)"
            }
            Some("maxRequestsPerConnection" | "idleTimeout" | "maxConnectionDuration") => {
                "ignored: connection reuse (Envoy's common_http_protocol_options), not which server answers or what fails"
            }
            Some("maxRetries") => {
                "ignored: Envoy's max_retries caps retries in flight; the imported route has no retry (a VirtualService's retries are not in this file)"
            }
            _ => "read: Istio leaves Envoy's default for it (a value of 0 is taken as unset)",
        },
    }
}

/// `connectionPool` → the cluster's `circuit_breakers` and connection
/// options (`applyConnectionPool`).
fn connection_pool(t: &mut Translation, policy: Option<&Value>, policy_path: &[Segment]) {
    let pool_path = under(policy_path, "connectionPool");
    let pool = policy.and_then(|p| p.get("connectionPool"));
    let limits = [
        ("max_connections", "tcp.maxConnections"),
        ("max_pending_requests", "http.http1MaxPendingRequests"),
        ("max_requests", "http.http2MaxRequests"),
        ("max_retries", "http.maxRetries"),
    ];
    for (envoy, istio) in limits {
        let words = format!("Istio default: {envoy} {UNLIMITED} (no {istio})");
        t.put(
            &format!("{LIMITS}.{envoy}"),
            Value::from(UNLIMITED),
            Origin::Default(words, pool_path.clone()),
        );
    }
    t.put(
        &format!("{LIMITS}.track_remaining"),
        Value::from(true),
        Origin::Default("Istio default".into(), pool_path.clone()),
    );
    for (key, value, at) in entries(pool, &pool_path) {
        if key != "tcp" && key != "http" {
            t.refuse_all(
                &at,
                &value,
                &format!("connectionPool.{key} is not modelled"),
            );
        }
    }
    let options = format!("{CLUSTER}.common_http_protocol_options");
    let reuse = "spec.trafficPolicy.connectionPool: connection reuse (each key below)";
    t.origins.push((
        segments(&options),
        Origin::Default(reuse.into(), pool_path.clone()),
    ));
    let tcp_path = under(&pool_path, "tcp");
    for (key, value, at) in entries(pool.and_then(|p| p.get("tcp")), &tcp_path) {
        match key.as_str() {
            "maxConnections" if value.as_u64() != Some(0) => {
                t.take(&format!("{LIMITS}.max_connections"), &at, &value, false)
            }
            "connectTimeout" => t.take(&format!("{CLUSTER}.connect_timeout"), &at, &value, true),
            "idleTimeout" => t.take(&format!("{options}.idle_timeout"), &at, &value, true),
            "maxConnectionDuration" => t.take(
                &format!("{options}.max_connection_duration"),
                &at,
                &value,
                true,
            ),
            "maxConnections" => {}
            other => t.refuse_all(
                &at,
                &value,
                &format!("tcp.{other} of connectionPool is not modelled"),
            ),
        }
    }
    let http_path = under(&pool_path, "http");
    for (key, value, at) in entries(pool.and_then(|p| p.get("http")), &http_path) {
        let zero = value.as_u64() == Some(0);
        match key.as_str() {
            "http1MaxPendingRequests" if !zero => t.take(
                &format!("{LIMITS}.max_pending_requests"),
                &at,
                &value,
                false,
            ),
            "http2MaxRequests" if !zero => {
                t.take(&format!("{LIMITS}.max_requests"), &at, &value, false)
            }
            "maxRetries" if !zero => t.take(&format!("{LIMITS}.max_retries"), &at, &value, false),
            "maxRequestsPerConnection" if !zero => t.take(
                &format!("{options}.max_requests_per_connection"),
                &at,
                &value,
                false,
            ),
            "idleTimeout" => t.take(&format!("{options}.idle_timeout"), &at, &value, true),
            "h2UpgradePolicy" => t.take(
                &format!("{CLUSTER}.http2_protocol_options"),
                &at,
                &value,
                false,
            ),
            "http1MaxPendingRequests"
            | "http2MaxRequests"
            | "maxRetries"
            | "maxRequestsPerConnection" => {}
            other => t.refuse_all(
                &at,
                &value,
                &format!("http.{other} of connectionPool is not modelled"),
            ),
        }
    }
}

/// `loadBalancer.simple` → `lb_policy` (`applyLoadBalancer`: LEAST_CONN
/// and LEAST_REQUEST are Envoy's LEAST_REQUEST, as is a rule without
/// one, `defaultLBAlgorithm`).
fn load_balancer(
    t: &mut Translation,
    policy: Option<&Value>,
    policy_path: &[Segment],
    from_host: &dyn Fn(&str) -> Origin,
    not_drilled: &mut Vec<NotDrilled>,
) {
    let lb_path = under(policy_path, "loadBalancer");
    let lb = policy.and_then(|p| p.get("loadBalancer"));
    let lb_policy = format!("{CLUSTER}.lb_policy");
    for (key, value, at) in entries(lb, &lb_path) {
        match (key.as_str(), value.as_str()) {
            ("simple", Some("LEAST_CONN" | "LEAST_REQUEST")) => {
                t.put(&lb_policy, Value::from("LEAST_REQUEST"), Origin::Key(at))
            }
            ("simple", Some("ROUND_ROBIN" | "RANDOM")) => t.take(&lb_policy, &at, &value, false),
            ("simple", _) => t.refuse(
                &at,
                format!("loadBalancer.simple {}: not modelled", scalar(&value)),
            ),
            (other, _) => t.refuse_all(
                &at,
                &value,
                &format!("loadBalancer.{other} is not modelled"),
            ),
        }
    }
    let has_simple = lb.is_some_and(|l| l.get("simple").is_some());
    if has_simple {
        return;
    }
    t.put(
        &lb_policy,
        Value::from("ROUND_ROBIN"),
        from_host("round robin in place of Istio's default LEAST_REQUEST (not drilled: listed)"),
    );
    // A `loadBalancer:` left empty is one whose `simple` was set aside
    // (listed already).
    if lb.is_some_and(Value::is_null) {
        return;
    }
    let at = if lb.is_some() {
        lb_path.clone()
    } else {
        policy_path.to_vec()
    };
    let (line, column) = schema::locate(t.text, &at)
        .or_else(|| schema::locate(t.text, &under(&[Segment::Key("spec".into())], "host")))
        .unwrap_or((1, 1));
    not_drilled.push(NotDrilled {
        file: t.file.to_string(),
        line,
        column,
        key: schema::display_path(&lb_path),
        why: Why::NoModel,
        detail: format!(
            "no loadBalancer.simple: Istio balances by LEAST_REQUEST (defaultLBAlgorithm); {}",
            lb_refusal("LEAST_REQUEST")
        ),
    });
}

/// `outlierDetection` → the cluster's `outlier_detection` and panic
/// threshold (`applyOutlierDetection`).
fn outlier_detection(t: &mut Translation, od: &Value, od_path: &[Segment]) {
    t.put(
        &format!("{OUTLIER}.enforcing_success_rate"),
        Value::from(0),
        Origin::Default(
            "Istio sets enforcing_success_rate 0 (no success-rate ejection)".into(),
            od_path.to_vec(),
        ),
    );
    let panic = format!("{CLUSTER}.common_lb_config.healthy_panic_threshold.value");
    t.put(
        &panic,
        Value::from(0),
        Origin::Default(
            "Istio default: healthy_panic_threshold 0 (minHealthPercent 0: no panic mode)".into(),
            od_path.to_vec(),
        ),
    );
    let split = od
        .get("splitExternalLocalOriginErrors")
        .and_then(Value::as_bool)
        == Some(true);
    for (key, value, at) in entries(Some(od), od_path) {
        let n = value.as_u64();
        let enforce = Value::from(if n.unwrap_or(0) > 0 { 100 } else { 0 });
        match key.as_str() {
            "consecutive5xxErrors" => {
                t.take(&format!("{OUTLIER}.consecutive_5xx"), &at, &value, false);
                t.put(&format!("{OUTLIER}.enforcing_consecutive_5xx"), enforce, Origin::Key(at));
            }
            "consecutiveGatewayErrors" => {
                t.take(&format!("{OUTLIER}.consecutive_gateway_failure"), &at, &value, false);
                t.put(&format!("{OUTLIER}.enforcing_consecutive_gateway_failure"), enforce, Origin::Key(at));
            }
            "interval" => t.take(&format!("{OUTLIER}.interval"), &at, &value, true),
            "baseEjectionTime" => t.take(&format!("{OUTLIER}.base_ejection_time"), &at, &value, true),
            "maxEjectionPercent" if n != Some(0) => t.take(&format!("{OUTLIER}.max_ejection_percent"), &at, &value, false),
            "minHealthPercent" => t.take(&panic, &at, &value, false),
            "splitExternalLocalOriginErrors" if split => t.take(&format!("{OUTLIER}.split_external_local_origin_errors"), &at, &value, false),
            "consecutiveLocalOriginFailures" if split && n != Some(0) => t.take(&format!("{OUTLIER}.consecutive_local_origin_failure"), &at, &value, false),
            "maxEjectionPercent" | "splitExternalLocalOriginErrors" | "consecutiveLocalOriginFailures" => {}
            "consecutiveErrors" => t.refuse(&at, "consecutiveErrors (deprecated) is not modelled: Istio's translation no longer reads it (consecutive5xxErrors, consecutiveGatewayErrors)"),
            other => t.refuse_all(&at, &value, &format!("outlierDetection.{other} is not modelled")),
        }
    }
}
