//! The imported defense line as it is printed: a tree of firedrill keys
//! whose every value carries the source key it came from, written as YAML
//! with that source as a comment.

use std::fmt::Write as _;

/// One node of the printed defense configuration.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// A mapping, keys in the order they are printed.
    Map(Vec<(String, Node)>),
    /// A list (pool servers, status lists, methods).
    List(Vec<Node>),
    /// One value: its YAML text and where it came from.
    Leaf {
        /// The value as firedrill YAML reads it (`10s`, `50%`, `count`).
        yaml: String,
        /// The source key it came from, or the library default it stands for.
        from: String,
    },
    /// A line of comment only: a behaviour the source leaves at a default
    /// that firedrill expresses by leaving the key out, or a key ignored.
    Note(String),
}

impl Node {
    /// An empty mapping.
    pub fn map() -> Node {
        Node::Map(Vec::new())
    }

    /// A value with its source.
    pub fn leaf(yaml: impl Into<String>, from: impl Into<String>) -> Node {
        Node::Leaf {
            yaml: yaml.into(),
            from: from.into(),
        }
    }

    /// Adds `key: node` to a mapping (a no-op on anything else).
    pub fn set(&mut self, key: &str, node: Node) {
        if let Node::Map(entries) = self {
            entries.push((key.to_string(), node));
        }
    }

    /// Adds a comment line to a mapping.
    pub fn note(&mut self, text: impl Into<String>) {
        if let Node::Map(entries) = self {
            entries.push((String::new(), Node::Note(text.into())));
        }
    }

    /// Whether a mapping has no key (comments aside).
    pub fn is_empty_map(&self) -> bool {
        match self {
            Node::Map(entries) => entries.iter().all(|(_, n)| matches!(n, Node::Note(_))),
            _ => false,
        }
    }

    /// The YAML text of this node at `indent` spaces, comments included.
    pub fn render(&self, indent: usize, out: &mut String) {
        if let Node::Map(entries) = self {
            for (key, node) in entries {
                render_entry(key, node, indent, out);
            }
        }
    }
}

fn render_entry(key: &str, node: &Node, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match node {
        Node::Note(text) => {
            let _ = writeln!(out, "{pad}# {text}");
        }
        Node::Leaf { yaml, from } => {
            let _ = writeln!(out, "{pad}{}: {}  # {from}", key_text(key), scalar(yaml));
        }
        Node::Map(_) => {
            let _ = writeln!(out, "{pad}{}:", key_text(key));
            node.render(indent + 2, out);
        }
        Node::List(items) if items.is_empty() => {
            let _ = writeln!(out, "{pad}{}: []", key_text(key));
        }
        Node::List(items) => {
            let _ = writeln!(out, "{pad}{}:", key_text(key));
            for item in items {
                render_item(item, indent + 2, out);
            }
        }
    }
}

fn render_item(item: &Node, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match item {
        Node::Leaf { yaml, from } => {
            let _ = writeln!(out, "{pad}- {}  # {from}", scalar(yaml));
        }
        Node::Map(_) => {
            // The first key on the dash's line, the rest below it.
            let mut text = String::new();
            item.render(indent + 2, &mut text);
            let first = text.trim_start().to_string();
            let _ = write!(out, "{pad}- {first}");
        }
        Node::Note(text) => {
            let _ = writeln!(out, "{pad}# {text}");
        }
        Node::List(_) => {}
    }
}

/// `text` as a YAML scalar: plain where YAML reads it back unchanged as
/// the same string or number, single-quoted otherwise.
pub fn scalar(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./%:*".contains(c))
        && !text.starts_with(['-', ':', '%', '*', '.'])
        && !text.ends_with(':')
        && !text.contains(": ");
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "''"))
    }
}

/// A mapping key: as [`scalar`], and quoted where YAML would read a
/// number, a boolean or null instead of a name.
fn key_text(key: &str) -> String {
    let typed = key.parse::<f64>().is_ok()
        || ["true", "false", "null", "yes", "no", "on", "off", "~"]
            .contains(&key.to_ascii_lowercase().as_str());
    if typed {
        format!("'{key}'")
    } else {
        scalar(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_is_printed_with_its_source_as_a_comment() {
        let mut breaker = Node::map();
        breaker.set(
            "minimum_calls",
            Node::leaf("5", "a.minimumNumberOfCalls (line 3)"),
        );
        breaker.note("max_wait_in_half_open: left out");
        let mut route = Node::map();
        route.set("breaker", breaker);
        route.set(
            "statuses",
            Node::List(vec![Node::leaf("5xx", "default"), Node::leaf("404", "b")]),
        );
        let mut out = String::new();
        route.render(0, &mut out);
        assert_eq!(
            out,
            "breaker:\n  minimum_calls: 5  # a.minimumNumberOfCalls (line 3)\n  # max_wait_in_half_open: left out\nstatuses:\n  - 5xx  # default\n  - 404  # b\n"
        );
    }

    #[test]
    fn a_scalar_yaml_would_misread_is_quoted() {
        assert_eq!(scalar("10.0.1.11:8080"), "10.0.1.11:8080");
        assert_eq!(scalar("50%"), "50%");
        assert_eq!(scalar("a b"), "'a b'");
        assert_eq!(scalar("it's"), "'it''s'");
        assert_eq!(scalar(""), "''");
        assert_eq!(scalar("*x"), "'*x'");
        assert_eq!(key_text("404"), "'404'");
        assert_eq!(key_text("no"), "'no'");
        assert_eq!(key_text("inventory"), "inventory");
    }
}
