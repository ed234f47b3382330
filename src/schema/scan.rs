//! A linear scan of a YAML text's lexical structure, before (or beside)
//! the parser: how deep its mappings and lists nest, and where each quoted
//! scalar opens and closes.
//!
//! The depth is measured here rather than by the parser, because libyaml
//! spends time quadratic in the depth of flow collections (`[[[[...]]]]`)
//! before anything can stop it: a 200 KB file nested 100,000 deep took
//! most of a minute to reject. The quotes are found here because libyaml
//! reports a quote that a later one closes where it breaks, on what follows
//! the later quote, lines away from the one the user left open.

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

/// A quoted scalar (`"..."` or `'...'`) as the scan saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Quoted {
    /// The quote character.
    pub quote: char,
    /// 1-based line and column of the opening quote.
    pub open: (usize, usize),
    /// 1-based line and column of the closing quote; `None` when the text
    /// ends first.
    pub close: Option<(usize, usize)>,
    /// The first character after the closing quote on its line that is
    /// neither a blank nor one that may follow a value (`:`, `,`, `]`,
    /// `}`, `#`), with its column: the text that the parser breaks on
    /// when this string was closed by a quote meant to open the next one.
    pub then: Option<(usize, String)>,
}

/// Every quoted scalar of `text` that starts a node, in order (a quote
/// inside a plain scalar, as in `rock 'n roll`, opens none).
pub(super) fn quoted_scalars(text: &str) -> Vec<Quoted> {
    let mut scan = Scan::default();
    for line in text.lines() {
        scan.line(line, usize::MAX);
    }
    scan.quoted
}

/// What the scan carries from one line to the next.
#[derive(Debug, Default)]
struct Scan {
    /// The 1-based number of the line being scanned.
    line: usize,
    /// The quoted scalars seen so far, the last one open while `quote` is.
    quoted: Vec<Quoted>,
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
        self.line += 1;
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
                    _ if c == quote => {
                        self.quote = None;
                        self.closed(chars, at);
                    }
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
                '"' | '\'' if starts_node => {
                    self.quote = Some(c);
                    self.quoted.push(Quoted {
                        quote: c,
                        open: (self.line, at),
                        close: None,
                        then: None,
                    });
                }
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

    /// Records that the open quoted scalar closes at the 1-based column
    /// `at` of `chars`, and what follows it.
    fn closed(&mut self, chars: &[char], at: usize) {
        let line = self.line;
        let Some(last) = self.quoted.last_mut() else {
            return;
        };
        last.close = Some((line, at));
        let blanks = chars[at..].iter().take_while(|c| **c == ' ' || **c == '\t');
        let next = at + blanks.count();
        last.then = chars
            .get(next)
            .filter(|c| !matches!(c, ':' | ',' | ']' | '}' | '#'))
            .map(|_| {
                let word = chars[next..].iter().take_while(|c| !c.is_whitespace());
                (next + 1, word.take(20).collect())
            });
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
    fn quoted_scalars_say_where_they_open_close_and_what_follows_the_close() {
        let text = "a: \"x\"\nb: 'it''s\n  on' y\nc: rock 'n roll\nd: [\"p\", 'q]\n";
        let quoted = quoted_scalars(text);
        let summary: Vec<_> = quoted
            .iter()
            .map(|q| (q.quote, q.open, q.close, q.then.clone()))
            .collect();
        assert_eq!(
            summary,
            [
                ('"', (1, 4), Some((1, 6)), None),
                ('\'', (2, 4), Some((3, 5)), Some((7, "y".to_string()))),
                ('"', (5, 5), Some((5, 7)), None),
                ('\'', (5, 10), None, None),
            ]
        );
    }
}
