//! Reading firedrill's YAML formats (fault files, defense configurations,
//! experiments) within the input [`limits`], with errors that name file,
//! line, column and key.
//!
//! This module is the only place that knows which YAML crate we use
//! (`serde_yaml_ng`, a maintained fork of the archived `serde_yaml`): the rest
//! of the crate sees plain `serde::Deserialize` types and [`SchemaError`].

mod diagnose;
pub mod json;
pub mod limits;
pub mod locate;
mod numbers;
pub mod overrides;
mod scan;
pub mod syntax;
pub mod units;
pub mod vars;

use std::fmt;
use std::marker::PhantomData;
use std::path::Path;

use serde::de::{
    self, Deserialize, DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, Visitor,
};

pub use locate::{Segment, display_path, locate};

/// One problem in an input file, located precisely.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct SchemaError {
    /// The file as the user named it.
    pub file: String,
    /// 1-based line of the offending value (when the parser gives no
    /// position, of the nearest node on its path, else 1; 0 only from
    /// [`SchemaError::at`] for a node not found).
    pub line: usize,
    /// 1-based column of the offending value (see `line`).
    pub column: usize,
    /// Dotted path of the key at fault, e.g. `faults[0].probability`; empty
    /// for the document itself.
    pub key: String,
    /// What was wrong and what was expected.
    pub message: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: ", self.file, self.line, self.column)?;
        if !self.key.is_empty() {
            write!(f, "{}: ", self.key)?;
        }
        f.write_str(&self.message)
    }
}

/// Parses `text` (the contents of `file`) into `T`, after [`check_document`];
/// the first problem.
pub fn from_yaml_str<T: DeserializeOwned>(file: &str, text: &str) -> Result<T, SchemaError> {
    check_document(file, text)?;
    parse(file, text, PhantomData::<T>).map_err(|(first, _)| first)
}

/// As [`from_yaml_str`], with every problem a conversion that checks
/// several fields at once found (such as an experiment's names and
/// windows), not only the first.
pub fn from_yaml_all<T: DeserializeOwned>(file: &str, text: &str) -> Result<T, LoadError> {
    check_document(file, text)?;
    parse(file, text, PhantomData::<T>).map_err(|(first, more)| problems_error(first, more))
}

/// Checks that `text` (the contents of `file`) is one well-formed YAML
/// document within the [`limits`], whatever firedrill type it holds: not
/// empty, not too large, not nested too deep, no syntax error, no second
/// document, no key twice in a mapping, no integer beyond 64 bits. Each
/// problem is reported at its own line and column.
pub fn check_document(file: &str, text: &str) -> Result<(), SchemaError> {
    let whole_file = |message: String| SchemaError::whole_file(file, message);
    if let Some((line, column, c)) = limits::first_control_character(text) {
        return Err(SchemaError {
            file: file.to_string(),
            line,
            column,
            key: String::new(),
            message: format!(
                "the control character U+{:04X} is not allowed in YAML: expected printable text (write it as \\x{:02X} in a double-quoted string)",
                c as u32, c as u32
            ),
        });
    }
    if text
        .lines()
        .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
    {
        return Err(whole_file(
            "the file is empty: expected a YAML mapping".to_string(),
        ));
    }
    if let Some(message) = limits::too_large(text.len() as u64, limits::MAX_FILE_BYTES) {
        return Err(whole_file(message));
    }
    if let Some(deep) = scan::first_too_deep(text, limits::MAX_DEPTH) {
        return Err(SchemaError {
            file: file.to_string(),
            line: deep.line,
            column: deep.column,
            key: deep.top_key.unwrap_or_default(),
            message: format!(
                "nested deeper than {} levels of mappings and lists: expected at most {}",
                limits::MAX_DEPTH,
                limits::MAX_DEPTH
            ),
        });
    }
    let spent = std::cell::Cell::new(0);
    parse(file, text, syntax::Node::new(&spent)).map_err(|(first, _)| first)
}

/// Reads `text` with `seed`, the key path tracked, turning its error into
/// located [`SchemaError`]s: the first, and any more.
fn parse<'de, S: DeserializeSeed<'de>>(
    file: &str,
    text: &'de str,
    seed: S,
) -> Result<S::Value, (SchemaError, Vec<SchemaError>)> {
    let deserializer = serde_yaml_ng::Deserializer::from_str(text);
    let mut track = serde_path_to_error::Track::new();
    let result = seed.deserialize(serde_path_to_error::Deserializer::new(
        deserializer,
        &mut track,
    ));
    result.map_err(|err| diagnose::to_schema_errors(file, text, &track.path(), err))
}

