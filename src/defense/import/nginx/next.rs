//! `proxy_next_upstream`, `proxy_next_upstream_tries` and
//! `proxy_next_upstream_timeout` → the route's `next_upstream`.

use indexmap::IndexMap;

use super::parse::Directive;
use super::{from, problem};
use crate::defense::import::tree::Node;
use crate::schema::SchemaError;

/// Sets `next_upstream` on `route`.
pub(super) fn next_upstream(
    file: &str,
    directives: &IndexMap<String, &Directive>,
    route: &mut Node,
    problems: &mut Vec<SchemaError>,
) {
    let mut node = Node::map();
    let mut on = Vec::new();
    let mut non_idempotent = Node::leaf(
        "false",
        "NGINX default: POST, PATCH and LOCK are not passed on once sent",
    );
    match directives.get("proxy_next_upstream") {
        None => {
            on.push(Node::leaf(
                "error",
                "NGINX default: proxy_next_upstream error timeout",
            ));
            on.push(Node::leaf(
                "timeout",
                "NGINX default: proxy_next_upstream error timeout",
            ));
        }
        Some(d) => {
            let why = from("proxy_next_upstream", &d.name);
            for w in &d.args {
                match w.text.as_str() {
                    "error" | "timeout" | "http_500" | "http_502" | "http_503" | "http_504" | "http_403"
                    | "http_404" | "http_429" => on.push(Node::leaf(w.text.clone(), why.clone())),
                    "non_idempotent" => non_idempotent = Node::leaf("true", why.clone()),
                    "off" => {}
                    "invalid_header" => node.note(format!(
                        "invalid_header ({why}): no firedrill answer has an invalid header (an empty or broken answer is an error)"
                    )),
                    "updating" => node.note(format!("updating ({why}): a cache state; no effect without proxy_cache")),
                    other => problems.push(problem(file, w, "proxy_next_upstream", format!(
                        "unknown condition `{other}`: expected error, timeout, invalid_header, http_500, http_502, http_503, http_504, http_403, http_404, http_429, non_idempotent or off"
                    ))),
                }
            }
        }
    }
    if on.is_empty() {
        node.note("nothing is passed on (proxy_next_upstream off); a connection error or a timeout still counts against the server");
    }
    node.set("on", Node::List(on));
    let tries = match directives.get("proxy_next_upstream_tries") {
        Some(d) => match d.args.first().map(|w| w.text.parse::<u32>()) {
            Some(Ok(n)) => Node::leaf(
                n.to_string(),
                format!(
                    "{}{}",
                    from("proxy_next_upstream_tries", &d.name),
                    if n == 0 { ": every server once" } else { "" }
                ),
            ),
            _ => {
                problems.push(problem(
                    file,
                    &d.name,
                    "proxy_next_upstream_tries",
                    "expected a whole number",
                ));
                return;
            }
        },
        None => Node::leaf(
            "0",
            "NGINX default: proxy_next_upstream_tries 0 (every server once)",
        ),
    };
    node.set("tries", tries);
    node.set("non_idempotent", non_idempotent);
    if let Some(d) = directives.get("proxy_next_upstream_timeout") {
        let zero = d
            .args
            .first()
            .is_some_and(|w| super::parse::time(&w.text).is_ok_and(|t| t.is_zero()));
        if !zero {
            problems.push(problem(file, &d.name, "proxy_next_upstream_timeout", "a time limit on passing a request on is not modelled: firedrill passes it on while tries remain (set request_timeout on the line for an outer deadline)"));
        }
    }
    route.set("next_upstream", node);
}
