//! Importing a file whole: a key firedrill does not model is set aside and
//! listed as *not drilled* (its key, file and line, and why) instead of
//! refusing the file, and the rest is imported exactly; `--strict` keeps
//! the refusal. A value the library itself refuses stays an error.
//!
//! Each reader says "not modelled" in the message of a key firedrill has
//! no model for (the wording every reader keeps); [`classify`] reads that
//! and the other marks below into a [`Why`]. [`read_whole`] reads the
//! file, sets the not-drilled keys aside ([`Drop`]) and reads it again
//! until nothing but mapped, ignored or not-drilled keys is left.

use serde::Serialize;

use super::source::Source;
use crate::schema::SchemaError;

/// Why firedrill does not drill a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    /// firedrill has no model of what the key does.
    NoModel,
    /// An application class (an exception, a predicate) firedrill cannot
    /// see: it sees statuses, timeouts and connection errors.
    ApplicationClass,
    /// Another component than the defense line firedrill runs (a rate
    /// limiter of another kind, a thread pool).
    OtherComponent,
    /// Metadata, or a key the library itself skips: nothing about calls.
    Metadata,
}

impl Why {
    /// The words of the list.
    pub fn words(self) -> &'static str {
        match self {
            Why::NoModel => "no model",
            Why::ApplicationClass => "an application class firedrill cannot see",
            Why::OtherComponent => "another component",
            Why::Metadata => "metadata (no effect on calls)",
        }
    }
}

/// One key of an imported file that the drill does not cover.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct NotDrilled {
    /// The file as the user named it.
    pub file: String,
    /// 1-based line of the key's value.
    pub line: usize,
    /// 1-based column of the key's value (for `--strict`'s refusal).
    #[serde(skip)]
    pub column: usize,
    /// The key path in the source's own terms.
    pub key: String,
    /// The kind of reason.
    pub why: Why,
    /// The reader's own words: what the key does that firedrill does not.
    pub detail: String,
}

impl NotDrilled {
    /// The listing of `problem`, if it is a key firedrill does not drill.
    pub fn of(problem: &SchemaError) -> Option<NotDrilled> {
        Some(NotDrilled {
            file: problem.file.clone(),
            line: problem.line,
            column: problem.column,
            key: problem.key.clone(),
            why: classify(problem)?,
            detail: problem.message.clone(),
        })
    }

    /// The refusal `--strict` makes of it.
    pub fn refusal(&self) -> SchemaError {
        SchemaError {
            file: self.file.clone(),
            line: self.line,
            column: self.column,
            key: self.key.clone(),
            message: self.detail.clone(),
        }
    }

    /// One line of the list: `key (file:line): why: detail`.
    pub fn line_text(&self) -> String {
        format!(
            "{} ({}:{}): {}: {}",
            self.key,
            self.file,
            self.line,
            self.why.words(),
            self.detail
        )
    }
}

/// The kind of a problem a reader found: `None` for an error (a value the
/// library refuses, a malformed file), else why the key is not drilled.
pub fn classify(problem: &SchemaError) -> Option<Why> {
    let m = problem.message.as_str();
    if m.contains("is not an exception firedrill can tell") || m.contains("is Java code") {
        return Some(Why::ApplicationClass);
    }
    if m.contains("fastjson skips it") || m.contains("Spring Boot ignores an unknown key") {
        return Some(Why::Metadata);
    }
    if m.contains("RateLimiter is not modelled") || m.contains("thread-pool bulkhead") {
        return Some(Why::OtherComponent);
    }
    let no_model = m.contains("not modelled")
        || m.contains("firedrill imports one route per")
        || m.contains("keep one rule per resource");
    no_model.then_some(Why::NoModel)
}

