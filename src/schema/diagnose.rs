//! Turning a `serde_yaml_ng` error into a [`SchemaError`] that points at the
//! value at fault, names its key, and says what was expected — in one line.
//!
//! Conversions that check several fields at once (`TryFrom<Raw>` behind
//! [`deserialize_checked`](super::deserialize_checked)) name the field at
//! fault by starting their message with it: `"probability: ..."` or
//! `"pattern.up: ..."`. The error is then moved from the enclosing mapping to
//! that field's value, found with [`locate`].

use super::locate::{Segment, display_path, locate};
use super::scan::{Quoted, quoted_scalars};
use super::{SchemaError, numbers};

/// Builds the errors for `err`, raised while reading the node at `path` of
/// `text` (the contents of `file`): one, or the first and the rest when a
/// conversion that checks several fields found several problems (one line
/// each, every line starting with the field at fault).
pub(super) fn to_schema_errors(
    file: &str,
    text: &str,
    path: &serde_path_to_error::Path,
    err: serde_yaml_ng::Error,
) -> (SchemaError, Vec<SchemaError>) {
    let mut path = segments(path);
    let raw = err.to_string();
    if raw.starts_with("repetition limit exceeded") {
        // The path runs through the aliases; the entry they expand in is
        // what the reader can find.
        path.truncate(1);
    }
    let mut message = strip_positions(&raw);
    // serde_yaml_ng prefixes messages with its own path (of the enclosing
    // mapping); we print the key in our own place, so drop its copy.
    let key = display_path(&path);
    if let Some((prefix, rest)) = message.split_once(": ")
        && !prefix.contains(' ')
        && (key.starts_with(prefix) || prefix == ".")
    {
        message = rest.to_string();
    }
    let (mut line, mut column) = match err.location() {
        Some(at) => (at.line(), at.column()),
        None => unplaced(text, &path, &mut message),
    };
    if let Some(at) = unclosed_quote(&raw) {
        (line, column) = at;
        message = "this quoted string is never closed: expected its closing quote before the end of the file".to_string();
    } else if let Some(quoted) = closed_too_soon(text, &raw, err.location().map(|_| (line, column)))
    {
        (line, column) = quoted.open;
        message = closed_too_soon_message(&quoted);
    }
    if message.starts_with(super::syntax::EXPANDS_PAST) {
        message = format!("{} {message}", alias_at(text, line, column));
    }
    if message.starts_with(super::syntax::DUPLICATE_KEY) {
        // The path ends at the second copy; `locate` finds the first.
        let first =
            locate(text, &path).map_or(String::new(), |(l, _)| format!(" (first at line {l})"));
        message = format!("this key appears twice in its mapping{first}: expected each key once");
    }
    let mut lines = message.lines();
    let first = lines.next().unwrap_or_default().to_string();
    let place = |message: &str| {
        place(
            file,
            text,
            path.clone(),
            message.to_string(),
            (line, column),
        )
    };
    (place(&first), lines.map(place).collect())
}

/// One problem, moved from the node that reported it (`path`, at `line`
/// and `column`) to the field its message starts with, if any, and worded
/// for the file.
fn place(
    file: &str,
    text: &str,
    mut path: Vec<Segment>,
    mut message: String,
    (mut line, mut column): (usize, usize),
) -> SchemaError {
    if let Some((field, rest)) = message.split_once(": ")
        && let Some(field) = field_path(field)
    {
        let mut deeper = path.clone();
        deeper.extend(field);
        if let Some(at) = locate(text, &deeper) {
            (line, column) = at;
            path = deeper;
            message = rest.to_string();
        }
    }
    if path.is_empty()
        && let Some(missing) = message
            .strip_prefix("missing field `")
            .and_then(|m| m.strip_suffix('`'))
    {
        // At the top there is no enclosing key to name: name the missing one.
        path.push(Segment::Key(missing.to_string()));
        message = "required, but missing".to_string();
    }
    if let Some(hint) = suggestion(&message) {
        message = hint;
    }
    if let Some(written) = numbers::written_at(text, line, column)
        && let Some(refusal) = numbers::unsigned_refusal(&message, &written)
    {
        message = refusal;
    }
    message = plain_words(message);
    if character_at(text, line, column) == Some('\t') {
        message.push_str(" (a tab: YAML indents with spaces only)");
    }
    SchemaError {
        file: file.to_string(),
        line,
        column,
        key: short_quote(&display_path(&path)),
        message: short_quotes(&message),
    }
}

