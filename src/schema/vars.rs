//! Variables in experiment, defense and fault files: `${VAR}` and
//! `${VAR:-default}` are replaced with the environment's value before the
//! YAML is parsed; `$${` writes a literal `${`. Comments are left alone. An
//! unset variable without a default is an error at its line and column.
//!
//! A variable whose name says it holds a secret (it contains `TOKEN`,
//! `SECRET`, `PASSWORD`, `PASSWD`, `KEY`, `AUTH` or `CREDENTIAL`) has its
//! value registered with [`mask`], which reports, errors and logs pass
//! their text through, so the value never leaves the process.

use std::sync::{Mutex, OnceLock};

use super::SchemaError;

/// Words that mark a variable as a secret.
const SECRET_WORDS: &[&str] = &[
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "KEY",
    "AUTH",
    "CREDENTIAL",
];

/// What a masked value is shown as.
pub const MASKED: &str = "***";

fn secrets() -> &'static Mutex<Vec<String>> {
    static SECRETS: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    SECRETS.get_or_init(|| Mutex::new(Vec::new()))
}

/// Whether a variable's name says it holds a secret.
pub fn is_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_WORDS.iter().any(|w| upper.contains(w))
}

/// Registers a secret value (values shorter than 4 bytes are not masked:
/// they would mask ordinary text).
pub fn register_secret(value: &str) {
    if value.len() < 4 {
        return;
    }
    let mut all = secrets().lock().unwrap_or_else(|e| e.into_inner());
    if !all.iter().any(|v| v == value) {
        all.push(value.to_string());
        // Longest first, so a secret containing another is masked whole.
        all.sort_by_key(|v| std::cmp::Reverse(v.len()));
        ANY_SECRET.store(true, std::sync::atomic::Ordering::Release);
    }
}

/// Whether any secret was registered: most runs have none, and the log
/// writer asks on every line.
static ANY_SECRET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `text` with every registered secret replaced by [`MASKED`].
pub fn mask(text: &str) -> std::borrow::Cow<'_, str> {
    if !ANY_SECRET.load(std::sync::atomic::Ordering::Acquire) {
        return std::borrow::Cow::Borrowed(text);
    }
    let all = secrets().lock().unwrap_or_else(|e| e.into_inner());
    if !all.iter().any(|s| text.contains(s.as_str())) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = text.to_string();
    for s in all.iter() {
        out = out.replace(s.as_str(), MASKED);
    }
    std::borrow::Cow::Owned(out)
}

/// Replaces the variables of `text` (the contents of `file`) with values
/// from `lookup`, registering secret ones.
pub fn substitute(
    file: &str,
    text: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, SchemaError> {
    if !text.contains("${") {
        return Ok(text.to_string());
    }
    let mut out = String::with_capacity(text.len());
    for (number, line) in text.split_inclusive('\n').enumerate() {
        let (code, comment) = line.split_at(comment_start(line));
        let mut rest = code;
        while let Some(i) = rest.find("${") {
            if rest[..i].ends_with('$') {
                // `$${`: a literal `${`.
                out.push_str(&rest[..i - 1]);
                out.push_str("${");
                rest = &rest[i + 2..];
                continue;
            }
            out.push_str(&rest[..i]);
            let column = code.len() - rest.len() + i + 1;
            let at = |message: String| SchemaError {
                file: file.to_string(),
                line: number + 1,
                column,
                key: String::new(),
                message,
            };
            let body = &rest[i + 2..];
            let end = body
                .find('}')
                .ok_or_else(|| at("`${` without its closing `}`: write ${NAME} or ${NAME:-default} (`$${` for a literal `${`)".to_string()))?;
            let inner = &body[..end];
            let (name, default) = match inner.split_once(":-") {
                Some((name, default)) => (name, Some(default)),
                None => (inner, None),
            };
            if name.is_empty()
                || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                || name.as_bytes()[0].is_ascii_digit()
            {
                return Err(at(format!(
                    "`${{{inner}}}`: a variable name is letters, digits and `_`, not starting with a digit"
                )));
            }
            let value = match (lookup(name), default) {
                (Some(v), _) => v,
                (None, Some(d)) => d.to_string(),
                (None, None) => {
                    return Err(at(format!(
                        "${{{name}}}: variable {name} is not set: set it in the environment, or give a default: ${{{name}:-value}}"
                    )));
                }
            };
            if is_secret(name) {
                register_secret(&value);
            }
            out.push_str(&value);
            rest = &body[end + 1..];
        }
        out.push_str(rest);
        out.push_str(comment);
    }
    Ok(out)
}

/// Where a YAML comment starts on `line` (its length when it has none): a
/// `#` at the start or after a space or tab, outside quotes.
fn comment_start(line: &str) -> usize {
    let mut quote: Option<u8> = None;
    let mut previous = b' ';
    for (i, b) in line.bytes().enumerate() {
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'"' || b == b'\'' => quote = Some(b),
            None if b == b'#' && (previous == b' ' || previous == b'\t') => return i,
            None => {}
        }
        previous = b;
    }
    line.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOST" => Some("staging:8080".to_string()),
            "API_TOKEN" => Some("s3cr3t-value".to_string()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn variables_and_defaults_are_replaced_before_parsing() {
        let text = "url: http://${HOST}/x\nrate: ${RATE:-50/s}\nname: ${EMPTY:-unused}\n";
        assert_eq!(
            substitute("f", text, env).unwrap(),
            "url: http://staging:8080/x\nrate: 50/s\nname: \n"
        );
    }

    #[test]
    fn an_unset_variable_is_an_error_at_its_line_and_column_naming_it() {
        let e = substitute("f.yaml", "a: 1\nurl: http://${STAGING_URL}/\n", env).unwrap_err();
        assert_eq!((e.file.as_str(), e.line, e.column), ("f.yaml", 2, 13));
        assert!(
            e.message.contains("variable STAGING_URL is not set"),
            "{}",
            e.message
        );
    }

    #[test]
    fn comments_and_escaped_dollars_are_left_as_written() {
        let text = "a: $${HOST} # uses ${NOT_SET}\n# ${ALSO_NOT_SET}\nb: '#${HOST}'\n";
        assert_eq!(
            substitute("f", text, env).unwrap(),
            "a: ${HOST} # uses ${NOT_SET}\n# ${ALSO_NOT_SET}\nb: '#staging:8080'\n"
        );
    }

    #[test]
    fn bad_variable_syntax_is_located() {
        let e = substitute("f", "a: ${HOST\n", env).unwrap_err();
        assert_eq!((e.line, e.column), (1, 4));
        let e = substitute("f", "a: x ${9X}\n", env).unwrap_err();
        assert_eq!((e.line, e.column), (1, 6));
    }

    #[test]
    fn secret_variables_are_masked_wherever_their_value_appears() {
        assert!(is_secret("API_TOKEN") && is_secret("db_password") && !is_secret("HOST"));
        substitute("f", "h: Bearer ${API_TOKEN}\nu: ${HOST}\n", env).unwrap();
        assert_eq!(
            mask("sent Bearer s3cr3t-value to staging:8080"),
            "sent Bearer *** to staging:8080"
        );
    }
}
