//! Every form of sentence parses into the rule it reads as.

use super::fixture::{ms, s};
use crate::defense::breaker::State;
use crate::defense::fallback::FallbackKind;
use crate::experiment::expect::ast::{
    Anchor, Bound, CountBound, Event, LatencyStat, Metric, Name, Op, PathGlob, Rule, Value, Wait,
    Window,
};
use crate::experiment::expect::parse;

fn rule(sentence: &str) -> Rule {
    parse(sentence)
        .unwrap_or_else(|e| panic!("{sentence}: {e}"))
        .rule
}

/// `text` as a name at its (first) column in `sentence`.
fn name(sentence: &str, text: &str) -> Name {
    let column = sentence[..sentence.find(text).expect("in sentence")]
        .chars()
        .count()
        + 1;
    Name {
        text: text.into(),
        column,
    }
}

#[test]
fn the_spec_examples_parse_as_written() {
    for sentence in [
        "breaker inventory goes closed -> open -> half_open -> closed",
        "breaker inventory opens within 3s of inventory-down.start",
        "calls to /inventory/* while inventory is open == 0",
        "route B success during inventory-down >= 99%",
        "route A fallback while inventory is open >= 99%",
    ] {
        let parsed = parse(sentence).unwrap_or_else(|e| panic!("{sentence}: {e}"));
        assert_eq!(parsed.text, sentence);
    }
}

#[test]
fn exact_sequence_lists_the_states_from_closed() {
    let text = "breaker inventory goes closed -> open -> half_open -> closed";
    assert_eq!(
        rule(text),
        Rule::Sequence {
            breaker: name(text, "inventory"),
            states: vec![State::Closed, State::Open, State::HalfOpen, State::Closed],
            exact: true,
        }
    );
}

#[test]
fn unicode_arrows_and_missing_spaces_read_like_ascii_arrows() {
    assert_eq!(
        rule("breaker inventory goes closed → open → closed"),
        rule("breaker inventory goes closed->open -> closed")
    );
}

#[test]
fn goes_through_is_a_subsequence_that_may_start_anywhere() {
    let text = "breaker inventory goes through open -> closed";
    assert_eq!(
        rule(text),
        Rule::Sequence {
            breaker: name(text, "inventory"),
            states: vec![State::Open, State::Closed],
            exact: false,
        }
    );
}

#[test]
fn timing_anchors_read_fault_start_end_name_and_absolute_time() {
    let cases = [
        ("inventory-down.start", "start"),
        ("fault inventory-down", "start"),
        ("inventory-down", "start"),
        ("inventory-down.end", "end"),
        ("fault inventory-down.end", "end"),
    ];
    for (anchor, edge) in cases {
        let text = format!("breaker inventory opens within 3s of {anchor}");
        let fault = name(&text, "inventory-down");
        let want = if edge == "start" {
            Anchor::FaultStart(fault)
        } else {
            Anchor::FaultEnd(fault)
        };
        assert_eq!(
            rule(&text),
            Rule::Reaches {
                breaker: name(&text, "inventory"),
                event: Event::Opens,
                within: s(3.0),
                anchor: want,
            },
            "{text}"
        );
    }
    let Rule::Reaches { anchor, .. } = rule("breaker inventory closes within 500ms of 10s") else {
        panic!("not a timing");
    };
    assert_eq!(anchor, Anchor::At(s(10.0)));
}

#[test]
fn wait_in_open_with_plus_minus_sign_or_ascii_plus_minus() {
    let want = |text: &str| Rule::WaitInOpen {
        breaker: name(text, "inventory"),
        wait: Wait::Configured,
        tolerance: ms(500),
    };
    let a = "breaker inventory half_opens within wait_in_open ± 500ms after opening";
    let b = "breaker inventory half_opens within wait_in_open +- 500ms after opening";
    assert_eq!(rule(a), want(a));
    assert_eq!(rule(b), want(b));
    let Rule::WaitInOpen { wait, .. } =
        rule("breaker inventory half_opens within 5s ± 1s after opening")
    else {
        panic!("not a wait");
    };
    assert_eq!(wait, Wait::Fixed(s(5.0)));
}

#[test]
fn counts_and_absence_are_bounds_on_transitions() {
    let cases = [
        ("opens at most 2 times", CountBound::AtMost(2)),
        ("opens at least 1 time", CountBound::AtLeast(1)),
        ("opens exactly 1 time", CountBound::Exactly(1)),
        ("never opens", CountBound::AtMost(0)),
    ];
    for (tail, bound) in cases {
        let text = format!("breaker inventory {tail}");
        assert_eq!(
            rule(&text),
            Rule::Count {
                breaker: name(&text, "inventory"),
                event: Event::Opens,
                bound,
                window: Window::Run,
            },
            "{text}"
        );
    }
    let text = "breaker inventory never opens during bad-requests";
    let Rule::Count { window, .. } = rule(text) else {
        panic!("not a count");
    };
    assert_eq!(window, Window::During(name(text, "bad-requests")));
}

