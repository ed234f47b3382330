//! `import:` in an experiment's `defense:` (and a dependency's) or at the
//! top of a defense file: each named source is imported, and each route
//! takes the instance of its name (or of its `instance:`), its own keys
//! laid over the imported ones, so a route can add `match:` and
//! `fallback:` and change any imported value (`--set` and sweeps reach
//! them the same way). Imported pools join `pools:`. The result is the
//! same file with the imports written out, read by the usual parser;
//! [`relocate`] puts its errors back at their place in the file as
//! written.

use std::collections::BTreeMap;
use std::path::Path;

use serde_yaml_ng::{Mapping, Value};

use super::options::Seen;
use super::{Format, Imported};
use crate::schema::{self, LoadError, SchemaError, Segment};

/// Which kind of file holds the defense mappings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    /// An experiment: `defense:` and `dependencies.NAME.defense:`.
    Experiment,
    /// A defense file (`firedrill defend --config`): the top level.
    Defense,
}

/// `text` (read from `file`) with every `import:` written out, or `None`
/// when it has none (or does not parse: the usual parser then says why).
/// The document's limits are checked first ([`schema::check_document`]):
/// a file nested too deep or aliased too wide is refused before any parser
/// builds it.
pub fn expand(file: &str, text: &str, holder: Holder) -> Result<Option<String>, LoadError> {
    schema::check_document(file, text)?;
    let Ok(mut doc) = serde_yaml_ng::from_str::<Value>(text) else {
        return Ok(None);
    };
    let mut places: Vec<Vec<Segment>> = Vec::new();
    match holder {
        Holder::Defense => places.push(Vec::new()),
        Holder::Experiment => {
            places.push(vec![key("defense")]);
            if let Some(Value::Mapping(deps)) = doc.get("dependencies") {
                for name in deps.keys().filter_map(Value::as_str) {
                    places.push(vec![key("dependencies"), key(name), key("defense")]);
                }
            }
        }
    }
    let mut changed = false;
    for at in places {
        let Some(defense) = node_mut(&mut doc, &at) else {
            continue;
        };
        let Value::Mapping(defense) = defense else {
            continue;
        };
        let Some(import) = defense.remove("import") else {
            continue;
        };
        let ctx = Context {
            file,
            text,
            at: &at,
        };
        let imports = ctx.read_imports(&import)?;
        ctx.lay_over(defense, &imports)?;
        let listed: Vec<Value> = imports
            .iter()
            .flat_map(|s| &s.imported.not_drilled)
            .map(|n| Value::from(n.line_text()))
            .collect();
        if !listed.is_empty() {
            defense.insert(Value::from("not_drilled"), Value::Sequence(listed));
        }
        ctx.map_servers(defense, &import)?;
        changed = true;
    }
    if !changed {
        return Ok(None);
    }
    serde_yaml_ng::to_string(&doc).map(Some).map_err(|e| {
        SchemaError::whole_file(file, format!("cannot write the imported file: {e}")).into()
    })
}

fn key(k: &str) -> Segment {
    Segment::Key(k.to_string())
}

fn node_mut<'v>(doc: &'v mut Value, at: &[Segment]) -> Option<&'v mut Value> {
    let mut node = doc;
    for segment in at {
        let Segment::Key(k) = segment else {
            return None;
        };
        node = node.get_mut(k.as_str())?;
    }
    Some(node)
}

/// One `import:` being written out.
struct Context<'a> {
    file: &'a str,
    text: &'a str,
    /// The defense mapping's path.
    at: &'a [Segment],
}

/// One imported source.
struct Source {
    format: Format,
    imported: Imported,
}

