//! The limits every input file is held to, checked before the YAML parser
//! sees the text: its size, and how deep its mappings and lists nest.
//!
//! The depth is measured by a linear scan of the text rather than by the
//! parser, because libyaml spends time quadratic in the depth of flow
//! collections (`[[[[...]]]]`) before anything can stop it: a 200 KB file
//! nested 100,000 deep took most of a minute to reject.

/// The largest input file, in bytes (1 MiB). The largest experiment in
/// `experiments/` is a few KB.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// The deepest nesting of mappings and lists. A defense route's fallback
/// headers sit 7 levels down; YAML nested deeper than this is not a
/// firedrill file.
pub const MAX_DEPTH: usize = 64;

/// Where the nesting first goes deeper than the limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TooDeep {
    /// 1-based line of the mapping or list that is one level too deep.
    pub line: usize,
    /// 1-based column of it.
    pub column: usize,
    /// The top-level key it sits under, when it is in one.
    pub top_key: Option<String>,
}

/// The message for a file of `bytes` bytes over [`MAX_FILE_BYTES`].
pub(super) fn too_large(bytes: u64) -> Option<String> {
    (bytes > MAX_FILE_BYTES).then(|| {
        format!("the file is {bytes} bytes: expected at most {MAX_FILE_BYTES} bytes (1 MiB)")
    })
}

/// The message for a file that is more than [`MAX_FILE_BYTES`] long, found
/// by reading one byte past the limit (its size was not known before).
pub(super) fn more_than_the_limit() -> String {
    format!(
        "the file is more than {MAX_FILE_BYTES} bytes: expected at most {MAX_FILE_BYTES} bytes (1 MiB)"
    )
}

/// Everything `reader` holds up to [`MAX_FILE_BYTES`] and one byte more,
/// to tell a file that is too large.
pub(super) fn read_at_most(reader: impl std::io::Read) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    reader.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The message for an input that is `what` (`a directory`) rather than a
/// regular file.
pub(super) fn not_a_file_message(what: &str) -> String {
    let hint = match what {
        "a directory" => "",
        _ => " (write the pipe's contents to a file)",
    };
    format!("{what}, not a regular file: expected a file of at most {MAX_FILE_BYTES} bytes{hint}")
}

/// Why a file of this type is not read: a directory, or a named pipe
/// (FIFO), whose `open` would block until a writer comes. Devices are read
/// (within the limit), sockets cannot be opened anyway.
pub(super) fn not_a_file(kind: &std::fs::FileType) -> Option<String> {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_dir() {
        Some(not_a_file_message("a directory"))
    } else if kind.is_fifo() {
        Some(not_a_file_message("a named pipe (FIFO)"))
    } else {
        None
    }
}

/// The error for `bytes`, read from `file`, whose UTF-8 breaks at byte
/// `good`: at the line and column of that byte (columns count characters).
pub(super) fn not_utf8(file: &str, bytes: &[u8], good: usize) -> super::SchemaError {
    // Everything before `good` is valid UTF-8.
    let before = std::str::from_utf8(&bytes[..good]).unwrap_or_default();
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |at| at + 1);
    let column = before[line_start..].chars().count() + 1;
    super::SchemaError {
        file: file.to_string(),
        line,
        column,
        key: String::new(),
        message: format!(
            "the byte 0x{:02X} is not UTF-8: expected a UTF-8 text file",
            bytes[good]
        ),
    }
}

/// The first character YAML does not allow in a file (a C0 control other
/// than tab and line breaks, DEL, or a C1 control other than NEL), with its
/// 1-based line and column: libyaml refuses such a file without saying
/// where.
pub(super) fn first_control_character(text: &str) -> Option<(usize, usize, char)> {
    let allowed = |c: char| matches!(c, '\t' | '\n' | '\r' | '\u{85}');
    text.lines().enumerate().find_map(|(index, line)| {
        line.chars()
            .enumerate()
            .find(|(_, c)| c.is_control() && !allowed(*c))
            .map(|(column, c)| (index + 1, column + 1, c))
    })
}

/// `text` with every line break that is a lone carriage return (old Mac
/// line endings, which YAML reads as line breaks) written as `\n`, so
/// that lines and columns count the same everywhere; `\r\n` is kept.
pub(super) fn lone_carriage_returns_as_newlines(text: String) -> String {
    if !text.contains('\r') {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' && chars.peek() != Some(&'\n') {
            out.push('\n');
        } else {
            out.push(c);
        }
    }
    out
}

