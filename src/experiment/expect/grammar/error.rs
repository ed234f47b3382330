//! Why a sentence is not an expectation, and the word that was probably
//! meant.

use std::fmt;

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
