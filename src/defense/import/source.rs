//! A source configuration read as located entries: every value with its
//! key path in the source's own terms and its line and column, whatever
//! the file's syntax (YAML, JSON, Java properties, NGINX). The mappings
//! read entries, so each of them reports a problem at the place the user
//! wrote it.

use serde_yaml_ng::Value;

use crate::schema::{self, SchemaError, Segment};

/// One value of the source.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The key path as the source writes it; a list item is a segment
    /// `[i]` of its own.
    pub path: Vec<String>,
    /// The value's text (a number or boolean as written); empty for an
    /// empty mapping or list, which still declares its key.
    pub value: String,
    /// 1-based line of the value.
    pub line: usize,
    /// 1-based column of the value.
    pub column: usize,
}

impl Entry {
    /// The key path as the source's users write it:
    /// `resilience4j.circuitbreaker.instances.a.recordExceptions[0]`.
    pub fn key(&self) -> String {
        display(&self.path)
    }
}

/// A key path joined with dots, list items as `[i]`.
pub fn display(path: &[String]) -> String {
    let mut out = String::new();
    for segment in path {
        if !out.is_empty() && !segment.starts_with('[') {
            out.push('.');
        }
        out.push_str(segment);
    }
    out
}

/// A source file: its name as given and its entries in file order.
#[derive(Debug, Clone)]
pub struct Source {
    /// The file as the user named it.
    pub file: String,
    /// Every value, in the order of the file.
    pub entries: Vec<Entry>,
}

impl Source {
    /// The error `message` at `entry`, keyed by its source path.
    pub fn error(&self, entry: &Entry, message: impl Into<String>) -> SchemaError {
        SchemaError {
            file: self.file.clone(),
            line: entry.line,
            column: entry.column,
            key: entry.key(),
            message: message.into(),
        }
    }

    /// The error `message` about the file as a whole (at its start).
    pub fn whole(&self, message: impl Into<String>) -> SchemaError {
        SchemaError {
            file: self.file.clone(),
            line: 1,
            column: 1,
            key: String::new(),
            message: message.into(),
        }
    }

    /// A YAML document (or JSON, which YAML reads), flattened. Keys with
    /// dots split into segments when `split_dots` (Spring Boot's
    /// `resilience4j.circuitbreaker:` is the same as nesting), except in
    /// brackets (`[a.b]` is one key).
    pub fn yaml(file: &str, text: &str, split_dots: bool) -> Result<Source, SchemaError> {
        let root: Value = schema::from_yaml_str(file, text)?;
        let mut entries = Vec::new();
        let mut walk = Walk {
            text,
            split_dots,
            entries: &mut entries,
        };
        walk.node(&root, &mut Vec::new(), &mut Vec::new());
        Ok(Source {
            file: file.to_string(),
            entries,
        })
    }

    /// A JSON document: as [`Source::yaml`], tabs read as the blanks they
    /// are in JSON (YAML refuses a tab where it indents).
    pub fn json(file: &str, text: &str) -> Result<Source, SchemaError> {
        Source::yaml(file, &text.replace('\t', " "), false)
    }
}

/// The state of one flattening walk.
struct Walk<'a> {
    text: &'a str,
    split_dots: bool,
    entries: &'a mut Vec<Entry>,
}

impl Walk<'_> {
    /// Adds the entries under `node`, whose source path is `path` and whose
    /// YAML path is `at`.
    fn node(&mut self, node: &Value, path: &mut Vec<String>, at: &mut Vec<Segment>) {
        match node {
            Value::Mapping(map) if !map.is_empty() => {
                for (key, value) in map {
                    let key = scalar_text(key);
                    let pushed = self.segments(&key);
                    let count = pushed.len();
                    path.extend(pushed);
                    at.push(Segment::Key(key));
                    self.node(value, path, at);
                    at.pop();
                    path.truncate(path.len() - count);
                }
            }
            Value::Sequence(items) if !items.is_empty() => {
                for (i, item) in items.iter().enumerate() {
                    path.push(format!("[{i}]"));
                    at.push(Segment::Index(i));
                    self.node(item, path, at);
                    at.pop();
                    path.pop();
                }
            }
            Value::Tagged(tagged) => self.node(&tagged.value, path, at),
            leaf => {
                let (line, column) = schema::locate(self.text, at).unwrap_or((1, 1));
                self.entries.push(Entry {
                    path: path.clone(),
                    value: scalar_text(leaf),
                    line,
                    column,
                });
            }
        }
    }

    /// The source segments of one YAML key.
    fn segments(&self, key: &str) -> Vec<String> {
        if !self.split_dots {
            return vec![key.to_string()];
        }
        split_key(key)
    }
}

