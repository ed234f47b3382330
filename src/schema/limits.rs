//! The limits every input file is held to, checked before the YAML parser
//! sees the text: its size, its characters, and how deep its mappings and
//! lists nest (measured by [`scan`](super::scan)).

/// The largest input file, in bytes (1 MiB). The largest experiment in
/// `experiments/` is a few KB.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// The deepest nesting of mappings and lists. A defense route's fallback
/// headers sit 7 levels down; YAML nested deeper than this is not a
/// firedrill file.
pub const MAX_DEPTH: usize = 64;

/// The largest recording (`replay`, `load: replay`) or events log of a
/// service read, in bytes (256 MiB): an hour of NGINX access log at 100
/// requests a second is about 70 MB. Each is read whole before it is used.
pub const MAX_RECORDING_BYTES: u64 = 256 * 1024 * 1024;

/// `limit` bytes as the messages write it: `1048576 bytes (1 MiB)`.
fn bytes_and_mebibytes(limit: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if limit.is_multiple_of(MIB) {
        format!("{limit} bytes ({} MiB)", limit / MIB)
    } else {
        format!("{limit} bytes")
    }
}

/// The message for a file of `bytes` bytes over `limit`.
pub(super) fn too_large(bytes: u64, limit: u64) -> Option<String> {
    (bytes > limit).then(|| {
        format!(
            "the file is {bytes} bytes: expected at most {}",
            bytes_and_mebibytes(limit)
        )
    })
}

/// The message for a file that is more than `limit` bytes long, found by
/// reading one byte past the limit (its size was not known before).
pub(super) fn more_than_the_limit(limit: u64) -> String {
    format!(
        "the file is more than {limit} bytes: expected at most {}",
        bytes_and_mebibytes(limit)
    )
}

/// Everything `reader` holds up to `limit` bytes and one byte more, to
/// tell a file that is too large.
pub(super) fn read_at_most(reader: impl std::io::Read, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The message for an input that is `what` (`a directory`) rather than a
/// regular file of at most `limit` bytes.
pub(super) fn not_a_file_message(what: &str, limit: u64) -> String {
    let hint = match what {
        "a directory" => "",
        _ => " (write the pipe's contents to a file)",
    };
    format!("{what}, not a regular file: expected a file of at most {limit} bytes{hint}")
}

/// Why a file of this type is not read: a directory, or a named pipe
/// (FIFO), whose `open` would block until a writer comes. Devices are read
/// (within the limit), sockets cannot be opened anyway.
pub(super) fn not_a_file(kind: &std::fs::FileType, limit: u64) -> Option<String> {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_dir() {
        Some(not_a_file_message("a directory", limit))
    } else if kind.is_fifo() {
        Some(not_a_file_message("a named pipe (FIFO)", limit))
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(too_large(MAX_FILE_BYTES, MAX_FILE_BYTES), None);
        assert_eq!(
            too_large(MAX_FILE_BYTES + 1, MAX_FILE_BYTES).as_deref(),
            Some("the file is 1048577 bytes: expected at most 1048576 bytes (1 MiB)")
        );
        assert_eq!(
            more_than_the_limit(MAX_RECORDING_BYTES),
            "the file is more than 268435456 bytes: expected at most 268435456 bytes (256 MiB)"
        );
    }
}
