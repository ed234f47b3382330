//! Java `.properties` files (Spring Boot's `application.properties`) read
//! into located entries: `key=value`, `key: value` or `key value`,
//! comments with `#` or `!`, a trailing backslash continuing the line, the
//! escapes `\t`, `\n`, `\\`, `\uXXXX`, and `a.b[0]` indices.

use super::source::{Entry, Source, split_key};
use crate::schema::SchemaError;

/// Reads `text` (the contents of `file`).
pub(crate) fn read(file: &str, text: &str) -> Result<Source, SchemaError> {
    let mut entries = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let start = i;
        let mut logical = lines[i].trim_start().to_string();
        let indent = lines[i].len() - logical.len();
        while ends_in_continuation(&logical) && i + 1 < lines.len() {
            logical.pop();
            i += 1;
            logical.push_str(lines[i].trim_start());
        }
        i += 1;
        if logical.is_empty() || logical.starts_with('#') || logical.starts_with('!') {
            continue;
        }
        let (key, value_at) = split(&logical);
        let key = unescape(key).map_err(|m| located(file, start, indent, m))?;
        let value = unescape(logical[value_at..].trim_start())
            .map_err(|m| located(file, start, indent + value_at, m))?;
        let skipped = logical[value_at..].len() - logical[value_at..].trim_start().len();
        entries.push(Entry {
            path: split_key(&key),
            value: value.trim_end().to_string(),
            line: start + 1,
            column: indent + value_at + skipped + 1,
        });
    }
    Ok(Source {
        file: file.to_string(),
        entries,
    })
}

fn located(file: &str, line: usize, column: usize, message: String) -> SchemaError {
    SchemaError {
        file: file.to_string(),
        line: line + 1,
        column: column + 1,
        key: String::new(),
        message,
    }
}

/// A line continues when it ends in an odd number of backslashes.
fn ends_in_continuation(line: &str) -> bool {
    line.chars().rev().take_while(|&c| c == '\\').count() % 2 == 1
}

/// The key, and the byte where the value starts: after the first
/// unescaped `=`, `:` or blank (blanks around the separator are skipped).
fn split(line: &str) -> (&str, usize) {
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'=' | b':' => return (&line[..i], i + 1),
            b' ' | b'\t' => {
                let rest = line[i..].trim_start();
                let after = line.len() - rest.len();
                if rest.starts_with(['=', ':']) {
                    return (&line[..i], after + 1);
                }
                return (&line[..i], after);
            }
            _ => i += 1,
        }
    }
    (line, line.len())
}

/// `text` with its escapes replaced.
fn unescape(text: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\u{c}'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let code = u32::from_str_radix(&hex, 16)
                    .ok()
                    .filter(|_| hex.len() == 4)
                    .and_then(char::from_u32)
                    .ok_or_else(|| {
                        format!("invalid escape `\\u{hex}`: expected four hex digits")
                    })?;
                out.push(code);
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(text: &str) -> Vec<(String, String, usize, usize)> {
        read("app.properties", text)
            .unwrap()
            .entries
            .into_iter()
            .map(|e| (e.key(), e.value.clone(), e.line, e.column))
            .collect()
    }

    #[test]
    fn each_separator_gives_the_key_value_and_the_value_place() {
        let text = "# comment\na.b=1\n  c.d : two\ne.f three\n! bang\ng[0]=x\n";
        assert_eq!(
            entries(text),
            [
                ("a.b".to_string(), "1".to_string(), 2, 5),
                ("c.d".to_string(), "two".to_string(), 3, 9),
                ("e.f".to_string(), "three".to_string(), 4, 5),
                ("g[0]".to_string(), "x".to_string(), 6, 6),
            ]
        );
    }

    #[test]
    fn a_backslash_continues_the_line_and_escapes_are_read() {
        let text = "list=a,\\\n    b\nname=caf\\u00e9\\tx\n";
        assert_eq!(
            entries(text),
            [
                ("list".to_string(), "a,b".to_string(), 1, 6),
                ("name".to_string(), "café\tx".to_string(), 3, 6),
            ]
        );
    }

    #[test]
    fn a_broken_unicode_escape_is_a_located_error() {
        let err = read("app.properties", "a=ok\nb=\\u12\n").unwrap_err();
        assert_eq!((err.line, err.column), (2, 3));
        assert!(err.message.contains("four hex digits"), "{}", err.message);
    }
}