/// The keys of a document's top-level mapping, in order, once
/// [`check_document`] passes; `None` when the document is not a mapping
/// (the real parse then reports why). Used to tell a fault file from a
/// defense config or an experiment.
pub fn top_level_keys(file: &str, text: &str) -> Result<Option<Vec<String>>, SchemaError> {
    check_document(file, text)?;
    let value: serde_yaml_ng::Value =
        parse(file, text, PhantomData::<serde_yaml_ng::Value>).map_err(|(first, _)| first)?;
    Ok(value.as_mapping().map(|map| {
        map.keys()
            .filter_map(|k| k.as_str().map(str::to_string))
            .collect()
    }))
}

/// Reads and parses the file at `path`.
pub fn from_yaml_file<T: DeserializeOwned>(path: &Path) -> Result<T, LoadError> {
    let text = read_text(path)?;
    from_yaml_str(&path.display().to_string(), &text).map_err(LoadError::Invalid)
}

/// Reads the file at `path`, for callers that parse it and then check it
/// further with [`SchemaError::at`]; see [`read_bounded`] for what is
/// refused. Variables (`${VAR}`, `${VAR:-default}`) are replaced from the
/// environment here, before anything parses the text.
///
/// Read each file once and pass the text on: a second read of
/// `/dev/stdin` finds nothing.
pub fn read_text(path: &Path) -> Result<String, LoadError> {
    let file = path.display().to_string();
    let text = limits::lone_carriage_returns_as_newlines(read_bounded(path)?);
    Ok(vars::substitute(&file, &text, |name| {
        std::env::var(name).ok()
    })?)
}

/// The text of the file at `path`, read once and at most
/// [`limits::MAX_FILE_BYTES`]; see [`read_limited`].
pub fn read_bounded(path: &Path) -> Result<String, LoadError> {
    read_limited(path, &path.display().to_string(), limits::MAX_FILE_BYTES)
}

/// The text of the recording or events log at `path` (shown to the user
/// as `shown`), read once and at most [`limits::MAX_RECORDING_BYTES`]; see
/// [`read_limited`].
pub fn read_recording(path: &Path, shown: &str) -> Result<String, LoadError> {
    read_limited(path, shown, limits::MAX_RECORDING_BYTES)
}

/// The text of the file at `path` (shown as `file`), read once and at
/// most `limit` bytes (one byte more tells it is too large, so a device
/// that never ends, such as `/dev/zero`, is refused at once).
///
/// A directory and a named pipe (FIFO) are refused by their type before
/// they are opened: opening a FIFO blocks until something writes to it,
/// and a reader has no way to tell a writer that will come from one that
/// never will. `/dev/stdin` is the exception: it is already open, so it is
/// read as it is, a pipe (`cat f | firedrill validate /dev/stdin`) or a
/// redirected file, up to its end. A terminal is refused (it would wait
/// for typing). A regular file over the limit is refused by its size
/// before it is read.
///
/// The text must be UTF-8; the first byte that is not is reported at its
/// line and column.
fn read_limited(path: &Path, file: &str, limit: u64) -> Result<String, LoadError> {
    use std::io::IsTerminal;
    let read_error = |source| LoadError::Read {
        file: file.to_string(),
        source,
    };
    let whole = |message: String| LoadError::from(SchemaError::whole_file(file, message));
    let terminal = || whole(limits::not_a_file_message("a terminal", limit));
    let bytes = if path == Path::new("/dev/stdin") {
        let stdin = std::io::stdin();
        if stdin.is_terminal() {
            return Err(terminal());
        }
        limits::read_at_most(stdin.lock(), limit).map_err(read_error)?
    } else {
        let metadata = std::fs::metadata(path).map_err(read_error)?;
        if let Some(kind) = limits::not_a_file(&metadata.file_type(), limit) {
            return Err(whole(kind));
        }
        if let Some(message) = limits::too_large(metadata.len(), limit) {
            return Err(whole(message));
        }
        let opened = std::fs::File::open(path).map_err(read_error)?;
        if opened.is_terminal() {
            return Err(terminal());
        }
        limits::read_at_most(opened, limit).map_err(read_error)?
    };
    if bytes.len() as u64 > limit {
        return Err(whole(limits::more_than_the_limit(limit)));
    }
    String::from_utf8(bytes).map_err(|e| {
        let good = e.utf8_error().valid_up_to();
        LoadError::Invalid(limits::not_utf8(file, e.as_bytes(), good))
    })
}

