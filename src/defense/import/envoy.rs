//! Envoy configuration YAML (a bootstrap's `static_resources`, or a list
//! of `clusters`): each cluster with its endpoints becomes a pool, and each
//! route of a virtual host that sends to a cluster a route of the
//! cluster's name calling it, with its `timeout` and the cluster's
//! `circuit_breakers` limit as its bulkhead. Outlier detection becomes the
//! pool's `outlier_detection` (its consecutive-error part; the rest is
//! refused where it could act). Active health checks and retry policies
//! are refused: their rules are not modelled (docs/import.md).

use serde_yaml_ng::Value;

#[path = "envoy_dump.rs"]
mod dump;
#[path = "envoy_outlier.rs"]
mod outlier;
#[path = "envoy_reader.rs"]
mod reader;

use reader::At;
pub(super) use reader::{Origin, Reader};

use super::Imported;
use super::envoy_keys;
use super::tree::Node;
use crate::schema::units::Dur;
use crate::schema::{self, SchemaError};

/// The routes and pools of an Envoy configuration.
pub(super) type Read = (Vec<(String, Node)>, Vec<(String, Node)>);

/// Reads every cluster and route of the file.
pub(super) fn import(file: &str, text: &str) -> Result<Imported, Vec<SchemaError>> {
    let root: Value = schema::from_yaml_str(file, text).map_err(|e| vec![e])?;
    let translated = dump::translate(&root);
    let (root, origins) = match &translated {
        Some((value, origins)) => (value, origins.as_slice()),
        None => (&root, &[][..]),
    };
    let mut r = Reader::new(file, text, origins);
    let (routes, pools) = read(&mut r, root)?;
    let mut shown = String::new();
    for (_, node) in routes.iter().chain(pools.iter()) {
        node.render(0, &mut shown);
    }
    let mut notes = vec![
        "A pool server is the endpoint Envoy names; in an experiment, map it to a target instance"
            .to_string(),
        "with import: { envoy: FILE, servers: { ADDRESS: INSTANCE } }. See docs/import.md."
            .to_string(),
    ];
    notes.extend(super::envoy_keys::uncited(
        file,
        text,
        &shown,
        envoy_keys::why,
    ));
    Ok(Imported {
        routes,
        pools,
        notes,
        not_drilled: Vec::new(),
    })
}

/// The routes and pools of `root`, an Envoy configuration, every problem
/// found refused.
pub(super) fn read(r: &mut Reader, root: &Value) -> Result<Read, Vec<SchemaError>> {
    let (file, text) = (r.file, r.text);
    let root = At {
        value: root,
        path: Vec::new(),
    };
    let clusters = root
        .get("static_resources")
        .and_then(|s| s.get("clusters"))
        .or_else(|| root.get("clusters"))
        .map(|c| c.items())
        .unwrap_or_default();
    let mut routes_found = Vec::new();
    let mut policies = Vec::new();
    find_routes(&root, &mut routes_found, &mut policies);
    for policy in &policies {
        r.refuse(policy, RETRY_REFUSED);
    }
    let mut pools = Vec::new();
    let mut limits = Vec::new();
    for cluster in &clusters {
        if let Some((name, pool, limit)) = self::cluster(r, cluster) {
            pools.push((name.clone(), pool));
            limits.push((name, limit));
        }
    }
    let mut routes: Vec<(String, Node)> = Vec::new();
    for route in &routes_found {
        let Some(target) = route.get("route") else {
            continue;
        };
        let Some(cluster) = target.get("cluster").map(|c| c.text()) else {
            if let Some(w) = target.get("weighted_clusters") {
                r.refuse(&w, "weighted_clusters split a route's calls between clusters: not modelled (a firedrill route calls one pool)");
            }
            continue;
        };
        if !pools.iter().any(|(n, _)| *n == cluster) {
            continue; // a cluster the file does not define
        }
        if routes.iter().any(|(n, _)| *n == cluster) {
            r.refuse(route, format!("a second route to cluster `{cluster}`: firedrill imports one route per cluster (its circuit_breakers limit the cluster, shared by every route)"));
            continue;
        }
        let limit = limits
            .iter()
            .find(|(n, _)| *n == cluster)
            .and_then(|(_, l)| l.clone());
        if let Some(node) = self::route(r, route, &target, &cluster, limit) {
            routes.push((cluster, node));
        }
    }
    if pools.is_empty() && r.problems.is_empty() {
        r.problems.push(SchemaError::at(file, text, &[], "no cluster: expected static_resources.clusters or clusters with load_assignment endpoints"));
    }
    if !r.problems.is_empty() {
        let mut problems = std::mem::take(&mut r.problems);
        problems.sort_by_key(|p| (p.line, p.column));
        return Err(problems);
    }
    Ok((routes, pools))
}