/// The most characters of a key, or of a value quoted in backticks, an
/// error repeats: a 4 KiB file of noise read as one long key was quoted
/// back whole, twice.
const MAX_QUOTED: usize = 64;

/// `text`, cut to its first [`MAX_QUOTED`] characters and `...` when longer.
fn short_quote(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTED) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_string(),
    }
}

/// `message` with each `quoted` span cut by [`short_quote`].
fn short_quotes(message: &str) -> String {
    let mut parts = message.split('`');
    let mut out = parts.next().unwrap_or_default().to_string();
    for (i, part) in parts.enumerate() {
        out.push('`');
        if i % 2 == 0 {
            out.push_str(&short_quote(part));
        } else {
            out.push_str(part);
        }
    }
    out
}

/// The path as our segments, up to the first one serde could not name (a
/// mapping key that was being read when the error struck).
fn segments(path: &serde_path_to_error::Path) -> Vec<Segment> {
    use serde_path_to_error::Segment as S;
    path.iter()
        .map_while(|segment| match segment {
            S::Seq { index } => Some(Segment::Index(*index)),
            S::Map { key } => Some(Segment::Key(key.clone())),
            S::Enum { variant } => Some(Segment::Key(variant.clone())),
            S::Unknown => None,
        })
        .collect()
}

