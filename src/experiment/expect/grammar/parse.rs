//! The parser's entry point: the first word says which sentence follows;
//! the sentence must end where it ends.

use super::cursor::Parser;
use super::error::ParseError;
use super::terms::WINDOW_WORDS;
use crate::experiment::expect::ast::{Expectation, Rule, Window};

/// Parses one sentence of an experiment's `expect:` list.
pub fn parse(sentence: &str) -> Result<Expectation, ParseError> {
    let text = sentence.trim();
    let mut p = Parser::new(text);
    let rule = match p.peek_word() {
        Some("breaker") => {
            p.advance();
            super::breaker::breaker(&mut p)?
        }
        Some("calls") => {
            p.advance();
            super::route::calls(&mut p)?
        }
        Some("route") => {
            p.advance();
            super::route::route(&mut p)?
        }
        Some("instance") => {
            p.advance();
            super::pool::instance(&mut p)?
        }
        Some("pool") => {
            p.advance();
            super::pool::pool(&mut p)?
        }
        Some("query") => {
            p.advance();
            super::query::query(&mut p)?
        }
        _ => {
            return Err(p.error(
                "'breaker', 'calls', 'route', 'instance', 'pool' or 'query'",
                &["breaker", "calls", "route", "instance", "pool", "query"],
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
        } | Rule::Pool(crate::experiment::expect::ast::PoolRule::NeverEjected {
            window: Window::Run,
            ..
        })
    );
    finish(&p, window_may_follow)?;
    Ok(Expectation {
        text: text.to_string(),
        rule,
    })
}

/// The end of the sentence (or a window, when one could still come).
fn finish(p: &Parser, window_may_follow: bool) -> Result<(), ParseError> {
    match p.peek() {
        None => Ok(()),
        Some(_) if window_may_follow => Err(p.error(
            "a window (during, while, between, in phase) or the end of the sentence",
            &WINDOW_WORDS,
        )),
        Some(_) => Err(p.error("the end of the sentence", &[])),
    }
}