/// The first place where `text` nests deeper than `limit` levels, if any.
///
/// The scan over-approximates in rare, harmless ways (a `[` that opens a
/// word in a plain scalar counts as a level), so it may count a level more
/// than the parser would, never fewer: block nesting is measured by
/// indentation and `- `/`? ` indicators, flow nesting by `[`/`{` outside
/// quotes, comments and block scalars.
pub(super) fn first_too_deep(text: &str, limit: usize) -> Option<TooDeep> {
    let mut scan = Scan::default();
    for (index, line) in text.lines().enumerate() {
        if let Some(column) = scan.line(line, limit) {
            return Some(TooDeep {
                line: index + 1,
                column,
                top_key: scan.top_key,
            });
        }
    }
    None
}

/// What the scan carries from one line to the next.
#[derive(Debug, Default)]
struct Scan {
    /// Columns of the open block collections, innermost last.
    block: Vec<usize>,
    /// How many flow collections (`[`, `{`) are open.
    flow: usize,
    /// The quote of a quoted scalar that goes on to the next line.
    quote: Option<char>,
    /// Inside a block scalar (`|`, `>`): the indentation of the line that
    /// started it; its content is every line indented further.
    block_scalar: Option<usize>,
    /// The last top-level key seen, to name where a problem is.
    top_key: Option<String>,
}

impl Scan {
    /// Scans one line; the 1-based column of the first level deeper than
    /// `limit`, if any.
    fn line(&mut self, line: &str, limit: usize) -> Option<usize> {
        let chars: Vec<char> = line.chars().collect();
        let indent = chars.iter().take_while(|c| **c == ' ').count();
        let blank = chars[indent..].iter().all(|c| c.is_whitespace());
        if let Some(parent) = self.block_scalar {
            if blank || indent > parent {
                return None;
            }
            self.block_scalar = None;
        }
        let mut at = 0;
        if self.quote.is_none() && self.flow == 0 {
            if blank || chars[indent] == '#' {
                return None;
            }
            if indent == 0 && (line.starts_with("---") || line.starts_with("...")) {
                self.block.clear();
                return None;
            }
            if indent == 0 {
                self.top_key = line.split_once(':').map(|(key, _)| key.trim().to_string());
            }
            self.block.retain(|column| *column < indent);
            at = indent;
            loop {
                self.block.push(at);
                if self.block.len() > limit {
                    return Some(at + 1);
                }
                let indicator = matches!(chars.get(at), Some('-' | '?'))
                    && chars.get(at + 1).is_none_or(|c| *c == ' ');
                if !indicator {
                    break;
                }
                at += 1;
                while chars.get(at) == Some(&' ') {
                    at += 1;
                }
                if at >= chars.len() {
                    break;
                }
            }
        }
        self.rest(&chars, at, indent, limit)
    }

