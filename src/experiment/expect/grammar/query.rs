//! The sentence about a PromQL query: `query NAME AGG [WINDOW] BOUND`,
//! AGG one of `max`, `min`, `avg`, `last`, `at every step`; the window any
//! sentence takes or `before the first fault`. In place of the bound, a
//! regression comparison (`no more than the last passing run + 20%`).

use super::cursor::Parser;
use super::error::ParseError;
use super::terms::{bound, window};
use crate::experiment::expect::ast::Measure;
use crate::experiment::expect::ast::{Rule, ValueKind, Window};
use crate::experiment::expect::query::{Aggregate, QueryMeasure, QueryRule, QueryWindow};

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
    let measure = QueryMeasure {
        query,
        aggregate,
        window,
    };
    if super::regress::starts(p) {
        if aggregate == Aggregate::EveryStep {
            return Err(p.error(
                "a bound such as \"<= 300ms\": a regression figure is one number, so its samples are summed up with 'max', 'min', 'avg' or 'last', not 'at every step'",
                &["<=", ">="],
            ));
        }
        return super::regress::regress(p, Measure::Query(measure));
    }
    let open = matches!(measure.window, QueryWindow::Drill(Window::Run));
    let bound = bound(p, ValueKind::Quantity, open)?;
    Ok(Rule::Query(QueryRule { measure, bound }))
}

#[cfg(test)]
mod tests {
    use crate::experiment::expect::ast::{Bound, Op, Rule, Value};
    use crate::experiment::expect::parse;
    use crate::experiment::expect::query::{Aggregate, QueryRule, QueryWindow};

    fn rule(sentence: &str) -> QueryRule {
        match parse(sentence).unwrap().rule {
            Rule::Query(q) => q,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn every_aggregate_and_the_steady_state_window_parse() {
        let q = rule("query p99 at every step before the first fault <= 300ms");
        assert_eq!(q.measure.aggregate, Aggregate::EveryStep);
        assert_eq!(q.measure.window, QueryWindow::BeforeFirstFault);
        for word in ["max", "min", "avg", "last"] {
            let q = rule(&format!("query p99 {word} while inventory is open > 2"));
            assert_eq!(q.measure.aggregate.words(), word);
        }
    }

    #[test]
    fn bounds_are_read_in_prometheus_units_seconds_ratios_numbers() {
        let scaled = |s: &str| rule(s).prometheus_bound();
        assert_eq!(
            scaled("query q max <= 300ms"),
            Bound::Cmp(Op::Le, Value::Number(0.3))
        );
        assert_eq!(
            scaled("query q min during f >= 99.5%"),
            Bound::Cmp(Op::Ge, Value::Number(0.995))
        );
        assert_eq!(
            scaled("query q last < -1.5"),
            Bound::Cmp(Op::Lt, Value::Number(-1.5))
        );
    }

    #[test]
    fn a_missing_aggregate_is_located_with_the_closest_word() {
        let e = parse("query p99 mx <= 300ms").unwrap_err();
        assert_eq!(e.column, 11);
        assert!(e.message.contains("(did you mean \"max\"?)"), "{e}");
        let e = parse("query p99 max before the last fault <= 1").unwrap_err();
        assert!(e.message.contains("'first'"), "{e}");
    }
}
