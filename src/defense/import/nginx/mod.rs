//! NGINX configuration: each `upstream` block becomes a pool, and each
//! `location` that `proxy_pass`es to one a route of the upstream's name
//! calling it (`proxy_read_timeout`, `proxy_next_upstream`, NGINX Plus
//! `health_check` with its `match` block), the `proxy_*` directives
//! inherited from the `http` and `server` levels as NGINX inherits them.

mod health;
mod next;
pub(super) mod parse;
#[cfg(test)]
mod tests;
mod values;

use indexmap::IndexMap;

use super::Imported;
use super::tree::Node;
use crate::schema::SchemaError;
use parse::{Directive, Word};

/// A problem at `word`.
fn problem(file: &str, word: &Word, key: &str, message: impl Into<String>) -> SchemaError {
    SchemaError {
        file: file.to_string(),
        line: word.line,
        column: word.column,
        key: key.to_string(),
        message: message.into(),
    }
}

/// The comment of a value from `word` (its directive, line).
fn from(key: &str, word: &Word) -> String {
    format!("{key} (line {})", word.line)
}

/// What the walk found: upstreams, match blocks and proxying locations.
#[derive(Default)]
struct Found<'a> {
    upstreams: Vec<&'a Directive>,
    matches: IndexMap<String, &'a Directive>,
    /// Each location with the `proxy_*` and `health_check` directives in
    /// force there (its own over its server's over `http`'s).
    locations: Vec<(&'a Directive, IndexMap<String, &'a Directive>)>,
}

/// The directives a location inherits.
fn inherited(name: &str) -> bool {
    name.starts_with("proxy_") || name == "health_check"
}

fn walk<'a>(
    directives: &'a [Directive],
    context: &IndexMap<String, &'a Directive>,
    found: &mut Found<'a>,
) {
    let mut here = context.clone();
    for d in directives
        .iter()
        .filter(|d| d.block.is_none() && inherited(&d.name.text))
    {
        here.insert(d.name.text.clone(), d);
    }
    for d in directives {
        let Some(block) = &d.block else { continue };
        match d.name.text.as_str() {
            "upstream" => found.upstreams.push(d),
            "match" => {
                if let Some(name) = d.args.first() {
                    found.matches.insert(name.text.clone(), d);
                }
            }
            "location" => {
                let mut own = here.clone();
                for inner in block
                    .iter()
                    .filter(|i| i.block.is_none() && inherited(&i.name.text))
                {
                    own.insert(inner.name.text.clone(), inner);
                }
                found.locations.push((d, own));
                walk(block, &here, found);
            }
            _ => walk(block, &here, found),
        }
    }
}

/// Reads every upstream and proxying location of `text`.
pub(super) fn import(file: &str, text: &str) -> Result<Imported, Vec<SchemaError>> {
    let directives = parse::parse(file, text).map_err(|e| vec![e])?;
    let mut found = Found::default();
    walk(&directives, &IndexMap::new(), &mut found);
    let mut problems = Vec::new();
    let mut pools: Vec<(String, Node)> = Vec::new();
    for upstream in &found.upstreams {
        match values::pool(file, upstream) {
            Ok((name, node)) => pools.push((name, node)),
            Err(mut p) => problems.append(&mut p),
        }
    }
    let mut routes: Vec<(String, Node, usize)> = Vec::new();
    for (location, directives) in &found.locations {
        let Some(pass) = directives.get("proxy_pass") else {
            continue;
        };
        let Some(target) = pass.args.first() else {
            continue;
        };
        let upstream = target
            .text
            .trim_start_matches("http://")
            .trim_start_matches("https://");
        let upstream = upstream.split('/').next().unwrap_or(upstream);
        let Some(index) = pools.iter().position(|(n, _)| n == upstream) else {
            continue; // a location proxying to a host, not an upstream
        };
        if routes.iter().any(|(n, _, _)| n == upstream) {
            problems.push(problem(file, &location.name, "location", format!(
                "a second location proxying to upstream `{upstream}`: firedrill imports one route per upstream (keep the location you drill in the file)"
            )));
            continue;
        }
        match values::route(
            file,
            location,
            directives,
            upstream,
            &found.matches,
            &mut pools[index].1,
        ) {
            Ok((node, order)) => routes.push((upstream.to_string(), node, order)),
            Err(mut p) => problems.append(&mut p),
        }
    }
    if pools.is_empty() && problems.is_empty() {
        problems.push(SchemaError {
            file: file.to_string(),
            line: 1,
            column: 1,
            key: String::new(),
            message: "no upstream block: expected `upstream NAME { server HOST:PORT; ... }`"
                .to_string(),
        });
    }
    if !problems.is_empty() {
        problems.sort_by_key(|p| (p.line, p.column));
        return Err(problems);
    }
    // NGINX picks the longest matching prefix; firedrill the first match.
    routes.sort_by_key(|(_, _, order)| std::cmp::Reverse(*order));
    let mut shown = String::new();
    for (_, node, _) in &routes {
        node.render(0, &mut shown);
    }
    for (_, node) in &pools {
        node.render(0, &mut shown);
    }
    let mut notes = vec![
        "A pool server is the address NGINX names; in an experiment, map it to a target instance"
            .to_string(),
        "with import: { nginx: FILE, servers: { ADDRESS: INSTANCE } }. See docs/import.md."
            .to_string(),
    ];
    uncited(&directives, &shown, &mut notes);
    Ok(Imported {
        routes: routes.into_iter().map(|(n, r, _)| (n, r)).collect(),
        pools,
        notes,
        not_drilled: Vec::new(),
    })
}

/// Whether a line of `shown` names the directive `name` at `line`, as a
/// value's comment does (`NAME ... (line N)`, `(upstream U, line N)`).
pub(super) fn cited(shown: &str, name: &str, line: usize) -> bool {
    let at = [format!("(line {line})"), format!(", line {line})")];
    shown
        .lines()
        .any(|l| l.contains(name) && at.iter().any(|a| l.contains(a.as_str())))
}

/// A note for each directive no value of the output cites, saying what
/// it is to the import: the pool's name, a `match` block, a block whose
/// directives are listed one by one, or a directive not read.
fn uncited(directives: &[parse::Directive], shown: &str, notes: &mut Vec<String>) {
    for d in directives {
        let (name, line) = (&d.name.text, d.name.line);
        if !cited(shown, name, line) {
            let arg = d.args.first().map_or("", |a| a.text.as_str());
            notes.push(match (name.as_str(), &d.block) {
                ("upstream", _) => format!("upstream {arg} (line {line}): the pool {arg}"),
                ("match", _) => format!("match {arg} (line {line}): the conditions of the health checks naming it"),
                (_, Some(block)) if !block.is_empty() && name != "location" => format!("{name} (line {line}): a block, its directives each listed"),
                _ => format!("not read: {name} (line {line}): not in an upstream, a `match` or a location proxying to an upstream"),
            });
        }
        if let Some(block) = &d.block {
            uncited(block, shown, notes);
        }
    }
}