    /// Scans the line from `at` for quotes, flow collections, comments and
    /// block scalar indicators. A quote, a `[`/`{` in block context or a
    /// block scalar indicator counts only where a node starts (at the
    /// line's content, after `: `, `,`, `[`, `{`, or an anchor or tag), as
    /// YAML reads them: `a: rock 'n roll` opens no quote.
    fn rest(
        &mut self,
        chars: &[char],
        mut at: usize,
        indent: usize,
        limit: usize,
    ) -> Option<usize> {
        let start = at;
        let mut node_start = true;
        while at < chars.len() {
            let c = chars[at];
            let after_space = at == start || chars[at - 1].is_whitespace();
            at += 1;
            if let Some(quote) = self.quote {
                match c {
                    '\\' if quote == '"' => at += 1,
                    '\'' if quote == '\'' && chars.get(at) == Some(&'\'') => at += 1,
                    _ if c == quote => self.quote = None,
                    _ => {}
                }
                continue;
            }
            if c.is_whitespace() {
                continue;
            }
            let starts_node = std::mem::replace(&mut node_start, false);
            let next_is_space = chars.get(at).is_none_or(|n| n.is_whitespace());
            match c {
                '#' if after_space => return None,
                '"' | '\'' if starts_node => self.quote = Some(c),
                '&' | '!' if starts_node => {
                    while chars.get(at).is_some_and(|n| !n.is_whitespace()) {
                        at += 1;
                    }
                    node_start = true;
                }
                '[' | '{' if self.flow > 0 || starts_node => {
                    self.flow += 1;
                    if self.block.len() + self.flow > limit {
                        return Some(at);
                    }
                    node_start = true;
                }
                ']' | '}' if self.flow > 0 => self.flow -= 1,
                ',' if self.flow > 0 => node_start = true,
                ':' if next_is_space || self.flow > 0 => node_start = true,
                '-' | '?' if starts_node && next_is_space => node_start = true,
                '|' | '>' if self.flow == 0 && starts_node => {
                    let header = chars[at..]
                        .iter()
                        .take_while(|c| c.is_ascii_digit() || matches!(c, '+' | '-'))
                        .count();
                    let after: String = chars[at + header..].iter().collect();
                    let after = after.trim_start();
                    if after.is_empty() || after.starts_with('#') {
                        self.block_scalar = Some(indent);
                        return None;
                    }
                }
                _ => {}
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_error(text: &str, limit: usize) -> Option<(usize, usize)> {
        first_too_deep(text, limit).map(|d| (d.line, d.column))
    }

    #[test]
    fn flow_nesting_over_the_limit_is_found_at_the_bracket_that_crosses_it() {
        let text = format!("faults: {}{}\n", "[".repeat(5), "]".repeat(5));
        assert_eq!(depth_error(&text, 5), Some((1, 13)));
        assert_eq!(depth_error(&text, 6), None);
        let found = first_too_deep(&text, 5).unwrap();
        assert_eq!(found.top_key.as_deref(), Some("faults"));
    }

    #[test]
    fn compact_block_lists_count_one_level_per_dash() {
        let text = "faults:\n  - - - - x\n";
        // The content after the last dash counts too (an over-estimate by
        // one when it is a scalar).
        assert_eq!(depth_error(text, 5), Some((2, 11)));
        assert_eq!(depth_error(text, 6), None);
    }

    #[test]
    fn indentation_counts_levels_and_dedenting_closes_them() {
        let text = "a:\n  b:\n    c:\n      d: 1\ne:\n  f: 2\n";
        assert_eq!(depth_error(text, 3), Some((4, 7)));
        assert_eq!(depth_error(text, 4), None);
    }

    #[test]
    fn brackets_in_quotes_comments_block_scalars_and_words_are_not_levels() {
        let text = "\
a: '[[[[[['
b: \"{{{{{{\\\"[[[\"
c: /items[1] # [[[[[[
d: |
  [[[[[[
  {{{{{{
e: don't [x]
";
        assert_eq!(depth_error(text, 2), None);
    }

    #[test]
    fn a_quote_inside_a_plain_scalar_opens_nothing_and_hides_no_brackets() {
        let text = "a: rock 'n roll\nb: x \"y\nc: [[[1]]]\n";
        assert_eq!(depth_error(text, 3), Some((3, 6)));
    }

    #[test]
    fn an_anchor_or_a_tag_before_a_flow_collection_still_counts_it() {
        assert_eq!(depth_error("a: &x [[1]]\n", 2), Some((1, 8)));
        assert_eq!(depth_error("a: !tag {b: [1]}\n", 2), Some((1, 13)));
        assert_eq!(depth_error("a: *x [1]\n", 1), None);
    }

    #[test]
    fn a_quote_that_spans_lines_hides_brackets_on_the_next_line() {
        let text = "a: \"one\n  [[[[ two\"\nb: [[1]]\n";
        assert_eq!(depth_error(text, 3), None);
        assert_eq!(depth_error(text, 2), Some((3, 5)));
    }

    #[test]
    fn a_control_character_is_found_at_its_own_line_and_column() {
        let text = "a: 1\nb: 2\nc: x\u{0}y\n";
        assert_eq!(first_control_character(text), Some((3, 5, '\u{0}')));
        assert_eq!(first_control_character("a:\tb\r\n"), None);
    }

    #[test]
    fn lone_carriage_returns_become_line_breaks_and_crlf_is_kept() {
        assert_eq!(
            lone_carriage_returns_as_newlines("a: 1\rb: 2\r\nc: 3\r".to_string()),
            "a: 1\nb: 2\r\nc: 3\n"
        );
    }

    #[test]
    fn invalid_utf8_is_reported_at_the_line_and_column_of_its_first_byte() {
        let bytes = b"a: 1\nbb: \xc3\xa9\xff\n";
        let good = String::from_utf8(bytes.to_vec())
            .unwrap_err()
            .utf8_error()
            .valid_up_to();
        let err = not_utf8("f.yaml", bytes, good);
        assert_eq!((err.line, err.column), (2, 6));
        assert_eq!(
            err.message,
            "the byte 0xFF is not UTF-8: expected a UTF-8 text file"
        );
    }

    #[test]
    fn only_a_file_over_one_mebibyte_is_too_large() {
        assert_eq!(too_large(MAX_FILE_BYTES), None);
        assert!(
            too_large(MAX_FILE_BYTES + 1)
                .unwrap()
                .contains("at most 1048576 bytes")
        );
    }
}
