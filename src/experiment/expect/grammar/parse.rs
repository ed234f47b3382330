//! The parser: a cursor over the tokens with error helpers, and the three
//! kinds of sentence (`breaker ...`, `calls to ...`, `route ...`).

use super::clause::WINDOW_WORDS;
use super::lex::{Kind, Token, tokens};
use super::{ParseError, closest};
use crate::clock::Duration;
use crate::defense::breaker::State;
use crate::experiment::expect::ast::{
    Anchor, CountBound, Event, Expectation, Name, PathGlob, Rule, ValueKind, Wait, Window,
};
use crate::schema::units::Dur;

/// Parses one sentence of an experiment's `expect:` list.
pub fn parse(sentence: &str) -> Result<Expectation, ParseError> {
    let text = sentence.trim();
    let mut p = Parser::new(text);
    let rule = match p.peek_word() {
        Some("breaker") => {
            p.advance();
            breaker(&mut p)?
        }
        Some("calls") => {
            p.advance();
            calls(&mut p)?
        }
        Some("route") => {
            p.advance();
            super::clause::route(&mut p)?
        }
        _ => {
            return Err(p.error(
                "'breaker', 'calls' or 'route'",
                &["breaker", "calls", "route"],
            ));
        }
    };
    let window_may_follow = matches!(
        rule,
        Rule::Count {
            window: Window::Run,
            ..
        } | Rule::Stays {
            window: Window::Run,
            ..
        }
    );
    p.finish(window_may_follow)?;
    Ok(Expectation {
        text: text.to_string(),
        rule,
    })
}

/// The state names, in the order error messages list them.
const STATES: [&str; 5] = ["closed", "open", "half_open", "forced_open", "disabled"];

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
    fn new(text: &str) -> Parser {
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

    /// The end of the sentence (or a window, when one could still come).
    fn finish(&self, window_may_follow: bool) -> Result<(), ParseError> {
        match self.peek() {
            None => Ok(()),
            Some(_) if window_may_follow => Err(self.error(
                "a window (during, while, between, in phase) or the end of the sentence",
                &WINDOW_WORDS,
            )),
            Some(_) => Err(self.error("the end of the sentence", &[])),
        }
    }
}

/// After `breaker`: `NAME goes ...`, `NAME EVENT ...`, `NAME never ...`,
/// `NAME stays ...`.
fn breaker(p: &mut Parser) -> Result<Rule, ParseError> {
    let breaker = p.name("a breaker name")?;
    if p.eat("goes") {
        return sequence(p, breaker);
    }
    if p.eat("never") {
        let event = event(p)?;
        let window = super::clause::window(p)?;
        return Ok(Rule::Count {
            breaker,
            event,
            bound: CountBound::AtMost(0),
            window,
        });
    }
    if p.eat("stays") {
        let state = p.state()?;
        let window = super::clause::window(p)?;
        return Ok(Rule::Stays {
            breaker,
            state,
            window,
        });
    }
    if p.peek_word().is_some_and(|w| event_word(w).is_some()) {
        let event = event(p)?;
        if p.eat("within") {
            return timing(p, breaker, event);
        }
        if let Some(bound) = count_bound(p)? {
            let window = super::clause::window(p)?;
            return Ok(Rule::Count {
                breaker,
                event,
                bound,
                window,
            });
        }
        return Err(p.error(
            "'within', 'at most', 'at least' or 'exactly'",
            &["within", "at", "exactly"],
        ));
    }
    Err(p.error(
        "'goes', 'opens', 'closes', 'half_opens', 'never' or 'stays'",
        &["goes", "opens", "closes", "half_opens", "never", "stays"],
    ))
}

/// After `goes`: `[through] STATE (-> STATE)*`.
fn sequence(p: &mut Parser, breaker: Name) -> Result<Rule, ParseError> {
    let exact = !p.eat("through");
    let first_column = p.peek().map(|t| t.column);
    let mut states = vec![p.state()?];
    while p.eat_kind(Kind::Arrow) {
        states.push(p.state()?);
    }
    if exact && states[0] != State::Closed {
        return Err(ParseError {
            column: first_column.unwrap_or(1),
            message: format!(
                "an exact sequence starts at closed (every breaker starts closed), found \"{}\"; \
                 write 'goes through' to match a part of the sequence",
                states[0]
            ),
        });
    }
    Ok(Rule::Sequence {
        breaker,
        states,
        exact,
    })
}

/// The event a verb names.
fn event_word(word: &str) -> Option<Event> {
    match word {
        "opens" => Some(Event::Opens),
        "closes" => Some(Event::Closes),
        "half_opens" | "half-opens" => Some(Event::HalfOpens),
        _ => None,
    }
}

