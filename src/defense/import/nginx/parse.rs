//! NGINX configuration syntax: directives (`name args;`) and blocks
//! (`name args { ... }`), `#` comments, single and double quotes with
//! backslash escapes, every word with its line and column.

use crate::clock::Duration;
use crate::schema::SchemaError;

/// A word of a directive, with its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    pub(crate) text: String,
    pub(crate) line: usize,
    pub(crate) column: usize,
}

/// One directive, with its block when it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Directive {
    /// The name (first word).
    pub(crate) name: Word,
    /// The arguments.
    pub(crate) args: Vec<Word>,
    /// The block's directives, `None` for a simple directive.
    pub(crate) block: Option<Vec<Directive>>,
}

/// Reads `text` (the contents of `file`) into its directives.
pub(crate) fn parse(file: &str, text: &str) -> Result<Vec<Directive>, SchemaError> {
    let tokens = tokens(file, text)?;
    let mut at = 0;
    let directives = block(file, &tokens, &mut at, None)?;
    Ok(directives)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(Word),
    Semicolon(usize, usize),
    Open(usize, usize),
    Close(usize, usize),
}

fn error(file: &str, line: usize, column: usize, message: impl Into<String>) -> SchemaError {
    SchemaError {
        file: file.to_string(),
        line,
        column,
        key: String::new(),
        message: message.into(),
    }
}

fn block(
    file: &str,
    tokens: &[Token],
    at: &mut usize,
    opened: Option<(usize, usize)>,
) -> Result<Vec<Directive>, SchemaError> {
    let mut out = Vec::new();
    let mut words: Vec<Word> = Vec::new();
    while *at < tokens.len() {
        let token = &tokens[*at];
        *at += 1;
        match token {
            Token::Word(w) => words.push(w.clone()),
            Token::Semicolon(line, column) => {
                let mut it = words.drain(..);
                let Some(name) = it.next() else {
                    return Err(error(
                        file,
                        *line,
                        *column,
                        "unexpected `;`: expected a directive before it",
                    ));
                };
                out.push(Directive {
                    name,
                    args: it.collect(),
                    block: None,
                });
            }
            Token::Open(line, column) => {
                let mut it = std::mem::take(&mut words).into_iter();
                let Some(name) = it.next() else {
                    return Err(error(
                        file,
                        *line,
                        *column,
                        "unexpected `{`: expected a block's name before it",
                    ));
                };
                let args = it.collect();
                let inner = block(file, tokens, at, Some((*line, *column)))?;
                out.push(Directive {
                    name,
                    args,
                    block: Some(inner),
                });
            }
            Token::Close(line, column) => {
                if !words.is_empty() {
                    let w = &words[0];
                    return Err(error(
                        file,
                        w.line,
                        w.column,
                        format!("directive `{}` has no ending `;`", w.text),
                    ));
                }
                if opened.is_none() {
                    return Err(error(
                        file,
                        *line,
                        *column,
                        "unexpected `}`: no block is open",
                    ));
                }
                return Ok(out);
            }
        }
    }
    if let Some(w) = words.first() {
        return Err(error(
            file,
            w.line,
            w.column,
            format!("directive `{}` has no ending `;`", w.text),
        ));
    }
    if let Some((line, column)) = opened {
        return Err(error(
            file,
            line,
            column,
            "this `{` is never closed: expected `}`",
        ));
    }
    Ok(out)
}

