//! NGINX Plus `health_check` and its `match` block → the pool's
//! `health_check`.

use indexmap::IndexMap;

use super::parse::{Directive, Word, time};
use super::{from, problem};
use crate::clock::Duration;
use crate::defense::import::tree::Node;
use crate::schema::SchemaError;
use crate::schema::units::Dur;

/// The parameters of one `health_check`, NGINX Plus's defaults where it
/// leaves them out.
struct Check {
    uri: Node,
    interval: (Duration, String),
    fails: Node,
    passes: Node,
    /// The line of `mandatory`, when it is given.
    mandatory_at: Option<usize>,
    matcher: Option<Node>,
}

/// Reads the parameters of `d`; ignored ones are noted in `node`.
fn parameters(
    file: &str,
    d: &Directive,
    matches: &IndexMap<String, &Directive>,
    node: &mut Node,
    problems: &mut Vec<SchemaError>,
) -> Check {
    let key = "health_check";
    let why = |w: &Word| from(&format!("health_check {}", w.text), w);
    let mut check = Check {
        uri: Node::leaf("/", "NGINX Plus default: uri=/"),
        interval: (
            Duration::from_secs(5),
            "NGINX Plus default: interval=5s".to_string(),
        ),
        fails: Node::leaf("1", "NGINX Plus default: fails=1"),
        passes: Node::leaf("1", "NGINX Plus default: passes=1"),
        mandatory_at: None,
        matcher: None,
    };
    for w in &d.args {
        let (k, v) = w.text.split_once('=').unwrap_or((w.text.as_str(), ""));
        match k {
            "uri" => check.uri = Node::leaf(v, why(w)),
            "interval" => match time(v) {
                Ok(t) if !t.is_zero() => check.interval = (t, why(w)),
                Ok(_) => problems.push(problem(file, w, key, "interval=0 is not a health check")),
                Err(m) => problems.push(problem(file, w, key, m)),
            },
            "fails" | "passes" => match v.parse::<u32>() {
                Ok(n) if n >= 1 => {
                    let leaf = Node::leaf(n.to_string(), why(w));
                    if k == "fails" {
                        check.fails = leaf;
                    } else {
                        check.passes = leaf;
                    }
                }
                _ => problems.push(problem(
                    file,
                    w,
                    key,
                    format!("invalid {k} `{v}`: expected a whole number of at least 1"),
                )),
            },
            "mandatory" => check.mandatory_at = Some(w.line),
            "persistent" => node.note(format!(
                "ignored: {}: keeps the state across a reload",
                why(w)
            )),
            "keepalive_time" => node.note(format!(
                "ignored: {}: how long a check's connection is kept",
                why(w)
            )),
            "match" => match matches.get(v) {
                Some(block) => check.matcher = Some(match_block(file, block, problems)),
                None => problems.push(problem(
                    file,
                    w,
                    key,
                    format!("no match block `{v}` in the file"),
                )),
            },
            "jitter" => {
                if !time(v).is_ok_and(|t| t.is_zero()) {
                    problems.push(problem(file, w, key, "a random jitter of the checks is not modelled: firedrill checks every interval"));
                }
            }
            "port" => problems.push(problem(
                file,
                w,
                key,
                "checking another port than the server's is not modelled",
            )),
            "type" => problems.push(problem(
                file,
                w,
                key,
                format!("`type={v}` checks are not modelled: firedrill checks over HTTP"),
            )),
            other => problems.push(problem(
                file,
                w,
                key,
                format!("unknown health_check parameter `{other}`"),
            )),
        }
    }
    check
}