/// `opens`, `closes` or `half_opens`.
fn event(p: &mut Parser) -> Result<Event, ParseError> {
    match p.peek_word().and_then(event_word) {
        Some(event) => {
            p.advance();
            Ok(event)
        }
        None => Err(p.error(
            "'opens', 'closes' or 'half_opens'",
            &["opens", "closes", "half_opens"],
        )),
    }
}

/// `at most N times`, `at least N times`, `exactly N times`; `None` when
/// the next word starts none of them.
fn count_bound(p: &mut Parser) -> Result<Option<CountBound>, ParseError> {
    let make: fn(u32) -> CountBound = if p.eat("at") {
        if p.eat("most") {
            CountBound::AtMost
        } else if p.eat("least") {
            CountBound::AtLeast
        } else {
            return Err(p.error("'most' or 'least'", &["most", "least"]));
        }
    } else if p.eat("exactly") {
        CountBound::Exactly
    } else {
        return Ok(None);
    };
    let n = match p.peek_word().map(str::parse::<u32>) {
        Some(Ok(n)) => n,
        _ => return Err(p.error("a whole number of times such as \"2\"", &[])),
    };
    p.advance();
    if !(p.eat("times") || p.eat("time")) {
        return Err(p.error("'times'", &["times", "time"]));
    }
    Ok(Some(make(n)))
}

/// After `within`: `DUR of ANCHOR`, or (half_opens only) `wait_in_open ±
/// DUR after opening` / `DUR ± DUR after opening`.
fn timing(p: &mut Parser, breaker: Name, event: Event) -> Result<Rule, ParseError> {
    let (wait, within) = if p.eat("wait_in_open") {
        (Some(Wait::Configured), None)
    } else {
        let d = p.duration()?;
        (None, Some(d))
    };
    if wait.is_some() || p.peek().is_some_and(|t| t.kind == Kind::PlusMinus) {
        if event != Event::HalfOpens {
            return Err(p.error_at_previous(format!(
                "a wait give or take a tolerance applies to 'half_opens', not '{}'",
                event.verb()
            )));
        }
        if !p.eat_kind(Kind::PlusMinus) {
            return Err(p.error("'±' (or '+-') and a tolerance", &[]));
        }
        let tolerance = p.duration()?;
        p.keyword("after")?;
        p.keyword("opening")?;
        return Ok(Rule::WaitInOpen {
            breaker,
            wait: wait.unwrap_or(Wait::Fixed(within.unwrap_or_default())),
            tolerance,
        });
    }
    p.keyword("of")?;
    let anchor = anchor(p)?;
    Ok(Rule::Reaches {
        breaker,
        event,
        within: within.unwrap_or_default(),
        anchor,
    })
}

/// After `of`: `FAULT.start`, `FAULT.end`, `fault FAULT` (its start), a
/// bare fault name (its start) or a time such as `10s`.
fn anchor(p: &mut Parser) -> Result<Anchor, ParseError> {
    let explicit_fault = p.eat("fault");
    let starts_with_digit = p
        .peek_word()
        .is_some_and(|w| w.starts_with(|c: char| c.is_ascii_digit()));
    if !explicit_fault && starts_with_digit {
        return p.duration().map(Anchor::At);
    }
    let what = if explicit_fault {
        "a fault name"
    } else {
        "a fault (\"FAULT.start\", \"FAULT.end\", \"fault FAULT\") or a time such as \"10s\""
    };
    let name = p.name(what)?;
    let split = |suffix: &str| {
        name.text
            .strip_suffix(suffix)
            .filter(|n| !n.is_empty())
            .map(|n| Name {
                text: n.to_string(),
                column: name.column,
            })
    };
    Ok(if let Some(fault) = split(".end") {
        Anchor::FaultEnd(fault)
    } else if let Some(fault) = split(".start") {
        Anchor::FaultStart(fault)
    } else {
        Anchor::FaultStart(name)
    })
}

/// After `calls`: `to GLOB [WINDOW] BOUND`.
fn calls(p: &mut Parser) -> Result<Rule, ParseError> {
    p.keyword("to")?;
    let glob = match p.peek_word() {
        Some(word) => PathGlob::new(word).map_err(|message| ParseError {
            column: p.peek().map_or(1, |t| t.column),
            message,
        })?,
        None => return Err(p.error("a path glob such as \"/inventory/*\"", &[])),
    };
    p.advance();
    let window = super::clause::window(p)?;
    let bound = super::clause::bound(p, ValueKind::Count, window == Window::Run)?;
    Ok(Rule::Calls {
        glob,
        window,
        bound,
    })
}
