//! What the mapping tests of every format share: importing a text and
//! reading the printed configuration back, or the errors it gets.

use serde_yaml_ng::Value;

use super::{Format, import_text};

/// The defense line printed for `text` (the contents of `file`), read
/// back as YAML.
pub(super) fn imported(format: Format, file: &str, text: &str) -> Value {
    let imported = import_text(format, file, text, &[], true).unwrap_or_else(|e| panic!("{e}"));
    serde_yaml_ng::from_str(&imported.render(format, file)).unwrap()
}

/// The whole error text of importing `text`, or `imported`.
pub(super) fn refused(format: Format, file: &str, text: &str) -> String {
    import_text(format, file, text, &[], true)
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