/// `health_check [interval=5s] [fails=1] [passes=1] [uri=/] [match=NAME]
/// mandatory` as a pool's `health_check`; `read` is the location's
/// `proxy_read_timeout`, which NGINX Plus waits for a check.
pub(super) fn health_check(
    file: &str,
    d: &Directive,
    matches: &IndexMap<String, &Directive>,
    read: Duration,
) -> Result<Node, Vec<SchemaError>> {
    let mut problems = Vec::new();
    let mut node = Node::map();
    let check = parameters(file, d, matches, &mut node, &mut problems);
    if !problems.is_empty() {
        return Err(problems);
    }
    let interval = check.interval.0;
    node.set("uri", check.uri);
    node.set(
        "interval",
        Node::leaf(Dur(interval).to_string(), check.interval.1),
    );
    let timeout_why = if read > interval {
        format!(
            "the interval: NGINX Plus waits up to proxy_read_timeout ({}) and checks again after it, firedrill at most one interval (the same for a check answered within it)",
            Dur(read)
        )
    } else {
        "proxy_read_timeout, which NGINX Plus waits for a check".to_string()
    };
    node.set(
        "timeout",
        Node::leaf(Dur(read.min(interval)).to_string(), timeout_why),
    );
    node.set("fails", check.fails);
    node.set("passes", check.passes);
    node.set(
        "mandatory",
        match check.mandatory_at {
            Some(line) => Node::leaf("true", format!("health_check mandatory (line {line}): a server is out until it passes its checks")),
            None => Node::leaf("false", format!("NGINX Plus default: no `mandatory` on health_check (line {}): a server is in rotation until its checks fail", d.name.line)),
        },
    );
    let matcher = check.matcher.unwrap_or_else(|| {
        let mut m = Node::map();
        m.set(
            "status",
            Node::leaf("200-399", "NGINX Plus default: a 2xx or 3xx passes"),
        );
        m
    });
    node.set("match", matcher);
    Ok(node)
}

/// `match NAME { status ...; header ...; body ~ ...; body !~ ...; }` → the check's
/// `match`.
fn match_block(file: &str, block: &Directive, problems: &mut Vec<SchemaError>) -> Node {
    let mut node = Node::map();
    let mut statuses = Vec::new();
    let mut headers = Node::map();
    let name = block.args.first().map_or("", |w| w.text.as_str());
    let key = format!("match {name}");
    for d in block.block.as_deref().unwrap_or_default() {
        let words: Vec<&str> = d.args.iter().map(|w| w.text.as_str()).collect();
        let why = from(&format!("{key} {}", d.name.text), &d.name);
        match (d.name.text.as_str(), words.as_slice()) {
            ("status", ["!", ..]) => problems.push(problem(file, &d.name, &key, "a negated status (`status ! ...`) is not modelled: list the statuses that pass")),
            ("status", codes) if !codes.is_empty() => {
                for code in codes {
                    let valid = code.split('-').all(|c| c.parse::<u16>().is_ok_and(|n| (100..=599).contains(&n)));
                    if valid {
                        statuses.push(Node::leaf(*code, why.clone()));
                    } else {
                        problems.push(problem(file, &d.name, &key, format!("invalid status `{code}`")));
                    }
                }
            }
            ("header", [h, "=", v]) => headers.set(h, Node::leaf(format!("^{}$", regex::escape(v)), format!("{why}: equal"))),
            ("header", [h, "~", v]) => headers.set(h, Node::leaf(*v, why)),
            ("header", [h, "~*", v]) => headers.set(h, Node::leaf(format!("(?i){v}"), why)),
            ("header", [h]) if !h.starts_with('!') => headers.set(h, Node::leaf(".*", format!("{why}: present"))),
            ("header", _) => problems.push(problem(file, &d.name, &key, "this header condition (a negation, or `!=`, `!~`) is not modelled: write what must match")),
            ("body", ["~", v]) => node.set("body", Node::leaf(*v, why)),
            ("body", ["~*", v]) => node.set("body", Node::leaf(format!("(?i){v}"), why)),
            ("body", ["!~", v]) => node.set("body_not", Node::leaf(*v, why)),
            ("body", ["!~*", v]) => node.set("body_not", Node::leaf(format!("(?i){v}"), why)),
            ("body", _) => problems.push(problem(file, &d.name, &key, "expected `body ~ REGEX`, `body ~* REGEX`, `body !~ REGEX` or `body !~* REGEX`")),
            (other, _) => problems.push(problem(file, &d.name, &key, format!("unknown match condition `{other}`"))),
        }
    }
    if statuses.is_empty() {
        node.set(
            "status",
            Node::leaf(
                "100-599",
                format!("{key} names no status: any status passes"),
            ),
        );
    } else {
        node.set("status", Node::List(statuses));
    }
    if !headers.is_empty_map() {
        node.set("header", headers);
    }
    node
}
