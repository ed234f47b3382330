//! Splits a sentence into tokens with their 1-based columns: words, `->`
//! (or `→`), `±` (or `+-`) and comparison operators, which need no spaces
//! around them (`closed->open`, `==0`).

use crate::experiment::expect::ast::Op;

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Anything else: a keyword, a name, a number, a glob.
    Word,
    /// `->` or `→`.
    Arrow,
    /// `±` or `+-`.
    PlusMinus,
    /// A comparison operator.
    Op(Op),
}

/// One token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token {
    /// What it is.
    pub(crate) kind: Kind,
    /// The text as written.
    pub(crate) text: String,
    /// 1-based column (in characters) of its first character.
    pub(crate) column: usize,
}

/// The symbols recognised inside or between words, longest first.
const SYMBOLS: [(&str, Kind); 11] = [
    ("->", Kind::Arrow),
    ("→", Kind::Arrow),
    ("+-", Kind::PlusMinus),
    ("±", Kind::PlusMinus),
    (">=", Kind::Op(Op::Ge)),
    ("≥", Kind::Op(Op::Ge)),
    ("<=", Kind::Op(Op::Le)),
    ("≤", Kind::Op(Op::Le)),
    ("==", Kind::Op(Op::Eq)),
    (">", Kind::Op(Op::Gt)),
    ("<", Kind::Op(Op::Lt)),
];

/// The symbol starting `rest`, if one does.
fn symbol_at(rest: &str) -> Option<(&'static str, Kind)> {
    SYMBOLS.into_iter().find(|(s, _)| rest.starts_with(s))
}

/// The tokens of `sentence`.
pub(crate) fn tokens(sentence: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut word: Option<Token> = None;
    let mut chars = sentence.char_indices().peekable();
    let mut column = 0;
    while let Some((at, c)) = chars.next() {
        column += 1;
        let rest = &sentence[at..];
        if c.is_whitespace() {
            out.extend(word.take());
            continue;
        }
        if let Some((symbol, kind)) = symbol_at(rest) {
            out.extend(word.take());
            out.push(Token {
                kind,
                text: symbol.to_string(),
                column,
            });
            for _ in 1..symbol.chars().count() {
                chars.next();
                column += 1;
            }
            continue;
        }
        word.get_or_insert_with(|| Token {
            kind: Kind::Word,
            text: String::new(),
            column,
        })
        .text
        .push(c);
    }
    out.extend(word);
    out
}