/// How a format sets a not-drilled key aside before reading again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drop {
    /// Leave out the entries at or under the key (resilience4j, opossum).
    Key,
    /// Leave out the whole rule the key is in (Sentinel: a rule without
    /// one of its fields is another rule), unless it is metadata.
    Rule,
    /// Blank the NGINX directive (or parameter) at the key's place.
    NginxText,
    /// Blank the YAML key at the key's place and the lines under it.
    YamlText,
}

/// What [`read_whole`] reads: the text as left after the keys set aside,
/// or the entries left.
#[derive(Debug)]
pub struct Pass<'a> {
    /// The text (blanked where a key was set aside).
    pub text: &'a str,
    /// The key paths set aside, each with everything under it.
    pub dropped: &'a [String],
}

/// Whether `entry_key` is `dropped` or under it.
pub fn is_dropped(entry_key: &str, dropped: &[String]) -> bool {
    dropped.iter().any(|d| {
        entry_key == d
            || entry_key
                .strip_prefix(d.as_str())
                .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
    })
}

/// `source` without the entries set aside.
pub fn without(mut source: Source, dropped: &[String]) -> Source {
    source.entries.retain(|e| !is_dropped(&e.key(), dropped));
    source
}

/// Reads the file with `read` until no key is left that firedrill does not
/// model: each pass sets aside the keys the last one found not drilled.
/// An error ends it with the problems of that pass; `strict` refuses
/// every not-drilled key of every pass.
pub fn read_whole<T>(
    file: &str,
    text: &str,
    drop: Drop,
    strict: bool,
    mut read: impl FnMut(&Pass) -> Result<T, Vec<SchemaError>>,
) -> Result<(T, Vec<NotDrilled>), Vec<SchemaError>> {
    let mut text = text.to_string();
    let mut dropped: Vec<String> = Vec::new();
    let mut listed: Vec<NotDrilled> = Vec::new();
    let mut refused: Vec<SchemaError> = Vec::new();
    // Each pass sets aside at least one key, so a file ends within as
    // many passes as it has keys; the bound is for safety only.
    for pass_number in 0..64 {
        let pass = Pass {
            text: &text,
            dropped: &dropped,
        };
        let problems = match read(&pass) {
            Ok(_) if strict && !refused.is_empty() => return Err(refused),
            Ok(found) => {
                listed.sort();
                listed.dedup();
                return Ok((found, listed));
            }
            Err(problems) => problems,
        };
        let (skip, mut errors): (Vec<_>, Vec<_>) =
            problems.into_iter().partition(|p| classify(p).is_some());
        if strict {
            // Every key refused, those a later pass finds included.
            refused.extend(skip.iter().cloned());
        }
        if !errors.is_empty() || skip.is_empty() {
            if strict && pass_number > 0 {
                // An error of a later pass may come of the keys set
                // aside: strict refuses them, not what their absence does.
                return Err(refused);
            }
            errors.extend(refused);
            return Err(errors);
        }
        for p in skip {
            let listing = NotDrilled::of(&p).expect("partitioned");
            match drop {
                Drop::Key => dropped.push(p.key.clone()),
                Drop::Rule if listing.why == Why::Metadata => dropped.push(p.key.clone()),
                Drop::Rule => dropped.push(rule_of(&p.key)),
                Drop::NginxText => text = blank_nginx(&text, p.line, p.column),
                Drop::YamlText => text = blank_yaml(&text, p.line),
            }
            listed.push(listing);
        }
    }
    Err(vec![SchemaError::whole_file(
        file,
        "the import did not settle after setting aside the keys it does not drill".to_string(),
    )])
}

/// The rule a Sentinel key is in: `[2].grade` → `[2]`.
fn rule_of(key: &str) -> String {
    key.split('.').next().unwrap_or(key).to_string()
}

/// The byte offset of a 1-based line and column.
fn offset(text: &str, line: usize, column: usize) -> Option<usize> {
    let start = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum::<usize>();
    let at = start + column.saturating_sub(1);
    (at <= text.len()).then_some(at)
}