fn tokens(file: &str, text: &str) -> Result<Vec<Token>, SchemaError> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let (mut i, mut line, mut column) = (0, 1, 1);
    let advance = |c: char, line: &mut usize, column: &mut usize| {
        if c == '\n' {
            *line += 1;
            *column = 1;
        } else {
            *column += 1;
        }
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            '#' => {
                while i < chars.len() && chars[i] != '\n' {
                    advance(chars[i], &mut line, &mut column);
                    i += 1;
                }
                continue;
            }
            ';' => out.push(Token::Semicolon(line, column)),
            '{' => out.push(Token::Open(line, column)),
            '}' => out.push(Token::Close(line, column)),
            c if c.is_whitespace() => {}
            _ => {
                let (start_line, start_column) = (line, column);
                let mut word = String::new();
                if c == '"' || c == '\'' {
                    advance(c, &mut line, &mut column);
                    i += 1;
                    loop {
                        let Some(&d) = chars.get(i) else {
                            return Err(error(
                                file,
                                start_line,
                                start_column,
                                format!("this {c} quote is never closed"),
                            ));
                        };
                        advance(d, &mut line, &mut column);
                        i += 1;
                        if d == c {
                            break;
                        }
                        if d == '\\' && i < chars.len() {
                            // NGINX reads \" \' \\ \t \r \n; any other
                            // backslash stays (a regex's \s).
                            let e = chars[i];
                            match e {
                                '"' | '\'' | '\\' => word.push(e),
                                't' => word.push('\t'),
                                'r' => word.push('\r'),
                                'n' => word.push('\n'),
                                _ => {
                                    word.push('\\');
                                    word.push(e);
                                }
                            }
                            advance(e, &mut line, &mut column);
                            i += 1;
                            continue;
                        }
                        word.push(d);
                    }
                } else {
                    while i < chars.len() && !chars[i].is_whitespace() && !";{}".contains(chars[i])
                    {
                        if chars[i] == '\\'
                            && i + 1 < chars.len()
                            && "\"'\\ ;{}".contains(chars[i + 1])
                        {
                            advance(chars[i], &mut line, &mut column);
                            i += 1;
                        }
                        word.push(chars[i]);
                        advance(chars[i], &mut line, &mut column);
                        i += 1;
                    }
                }
                out.push(Token::Word(Word {
                    text: word,
                    line: start_line,
                    column: start_column,
                }));
                continue;
            }
        }
        advance(c, &mut line, &mut column);
        i += 1;
    }
    Ok(out)
}

/// An NGINX time: `10s`, `500ms`, `1m30s`, units ms s m h d w M y; a bare
/// number is seconds.
pub(super) fn time(text: &str) -> Result<Duration, String> {
    let bad =
        || format!("invalid time `{text}`: expected an NGINX time such as 10s, 500ms or 1m30s");
    if text.is_empty() {
        return Err(bad());
    }
    if text.chars().all(|c| c.is_ascii_digit()) {
        return text
            .parse::<u64>()
            .map(Duration::from_secs)
            .map_err(|_| bad());
    }
    let mut total = Duration::ZERO;
    let mut number = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let n: u64 = number.parse().map_err(|_| bad())?;
        number.clear();
        let ms: u64 = match c {
            'm' if chars.peek() == Some(&'s') => {
                chars.next();
                1
            }
            's' => 1000,
            'm' => 60_000,
            'h' => 3_600_000,
            'd' => 86_400_000,
            'w' => 604_800_000,
            'M' => 2_592_000_000,
            'y' => 31_536_000_000,
            _ => return Err(bad()),
        };
        total += Duration::from_millis(n.checked_mul(ms).ok_or_else(bad)?);
    }
    if !number.is_empty() {
        return Err(bad());
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_and_blocks_keep_their_places() {
        let text = "upstream stock {\n    server 10.0.0.1:8080 weight=2; # a\n    least_conn;\n}\nmatch ok { body ~ \"up; \\\"ok\\\"\\s\"; }\n";
        let d = parse("n.conf", text).unwrap();
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].name.text, "upstream");
        assert_eq!(d[0].args[0].text, "stock");
        let inner = d[0].block.as_ref().unwrap();
        assert_eq!(inner[0].args[1].text, "weight=2");
        assert_eq!((inner[0].args[1].line, inner[0].args[1].column), (2, 26));
        assert_eq!(inner[1].name.text, "least_conn");
        let body = &d[1].block.as_ref().unwrap()[0];
        assert_eq!(body.args[1].text, "up; \"ok\"\\s");
    }

    #[test]
    fn an_unclosed_block_or_directive_is_a_located_error() {
        let err = parse("n.conf", "upstream a {\n  server x;\n").unwrap_err();
        assert_eq!((err.line, err.column), (1, 12));
        let err = parse("n.conf", "upstream a {\n  server x\n}\n").unwrap_err();
        assert_eq!((err.line, err.column), (2, 3));
        assert!(err.message.contains("no ending `;`"), "{}", err.message);
        let err = parse("n.conf", "}\n").unwrap_err();
        assert!(err.message.contains("no block is open"));
    }

    #[test]
    fn nginx_times_read_bare_numbers_as_seconds_and_combine_units() {
        assert_eq!(time("60").unwrap(), Duration::from_secs(60));
        assert_eq!(time("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(time("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(time("2h").unwrap(), Duration::from_secs(7200));
        assert!(time("10x").is_err());
        assert!(time("s").is_err());
    }
}
