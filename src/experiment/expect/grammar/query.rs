//! The sentence about a PromQL query: `query NAME AGG [WINDOW] BOUND`,
//! AGG one of `max`, `min`, `avg`, `last`, `at every step`; the window any
//! sentence takes or `before the first fault`.

use super::cursor::Parser;
use super::error::ParseError;
use super::terms::{bound, window};
use crate::experiment::expect::ast::{Rule, ValueKind, Window};
use crate::experiment::expect::query::{Aggregate, QueryRule, QueryWindow};

/// After `query`.
pub(crate) fn query(p: &mut Parser) -> Result<Rule, ParseError> {
    let query = p.name("a query name (one of `queries:`)")?;
    let Some(aggregate) = p.peek_word().and_then(Aggregate::from_word) else {
        return Err(p.error(
            "how the window's samples are summed up: 'max', 'min', 'avg', 'last' or 'at every step'",
            &Aggregate::WORDS,
        ));
    };
    p.advance();
    if aggregate == Aggregate::EveryStep {
        p.keyword("every")?;
        p.keyword("step")?;
    }
    let window = if p.eat("before") {
        p.keyword("the")?;
        p.keyword("first")?;
        p.keyword("fault")?;
        QueryWindow::BeforeFirstFault
    } else {
        QueryWindow::Drill(window(p)?)
    };
    let open = matches!(window, QueryWindow::Drill(Window::Run));
    let bound = bound(p, ValueKind::Quantity, open)?;
    Ok(Rule::Query(QueryRule {
        query,
        aggregate,
        window,
        bound,
    }))
}
