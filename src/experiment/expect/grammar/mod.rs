//! The expectation language: a lexer, a recursive-descent parser over its
//! tokens, and errors that say what was expected, where, and which word was
//! probably meant.
//!
//! * `lex` — tokens with columns.
//! * `parse` — the cursor over tokens, its error helpers, the entry point.
//! * `breaker` — the sentences about one breaker.
//! * `clause` — windows, bounds, values, and the `calls to` and `route`
//!   sentences.
//! * `pool` — the sentences about a pool and its servers.

pub(crate) mod breaker;
pub(crate) mod clause;
pub(crate) mod lex;
pub(crate) mod parse;
pub(crate) mod pool;

use std::fmt;

pub use parse::parse;

/// Why a sentence is not an expectation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ParseError {
    /// 1-based column (in characters) in the sentence of the token at
    /// fault; one past the end when the sentence stops too early.
    pub column: usize,
    /// What was expected and what was found.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column {}: {}", self.column, self.message)
    }
}

/// The candidate closest to `word` when it is plausibly a typo of it: at
/// most one edit per three characters (one edit at least, two at most),
/// and not a rewrite of the whole word unless the candidate contains it
/// (`=` → `==`, but not `C` → `A`).
pub(crate) fn closest<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let len = word.chars().count();
    let limit = (len / 3).clamp(1, 2);
    // On a tie the first candidate wins: callers list the likeliest first.
    let (distance, best) = candidates
        .into_iter()
        .map(|c| (strsim::damerau_levenshtein(word, c), c))
        .min_by_key(|(d, _)| *d)?;
    let plausible = distance < len || best.contains(word);
    (distance > 0 && distance <= limit && plausible).then_some(best)
}