impl Context<'_> {
    fn error(&self, tail: &[&str], message: impl Into<String>) -> LoadError {
        let mut path = self.at.to_vec();
        path.extend(tail.iter().map(|k| key(k)));
        SchemaError::at(self.file, self.text, &path, message).into()
    }

    /// Reads `import: { FORMAT: path, ... }`, each path relative to the
    /// file.
    fn read_imports(&self, import: &Value) -> Result<Vec<Source>, LoadError> {
        let expected = format!(
            "expected a mapping of formats to files, such as `import: {{ resilience4j: application.yml }}` (formats: {})",
            Format::ALL.map(Format::key).join(", ")
        );
        let Value::Mapping(map) = import else {
            return Err(self.error(&["import"], expected));
        };
        if map.is_empty() {
            return Err(self.error(&["import"], expected));
        }
        let base = Path::new(self.file).parent().unwrap_or(Path::new(""));
        let strict = match map.get("strict") {
            None | Some(Value::Bool(false)) => false,
            Some(Value::Bool(true)) => true,
            Some(_) => {
                return Err(self.error(
                    &["import", "strict"],
                    "expected true (refuse a key firedrill does not drill) or false (list it as not drilled)",
                ));
            }
        };
        let mut options = super::Options::strict(strict);
        if let Some(classes) = map.get("exceptions") {
            options.exceptions = self.exceptions(classes)?;
        }
        let mut sources = Vec::new();
        for (name, path) in map {
            let name = name.as_str().unwrap_or_default();
            if name == "servers" || name == "strict" || name == "exceptions" {
                continue; // read by `lay_over`, above
            }
            let Some(format) = Format::from_key(name) else {
                return Err(self.error(
                    &["import", name],
                    format!("unknown format `{name}`: {expected}"),
                ));
            };
            let written: Vec<&str> = match path {
                Value::String(one) => vec![one.as_str()],
                Value::Sequence(many) if !many.is_empty() => {
                    many.iter().filter_map(Value::as_str).collect()
                }
                _ => Vec::new(),
            };
            if written.is_empty()
                || matches!(path, Value::Sequence(many) if many.len() != written.len())
            {
                return Err(self.error(
                    &["import", name],
                    format!("expected the path of a {name} file, or a list of paths"),
                ));
            }
            for one in written {
                let imported = super::import_file(format, &base.join(one), &[], &options)?;
                sources.push(Source { format, imported });
            }
        }
        Ok(sources)
    }

    /// `import.exceptions`: the application's exception classes, each
    /// with what it is raised for (`com.shop.StockException: 503`, or a
    /// list such as `[503, timeout]`).
    fn exceptions(&self, classes: &Value) -> Result<BTreeMap<String, Vec<Seen>>, LoadError> {
        let expected = "expected a mapping of exception classes to what firedrill sees of them, such as `com.shop.StockException: 503` (a 4xx or 5xx status, `4xx`, `5xx`, `timeout` or `connection`, or a list of them)";
        let Value::Mapping(classes) = classes else {
            return Err(self.error(&["import", "exceptions"], expected));
        };
        let mut found = BTreeMap::new();
        for (class, seen) in classes {
            let class = class.as_str().unwrap_or_default();
            let one = |v: &Value| match v {
                Value::String(s) => Seen::parse(s),
                Value::Number(n) => Seen::parse(&n.to_string()),
                _ => Err(expected.to_string()),
            };
            let seen = match seen {
                Value::Sequence(many) if !many.is_empty() => many.iter().map(one).collect(),
                single => one(single).map(|s| vec![s]),
            };
            let seen = seen.map_err(|m| self.error(&["import", "exceptions", class], m))?;
            found.insert(class.to_string(), seen);
        }
        Ok(found)
    }

    /// `import.servers`: each listed address of an imported pool's servers
    /// becomes the target instance it names; an address no pool has is an
    /// error at its key.
    fn map_servers(&self, defense: &mut Mapping, import: &Value) -> Result<(), LoadError> {
        let Some(servers) = import.get("servers") else {
            return Ok(());
        };
        let Value::Mapping(servers) = servers else {
            return Err(self.error(&["import", "servers"], "expected a mapping of server addresses to target instances, such as `\"10.0.1.11:8080\": a`"));
        };
        let mut used = Vec::new();
        if let Some(Value::Mapping(pools)) = defense.get_mut("pools") {
            for (_, pool) in pools.iter_mut() {
                let Some(Value::Sequence(list)) = pool.get_mut("servers") else {
                    continue;
                };
                for server in list.iter_mut() {
                    let Value::Mapping(server) = server else {
                        continue;
                    };
                    let Some(address) = server
                        .get("address")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                    else {
                        continue;
                    };
                    let Some(instance) = servers.get(address.as_str()) else {
                        continue;
                    };
                    server.remove("address");
                    server.insert(Value::from("instance"), instance.clone());
                    used.push(address);
                }
            }
        }
        for address in servers.keys().filter_map(Value::as_str) {
            if !used.iter().any(|u| u == address) {
                return Err(self.error(
                    &["import", "servers", address],
                    format!("no imported pool has a server `{address}`"),
                ));
            }
        }
        Ok(())
    }

    /// Lays each route over the instance it takes, and adds the pools.
    fn lay_over(&self, defense: &mut Mapping, sources: &[Source]) -> Result<(), LoadError> {
        let mut taken = false;
        if let Some(Value::Mapping(routes)) = defense.get_mut("routes") {
            for (name, route) in routes.iter_mut() {
                let name = name.as_str().unwrap_or_default().to_string();
                taken |= self.route(&name, route, sources)?;
            }
        }
        if let Some(Value::Mapping(routes)) = defense.get("routes") {
            // A route of the experiment's own calling an imported pool.
            taken |= routes.values().any(|r| {
                r.get("pool").and_then(Value::as_str).is_some_and(|pool| {
                    sources
                        .iter()
                        .any(|s| s.imported.pools.iter().any(|(n, _)| n == pool))
                })
            });
        }
        let imported: Vec<String> = sources
            .iter()
            .flat_map(|s| s.imported.instance_names())
            .collect();
        if !taken && !imported.is_empty() {
            // Drilling none of the imported settings would judge a line
            // the file does not describe.
            return Err(self.error(
                &["import"],
                format!(
                    "no route takes an imported instance, so nothing imported would be drilled: list the ones to drill under routes (`routes: {{ {}: {{}} }}`); imported: {}",
                    imported[0],
                    imported.join(", ")
                ),
            ));
        }
        let mut pools = Mapping::new();
        for source in sources {
            for (name, pool) in &source.imported.pools {
                pools.insert(Value::from(name.as_str()), to_value(pool));
            }
        }
        if !pools.is_empty() {
            let mine = defense
                .remove("pools")
                .unwrap_or(Value::Mapping(Mapping::new()));
            let mut all = Value::Mapping(pools);
            overlay(&mut all, mine);
            defense.insert(Value::from("pools"), all);
        }
        Ok(())
    }

    /// Lays the imported instance over route `name`; whether it took one.
    fn route(&self, name: &str, route: &mut Value, sources: &[Source]) -> Result<bool, LoadError> {
        let Value::Mapping(map) = route else {
            return Ok(false); // the parser says what a route must be.
        };
        let named = map.remove("instance");
        let wanted = match &named {
            Some(Value::String(s)) => s.clone(),
            Some(_) => {
                return Err(self.error(
                    &["routes", name, "instance"],
                    "expected the name of an imported instance",
                ));
            }
            None => name.to_string(),
        };
        let found: Vec<&Source> = sources
            .iter()
            .filter(|s| s.imported.routes.iter().any(|(n, _)| *n == wanted))
            .collect();
        if found.is_empty() {
            if named.is_some() {
                let known: Vec<String> = sources
                    .iter()
                    .flat_map(|s| s.imported.instance_names())
                    .collect();
                return Err(self.error(
                    &["routes", name, "instance"],
                    format!(
                        "no instance `{wanted}` in the imported files: expected one of {}",
                        known.join(", ")
                    ),
                ));
            }
            return Ok(false); // a route of the experiment's own
        }
        let mut base = Value::Mapping(Mapping::new());
        for source in &found {
            let (_, node) = source
                .imported
                .routes
                .iter()
                .find(|(n, _)| *n == wanted)
                .expect("found");
            let value = to_value(node);
            if let (Value::Mapping(have), Value::Mapping(new)) = (&base, &value)
                && let Some(k) = new.keys().find(|k| have.contains_key(*k))
            {
                let formats: Vec<&str> = found.iter().map(|s| s.format.key()).collect();
                return Err(self.error(
                    &["routes", name],
                    format!(
                        "the instance `{wanted}` sets `{}` in more than one import ({}): set it in the route to choose",
                        k.as_str().unwrap_or_default(),
                        formats.join(", ")
                    ),
                ));
            }
            overlay(&mut base, value);
        }
        let own = std::mem::take(route);
        overlay(&mut base, own);
        *route = base;
        Ok(true)
    }
}

