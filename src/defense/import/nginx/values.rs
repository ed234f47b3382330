//! The values of NGINX's upstream, location and health-check directives,
//! mapped onto a pool and a route.

use indexmap::IndexMap;

use super::parse::{Directive, Word, time};
use super::{from, problem};
use crate::clock::Duration;
use crate::defense::import::tree::Node;
use crate::schema::SchemaError;
use crate::schema::units::Dur;

/// A server's `key=value` parameters and flags.
struct Params<'a> {
    values: IndexMap<&'a str, (&'a str, &'a Word)>,
}

fn params(args: &[Word]) -> Params<'_> {
    let mut values = IndexMap::new();
    for w in args {
        match w.text.split_once('=') {
            Some((k, v)) => values.insert(k, (v, w)),
            None => values.insert(w.text.as_str(), ("", w)),
        };
    }
    Params { values }
}

/// A server's passive settings as written: `(value, where)` by key, the
/// word `None` where it takes NGINX's default.
type Passive<'a> = IndexMap<&'static str, (String, Option<&'a Word>)>;

/// NGINX's per-server passive parameters with their defaults: the first
/// two each server keeps for itself (so does the pool), the third must be
/// the same for every server.
const PASSIVE: [(&str, &str, &str); 3] = [
    ("max_fails", "1", "NGINX default: max_fails=1"),
    ("fail_timeout", "10s", "NGINX default: fail_timeout=10s"),
    ("slow_start", "0s", "NGINX default: slow_start=0 (off)"),
];

/// `upstream NAME { ... }` → a pool.
pub(super) fn pool(file: &str, upstream: &Directive) -> Result<(String, Node), Vec<SchemaError>> {
    let mut problems = Vec::new();
    let Some(name) = upstream.args.first() else {
        return Err(vec![problem(
            file,
            &upstream.name,
            "upstream",
            "expected `upstream NAME { ... }`",
        )]);
    };
    let key = format!("upstream {}", name.text);
    let mut node = Node::map();
    let mut servers: Vec<(Node, Passive, &Word)> = Vec::new();
    let mut balance = Node::leaf("round_robin", "NGINX default: weighted round robin");
    let block = upstream.block.as_deref().unwrap_or_default();
    for d in block {
        let at = format!("{key}.{}", d.name.text);
        match d.name.text.as_str() {
            "server" => {
                if let Some(found) = server(file, d, &at, &mut node, &mut problems) {
                    servers.push(found);
                }
            }
            "least_conn" => balance = Node::leaf("least_conn", from(&at, &d.name)),
            "zone" | "keepalive" | "keepalive_timeout" | "keepalive_requests" | "keepalive_time" => {
                node.note(format!("ignored: {}: idle connections and shared memory, not which server answers or fails", from(&at, &d.name)));
            }
            "hash" | "ip_hash" | "random" | "ntlm" | "sticky" => problems.push(problem(file, &d.name, &at, format!(
                "`{}` balancing is not modelled: firedrill balances by weighted round robin or least_conn", d.name.text
            ))),
            "queue" => problems.push(problem(file, &d.name, &at, "`queue` holds requests while every server is busy: not modelled (firedrill has no max_conns)")),
            other => problems.push(problem(file, &d.name, &at, format!("`{other}` in an upstream block is not modelled"))),
        }
    }
    if servers.is_empty() && problems.is_empty() {
        problems.push(problem(file, name, &key, "no server in rotation (every server is `down` or there is none): NGINX answers 502 to every call"));
    }
    let pool_level = passive_settings(file, &key, &mut servers, &mut problems);
    if servers.len() == 1 {
        node.note(format!("{key} has one server: NGINX never takes it out on failures, so max_fails and fail_timeout do nothing (nor in firedrill's pool)"));
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    node.set(
        "servers",
        Node::List(servers.into_iter().map(|(entry, _, _)| entry).collect()),
    );
    node.set("balance", balance);
    for (k, leaf) in pool_level {
        node.set(k, leaf);
    }
    Ok((name.text.clone(), node))
}

/// The pool's `max_fails`, `fail_timeout` and `slow_start`: the value
/// every server agrees on; else NGINX's default for the pool, and each
/// server that differs keeps its own value on its entry (NGINX keeps them
/// per server). `slow_start` must agree.
fn passive_settings<'a>(
    file: &str,
    key: &str,
    servers: &mut [(Node, Passive<'a>, &'a Word)],
    problems: &mut Vec<SchemaError>,
) -> Vec<(&'static str, Node)> {
    let mut pool_level = Vec::new();
    for (k, default, why) in PASSIVE {
        let values: Vec<&(String, Option<&Word>)> = servers.iter().map(|s| &s.1[k]).collect();
        let agreed = values.iter().all(|(v, _)| *v == values[0].0);
        if agreed {
            let leaf = match values.first() {
                Some((v, Some(w))) => Node::leaf(
                    v.clone(),
                    format!("{k}={v} of every server ({key}, line {})", w.line),
                ),
                _ => Node::leaf(default, format!("{why}, no server sets it")),
            };
            pool_level.push((k, leaf));
            continue;
        }
        if k == "slow_start" {
            // One ramp for the pool: each server's own slow_start is
            // listed, and the servers then take NGINX's default.
            for (_, passive, address) in servers.iter() {
                if let (v, Some(w)) = &passive[k] {
                    let at = format!("{key}.server {} slow_start", address.text);
                    problems.push(problem(file, w, &at, format!(
                        "slow_start={v} of this server differs from another server's: not modelled (firedrill's pool ramps every server over one slow_start)"
                    )));
                }
            }
            continue;
        }
        pool_level.push((
            k,
            Node::leaf(
                default,
                format!("{why}, for the servers that do not set their own"),
            ),
        ));
        for (entry, passive, address) in servers.iter_mut() {
            if let (v, Some(w)) = &passive[k]
                && v != default
            {
                entry.set(
                    k,
                    Node::leaf(
                        v.clone(),
                        from(&format!("{key}.server {} {k}", address.text), w),
                    ),
                );
            }
        }
    }
    pool_level
}

/// One `server ADDRESS [parameters];` → its pool entry, its passive
/// settings and its address word; `None` when it is refused or `down`.
fn server<'a>(
    file: &str,
    d: &'a Directive,
    at: &str,
    node: &mut Node,
    problems: &mut Vec<SchemaError>,
) -> Option<(Node, Passive<'a>, &'a Word)> {
    let Some(address) = d.args.first() else {
        problems.push(problem(
            file,
            &d.name,
            at,
            "expected `server ADDRESS [parameters];`",
        ));
        return None;
    };
    if address.text.starts_with("unix:") {
        problems.push(problem(
            file,
            address,
            at,
            "a unix socket server is not modelled: firedrill's pool servers are host:port",
        ));
        return None;
    }
    let shown = if address.text.contains(':') {
        address.text.clone()
    } else {
        format!("{}:80", address.text)
    };
    let p = params(&d.args[1..]);
    if let Some((_, w)) = p.values.get("down") {
        node.note(format!(
            "server {shown} left out: down ({}, line {}): NGINX never sends it a call",
            at, w.line
        ));
        return None;
    }
    let mut entry = Node::map();
    entry.set("address", Node::leaf(shown.clone(), from(at, address)));
    let mut weight = Node::leaf("1", "NGINX default: weight=1");
    let mut backup = Node::leaf("false", "not a backup");
    let mut passive: Passive = PASSIVE
        .iter()
        .map(|(k, default, _)| (*k, (default.to_string(), None)))
        .collect();
    let before = problems.len();
    for (k, (v, w)) in &p.values {
        let here = format!("{at} {}", address.text);
        match *k {
            "weight" => match v.parse::<u32>() {
                Ok(n) if n >= 1 => weight = Node::leaf(n.to_string(), from(&format!("{here} weight"), w)),
                _ => problems.push(problem(file, w, &here, format!("invalid weight `{v}`: expected a whole number of at least 1"))),
            },
            "backup" => backup = Node::leaf("true", from(&format!("{here} backup"), w)),
            "max_fails" | "fail_timeout" | "slow_start" => {
                let value = if *k == "max_fails" {
                    v.parse::<u32>().map(|n| n.to_string()).map_err(|_| format!("invalid max_fails `{v}`: expected a whole number"))
                } else {
                    time(v).map(|t| Dur(t).to_string())
                };
                match value {
                    Ok(value) => {
                        if let Some(slot) = passive.get_mut(*k) {
                            *slot = (value, Some(*w));
                        }
                    }
                    Err(m) => problems.push(problem(file, w, &here, m)),
                }
            }
            "max_conns" => problems.push(problem(file, w, &here, "max_conns limits a server's connections: not modelled (use a bulkhead on the route)")),
            "resolve" | "service" | "route" | "drain" => problems.push(problem(file, w, &here, format!("`{k}` (NGINX Plus) is not modelled: firedrill's servers are fixed addresses in rotation"))),
            other => problems.push(problem(file, w, &here, format!("unknown server parameter `{other}`"))),
        }
    }
    entry.set("weight", weight);
    entry.set("backup", backup);
    (problems.len() == before).then_some((entry, passive, address))
}

