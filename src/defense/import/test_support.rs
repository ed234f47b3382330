//! What the mapping tests of every format share: importing a text and
//! reading the printed configuration back, or the errors it gets.

use serde_yaml_ng::Value;

use super::{Format, Imported, Options, import_text};

/// The import of `text` (the contents of `file`) with `options`; a
/// failure panics with `text` and the error.
pub(crate) fn import(format: Format, file: &str, text: &str, options: &Options) -> Imported {
    import_text(format, file, text, &[], options).unwrap_or_else(|e| panic!("{text}\n{e}"))
}

/// The defense line printed for `imported`, read back as YAML.
pub(crate) fn doc(format: Format, imported: &Imported) -> Value {
    serde_yaml_ng::from_str(&imported.render(format, "x")).unwrap()
}

/// The defense line printed for `text` (the contents of `file`), read
/// back as YAML.
pub(super) fn imported(format: Format, file: &str, text: &str) -> Value {
    doc(format, &import(format, file, text, &Options::strict(true)))
}

/// The whole error text of importing `text`, or `imported`.
pub(super) fn refused(format: Format, file: &str, text: &str) -> String {
    import_text(format, file, text, &[], &Options::strict(true))
        .map(|_| "imported".to_string())
        .unwrap_or_else(|e| e.to_string())
}

/// Checks each `(text, part of its error)`: the error says it, and starts
/// at `file`.
pub(super) fn assert_refused<T: AsRef<str>>(format: Format, file: &str, cases: &[(T, &str)]) {
    for (text, expected) in cases {
        let err = refused(format, file, text.as_ref());
        assert!(
            err.contains(expected),
            "{}\n  expected: {expected}\n  got: {err}",
            text.as_ref()
        );
        assert!(err.starts_with(&format!("{file}:")), "{err}");
    }
}