impl SchemaError {
    /// A problem with the file as a whole, reported at its start.
    pub fn whole_file(file: &str, message: String) -> Self {
        SchemaError {
            file: file.to_string(),
            line: 1,
            column: 1,
            key: String::new(),
            message,
        }
    }

    /// A problem found after parsing, at the node `path` of `text` (the
    /// contents of `file`); line and column are 0 if the node is not found.
    pub fn at(file: &str, text: &str, path: &[Segment], message: impl Into<String>) -> Self {
        let (line, column) = locate(text, path).unwrap_or((0, 0));
        SchemaError {
            file: file.to_string(),
            line,
            column,
            key: display_path(path),
            message: message.into(),
        }
    }
}

/// Why a file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read at all.
    #[error("{file}: cannot read: {source}")]
    Read {
        /// The path as given.
        file: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file was read but its contents are invalid.
    #[error(transparent)]
    Invalid(#[from] SchemaError),
    /// The file parsed, and then more than one check failed: every problem,
    /// one line each, in the order of the file.
    #[error("{}", problems_text(.0))]
    Problems(Vec<SchemaError>),
    /// A `--set` that cannot be applied, or whose result is invalid.
    #[error("{0}")]
    Override(String),
}

/// Every problem in `problems` (none: `Ok`; one: [`LoadError::Invalid`];
/// more: [`LoadError::Problems`], sorted by line and column).
pub fn all_problems(mut problems: Vec<SchemaError>) -> Result<(), LoadError> {
    if problems.is_empty() {
        return Ok(());
    }
    let first = problems.remove(0);
    Err(problems_error(first, problems))
}

/// `first` alone, or with `more`, sorted by line and column.
fn problems_error(first: SchemaError, mut more: Vec<SchemaError>) -> LoadError {
    if more.is_empty() {
        return LoadError::Invalid(first);
    }
    more.push(first);
    more.sort_by_key(|p| (p.line, p.column));
    LoadError::Problems(more)
}

fn problems_text(problems: &[SchemaError]) -> String {
    let lines: Vec<String> = problems.iter().map(SchemaError::to_string).collect();
    lines.join("\n")
}

/// Deserializes a mapping into `Raw` and then converts it with
/// `TryFrom<Raw>`, reporting a conversion error at the mapping's own line and
/// column (serde's `try_from` attribute would report it at the parent's).
///
/// A conversion error that starts with a key of the mapping (`"probability:
/// must be 100%"`, `"pattern.up: ..."`) is reported at that key's value
/// instead, with the key added to the error's path.
pub fn deserialize_checked<'de, D, Raw, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    Raw: Deserialize<'de>,
    T: TryFrom<Raw, Error = String>,
{
    struct Checked<Raw, T>(PhantomData<(Raw, T)>);

    impl<'de, Raw, T> Visitor<'de> for Checked<Raw, T>
    where
        Raw: Deserialize<'de>,
        T: TryFrom<Raw, Error = String>,
    {
        type Value = T;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a mapping")
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            let raw = Raw::deserialize(de::value::MapAccessDeserializer::new(map))?;
            T::try_from(raw).map_err(de::Error::custom)
        }
    }

    deserializer.deserialize_map(Checked(PhantomData))
}

/// A value that names a file on its own (`replay: incident.log`) or is a
/// mapping with more settings.
pub trait FromFile: Sized {
    /// The value for a bare file name.
    fn from_file(file: &str) -> Result<Self, String>;
}

/// Reads `T` from a bare string (through [`FromFile`]) or from a mapping
/// (through its own `Deserialize`), as an `Option` field's value.
pub fn file_or_mapping<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: FromFile + Deserialize<'de>,
{
    struct V<T>(PhantomData<T>);
    impl<'de, T: FromFile + Deserialize<'de>> Visitor<'de> for V<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a recording's path, or a mapping with file and format")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
            T::from_file(v).map_err(E::custom)
        }
        fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            T::deserialize(de::value::MapAccessDeserializer::new(map))
        }
    }
    d.deserialize_any(V(PhantomData)).map(Some)
}
