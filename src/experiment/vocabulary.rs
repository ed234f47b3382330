//! The words every view of a run counts requests with — the live panel,
//! the heartbeat lines, the summary, the sweep table, report.html — each
//! defined once, here, so "success" means the same thing wherever it is
//! printed. The README's legend is checked against [`TERMS`].
//!
//! Two questions are counted, and a request is counted by both:
//!
//! * what the caller got: [`SUCCESS`] or [`ERRORS`] (they add up to the
//!   requests), and of the successes, how many a [`FALLBACK`] answered;
//! * what the defense line did on the way: [`REJECTED`], [`TIMEOUTS`].
//!
//! So "success 100 %" beside "rejected 40.8 %" and "timeouts 15" reads:
//! every caller got a good answer; 40.8 % of them were turned away before
//! the dependency and 15 timed out, and a fallback answered each of those.

/// A word and what it counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Term {
    /// The word, as every view prints it.
    pub word: &'static str,
    /// What it counts, one sentence.
    pub meaning: &'static str,
}

/// Requests the load sent (those shed by the in-flight cap included).
pub const REQUESTS: Term = Term {
    word: "requests",
    meaning: "requests the load sent, those shed by the in-flight cap included",
};

/// What the caller got: a success.
pub const SUCCESS: Term = Term {
    word: "success",
    meaning: "the caller got a success status (2xx or 3xx, or the route's own `success` list), \
              answers by a fallback included",
};

/// What the caller got: a fallback's answer.
pub const FALLBACK: Term = Term {
    word: "fallback",
    meaning: "a fallback answered instead of the dependency (stale cache, static, backup, \
              fallback service); each is a success too",
};

/// What the caller got: no success.
pub const ERRORS: Term = Term {
    word: "errors",
    meaning: "the caller got no success: an error status, a connection error, a timeout, or \
              shed; success + errors = requests",
};

/// What the defense line did: turned the request away.
pub const REJECTED: Term = Term {
    word: "rejected",
    meaning: "the defense line turned it away before the dependency (breaker open, bulkhead \
              full, rate limit); with a fallback it is a success as well",
};

/// What the defense line or the caller did: gave up waiting.
pub const TIMEOUTS: Term = Term {
    word: "timeouts",
    meaning: "it timed out at the caller or in the defense line; with a fallback it is a \
              success as well",
};

/// Every word, in the order the views print them.
pub const TERMS: [Term; 6] = [REQUESTS, SUCCESS, FALLBACK, ERRORS, REJECTED, TIMEOUTS];

/// The legend as Markdown list items, one line per word: what the
/// README's legend section holds.
pub fn legend_markdown() -> String {
    TERMS
        .iter()
        .map(|t| format!("* **{}**: {}.\n", t.word, t.meaning))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_is_defined_once_and_each_meaning_is_a_sentence_without_a_final_stop() {
        let mut words: Vec<&str> = TERMS.iter().map(|t| t.word).collect();
        words.sort_unstable();
        words.dedup();
        assert_eq!(words.len(), TERMS.len(), "a word defined twice");
        for t in TERMS {
            assert!(!t.meaning.ends_with('.'), "{}", t.word);
            assert!(!t.meaning.contains("  "), "{}: {:?}", t.word, t.meaning);
        }
    }

    #[test]
    fn the_legend_has_one_line_per_word_in_order() {
        let legend = legend_markdown();
        let lines: Vec<&str> = legend.lines().collect();
        assert_eq!(lines.len(), TERMS.len());
        assert!(lines[1].starts_with("* **success**: the caller got a success status"));
        assert!(lines[3].contains("success + errors = requests"));
    }
}