/// The imported node as the YAML value its printed text reads as.
fn to_value(node: &super::tree::Node) -> Value {
    let mut text = String::new();
    node.render(0, &mut text);
    serde_yaml_ng::from_str(&text).unwrap_or(Value::Null)
}

/// `top` laid over `base`: mappings merge key by key, anything else
/// replaces.
fn overlay(base: &mut Value, top: Value) {
    match (base, top) {
        (Value::Mapping(b), Value::Mapping(t)) => {
            for (k, v) in t {
                match b.get_mut(&k) {
                    Some(existing) => overlay(existing, v),
                    None => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (b, t) => *b = t,
    }
}

/// `err`, found in the written-out text, put back at its place in
/// `original` (the file as written): at the key itself when the file
/// has it, else at its nearest ancestor, saying the value was imported.
pub fn relocate(err: LoadError, original: &str) -> LoadError {
    let one = |mut e: SchemaError| {
        let path = key_path(&e.key);
        match schema::locate(original, &path) {
            Some((line, column)) => {
                (e.line, e.column) = (line, column);
            }
            None => {
                let nearest = (0..path.len())
                    .rev()
                    .find_map(|n| schema::locate(original, &path[..n]));
                (e.line, e.column) = nearest.unwrap_or((1, 1));
                e.message
                    .push_str(" (a value written out by defense.import)");
            }
        }
        e
    };
    match err {
        LoadError::Invalid(e) => LoadError::Invalid(one(e)),
        LoadError::Problems(all) => LoadError::Problems(all.into_iter().map(one).collect()),
        other => other,
    }
}

/// `defense.routes.a.breaker` or `faults[0].at` as segments.
fn key_path(key: &str) -> Vec<Segment> {
    super::source::split_key(key)
        .into_iter()
        .map(|s| {
            match s
                .strip_prefix('[')
                .and_then(|s| s.strip_suffix(']'))
                .and_then(|n| n.parse().ok())
            {
                Some(i) => Segment::Index(i),
                None => Segment::Key(s),
            }
        })
        .collect()
}

/// Reads a defense file's `text` (from `file`), its `import:` written
/// out first.
pub fn load_defense(file: &str, text: &str) -> Result<crate::defense::DefenseConfig, LoadError> {
    match expand(file, text, Holder::Defense)? {
        None => Ok(schema::from_yaml_str(file, text)?),
        Some(expanded) => schema::from_yaml_str(file, &expanded)
            .map_err(|e| relocate(LoadError::Invalid(e), text)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_nested_too_deep_is_refused_at_its_place_before_any_import_is_looked_for() {
        // 200 lists deep: past the limit of 64 (serde_yaml_ng's own
        // recursion limit would give up, after time quadratic in the depth).
        let text = format!("name: x\nfaults: {}{}\n", "[".repeat(200), "]".repeat(200));
        for holder in [Holder::Experiment, Holder::Defense] {
            let Err(LoadError::Invalid(e)) = expand("deep.yaml", &text, holder) else {
                panic!("{holder:?}: not refused");
            };
            assert_eq!((e.line, e.column), (2, 72), "{holder:?}: {e}");
            assert!(e.message.contains("nested deeper than 64 levels"), "{e}");
        }
    }
}