/// Every route of every `virtual_hosts` in the file, and the virtual
/// hosts' `retry_policy`.
fn find_routes<'v>(at: &At<'v>, out: &mut Vec<At<'v>>, policies: &mut Vec<At<'v>>) {
    match at.value {
        Value::Mapping(_) => {
            if let Some(hosts) = at.get("virtual_hosts") {
                for host in hosts.items() {
                    if let Some(policy) = host.get("retry_policy") {
                        policies.push(policy);
                    }
                    if let Some(routes) = host.get("routes") {
                        out.extend(routes.items());
                    }
                }
                return;
            }
            for key in at.keys() {
                if let Some(child) = at.get(&key) {
                    find_routes(&child, out, policies);
                }
            }
        }
        Value::Sequence(_) => at
            .items()
            .iter()
            .for_each(|i| find_routes(i, out, policies)),
        _ => {}
    }
}

/// The keys of a cluster and what the import does with them.
const IGNORED_CLUSTER_KEYS: &[(&str, &str)] = &[
    (
        "type",
        "how endpoints are found; the file's endpoints are read",
    ),
    (
        "connect_timeout",
        "firedrill's route timeout covers connecting",
    ),
    ("dns_lookup_family", "name resolution"),
    ("dns_refresh_rate", "name resolution"),
    (
        "transport_socket",
        "TLS to the servers (set tls: on the experiment's services)",
    ),
    (
        "typed_extension_protocol_options",
        "the HTTP version spoken to the servers",
    ),
    (
        "http2_protocol_options",
        "the HTTP version spoken to the servers",
    ),
    ("common_http_protocol_options", "idle connections"),
    ("per_connection_buffer_limit_bytes", "buffering"),
    ("alt_stat_name", "the cluster's name in Envoy's stats"),
    (
        "metadata",
        "labels of the mesh (Istio's config and services), for stats and filters",
    ),
    (
        "filters",
        "network filters on the connection (Istio's metadata exchange)",
    ),
    (
        "transport_socket_matches",
        "TLS to the servers by their labels (Istio's mutual TLS)",
    ),
];

/// A request limit and where it came from.
type Limit = Option<(u64, String)>;

