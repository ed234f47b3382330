//! The cursor over the tokens of one sentence, with the error helpers
//! every sentence uses.

use super::error::{ParseError, closest};
use super::lex::{Kind, Token, tokens};
use crate::clock::Duration;
use crate::defense::breaker::State;
use crate::experiment::expect::ast::Name;
use crate::schema::units::Dur;

/// The state names, in the order error messages list them.
pub(crate) const STATES: [&str; 5] = ["closed", "open", "half_open", "forced_open", "disabled"];

/// A cursor over the tokens of one sentence.
#[derive(Debug)]
pub(crate) struct Parser {
    /// The tokens.
    tokens: Vec<Token>,
    /// Index of the next token.
    pos: usize,
    /// The column one past the sentence's end, for "found the end".
    end_column: usize,
}

impl Parser {
    /// A cursor at the start of `text`.
    pub(crate) fn new(text: &str) -> Parser {
        Parser {
            tokens: tokens(text),
            pos: 0,
            end_column: text.chars().count() + 1,
        }
    }

    /// The next token, if any.
    pub(crate) fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    /// The next token's text when it is a word.
    pub(crate) fn peek_word(&self) -> Option<&str> {
        self.peek()
            .filter(|t| t.kind == Kind::Word)
            .map(|t| t.text.as_str())
    }

    /// The tokens read so far, joined by single spaces.
    pub(crate) fn text_so_far(&self) -> String {
        self.tokens[..self.pos.min(self.tokens.len())]
            .iter()
            .map(|t| t.text.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Moves past the next token and returns it.
    pub(crate) fn advance(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        token
    }

    /// Consumes the next token if it is the word `keyword`.
    pub(crate) fn eat(&mut self, keyword: &str) -> bool {
        let found = self.peek_word() == Some(keyword);
        if found {
            self.pos += 1;
        }
        found
    }

    /// Consumes the next token if it is of `kind`.
    pub(crate) fn eat_kind(&mut self, kind: Kind) -> bool {
        let found = self.peek().is_some_and(|t| t.kind == kind);
        if found {
            self.pos += 1;
        }
        found
    }

    /// An error at the next token: "expected WHAT after 'PREV', found
    /// "NEXT"", with the closest of `candidates` suggested.
    pub(crate) fn error(&self, what: &str, candidates: &[&str]) -> ParseError {
        let after = match self.pos.checked_sub(1).and_then(|i| self.tokens.get(i)) {
            Some(prev) => format!(" after '{}'", prev.text),
            None => " at the start".to_string(),
        };
        match self.peek() {
            Some(next) => {
                let hint = closest(&next.text, candidates.iter().copied())
                    .map(|c| format!(" (did you mean \"{c}\"?)"))
                    .unwrap_or_default();
                ParseError {
                    column: next.column,
                    message: format!("expected {what}{after}, found \"{}\"{hint}", next.text),
                }
            }
            None => ParseError {
                column: self.end_column,
                message: format!("expected {what}{after}, found the end of the sentence"),
            },
        }
    }

    /// An error about the token just consumed.
    pub(crate) fn error_at_previous(&self, message: String) -> ParseError {
        let column = self
            .pos
            .checked_sub(1)
            .and_then(|i| self.tokens.get(i))
            .map_or(self.end_column, |t| t.column);
        ParseError { column, message }
    }

    /// The word `keyword`, or an error.
    pub(crate) fn keyword(&mut self, keyword: &str) -> Result<(), ParseError> {
        if self.eat(keyword) {
            Ok(())
        } else {
            Err(self.error(&format!("'{keyword}'"), &[keyword]))
        }
    }

    /// Any word, taken as a name of `what`.
    pub(crate) fn name(&mut self, what: &str) -> Result<Name, ParseError> {
        match self.peek() {
            Some(t) if t.kind == Kind::Word => {
                let name = Name {
                    text: t.text.clone(),
                    column: t.column,
                };
                self.pos += 1;
                Ok(name)
            }
            _ => Err(self.error(what, &[])),
        }
    }

    /// A state name.
    pub(crate) fn state(&mut self) -> Result<State, ParseError> {
        let found = self
            .peek_word()
            .and_then(|w| State::ALL.into_iter().find(|s| s.as_str() == w));
        match found {
            Some(state) => {
                self.pos += 1;
                Ok(state)
            }
            None => Err(self.error(
                "a state (closed, open, half_open, forced_open, disabled)",
                &STATES,
            )),
        }
    }

    /// A duration such as `3s`.
    pub(crate) fn duration(&mut self) -> Result<Duration, ParseError> {
        match self.peek_word().map(str::parse::<Dur>) {
            Some(Ok(d)) => {
                self.pos += 1;
                Ok(d.get())
            }
            _ => Err(self.error("a duration such as \"3s\" or \"500ms\"", &[])),
        }
    }
}
