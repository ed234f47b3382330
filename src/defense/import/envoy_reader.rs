//! The nodes of an Envoy configuration with their paths, and the reader
//! that locates each key it maps or refuses: in the file read, or, for a
//! configuration translated from another file (an Istio DestinationRule),
//! at the key of that file it came from.

use serde_yaml_ng::Value;

use crate::clock::Duration;
use crate::schema::{self, SchemaError, Segment, display_path};

/// A node of the file with its path, for values and errors.
#[derive(Clone)]
pub(super) struct At<'v> {
    /// The node.
    pub(super) value: &'v Value,
    /// Its path in the file.
    pub(super) path: Vec<Segment>,
}

impl<'v> At<'v> {
    pub(super) fn get(&self, key: &str) -> Option<At<'v>> {
        let value = self.value.get(key)?;
        let mut path = self.path.clone();
        path.push(Segment::Key(key.to_string()));
        Some(At { value, path })
    }

    pub(super) fn items(&self) -> Vec<At<'v>> {
        match self.value {
            Value::Sequence(items) => items
                .iter()
                .enumerate()
                .map(|(i, value)| {
                    let mut path = self.path.clone();
                    path.push(Segment::Index(i));
                    At { value, path }
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    pub(super) fn keys(&self) -> Vec<String> {
        match self.value {
            Value::Mapping(m) => m
                .keys()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        }
    }

    pub(super) fn text(&self) -> String {
        match self.value {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => String::new(),
        }
    }
}

pub(in crate::defense::import) struct Reader<'a> {
    /// The file as the user named it, for errors.
    pub(super) file: &'a str,
    /// Its text, where keys are located.
    pub(super) text: &'a str,
    /// What the reader refused.
    pub(super) problems: Vec<SchemaError>,
    /// Keys ignored where no node is at hand, for the pool's notes.
    pub(super) notes: Vec<String>,
    /// Where each key of the Envoy configuration read came from, when it
    /// was translated from another file (an Istio DestinationRule); empty
    /// when the file itself is Envoy's.
    pub(super) origins: &'a [(Vec<Segment>, Origin)],
}

impl<'a> Reader<'a> {
    /// A reader of `text`, its keys translated as `origins` say.
    pub(in crate::defense::import) fn new(
        file: &'a str,
        text: &'a str,
        origins: &'a [(Vec<Segment>, Origin)],
    ) -> Self {
        Reader {
            file,
            text,
            problems: Vec::new(),
            notes: Vec::new(),
            origins,
        }
    }

    pub(super) fn refuse(&mut self, at: &At, message: impl Into<String>) {
        let path = match origin_of(self.origins, &at.path) {
            Some(Origin::Key(p) | Origin::Default(_, p)) => p.clone(),
            None => at.path.clone(),
        };
        self.problems
            .push(SchemaError::at(self.file, self.text, &path, message));
    }

    pub(super) fn from(&self, at: &At) -> String {
        let path = match origin_of(self.origins, &at.path) {
            Some(Origin::Default(text, _)) => return text.clone(),
            Some(Origin::Key(p)) => p.clone(),
            None => at.path.clone(),
        };
        let line = schema::locate(self.text, &path).map_or(0, |(l, _)| l);
        format!("{} (line {line})", display_path(&path))
    }

    /// A protobuf `Duration` as Envoy's YAML writes it: `0.25s`, `15s`.
    pub(super) fn duration(&mut self, at: &At) -> Option<Duration> {
        let text = at.text();
        let parsed = text
            .strip_suffix('s')
            .and_then(|n| n.parse::<f64>().ok())
            .filter(|n| *n >= 0.0)
            .and_then(|n| Duration::try_from_secs_f64(n).ok());
        if parsed.is_none() {
            self.refuse(
                at,
                format!("invalid duration `{text}`: expected seconds such as 0.25s or 15s"),
            );
        }
        parsed
    }

    pub(super) fn whole(&mut self, at: &At) -> Option<u64> {
        let n = at.text().parse::<u64>().ok();
        if n.is_none() {
            self.refuse(
                at,
                format!("invalid number `{}`: expected a whole number", at.text()),
            );
        }
        n
    }
}

/// Where a key of a translated Envoy configuration came from.
#[derive(Debug, Clone)]
pub(in crate::defense::import) enum Origin {
    /// This key of the file read.
    Key(Vec<Segment>),
    /// No key: a default of the translation, in these words, refused (if
    /// ever) at this key of the file.
    Default(String, Vec<Segment>),
}

/// The origin of the longest translated path `path` starts with.
fn origin_of<'o>(origins: &'o [(Vec<Segment>, Origin)], path: &[Segment]) -> Option<&'o Origin> {
    origins
        .iter()
        .filter(|(p, _)| path.starts_with(p))
        .max_by_key(|(p, _)| p.len())
        .map(|(_, o)| o)
}