/// A cluster → its name, its pool, and its `circuit_breakers` request
/// limit.
fn cluster(r: &mut Reader, c: &At) -> Option<(String, Node, Limit)> {
    let name = c.get("name").map(|n| n.text()).filter(|n| !n.is_empty());
    let Some(name) = name else {
        r.refuse(c, "a cluster without a name");
        return None;
    };
    let mut pool = Node::map();
    for key in c.keys() {
        let at = c.get(&key).expect("a key");
        match key.as_str() {
            "name" | "load_assignment" | "lb_policy" | "circuit_breakers" | "outlier_detection" => {}
            "common_lb_config" => {
                for k in at.keys().into_iter().filter(|k| k != "healthy_panic_threshold") {
                    let inner = at.get(&k).expect("a key");
                    r.refuse(&inner, format!("`{k}` of common_lb_config (locality weighting, update merging, ...) is not modelled"));
                }
            }
            "health_checks" => r.refuse(&at, "Envoy's active health checks are not modelled (their start state, jitter and thresholds differ from firedrill's NGINX Plus checks); leave them out, or write the pool's health_check by hand"),
            "round_robin_lb_config" | "least_request_lb_config" => r.refuse(&at, format!("`{key}` (slow start, the choice of two) is not modelled")),
            "eds_cluster_config" => r.refuse(&at, "EDS endpoints come from a management server, not the file: not modelled (write load_assignment)"),
            other => match IGNORED_CLUSTER_KEYS.iter().find(|(k, _)| *k == other) {
                Some((_, why)) => pool.note(format!("ignored: {}: {why}", r.from(&at))),
                None => r.refuse(&at, format!("`{other}` of a cluster is not modelled")),
            },
        }
    }
    let balance = match c.get("lb_policy") {
        None => Node::leaf("round_robin", "Envoy default: lb_policy ROUND_ROBIN"),
        Some(p) if p.text() == "ROUND_ROBIN" => Node::leaf("round_robin", r.from(&p)),
        Some(p) => {
            r.refuse(&p, lb_refusal(&p.text()));
            return None;
        }
    };
    let servers = endpoints(r, c)?;
    let hosts = servers.len();
    pool.set("servers", Node::List(servers));
    pool.set("balance", balance);
    match c.get("outlier_detection") {
        Some(od) => {
            pool.set(
                "max_fails",
                Node::leaf("0", "outlier_detection: Envoy's ejection, not NGINX's"),
            );
            let panic = panic_threshold(r, c);
            pool.set("outlier_detection", outlier::outlier(r, &od, hosts, panic));
        }
        None => {
            pool.set(
                "max_fails",
                Node::leaf(
                    "0",
                    "no outlier_detection: Envoy never ejects a host for its answers",
                ),
            );
            if let Some(p) = c
                .get("common_lb_config")
                .and_then(|l| l.get("healthy_panic_threshold"))
            {
                let note = format!("ignored: {}: no host is ever ejected", r.from(&p));
                pool.note(note);
            }
        }
    }
    let limit = circuit_breakers(r, c);
    for note in std::mem::take(&mut r.notes) {
        pool.note(note);
    }
    Some((name, pool, limit))
}

/// Why an `lb_policy` other than `ROUND_ROBIN` is not drilled.
pub(super) fn lb_refusal(policy: &str) -> String {
    match policy {
        "LEAST_REQUEST" => "lb_policy LEAST_REQUEST is not modelled: Envoy draws 2 hosts at random (choice_count 2, from its own random source) and sends to the one with fewer active requests; firedrill's least_conn compares every server and breaks ties by round robin, so the two choose differently whenever the draw misses the least-loaded server".to_string(),
        other => format!("lb_policy {other} is not modelled: firedrill balances by round robin or NGINX's least_conn"),
    }
}

/// `common_lb_config.healthy_panic_threshold` (a `Percent`, default 50).
fn panic_threshold(r: &mut Reader, c: &At) -> Node {
    let Some(at) = c
        .get("common_lb_config")
        .and_then(|l| l.get("healthy_panic_threshold"))
    else {
        return Node::leaf("50%", "Envoy default: healthy_panic_threshold 50%");
    };
    if matches!(at.value, Value::Mapping(m) if m.is_empty()) {
        // A Percent of 0 as protobuf prints it back (Istio turns panic
        // mode off so): `{}`.
        return Node::leaf("0%", format!("{}: {{}}, a Percent of 0", r.from(&at)));
    }
    let value = at.get("value").unwrap_or_else(|| at.clone());
    match value.text().parse::<f64>() {
        Ok(p) if (0.0..=100.0).contains(&p) => Node::leaf(format!("{p}%"), r.from(&value)),
        _ => {
            r.refuse(
                &value,
                format!(
                    "invalid percentage `{}`: expected {{ value: 0 to 100 }}",
                    value.text()
                ),
            );
            Node::leaf("50%", "Envoy default")
        }
    }
}