/// Replaces `range` of `text` by blanks, keeping the line breaks (so
/// every other place keeps its line and column).
fn blank(text: &str, range: std::ops::Range<usize>) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, c) in text.char_indices() {
        if range.contains(&i) && c != '\n' {
            out.extend(std::iter::repeat_n(' ', c.len_utf8()));
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` without the NGINX word at `line`:`column`: a directive's name
/// takes its arguments and its block with it; a parameter goes alone.
pub fn blank_nginx(text: &str, line: usize, column: usize) -> String {
    let Some(at) = offset(text, line, column) else {
        return text.to_string();
    };
    let before = text[..at].trim_end();
    let starts_directive = before.is_empty()
        || before.ends_with(';')
        || before.ends_with('{')
        || before.ends_with('}')
        || before
            .rsplit('\n')
            .next()
            .is_some_and(|l| l.trim_start().starts_with('#'));
    let bytes = text.as_bytes();
    let mut end = at;
    if starts_directive {
        let mut depth = 0usize;
        while end < bytes.len() {
            match bytes[end] {
                b';' if depth == 0 => {
                    end += 1;
                    break;
                }
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end += 1;
                        break;
                    }
                }
                _ => {}
            }
            end += 1;
        }
    } else {
        while end < bytes.len() && !bytes[end].is_ascii_whitespace() && bytes[end] != b';' {
            end += 1;
        }
    }
    blank(text, at..end)
}

/// `text` without the YAML key on `line` and the lines indented under it
/// (a list item's first line takes the item with it).
pub fn blank_yaml(text: &str, line: usize) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let Some(first) = lines.get(line.saturating_sub(1)) else {
        return text.to_string();
    };
    let indent = |l: &str| l.len() - l.trim_start_matches([' ', '-']).len();
    let own = first.len() - first.trim_start().len();
    let mut last = line.saturating_sub(1);
    for (i, l) in lines.iter().enumerate().skip(line) {
        if l.trim().is_empty() || l.trim_start().starts_with('#') {
            continue;
        }
        if l.len() - l.trim_start().len() > own
            || (indent(l) > own && !l.trim_start().starts_with('-'))
        {
            last = i;
        } else {
            break;
        }
    }
    let start: usize = lines[..line - 1].iter().map(|l| l.len()).sum();
    let end: usize = lines[..=last].iter().map(|l| l.len()).sum();
    blank(text, start..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directive_is_blanked_with_its_arguments_and_a_parameter_alone() {
        let text = "upstream a {\n    hash $x;\n    server 10.0.0.1 max_conns=3 weight=2;\n}\n";
        let blanked = blank_nginx(text, 2, 5);
        assert_eq!(blanked.lines().nth(1).unwrap().trim(), "");
        let blanked = blank_nginx(text, 3, 21);
        assert_eq!(
            blanked
                .lines()
                .nth(2)
                .unwrap()
                .split_whitespace()
                .collect::<Vec<_>>(),
            ["server", "10.0.0.1", "weight=2;"]
        );
        assert_eq!(blanked.len(), text.len(), "every place keeps its column");
    }

    #[test]
    fn a_yaml_key_is_blanked_with_the_lines_under_it() {
        let text = "a:\n  health_checks:\n    - timeout: 1s\n      interval: 2s\n  b: 1\n";
        let blanked = blank_yaml(text, 2);
        assert_eq!(
            blanked
                .lines()
                .filter(|l| !l.trim().is_empty())
                .collect::<Vec<_>>(),
            ["a:", "  b: 1"]
        );
    }

    #[test]
    fn a_key_under_a_dropped_one_is_dropped_and_a_longer_name_is_not() {
        let dropped = ["a.rate".to_string()];
        assert!(is_dropped("a.rate", &dropped));
        assert!(is_dropped("a.rate.x", &dropped));
        assert!(is_dropped("a.rate[0]", &dropped));
        assert!(!is_dropped("a.ratelimiter", &dropped));
    }
}