/// A location proxying to `upstream` → the route of the upstream's name;
/// its `health_check` goes into `pool`. Returns the route and its match
/// priority (longer prefixes first, exact matches before them).
pub(super) fn route(
    file: &str,
    location: &Directive,
    directives: &IndexMap<String, &Directive>,
    upstream: &str,
    matches: &IndexMap<String, &Directive>,
    pool: &mut Node,
) -> Result<(Node, usize), Vec<SchemaError>> {
    let mut problems = Vec::new();
    let mut route = Node::map();
    let key = "location";
    let (glob, order) = match location_glob(&location.args) {
        Ok(found) => found,
        Err(m) => {
            return Err(vec![problem(
                file,
                location.args.first().unwrap_or(&location.name),
                key,
                m,
            )]);
        }
    };
    route.set(
        "match",
        Node::leaf(
            glob,
            from(
                &format!(
                    "location {}",
                    location
                        .args
                        .iter()
                        .map(|w| w.text.as_str())
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
                &location.name,
            ),
        ),
    );
    route.set(
        "pool",
        Node::leaf(upstream, from("proxy_pass", &directives["proxy_pass"].name)),
    );
    let read = match directives.get("proxy_read_timeout") {
        Some(d) => match d.args.first().map(|w| time(&w.text)) {
            Some(Ok(t)) if !t.is_zero() => Some((t, from("proxy_read_timeout", &d.name))),
            Some(Ok(_)) => {
                problems.push(problem(
                    file,
                    &d.name,
                    "proxy_read_timeout",
                    "a zero timeout fails every call: not modelled",
                ));
                None
            }
            Some(Err(m)) => {
                problems.push(problem(file, &d.args[0], "proxy_read_timeout", m));
                None
            }
            None => None,
        },
        None => Some((
            Duration::from_secs(60),
            "NGINX default: proxy_read_timeout 60s".to_string(),
        )),
    };
    if let Some((t, why)) = &read {
        route.set("timeout", Node::leaf(Dur(*t).to_string(), format!("{why}: between two reads in NGINX, the whole answer in firedrill (the same for an answer sent at once)")));
    }
    super::next::next_upstream(file, directives, &mut route, &mut problems);
    if let Some(d) = directives.get("health_check") {
        let read = read.map_or(Duration::from_secs(60), |(t, _)| t);
        match super::health::health_check(file, d, matches, read) {
            Ok(node) => pool.set("health_check", node),
            Err(mut p) => problems.append(&mut p),
        }
    }
    if let Some(d) = directives.get("proxy_cache_use_stale")
        && d.args.first().map(|w| w.text.as_str()) != Some("off")
    {
        problems.push(problem(file, &d.name, "proxy_cache_use_stale", "serving a stale cached answer depends on proxy_cache and proxy_cache_valid: not modelled; use a stale fallback on the route (fallback: { stale: { max_stale } })"));
    }
    for (name, d) in directives {
        let read_here = [
            "proxy_pass",
            "proxy_read_timeout",
            "proxy_next_upstream",
            "proxy_next_upstream_tries",
            "proxy_next_upstream_timeout",
            "health_check",
            "proxy_cache_use_stale",
        ];
        if !read_here.contains(&name.as_str()) {
            let why = match name.as_str() {
                "proxy_connect_timeout" | "proxy_send_timeout" => {
                    "firedrill's timeout covers connecting and sending too"
                }
                _ => "headers, buffering or caching: not which server answers or what fails",
            };
            route.note(format!("ignored: {}: {why}", from(name, &d.name)));
        }
    }
    if problems.is_empty() {
        Ok((route, order))
    } else {
        Err(problems)
    }
}

/// The path glob of a location and its match priority.
fn location_glob(args: &[Word]) -> Result<(String, usize), String> {
    let (modifier, path) = match args {
        [path] => ("", path.text.as_str()),
        [m, path] => (m.text.as_str(), path.text.as_str()),
        _ => return Err("expected `location [=|^~] PATH { ... }`".to_string()),
    };
    if path.contains(['*', '?', '[', '{']) {
        return Err(format!(
            "the location path `{path}` holds a glob character: not modelled"
        ));
    }
    match modifier {
        "=" => Ok((path.to_string(), usize::MAX)),
        "" | "^~" => Ok((format!("{path}*"), path.len())),
        "~" | "~*" => Err(format!(
            "a regex location (`{modifier} {path}`) is not modelled: firedrill routes match path globs; rewrite it as a prefix location"
        )),
        other => Err(format!("location modifier `{other}` is not modelled")),
    }
}