fn endpoints(r: &mut Reader, c: &At) -> Option<Vec<Node>> {
    let Some(groups) = c.get("load_assignment").and_then(|l| l.get("endpoints")) else {
        r.refuse(
            c,
            "a cluster without load_assignment.endpoints: its servers are not in the file",
        );
        return None;
    };
    let mut servers = Vec::new();
    let mut weights = Vec::new();
    for group in groups.items() {
        if let Some(p) = group.get("priority").filter(|p| p.text() != "0") {
            r.refuse(&p, "a priority above 0 takes traffic as the higher priority's hosts become unhealthy, gradually (overprovisioning): not modelled (a firedrill backup answers only when every primary is out)");
            continue;
        }
        for lb in group
            .get("lb_endpoints")
            .map(|l| l.items())
            .unwrap_or_default()
        {
            let socket = lb
                .get("endpoint")
                .and_then(|e| e.get("address"))
                .and_then(|a| a.get("socket_address"));
            let Some(socket) = socket else {
                r.refuse(
                    &lb,
                    "expected endpoint.address.socket_address { address, port_value }",
                );
                continue;
            };
            let host = socket.get("address").map(|a| a.text()).unwrap_or_default();
            let Some(port) = socket.get("port_value").and_then(|p| r.whole(&p)) else {
                r.refuse(&socket, "expected port_value");
                continue;
            };
            let mut server = Node::map();
            server.set(
                "address",
                Node::leaf(format!("{host}:{port}"), r.from(&socket)),
            );
            let weight = match lb.get("load_balancing_weight") {
                Some(w) => {
                    let n = r.whole(&w).unwrap_or(1);
                    weights.push((n, w.clone()));
                    Node::leaf(n.to_string(), r.from(&w))
                }
                None => {
                    weights.push((1, lb.clone()));
                    Node::leaf("1", "Envoy default: load_balancing_weight 1")
                }
            };
            server.set("weight", weight);
            server.set("backup", Node::leaf("false", "priority 0"));
            servers.push(server);
        }
    }
    if let Some((_, at)) = weights.iter().find(|(w, _)| *w != weights[0].0) {
        r.refuse(at, "unequal load_balancing_weight: Envoy's weighted round robin (an earliest-deadline-first schedule) orders servers differently from NGINX's smooth weighted round robin firedrill runs: not modelled");
    }
    if servers.is_empty() {
        r.refuse(c, "no endpoint in load_assignment");
        return None;
    }
    Some(servers)
}

/// The cluster's `max_requests` (default priority), when it binds.
fn circuit_breakers(r: &mut Reader, c: &At) -> Option<(u64, String)> {
    let thresholds = c
        .get("circuit_breakers")
        .and_then(|b| b.get("thresholds"))
        .map(|t| t.items())
        .unwrap_or_default();
    let mut found = None;
    for t in thresholds {
        if let Some(p) = t.get("priority").filter(|p| p.text() != "DEFAULT") {
            let note = format!(
                "ignored: {}: limits only routes of priority HIGH; firedrill's routes are DEFAULT",
                r.from(&p)
            );
            r.notes.push(note);
            continue;
        }
        let read = |r: &mut Reader, key: &str| {
            t.get(key)
                .and_then(|v| r.whole(&v).map(|n| (n, r.from(&v))))
        };
        let requests = read(r, "max_requests")
            .unwrap_or((1024, "Envoy default: max_requests 1024".to_string()));
        let connections = read(r, "max_connections").map_or(1024, |(n, _)| n);
        if connections < requests.0 {
            let at = t.get("max_connections").expect("set");
            r.refuse(&at, "max_connections below max_requests queues requests for a connection (max_pending_requests): not modelled (firedrill's bulkhead waits by time, not in a queue of a length)");
        }
        if let Some(budget) = t.get("retry_budget") {
            r.refuse(&budget, "a retry budget is not modelled");
        }
        for key in t.keys() {
            if ![
                "priority",
                "max_requests",
                "max_connections",
                "max_pending_requests",
                "max_retries",
                "retry_budget",
                "track_remaining",
            ]
            .contains(&key.as_str())
            {
                let at = t.get(&key).expect("a key");
                r.refuse(&at, format!("`{key}` of circuit_breakers is not modelled"));
            }
        }
        found = Some(requests);
    }
    found.or(Some((
        1024,
        "Envoy default: max_requests 1024 (no circuit_breakers)".to_string(),
    )))
}

