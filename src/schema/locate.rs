//! Finding the line and column of a YAML node by its path, for problems that
//! are found after parsing (such as a fault that does not fit the proxy mode).
//!
//! The text is walked with the same deserializer that parsed it: every value
//! off the path is skipped, and the target node is answered with an error, to
//! which `serde_yaml_ng` attaches that node's start mark. This works for block
//! and flow style alike, and through comments, quoting and aliases.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// One step of a path into a YAML document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// The value of this key in a mapping.
    Key(String),
    /// The element at this 0-based index in a sequence.
    Index(usize),
}

/// Writes a path the way errors show it: `faults[0].status`.
pub fn display_path(path: &[Segment]) -> String {
    let mut out = String::new();
    for segment in path {
        match segment {
            Segment::Key(key) if out.is_empty() => out.push_str(key),
            Segment::Key(key) => {
                out.push('.');
                out.push_str(key);
            }
            Segment::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// The 1-based line and column where the node at `path` starts in `text`;
/// `None` when there is no node at that path (or the YAML breaks before it).
///
/// The node of a key is its value: for `status: { code: 503 }` the path
/// `status` points at the `{`. Through an alias (`status: *outage`) it is the
/// anchor (`&outage`), where errors in that value are reported too.
pub fn locate(text: &str, path: &[Segment]) -> Option<(usize, usize)> {
    let found = Cell::new(false);
    let seek = Seek {
        path,
        found: &found,
    };
    let error = seek
        .deserialize(serde_yaml_ng::Deserializer::from_str(text))
        .err()?;
    if !found.get() {
        return None;
    }
    error.location().map(|at| (at.line(), at.column()))
}

/// Walks the rest of `path`; at its end, fails on purpose at the node and
/// sets `found`.
struct Seek<'a> {
    path: &'a [Segment],
    found: &'a Cell<bool>,
}

impl<'de> DeserializeSeed<'de> for Seek<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        if self.path.is_empty() {
            self.found.set(true);
            // Every visit method of `Target` fails, and the deserializer
            // stamps the failure with the position of the node it was given.
            return deserializer.deserialize_any(Target);
        }
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seek<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping or sequence on the path")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Some((Segment::Key(want), rest)) = self.path.split_first() else {
            return Ok(());
        };
        while let Some(key) = map.next_key::<serde_yaml_ng::Value>()? {
            if key.as_str() == Some(want.as_str()) {
                return map.next_value_seed(Seek {
                    path: rest,
                    found: self.found,
                });
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Some((Segment::Index(want), rest)) = self.path.split_first() else {
            return Ok(());
        };
        for _ in 0..*want {
            if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(());
            }
        }
        seq.next_element_seed(Seek {
            path: rest,
            found: self.found,
        })?;
        Ok(())
    }

    // A scalar where the path goes on: there is no such node.
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

/// The node at the end of the path: rejects whatever it is given (serde's
/// default for every visit method), so the error carries the node's mark.
struct Target;

impl Visitor<'_> for Target {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("nothing: this visitor only marks where a node starts")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str) -> Segment {
        Segment::Key(k.to_string())
    }

    fn status_of_second_fault() -> Vec<Segment> {
        vec![key("faults"), Segment::Index(1), key("status")]
    }

    #[test]
    fn block_style_points_at_the_value_of_the_key() {
        let text = "\
faults:
  - latency: { delay: 1s }
  # a comment
  - name: outage
    status:
      code: 503
";
        assert_eq!(locate(text, &status_of_second_fault()), Some((6, 7)));
        assert_eq!(
            locate(text, &[key("faults"), Segment::Index(1), key("name")]),
            Some((4, 11))
        );
        assert_eq!(
            locate(text, &[key("faults"), Segment::Index(0)]),
            Some((2, 5))
        );
    }

    #[test]
    fn flow_style_points_at_the_opening_brace() {
        let text = "faults: [ {latency: {delay: 1s}}, {name: x, status: {code: 503}} ]\n";
        assert_eq!(locate(text, &status_of_second_fault()), Some((1, 53)));
    }

    #[test]
    fn flow_style_across_lines_and_quoted_keys_are_found() {
        let text = "{\"faults\": [\n  {latency: {delay: 1s}},\n  {'status':\n     {code: 503}}]}\n";
        assert_eq!(locate(text, &status_of_second_fault()), Some((4, 6)));
    }

    #[test]
    fn an_alias_points_at_the_anchored_node() {
        let text = "outage: &outage {code: 503}\nfaults:\n  - x: 1\n  - status: *outage\n";
        assert_eq!(locate(text, &status_of_second_fault()), Some((1, 9)));
    }

    #[test]
    fn an_empty_path_is_the_document_itself() {
        assert_eq!(locate("\n\nfaults: []\n", &[]), Some((3, 1)));
    }

    #[test]
    fn missing_nodes_and_broken_text_give_none() {
        let text = "faults:\n  - latency: { delay: 1s }\n";
        assert_eq!(locate(text, &status_of_second_fault()), None);
        assert_eq!(
            locate(text, &[key("faults"), Segment::Index(0), key("status")]),
            None
        );
        assert_eq!(locate(text, &[key("faults"), key("status")]), None);
        assert_eq!(locate("faults: 3\n", &status_of_second_fault()), None);
        assert_eq!(locate("]faults: [\n", &[key("faults")]), None);
    }

    #[test]
    fn paths_display_as_dotted_keys_with_indices() {
        assert_eq!(display_path(&status_of_second_fault()), "faults[1].status");
        assert_eq!(display_path(&[]), "");
    }
}
