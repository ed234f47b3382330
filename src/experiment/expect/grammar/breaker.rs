//! The sentences about one breaker: `goes` (sequences), `opens within`
//! (timing and the wait in open), counts, `never`, `stays`.

use super::cursor::Parser;
use super::error::ParseError;
use super::lex::Kind;
use super::terms::anchor;
use crate::defense::breaker::State;
use crate::experiment::expect::ast::{CountBound, Event, Measure, Name, Rule, Wait};

/// After `breaker`: `NAME goes ...`, `NAME EVENT ...`, `NAME never ...`,
/// `NAME stays ...`.
pub(crate) fn breaker(p: &mut Parser) -> Result<Rule, ParseError> {
    let breaker = p.name("a breaker name")?;
    if p.eat("goes") {
        return sequence(p, breaker);
    }
    if p.eat("never") {
        let event = event(p)?;
        let window = super::terms::window(p)?;
        return Ok(Rule::Count {
            breaker,
            event,
            bound: CountBound::AtMost(0),
            window,
        });
    }
    if p.eat("stays") {
        let state = p.state()?;
        let window = super::terms::window(p)?;
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
        let anchor = if p.eat("after") {
            Some(anchor(p)?)
        } else {
            None
        };
        if anchor.is_some() || super::regress::starts(p) {
            let measure = Measure::Transition {
                breaker,
                event,
                anchor,
            };
            return super::regress::regress(p, measure);
        }
        if let Some(bound) = count_bound(p)? {
            let window = super::terms::window(p)?;
            return Ok(Rule::Count {
                breaker,
                event,
                bound,
                window,
            });
        }
        return Err(p.error(
            "'within', 'at most', 'at least', 'exactly', 'after' or 'no' (later than ...)",
            &["within", "at", "exactly", "after", "no"],
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