#[test]
fn stays_takes_a_state_and_an_optional_window() {
    let text = "breaker inventory stays closed";
    assert_eq!(
        rule(text),
        Rule::Stays {
            breaker: name(text, "inventory"),
            state: State::Closed,
            window: Window::Run,
        }
    );
    let Rule::Stays { window, state, .. } =
        rule("breaker inventory stays open between 12s and 14s")
    else {
        panic!("not stays");
    };
    assert_eq!(
        (state, window),
        (State::Open, Window::Between(s(12.0), s(14.0)))
    );
}

#[test]
fn calls_to_a_glob_while_a_breaker_is_in_a_state() {
    let text = "calls to /inventory/* while inventory is half_open <= 3";
    assert_eq!(
        rule(text),
        Rule::Calls {
            glob: PathGlob::new("/inventory/*").unwrap(),
            instance: None,
            window: Window::While {
                breaker: Name {
                    text: "inventory".into(),
                    column: text.find("while").unwrap() + 7,
                },
                state: State::HalfOpen,
            },
            bound: Bound::Cmp(Op::Le, Value::Count(3)),
        }
    );
    assert_eq!(
        rule("calls to /inventory/* while inventory is open==0"),
        rule("calls to /inventory/* while inventory is open == 0")
    );
}

#[test]
fn every_route_metric_reads_with_its_value_kind() {
    let cases = [
        ("success >= 99%", Metric::Success, Value::Percent(99.0)),
        (
            "fallback >= 99.5%",
            Metric::Fallback(None),
            Value::Percent(99.5),
        ),
        (
            "fallback stale >= 90%",
            Metric::Fallback(Some(FallbackKind::Stale)),
            Value::Percent(90.0),
        ),
        (
            "fallback static >= 90%",
            Metric::Fallback(Some(FallbackKind::Static)),
            Value::Percent(90.0),
        ),
        (
            "fallback backup >= 90%",
            Metric::Fallback(Some(FallbackKind::Backup)),
            Value::Percent(90.0),
        ),
        ("rejected <= 1%", Metric::Rejected, Value::Percent(1.0)),
        ("errors <= 0%", Metric::Errors, Value::Percent(0.0)),
        ("timeouts <= 150", Metric::Timeouts, Value::Count(150)),
        ("requests >= 100", Metric::Requests, Value::Count(100)),
        (
            "p50 <= 60ms",
            Metric::Latency(LatencyStat::Percentile(50.0)),
            Value::Duration(ms(60)),
        ),
        (
            "p99 latency <= 5ms",
            Metric::Latency(LatencyStat::Percentile(99.0)),
            Value::Duration(ms(5)),
        ),
        (
            "p99.9 <= 1s",
            Metric::Latency(LatencyStat::Percentile(99.9)),
            Value::Duration(s(1.0)),
        ),
        (
            "max latency < 2s",
            Metric::Latency(LatencyStat::Max),
            Value::Duration(s(2.0)),
        ),
        (
            "amplification <= 2.5",
            Metric::Amplification,
            Value::Number(2.5),
        ),
        (
            "grpc UNAVAILABLE >= 90%",
            Metric::Grpc(14),
            Value::Percent(90.0),
        ),
        (
            "grpc deadline_exceeded <= 1%",
            Metric::Grpc(4),
            Value::Percent(1.0),
        ),
        ("grpc OK == 100%", Metric::Grpc(0), Value::Percent(100.0)),
        ("grpc 8 < 5%", Metric::Grpc(8), Value::Percent(5.0)),
    ];
    for (tail, metric, value) in cases {
        let text = format!("route A {tail}");
        let Rule::Route {
            metric: got,
            bound,
            window,
            ..
        } = rule(&text)
        else {
            panic!("not a route: {text}");
        };
        assert_eq!(got, metric, "{text}");
        assert_eq!(window, Window::Run, "{text}");
        let Bound::Cmp(_, v) = bound else {
            panic!("not a comparison: {text}");
        };
        assert_eq!(v, value, "{text}");
    }
}

#[test]
fn route_windows_and_relative_tolerance() {
    let text = "route A timeouts during inventory-down within 5% of 600";
    assert_eq!(
        rule(text),
        Rule::Route {
            route: name(text, "A"),
            metric: Metric::Timeouts,
            window: Window::During(name(text, "inventory-down")),
            bound: Bound::Within {
                tolerance: 5.0,
                of: Value::Count(600),
            },
        }
    );
    let windows = [
        ("between 10s and 40s", Window::Between(s(10.0), s(40.0))),
        (
            "in phase recovery",
            Window::Phase(name("route A success in phase recovery", "recovery")),
        ),
    ];
    for (words, want) in windows {
        let Rule::Route { window, .. } = rule(&format!("route A success {words} >= 99%")) else {
            panic!("not a route");
        };
        assert_eq!(window, want);
    }
    let Rule::Route { bound, .. } = rule("route A success ≥ 99%") else {
        panic!("not a route");
    };
    assert_eq!(bound, Bound::Cmp(Op::Ge, Value::Percent(99.0)));
}

#[test]
fn surrounding_whitespace_is_not_part_of_the_sentence() {
    assert_eq!(
        parse("  breaker inventory stays closed \n").unwrap().text,
        "breaker inventory stays closed"
    );
}
