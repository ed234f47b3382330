//! What a whole-number field (a count, a size, a seed) says of a value it
//! cannot take, in the file's words: the value as written and the range
//! expected, instead of serde's `invalid type: integer `0`, expected u32`
//! (which is what `-0` read as).
//!
//! Which forms a whole number may take is YAML's core schema as
//! `serde_yaml_ng` reads it: `5`, `+5`, `0x10`, `0o17` (and `0b11`). Refused,
//! each with its own reason: a minus sign, even on zero (`-0`); a leading
//! zero (`010`, octal 8 to a YAML 1.1 reader, 10 to a YAML 1.2 one); an
//! underscore (`1_000`, text to YAML 1.2); quotes (`'5'` is text); a
//! fraction or exponent (`5.0`, `1e3`); more than the field holds.

/// The message for a value that the unsigned integer field behind serde's
/// `message` (`..., expected u32`) refused, `written` being the value as
/// the file has it; `None` when `message` is not such a refusal.
pub(super) fn unsigned_refusal(message: &str, written: &str) -> Option<String> {
    let (found, max) = refused_unsigned(message)?;
    let expected = format!("expected a whole number from 0 to {max}");
    let digits = written.trim_start_matches(['+', '-']);
    let reason = if written.starts_with(['\'', '"']) {
        let bare = written.trim_matches(['\'', '"']);
        format!("`{written}` is quoted, so it is text: {expected} (write {bare} without quotes)")
    } else if found == "integer `0`" {
        format!("`{written}` has a minus sign: {expected}, without a sign (write 0)")
    } else if found.starts_with("integer `-") {
        format!("`{written}` is negative: {expected}")
    } else if is_decimal(digits) && digits.len() > 1 && digits.starts_with('0') {
        let decimal = digits.trim_start_matches('0');
        let decimal = if decimal.is_empty() { "0" } else { decimal };
        let octal = u64::from_str_radix(digits, 8)
            .ok()
            .filter(|o| o.to_string() != decimal);
        match octal {
            Some(o) => format!(
                "`{written}` has a leading zero, which YAML readers disagree on (YAML 1.1 reads it as octal {o}): \
                 {expected}, without leading zeros (write {decimal}, or 0o{decimal} for octal)"
            ),
            None => format!(
                "`{written}` has a leading zero, which YAML readers disagree on: \
                 {expected}, without leading zeros (write {decimal})"
            ),
        }
    } else if digits.contains('_') && is_decimal(&digits.replace('_', "")) {
        format!(
            "`{written}` has an underscore, which YAML does not read in a number: \
             {expected} (write {})",
            written.replace('_', "")
        )
    } else if found.starts_with("integer") {
        format!("`{written}` is too large: {expected}")
    } else if found.starts_with("floating point") {
        format!("`{written}` is not a whole number: {expected}")
    } else {
        format!("{expected}, found {found}")
    };
    Some(reason)
}

/// serde's description of the value refused and the largest value of the
/// unsigned type named in `message` (`invalid type: string "01", expected
/// u64`), if it names one.
fn refused_unsigned(message: &str) -> Option<(&str, u64)> {
    let (found, ty) = message.rsplit_once(", expected ")?;
    let max = match ty {
        "u8" => u64::from(u8::MAX),
        "u16" => u64::from(u16::MAX),
        "u32" => u64::from(u32::MAX),
        "u64" | "usize" => u64::MAX,
        _ => return None,
    };
    let found = found
        .strip_prefix("invalid type: ")
        .or_else(|| found.strip_prefix("invalid value: "))?;
    Some((found, max))
}

fn is_decimal(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// The scalar that starts at the 1-based `line` and `column` of `text`, as
/// written: a quoted one with its quotes, a plain one up to where it ends
/// on its line (a comment, or in a flow collection `,`, `]` or `}`); an
/// anchor in front (`&n 5`) is skipped.
pub(super) fn written_at(text: &str, line: usize, column: usize) -> Option<String> {
    let line = text.lines().nth(line.checked_sub(1)?)?;
    let rest: String = line.chars().skip(column.checked_sub(1)?).collect();
    let rest = match rest.strip_prefix('&') {
        Some(anchored) => anchored
            .trim_start_matches(|c: char| !c.is_whitespace())
            .trim_start()
            .to_string(),
        None => rest,
    };
    let mut chars = rest.chars();
    let first = chars.next()?;
    if first == '\'' || first == '"' {
        let end = chars
            .position(|c| c == first)
            .map_or(rest.len(), |at| at + 2);
        return Some(rest.chars().take(end).collect());
    }
    let end = rest
        .find(" #")
        .into_iter()
        .chain(rest.find([',', ']', '}']))
        .min()
        .unwrap_or(rest.len());
    Some(rest[..end].trim_end().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(ty: &str, found: &str, written: &str) -> String {
        unsigned_refusal(&format!("invalid type: {found}, expected {ty}"), written).unwrap()
    }

    #[test]
    fn each_refused_form_says_why_with_the_value_as_written_and_the_range() {
        let range = "expected a whole number from 0 to 4294967295";
        assert_eq!(
            refusal("u32", "integer `0`", "-0"),
            format!("`-0` has a minus sign: {range}, without a sign (write 0)")
        );
        assert_eq!(
            refusal("u32", "integer `-5`", "-5"),
            format!("`-5` is negative: {range}")
        );
        assert_eq!(
            refusal("u32", "string \"010\"", "010"),
            format!(
                "`010` has a leading zero, which YAML readers disagree on (YAML 1.1 reads it as octal 8): \
                 {range}, without leading zeros (write 10, or 0o10 for octal)"
            )
        );
        assert_eq!(
            refusal("u32", "string \"07\"", "07"),
            format!(
                "`07` has a leading zero, which YAML readers disagree on: {range}, without leading zeros (write 7)"
            )
        );
        assert_eq!(
            refusal("u32", "string \"1_000\"", "1_000"),
            format!(
                "`1_000` has an underscore, which YAML does not read in a number: {range} (write 1000)"
            )
        );
        assert_eq!(
            refusal("u32", "string \"5\"", "'5'"),
            format!("`'5'` is quoted, so it is text: {range} (write 5 without quotes)")
        );
        assert_eq!(
            refusal("u32", "floating point `1000.0`", "1e3"),
            format!("`1e3` is not a whole number: {range}")
        );
        assert_eq!(
            refusal("u32", "map", "{a: 1}"),
            format!("{range}, found map")
        );
        assert_eq!(
            unsigned_refusal("invalid value: integer `70000`, expected u16", "70000").unwrap(),
            "`70000` is too large: expected a whole number from 0 to 65535"
        );
        assert_eq!(
            unsigned_refusal("invalid type: map, expected a string", "x"),
            None
        );
    }

    #[test]
    fn the_value_is_read_as_written_in_block_and_flow_style() {
        let text = "a: -0 # c\nb: {x: 1_000, y: '5'}\nc: &n 010\n";
        assert_eq!(written_at(text, 1, 4).as_deref(), Some("-0"));
        assert_eq!(written_at(text, 2, 8).as_deref(), Some("1_000"));
        assert_eq!(written_at(text, 2, 18).as_deref(), Some("'5'"));
        assert_eq!(written_at(text, 3, 4).as_deref(), Some("010"));
        assert_eq!(written_at(text, 9, 1), None);
    }
}
