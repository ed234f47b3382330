//! The figures a verdict shows against its bound: a failing figure's text
//! never reads back as a figure that would pass (nor a passing one's as one
//! that would fail), and one exactly on a `>=`/`<=` bound says so.

use proptest::prelude::*;

use crate::clock::Duration;
use crate::experiment::expect::ast::{Bound, Op, Value};
use crate::experiment::expect::verdict::{latency_against, percent_against, ratio_against};

fn ge(p: f64) -> Bound {
    Bound::Cmp(Op::Ge, Value::Percent(p))
}

/// The number in a figure's text (`exactly `, the unit and `%` dropped).
fn read_back(text: &str) -> f64 {
    text.trim_start_matches("exactly ")
        .trim_end_matches(|c: char| c.is_ascii_alphabetic() || c == '%')
        .parse()
        .unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn ninety_six_of_ninety_seven_against_99_percent_shows_98_97_not_99_0() {
    let value = 96.0 * 100.0 / 97.0;
    assert_eq!(percent_against(value, ge(99.0)), "98.97%");
}

#[test]
fn a_figure_that_one_decimal_already_decides_keeps_one_decimal() {
    assert_eq!(percent_against(61.25, ge(99.0)), "61.2%");
    assert_eq!(percent_against(100.0, ge(99.0)), "100.0%");
    assert_eq!(
        percent_against(0.0, Bound::Cmp(Op::Eq, Value::Percent(0.0))),
        "0.0%"
    );
}

#[test]
fn a_failing_figure_just_above_an_upper_bound_shows_the_excess() {
    let le = Bound::Cmp(Op::Le, Value::Percent(5.0));
    assert_eq!(percent_against(5.004, le), "5.004%");
    let lt = Bound::Cmp(Op::Lt, Value::Percent(5.0));
    assert_eq!(percent_against(5.0, lt), "5.0%");
}

#[test]
fn a_passing_figure_just_above_a_strict_bound_is_not_shown_on_it() {
    let gt = Bound::Cmp(Op::Gt, Value::Percent(50.0));
    assert_eq!(percent_against(50.01, gt), "50.01%");
}

#[test]
fn a_passing_figure_exactly_on_its_bound_says_exactly() {
    assert_eq!(percent_against(99.0, ge(99.0)), "exactly 99.0%");
    let le = Bound::Cmp(Op::Le, Value::Number(1.5));
    assert_eq!(ratio_against(1.5, le), "exactly 1.5");
    // `==` holds only on the bound: nothing to add.
    assert_eq!(
        ratio_against(3.0, Bound::Cmp(Op::Eq, Value::Number(3.0))),
        "3"
    );
}

#[test]
fn ratios_and_latencies_show_the_digits_that_decide_too() {
    let le = Bound::Cmp(Op::Le, Value::Number(1.5));
    assert_eq!(ratio_against(1.5049, le), "1.505");
    assert_eq!(ratio_against(1.25, le), "1.25");
    let p99 = Bound::Cmp(Op::Le, Value::Duration(Duration::from_millis(5)));
    assert_eq!(
        latency_against(
            Duration::from_micros(5_000) + Duration::from_nanos(400),
            p99
        ),
        "5.0004ms"
    );
    assert_eq!(latency_against(Duration::from_micros(3_200), p99), "3.2ms");
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        Just(Op::Ge),
        Just(Op::Le),
        Just(Op::Eq),
        Just(Op::Gt),
        Just(Op::Lt)
    ]
}

proptest! {
    #[test]
    fn a_shares_text_is_judged_as_the_share_itself(
        k in 0u64..100_000,
        extra in 0u64..100_000,
        op in op(),
        bound_tenths in 0u32..=1000,
        on_the_rounding in proptest::bool::ANY,
    ) {
        let n = k + extra.max(1);
        let value = k as f64 * 100.0 / n as f64;
        // Half the time the bound is the share rounded to one decimal, the
        // figure `99.0%` would hide.
        let bound = match on_the_rounding {
            true => (value * 10.0).round() / 10.0,
            false => f64::from(bound_tenths) / 10.0,
        };
        let bound = Bound::Cmp(op, Value::Percent(bound));
        let text = percent_against(value, bound);
        prop_assert_eq!(bound.holds(read_back(&text)), bound.holds(value), "{} against {:?}", text, bound);
        prop_assert!(!bound.holds(value) || text.ends_with('%'));
    }

    #[test]
    fn a_failing_figure_near_its_bound_never_reads_as_passing(
        bound in 0.0f64..100.0,
        offset in -1e-6f64..1e-6,
        op in op(),
        within in proptest::bool::ANY,
    ) {
        let value = bound + offset;
        let bound = if within {
            Bound::Within { tolerance: 1.0, of: Value::Percent(bound) }
        } else {
            Bound::Cmp(op, Value::Percent(bound))
        };
        let text = percent_against(value, bound);
        prop_assert_eq!(bound.holds(read_back(&text)), bound.holds(value), "{} against {:?}", text, bound);
    }
}