/// `a.b[0].c` as `a`, `b`, `[0]`, `c`; `[x.y]` stays one key `x.y`.
pub fn split_key(key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = key.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '.' => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            }
            '[' => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
                let mut inner = String::new();
                for d in chars.by_ref() {
                    if d == ']' {
                        break;
                    }
                    inner.push(d);
                }
                if inner.chars().all(|d| d.is_ascii_digit()) && !inner.is_empty() {
                    out.push(format!("[{inner}]"));
                } else {
                    out.push(inner);
                }
            }
            _ => current.push(c),
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The text of a scalar (a number or boolean as YAML writes it; empty for
/// null or an empty collection).
fn scalar_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Tagged(t) => scalar_text(&t.value),
        Value::Null | Value::Mapping(_) | Value::Sequence(_) => String::new(),
    }
}

/// `text` with its `/* ... */` and `// ...` comments outside strings
/// blanked (line breaks kept, so every value keeps its place), as fastjson
/// skips them.
pub fn blank_comments(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut in_string = false;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if in_string {
            out.push(c);
            if c == '\\'
                && let Some(n) = next
            {
                out.push(n);
                i += 1;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if c == '/' && next == Some('*') {
            let end = (i + 2..chars.len().saturating_sub(1))
                .find(|&j| chars[j] == '*' && chars[j + 1] == '/')
                .map_or(chars.len(), |j| j + 2);
            for &skipped in &chars[i..end] {
                out.push(if skipped == '\n' { '\n' } else { ' ' });
            }
            i = end;
            continue;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
            continue;
        } else {
            out.push(c);
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_and_dotted_yaml_keys_give_the_same_paths_with_their_places() {
        let text = "resilience4j.circuitbreaker:\n  instances:\n    a:\n      slidingWindowSize: 20\n      recordExceptions: [x, y]\n    '[b.c]': {}\n";
        let source = Source::yaml("app.yml", text, true).unwrap();
        let keys: Vec<(String, String, usize, usize)> = source
            .entries
            .iter()
            .map(|e| (e.key(), e.value.clone(), e.line, e.column))
            .collect();
        assert_eq!(
            keys,
            [
                (
                    "resilience4j.circuitbreaker.instances.a.slidingWindowSize".to_string(),
                    "20".to_string(),
                    4,
                    26
                ),
                (
                    "resilience4j.circuitbreaker.instances.a.recordExceptions[0]".to_string(),
                    "x".to_string(),
                    5,
                    26
                ),
                (
                    "resilience4j.circuitbreaker.instances.a.recordExceptions[1]".to_string(),
                    "y".to_string(),
                    5,
                    29
                ),
                (
                    "resilience4j.circuitbreaker.instances.b.c".to_string(),
                    String::new(),
                    6,
                    14
                ),
            ]
        );
    }

    #[test]
    fn a_key_splits_at_dots_and_indices_but_not_inside_brackets() {
        assert_eq!(split_key("a.b[2].c"), ["a", "b", "[2]", "c"]);
        assert_eq!(split_key("x.[a.b].y"), ["x", "a.b", "y"]);
    }

    #[test]
    fn a_json_file_indented_with_tabs_is_read() {
        let source = Source::json("rules.json", "[\n\t{\"count\": 0.5}\n]\n").unwrap();
        assert_eq!(source.entries[0].key(), "[0].count");
        assert_eq!((source.entries[0].line, source.entries[0].column), (2, 12));
    }
}
