//! Writing the Envoy configuration a DestinationRule translates to: a
//! key path as text, and a value set at a path of a YAML tree.

use serde_yaml_ng::{Mapping, Value};

use crate::schema::Segment;

/// `a.b[0].c` → its segments.
pub(super) fn segments(path: &str) -> Vec<Segment> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (name, index) = match part.split_once('[') {
            Some((name, i)) => (name, i.trim_end_matches(']').parse().ok()),
            None => (part, None),
        };
        out.push(Segment::Key(name.to_string()));
        out.extend(index.map(Segment::Index));
    }
    out
}

/// Sets `value` at `path` of `root`, making the mappings and lists on
/// the way.
pub(super) fn set(root: &mut Value, path: &[Segment], value: Value) {
    let Some((first, rest)) = path.split_first() else {
        *root = value;
        return;
    };
    let child = match first {
        Segment::Key(k) => {
            if !root.is_mapping() {
                *root = Value::Mapping(Mapping::new());
            }
            let map = root.as_mapping_mut().expect("a mapping");
            map.entry(Value::from(k.as_str())).or_insert(Value::Null)
        }
        Segment::Index(i) => {
            if !root.is_sequence() {
                *root = Value::Sequence(Vec::new());
            }
            let list = root.as_sequence_mut().expect("a list");
            while list.len() <= *i {
                list.push(Value::Null);
            }
            &mut list[*i]
        }
    };
    set(child, rest, value);
}