/// Why `retry_policy`, of a route or a virtual host, is refused.
const RETRY_REFUSED: &str = "Envoy's retries are not modelled: its backoff draws each wait uniformly in whole milliseconds below base_interval x 2^n (25 ms, at most max_interval), which firedrill's jitter (a share off the wait) does not draw alike; circuit_breakers.max_retries (3 by default) caps the retries in flight per cluster, with no counter in firedrill's retry; and the route timeout spans every try; leave retry_policy out, or give the route firedrill's retry";

/// A route of a virtual host → the route of its cluster's name.
fn route(
    r: &mut Reader,
    route: &At,
    target: &At,
    cluster: &str,
    limit: Option<(u64, String)>,
) -> Option<Node> {
    let mut node = Node::map();
    let m = route.get("match");
    let glob = match (
        m.as_ref().and_then(|m| m.get("prefix")),
        m.as_ref().and_then(|m| m.get("path")),
    ) {
        (Some(p), _) => Node::leaf(format!("{}*", p.text()), r.from(&p)),
        (None, Some(p)) => Node::leaf(p.text(), r.from(&p)),
        _ => {
            r.refuse(
                m.as_ref().unwrap_or(route),
                "only prefix and path matches are modelled (firedrill routes match path globs)",
            );
            return None;
        }
    };
    if let Some(m) = &m {
        for key in m
            .keys()
            .into_iter()
            .filter(|k| k != "prefix" && k != "path")
        {
            let at = m.get(&key).expect("a key");
            r.refuse(
                &at,
                format!("a `{key}` condition of a route match is not modelled"),
            );
        }
    }
    node.set("match", glob);
    node.set(
        "pool",
        Node::leaf(cluster, r.from(&target.get("cluster").expect("set"))),
    );
    match target.get("timeout") {
        Some(t) => match r.duration(&t) {
            Some(d) if d.is_zero() => {
                node.note(format!("no timeout: {} (0s turns it off)", r.from(&t)))
            }
            Some(d) => node.set("timeout", Node::leaf(Dur(d).to_string(), r.from(&t))),
            None => {}
        },
        None => node.set(
            "timeout",
            Node::leaf("15s", "Envoy default: route timeout 15s"),
        ),
    }
    if let Some(policy) = target.get("retry_policy") {
        r.refuse(&policy, RETRY_REFUSED);
    }
    for key in target.keys() {
        if !["cluster", "timeout", "retry_policy"].contains(&key.as_str()) {
            let at = target.get(&key).expect("a key");
            node.note(format!(
                "ignored: {}: not about which server answers or what fails",
                r.from(&at)
            ));
        }
    }
    if let Some((n, why)) = limit {
        let mut bulkhead = Node::map();
        bulkhead.set(
            "max_concurrent",
            Node::leaf(
                n.to_string(),
                format!("circuit_breakers of cluster {cluster}: {why}"),
            ),
        );
        bulkhead.set(
            "max_wait",
            Node::leaf("0s", "Envoy answers 503 at once over max_requests"),
        );
        node.set("bulkhead", bulkhead);
    }
    Some(node)
}
