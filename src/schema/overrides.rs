//! `--set PATH=VALUE`: overriding any field of a YAML file from the command
//! line (and the points of a sweep). PATH is dotted: mapping keys by name,
//! list items by index or by their `name` field (`load.stock.rate`,
//! `faults.0.at`, `defense.routes.stock.breaker.permitted_calls_in_half_open`).
//! VALUE is read as YAML (`5`, `2s`, `true`, `[200, 2xx]`).

use std::fmt;
use std::str::FromStr;

use serde_yaml_ng::{Mapping, Value};

/// One override.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    /// The dotted path, as written.
    pub path: String,
    /// The value, as written.
    pub value: String,
}

impl fmt::Display for Override {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.path, self.value)
    }
}

impl FromStr for Override {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (path, value) = s
            .split_once('=')
            .ok_or_else(|| format!("`{s}`: expected PATH=VALUE, e.g. load.stock.rate=50/s"))?;
        let path = path.trim();
        if path.is_empty() || path.split('.').any(str::is_empty) {
            return Err(format!(
                "`{s}`: expected a dotted path such as defense.routes.stock.breaker.wait_in_open"
            ));
        }
        Ok(Override {
            path: path.to_string(),
            value: value.trim().to_string(),
        })
    }
}

/// `text` with every override applied, as YAML. An error says which
/// override and why (a list index out of range, a path through a scalar, a
/// value that is not YAML).
pub fn apply(text: &str, overrides: &[Override]) -> Result<String, String> {
    let mut doc: Value =
        serde_yaml_ng::from_str(text).map_err(|e| format!("cannot read the file as YAML: {e}"))?;
    for o in overrides {
        // The value meets the file's depth limit before the parser sees it.
        if let Some(deep) = super::scan::first_too_deep(&o.value, super::limits::MAX_DEPTH) {
            return Err(format!(
                "--set {}: the value nests deeper than {} levels (at column {})",
                o.path,
                super::limits::MAX_DEPTH,
                deep.column
            ));
        }
        let value: Value = serde_yaml_ng::from_str(&o.value)
            .map_err(|e| format!("--set {o}: the value is not YAML: {e}"))?;
        let segments: Vec<&str> = o.path.split('.').collect();
        set(&mut doc, &segments, value).map_err(|why| format!("--set {o}: {why}"))?;
    }
    serde_yaml_ng::to_string(&doc).map_err(|e| format!("cannot write the overridden file: {e}"))
}

/// Sets `path` under `node` to `value`, creating missing mapping keys.
fn set(node: &mut Value, path: &[&str], value: Value) -> Result<(), String> {
    let Some((first, rest)) = path.split_first() else {
        *node = value;
        return Ok(());
    };
    if node.is_null() {
        *node = Value::Mapping(Mapping::new());
    }
    let child = match node {
        Value::Mapping(map) => {
            let key = Value::String((*first).to_string());
            if !map.contains_key(&key) {
                map.insert(key.clone(), Value::Null);
            }
            map.get_mut(&key)
        }
        Value::Sequence(items) => {
            let len = items.len();
            let found = match first.parse::<usize>() {
                Ok(i) => items.get_mut(i).ok_or(format!(
                    "`{first}`: the list has {len} item(s), indexed from 0"
                ))?,
                Err(_) => items
                    .iter_mut()
                    .find(|item| item.get("name").and_then(Value::as_str) == Some(*first))
                    .ok_or(format!("`{first}`: no item of the list has this name"))?,
            };
            Some(found)
        }
        _ => {
            return Err(format!(
                "`{first}`: the value above it is not a mapping or a list"
            ));
        }
    };
    match child {
        Some(child) => set(child, rest, value),
        None => Err(format!("`{first}`: cannot be set")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(s: &str) -> Override {
        s.parse().unwrap()
    }

    #[test]
    fn keys_indexes_and_names_lead_to_the_field_and_values_are_yaml() {
        let text = "seed: 1\nload:\n  - { name: stock, rate: 20/s }\n  - { name: b, rate: 5/s }\n";
        let out = apply(
            text,
            &[
                o("seed=9"),
                o("load.stock.rate=50/s"),
                o("load.1.timeout=2s"),
                o("defense.routes.stock.breaker.permitted_calls_in_half_open=5"),
            ],
        )
        .unwrap();
        let v: Value = serde_yaml_ng::from_str(&out).unwrap();
        assert_eq!(v["seed"], Value::from(9));
        assert_eq!(v["load"][0]["rate"], Value::from("50/s"));
        assert_eq!(v["load"][1]["timeout"], Value::from("2s"));
        assert_eq!(
            v["defense"]["routes"]["stock"]["breaker"]["permitted_calls_in_half_open"],
            Value::from(5)
        );
    }

    #[test]
    fn a_path_that_leads_nowhere_says_which_override_and_why() {
        let text = "seed: 1\nload:\n  - { name: stock }\n";
        let err = apply(text, &[o("load.3.rate=1/s")]).unwrap_err();
        assert_eq!(
            err,
            "--set load.3.rate=1/s: `3`: the list has 1 item(s), indexed from 0"
        );
        let err = apply(text, &[o("load.nope.rate=1/s")]).unwrap_err();
        assert!(err.contains("no item of the list has this name"), "{err}");
        let err = apply(text, &[o("seed.x=1")]).unwrap_err();
        assert!(err.contains("not a mapping or a list"), "{err}");
    }

    #[test]
    fn a_value_nested_past_the_limit_is_refused_before_it_is_parsed() {
        let deep = format!("seed={}{}", "[".repeat(100_000), "]".repeat(100_000));
        let err = apply("seed: 1\n", &[o(&deep)]).unwrap_err();
        assert_eq!(
            err,
            "--set seed: the value nests deeper than 64 levels (at column 64)"
        );
    }

    #[test]
    fn an_override_without_path_or_equals_sign_is_refused() {
        assert!("seed".parse::<Override>().is_err());
        assert!("=3".parse::<Override>().is_err());
        assert!("a..b=3".parse::<Override>().is_err());
        assert_eq!(o(" a.b = x ").path, "a.b");
    }
}