/// Removes the ` at line L column C` that serde_yaml_ng and libyaml write
/// after the problem: its position is printed in front, once. A later one
/// (libyaml's context, `while parsing a flow mapping at line 2 column 14`)
/// says where the construct that broke began, and is kept as `started at
/// 2:14`.
fn strip_positions(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    let mut first = true;
    while let Some(start) = rest.find(" at line ") {
        out.push_str(&rest[..start]);
        let after = &rest[start + " at line ".len()..];
        let digits = |s: &str| s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        let line_len = digits(after);
        let column = after[line_len..].strip_prefix(" column ");
        match column {
            Some(column) if line_len > 0 && digits(column) > 0 => {
                if !first {
                    let line = &after[..line_len];
                    out.push_str(&format!(" started at {line}:{}", &column[..digits(column)]));
                }
                first = false;
                rest = &column[digits(column)..];
            }
            _ => {
                out.push_str(" at line ");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Where to report an error the parser gave no position for, rewording the
/// one such error a user can cause by hand (a second document).
fn unplaced(text: &str, path: &[Segment], message: &mut String) -> (usize, usize) {
    if message.contains("more than one document") {
        *message = "a second YAML document starts here: expected one document per file \
                    (put every fault, route or setting in the first)"
            .to_string();
        return (second_document_line(text).unwrap_or(1), 1);
    }
    // Otherwise the node being read when it struck (such as an alias that
    // expanded too far), or the nearest one above it that can be found.
    (0..=path.len())
        .rev()
        .find_map(|end| locate(text, &path[..end]))
        .unwrap_or((1, 1))
}

/// Where a quoted scalar that runs to the end of the file opens: libyaml
/// reports the end of the file, and the opening quote in its context. A
/// context at the very start of the text is not written (serde_yaml_ng
/// leaves out a mark at line 0, column 0): the quote is then at 1:1.
fn unclosed_quote(raw: &str) -> Option<(usize, usize)> {
    const CONTEXT: &str = "while scanning a quoted scalar";
    let (_, after) = raw.split_once(CONTEXT)?;
    let Some(opened) = after.strip_prefix(" at line ") else {
        return Some((1, 1));
    };
    let (line, rest) = opened.split_once(" column ")?;
    let column: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((line.parse().ok()?, column.parse().ok()?))
}

/// The quoted string whose closing quote was really the opening quote of
/// what follows it, when the parser broke on that text: a quote left open
/// (`name: "abc` and, lines later, `url: "http://x"`) is closed by the
/// next quote in the file, and libyaml complains where the text after that
/// one goes on (`http://x"`), far from the quote at fault.
///
/// `at` is where the parser broke; `None` when it did not say, which
/// serde_yaml_ng does when the text goes on after a complete top-level
/// value (it calls it a second document): the first such string, then.
fn closed_too_soon(text: &str, raw: &str, at: Option<(usize, usize)>) -> Option<Quoted> {
    let mut quoted = quoted_scalars(text).into_iter();
    match at {
        Some((line, column)) => quoted.rev().find(|q| {
            matches!(q.close, Some((l, _)) if l == line)
                && q.then.as_ref().is_some_and(|(c, _)| *c <= column)
        }),
        None if raw.contains("more than one document") && second_document_line(text).is_none() => {
            quoted.find(|q| q.then.is_some())
        }
        None => None,
    }
}

/// What to say of a string [`closed_too_soon`] found.
fn closed_too_soon_message(quoted: &Quoted) -> String {
    let (line, column) = quoted.close.unwrap_or(quoted.open);
    let then = quoted.then.as_ref().map_or("", |(_, word)| word.as_str());
    let inside = match quoted.quote {
        '\'' => "inside '...' a quote is written ''",
        _ => "inside \"...\" a quote is written \\\"",
    };
    format!(
        "this quoted string is closed by the quote at {line}:{column}, and `{then}` follows it: \
         expected its closing quote at the end of its value (is one missing? {inside})"
    )
}

/// The alias whose expansion crossed the budget, named from the anchor
/// (`&name`) at `line` and `column`, where the parser places every node it
/// replays from an alias.
fn alias_at(text: &str, line: usize, column: usize) -> String {
    let anchor: Option<String> = text
        .lines()
        .nth(line.saturating_sub(1))
        .and_then(|l| {
            l.chars()
                .skip(column.saturating_sub(1))
                .collect::<String>()
                .strip_prefix('&')
                .map(str::to_string)
        })
        .map(|rest| {
            rest.chars()
                .take_while(|c| !c.is_whitespace() && !",[]{}".contains(*c))
                .collect()
        });
    match anchor {
        Some(name) if !name.is_empty() => format!("the alias `*{name}`"),
        _ => "an alias (`*name`)".to_string(),
    }
}

/// The line of the `---` that starts the second document, if any.
fn second_document_line(text: &str) -> Option<usize> {
    let mut seen_content = false;
    for (i, line) in text.lines().enumerate() {
        let is_marker = line == "---" || line.starts_with("--- ") || line.starts_with("---\t");
        if is_marker && seen_content {
            return Some(i + 1);
        }
        let trimmed = line.trim();
        if !is_marker && !trimmed.is_empty() && !trimmed.starts_with('#') {
            seen_content = true;
        }
    }
    None
}

/// `field` as a path when it looks like one (`probability`, `pattern.up`,
/// `headers.x-tenant.regex`, `load[1].name`) rather than prose.
fn field_path(field: &str) -> Option<Vec<Segment>> {
    let mut segments = Vec::new();
    for part in field.split('.') {
        let (key, mut indices) = part.split_once('[').map_or((part, ""), |(k, i)| (k, i));
        let is_key = |k: &str| {
            !k.is_empty()
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
        };
        if !is_key(key) {
            return None;
        }
        segments.push(Segment::Key(key.to_string()));
        while !indices.is_empty() {
            let (index, rest) = indices.split_once(']')?;
            segments.push(Segment::Index(index.parse().ok()?));
            indices = match rest {
                "" => "",
                rest => rest.strip_prefix('[')?,
            };
        }
    }
    Some(segments)
}

/// serde's "unknown field `x`, expected one of `a`, `b`" with the closest
/// known name added, when one is close: "unknown field `x` (did you mean
/// `a`?), expected one of ...".
fn suggestion(message: &str) -> Option<String> {
    let rest = message
        .strip_prefix("unknown field `")
        .or_else(|| message.strip_prefix("unknown variant `"))?;
    let (unknown, expected) = rest.split_once('`')?;
    let known: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    if known.len() < 2 {
        return None;
    }
    let closest = known
        .iter()
        .map(|k| (strsim::damerau_levenshtein(unknown, k), *k))
        .min()?;
    if closest.0 == 0 || closest.0 > 2.max(unknown.len() / 3) {
        return None;
    }
    let at = message.len() - expected.len();
    Some(format!(
        "{} (did you mean `{}`?){}",
        &message[..at],
        closest.1,
        &message[at..]
    ))
}

/// serde's words for Rust things, in the words of the file.
fn plain_words(message: String) -> String {
    if message == "repetition limit exceeded" {
        // serde_yaml_ng stops following aliases once they have replayed
        // 100 times the document's own events (a "billion laughs" file).
        return "aliases (`*name`) repeat their anchors' content too often: \
                expected the file to expand to less than 100 times its size"
            .to_string();
    }
    if let Some(unknown) = message.strip_suffix(", there are no fields") {
        return format!("{unknown}: this takes no parameters (write `{{}}` or nothing)");
    }
    match message.strip_prefix("unknown variant ") {
        Some(rest) => format!("unknown value {rest}"),
        None => message,
    }
}

/// The character at a 1-based line and column.
fn character_at(text: &str, line: usize, column: usize) -> Option<char> {
    text.lines()
        .nth(line.checked_sub(1)?)?
        .chars()
        .nth(column.checked_sub(1)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_problem_position_is_removed_and_the_context_position_kept_short() {
        assert_eq!(
            strip_positions(
                "did not find expected '-' indicator at line 3 column 4, while parsing a block collection at line 2 column 3"
            ),
            "did not find expected '-' indicator, while parsing a block collection started at 2:3"
        );
        assert_eq!(strip_positions("seen at line x"), "seen at line x");
    }

    #[test]
    fn a_long_quoted_span_is_cut_to_its_first_64_characters_and_short_ones_kept() {
        let long = "x".repeat(1000);
        let message = format!("unknown field `{long}`, expected `faults`");
        assert_eq!(
            short_quotes(&message),
            format!("unknown field `{}...`, expected `faults`", "x".repeat(64))
        );
        assert_eq!(short_quotes("a `b` c `d"), "a `b` c `d");
        assert_eq!(
            short_quote(&"é".repeat(65)),
            format!("{}...", "é".repeat(64))
        );
    }

    #[test]
    fn a_close_misspelling_gets_a_suggestion_and_a_far_one_does_not() {
        assert_eq!(
            suggestion("unknown field `latnecy`, expected one of `name`, `latency`").as_deref(),
            Some(
                "unknown field `latnecy` (did you mean `latency`?), expected one of `name`, `latency`"
            )
        );
        assert_eq!(
            suggestion("unknown field `colour`, expected one of `name`, `latency`"),
            None
        );
    }

    #[test]
    fn field_paths_with_indices_are_read_and_prose_is_not() {
        let key = |k: &str| Segment::Key(k.to_string());
        assert_eq!(
            field_path("load[1].name"),
            Some(vec![key("load"), Segment::Index(1), key("name")])
        );
        assert_eq!(
            field_path("a[0][2]"),
            Some(vec![key("a"), Segment::Index(0), Segment::Index(2)])
        );
        assert_eq!(
            field_path("pattern.up"),
            Some(vec![key("pattern"), key("up")])
        );
        for prose in [
            "",
            "two words",
            "load[x]",
            "load[1",
            "load[1]x",
            ".a",
            "a..b",
        ] {
            assert_eq!(field_path(prose), None, "{prose:?}");
        }
    }

    #[test]
    fn an_unclosed_quote_is_placed_where_it_opens() {
        assert_eq!(
            unclosed_quote(
                "found unexpected end of stream at line 4 column 1, while scanning a quoted scalar at line 2 column 11"
            ),
            Some((2, 11))
        );
        assert_eq!(
            unclosed_quote("did not find expected key at line 2 column 3"),
            None
        );
    }

    #[test]
    fn the_second_document_marker_is_found_after_content_only() {
        assert_eq!(second_document_line("---\na: 1\n---\nb: 2\n"), Some(3));
        assert_eq!(second_document_line("# c\n---\na: 1\n"), None);
    }
}
