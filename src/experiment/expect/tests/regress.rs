//! Regression sentences: what they parse to, their errors, and their
//! verdicts against the past figures a history hands over: held, broken
//! (the run that regressed), too little history (said, and not failing
//! the run), no history at all (failing), and a breaker that never opened.

use super::fixture::{outage, req, run, s};
use crate::experiment::expect::ast::{
    Baseline, Direction, Margin, Measure, Metric, Regress, Rule, Stat,
};
use crate::experiment::expect::baseline::PastRun;
use crate::experiment::expect::regress::NO_HISTORY;
use crate::experiment::expect::{Verdict, evaluate, parse};
use crate::experiment::timeline::Timeline;

fn regress(sentence: &str) -> Regress {
    match parse(sentence)
        .unwrap_or_else(|e| panic!("{sentence}: {e}"))
        .rule
    {
        Rule::Regress(r) => r,
        other => panic!("{sentence}: parsed as {other:?}"),
    }
}

/// `values` (newest first) as the runs a history hands over: judged and
/// held, numbered so that the last is run #1.
fn held_runs(values: &[f64]) -> Vec<PastRun> {
    values
        .iter()
        .enumerate()
        .map(|(i, &value)| PastRun {
            run: (values.len() - i) as i64,
            value,
            seed: false,
        })
        .collect()
}

/// Judges `sentence` on `timeline` with `past` as the history's figures
/// (newest first), or with no history when `None`.
fn judge(sentence: &str, timeline: &Timeline, past: Option<&[f64]>) -> Verdict {
    let mut expectation = parse(sentence).unwrap_or_else(|e| panic!("{sentence}: {e}"));
    if let Rule::Regress(r) = &mut expectation.rule {
        r.past = past.map(held_runs);
    }
    evaluate(&expectation, timeline)
}

const OPENS: &str =
    "breaker inventory opens no later than the median of the last 3 passing runs + 500ms";

#[test]
fn a_breaker_sentence_parses_to_its_figure_baseline_margin_and_key() {
    let r = regress(OPENS);
    assert_eq!(r.key, "breaker inventory opens");
    assert_eq!(r.direction, Direction::AtMost);
    assert_eq!(
        r.baseline,
        Baseline::Of {
            stat: Stat::Median,
            runs: 3
        }
    );
    assert_eq!(r.margin, Some(Margin::Absolute(500.0)));
    assert!(matches!(
        r.measure,
        Measure::Transition { anchor: None, .. }
    ));
    let after = regress(
        "breaker inventory closes after inventory-down.end no earlier than the last passing run",
    );
    assert_eq!(
        after.key,
        "breaker inventory closes after inventory-down.end"
    );
    assert_eq!(after.direction, Direction::AtLeast);
    assert_eq!(after.baseline, Baseline::Last);
    assert_eq!(after.margin, None);
}

#[test]
fn a_route_sentence_knows_which_side_is_worse() {
    let p99 =
        regress("route shop p99 while inventory is open no worse than the last passing run + 20%");
    assert_eq!(p99.key, "route shop p99 while inventory is open");
    assert_eq!(p99.direction, Direction::AtMost);
    assert_eq!(p99.margin, Some(Margin::Relative(20.0)));
    assert!(matches!(
        p99.measure,
        Measure::Route {
            metric: Metric::Latency(_),
            ..
        }
    ));
    let success = regress("route shop success no worse than the mean of the last 5 passing runs");
    assert_eq!(success.direction, Direction::AtLeast);
    let less = regress("route shop requests no less than the min of the last 2 passing runs +3");
    assert_eq!(less.direction, Direction::AtLeast);
    assert_eq!(less.margin, Some(Margin::Absolute(3.0)));
}

#[test]
fn bad_regression_sentences_say_what_was_expected_where() {
    // (sentence, the text the error points at, what was expected)
    let cases = [
        (
            "route shop requests no worse than the last passing run",
            "worse",
            "'more' or 'less' (more requests is neither better nor worse)",
        ),
        (
            "breaker inventory opens no sooner than the last passing run",
            "sooner",
            "'later', 'earlier' or 'worse' (after 'no')",
        ),
        (
            "breaker inventory opens no later than the median of the last ten passing runs",
            "ten",
            "a number of runs from 1 to 1000, such as \"10\"",
        ),
        (
            "route shop success no worse than the last passing run + 2 points",
            "2 points",
            "a margin such as \"2%\" (of the baseline)",
        ),
        (
            "breaker inventory opens no later than the last passing runs",
            "runs",
            "'run'",
        ),
    ];
    for (sentence, at, expected) in cases {
        let err = parse(sentence).expect_err(sentence);
        let column = sentence[..sentence.find(at).unwrap()].chars().count() + 1;
        assert_eq!(err.column, column, "{sentence}: {err}");
        assert!(
            err.message.starts_with(&format!("expected {expected}")),
            "{sentence}: {}",
            err.message
        );
    }
}

#[test]
fn an_opening_within_the_median_plus_margin_holds_and_one_past_it_fails() {
    // The outage opens 0.4 s after inventory-down starts at 10 s.
    let held = judge(OPENS, &outage(), Some(&[300.0, 100.0, 200.0, 5000.0]));
    assert!(held.passed, "{held}");
    assert_eq!(held.figure, Some(400.0));
    assert_eq!(held.figure_key.as_deref(), Some("breaker inventory opens"));
    assert_eq!(
        held.expected,
        "breaker inventory opens no later than 700ms (median of runs #2, #3, #4: 200ms + 500ms)"
    );
    assert_eq!(
        held.baseline.as_deref(),
        Some("median of runs #2, #3, #4: 200ms + 500ms"),
        "the runs that made the baseline, not #1"
    );
    assert_eq!(held.baseline_runs, vec![2, 3, 4]);
    let broken = judge(OPENS, &outage(), Some(&[-150.0, -100.0, -120.0]));
    assert!(!broken.passed, "{broken}");
    assert!(broken.not_judged.is_none());
    assert_eq!(
        broken.seen,
        "breaker inventory opened 400ms after inventory-down.start (at 10.4s)"
    );
}

#[test]
fn too_few_past_runs_is_not_judged_awaiting_history_and_the_figure_is_still_kept() {
    let v = judge(OPENS, &outage(), Some(&[300.0, 100.0]));
    assert!(!v.passed);
    assert!(v.awaits_history);
    assert_eq!(
        v.not_judged.as_deref(),
        Some(
            "the history has 2 past runs fit for its baseline; the median of the last 3 passing \
             runs needs 3; this run seeds it: it holds against the ones so far (median of runs \
             #1, #2: 200ms + 500ms)"
        )
    );
    assert!(v.seeds_baseline, "400ms is within 200ms + 500ms");
    assert_eq!(v.figure, Some(400.0));
}

#[test]
fn a_run_worse_than_the_seeds_so_far_is_not_judged_and_does_not_seed_the_baseline() {
    // The outage opens 0.4 s after the fault: later than 100ms + 200ms.
    let sentence =
        "breaker inventory opens no later than the max of the last 3 passing runs + 200ms";
    let worse = judge(sentence, &outage(), Some(&[100.0, 50.0]));
    assert!(
        worse.awaits_history,
        "not failed: the history is still short"
    );
    assert!(!worse.seeds_baseline, "{worse}");
    assert!(
        worse
            .not_judged
            .as_deref()
            .is_some_and(|w| w.contains("this run does not seed it")),
        "{worse}"
    );
    let first = judge(sentence, &outage(), Some(&[]));
    assert!(first.seeds_baseline, "the very first run seeds it as it is");
    assert!(
        !judge(sentence, &run(), Some(&[])).seeds_baseline,
        "a breaker that never opened has no figure to seed with"
    );
}

#[test]
fn a_run_without_a_history_fails_a_regression_sentence_and_says_why() {
    let v = judge(OPENS, &outage(), None);
    assert!(!v.passed);
    assert!(!v.awaits_history, "no history is not 'too little history'");
    assert_eq!(v.not_judged.as_deref(), Some(NO_HISTORY));
}

#[test]
fn a_breaker_that_never_opened_fails_however_much_history_there_is() {
    let v = judge(OPENS, &run(), Some(&[300.0, 100.0, 200.0]));
    assert!(!v.passed);
    assert_eq!(v.figure, None);
    assert_eq!(
        v.seen,
        "breaker inventory never opened after inventory-down.start"
    );
}

#[test]
fn a_route_latency_is_kept_in_milliseconds_and_judged_against_the_last_run_plus_a_share() {
    let mut t = outage();
    t.requests = (0..10)
        .map(|i| req(i, "shop", 11.0 + i as f64 * 0.1, 200, 30))
        .collect();
    let sentence =
        "route shop p99 while inventory is open no worse than the last passing run + 20%";
    let held = judge(sentence, &t, Some(&[25.0, 1.0]));
    assert_eq!(held.figure, Some(30.0));
    assert!(held.passed, "30ms <= 25ms + 20%: {held}");
    let broken = judge(sentence, &t, Some(&[24.0]));
    assert!(!broken.passed, "30ms > 24ms + 20% = 28.8ms: {broken}");
    assert!(broken.expected.contains("28.8ms"), "{}", broken.expected);
}

#[test]
fn a_success_share_below_the_last_run_is_worse() {
    let mut t = run();
    t.requests = vec![
        req(1, "shop", s(1.0).as_secs_f64(), 200, 5),
        req(2, "shop", 2.0, 500, 5),
    ];
    let sentence = "route shop success no worse than the last passing run";
    assert!(judge(sentence, &t, Some(&[50.0])).passed);
    let v = judge(sentence, &t, Some(&[60.0]));
    assert!(!v.passed, "{v}");
    assert_eq!(v.figure, Some(50.0));
}

proptest::proptest! {
    /// Any sequence of the sentences' words parses or is refused with an
    /// error, never a panic; any regression sentence that parses is judged
    /// with any past figures, never a panic.
    #[test]
    fn regression_sentences_of_any_words_parse_or_are_refused_and_judge_any_past(
        words in proptest::collection::vec(proptest::sample::select(vec![
            "breaker", "inventory", "route", "shop", "opens", "closes", "after",
            "inventory-down.start", "no", "later", "earlier", "worse", "more", "less",
            "than", "the", "last", "passing", "run", "runs", "median", "mean", "min",
            "max", "of", "0", "3", "1001", "+", "+20%", "20%", "500ms", "p99", "success",
            "requests", "while", "is", "open", "during",
        ]), 0..18),
        past in proptest::collection::vec(-1e6f64..1e6, 0..12),
    ) {
        let sentence = words.join(" ");
        if let Ok(mut expectation) = parse(&sentence) {
            if let Rule::Regress(r) = &mut expectation.rule {
                r.past = Some(held_runs(&past));
            }
            let _ = evaluate(&expectation, &outage());
        }
    }
}

proptest::proptest! {
    /// A well-formed regression sentence with any baseline, margin and
    /// past figures is judged: held exactly when the figure (400 ms) is
    /// within the limit, not judged (awaiting history) exactly when the past
    /// is shorter than the baseline needs.
    #[test]
    fn any_baseline_and_past_is_judged_against_the_limit_it_states(
        runs in 1usize..8,
        stat in proptest::sample::select(vec!["median", "mean", "min", "max"]),
        margin in 0u32..2000,
        past in proptest::collection::vec(0f64..2000.0, 0..10),
    ) {
        let sentence = format!(
            "breaker inventory opens no later than the {stat} of the last {runs} passing runs + {margin}ms"
        );
        let v = judge(&sentence, &outage(), Some(&past));
        proptest::prop_assert_eq!(v.awaits_history, past.len() < runs);
        if past.len() >= runs {
            let mut used = past[..runs].to_vec();
            used.sort_by(f64::total_cmp);
            let base = match stat {
                "median" if runs % 2 == 1 => used[runs / 2],
                "median" => (used[runs / 2 - 1] + used[runs / 2]) / 2.0,
                "mean" => used.iter().sum::<f64>() / runs as f64,
                "min" => used[0],
                _ => used[runs - 1],
            };
            proptest::prop_assert_eq!(v.passed, 400.0 <= base + f64::from(margin), "{}", v);
        }
    }
}

#[test]
fn other_sentences_keep_their_figure_too_a_latency_in_ms_a_count_a_delay() {
    let mut t = outage();
    t.requests = (0..4)
        .map(|i| req(i, "shop", 11.0 + i as f64, 200, 30))
        .collect();
    let p99 = evaluate(&parse("route shop p99 <= 50ms").unwrap(), &t);
    assert_eq!(p99.figure, Some(30.0));
    let calls = evaluate(
        &parse("calls to /inventory/* while inventory is open == 0").unwrap(),
        &t,
    );
    assert_eq!(calls.figure, Some(0.0));
    let opens = evaluate(
        &parse("breaker inventory opens within 3s of inventory-down.start").unwrap(),
        &t,
    );
    assert_eq!(opens.figure, Some(400.0));
    let never = evaluate(
        &parse("breaker inventory opens within 3s of inventory-down.start").unwrap(),
        &run(),
    );
    assert_eq!(
        never.figure, None,
        "a transition that never came has no figure"
    );
    let sequence = evaluate(&parse("breaker inventory goes through open").unwrap(), &t);
    assert_eq!(sequence.figure, None);
}

#[test]
fn a_route_figure_over_no_requests_fails_a_lower_bound_and_holds_an_upper_one_vacuously() {
    let t = run(); // no requests at all
    let success = judge(
        "route shop success no worse than the last passing run",
        &t,
        Some(&[99.0]),
    );
    assert!(!success.passed, "{success}");
    assert_eq!(success.figure, None);
    assert!(success.seen.contains("no requests"), "{}", success.seen);
    let p99 = judge(
        "route shop p99 no worse than the last passing run",
        &t,
        Some(&[20.0]),
    );
    assert!(p99.passed, "nothing was slower than before: {p99}");
}

#[test]
fn a_margin_on_a_lower_bound_lowers_the_limit() {
    let mut t = run();
    // 5 of 9 answered: 55.6%.
    t.requests = (0..9)
        .map(|i| req(i, "shop", 1.0 + i as f64, if i < 5 { 200 } else { 500 }, 5))
        .collect();
    let sentence = "route shop success no worse than the last passing run + 10%";
    let v = judge(sentence, &t, Some(&[60.0]));
    assert!(v.passed, "55.6% >= 60% - 10% of it = 54%: {v}");
    assert!(v.expected.contains(">= 54%"), "{}", v.expected);
    assert!(!judge(sentence, &t, Some(&[62.0])).passed, "55.6% < 55.8%");
}

#[test]
fn the_transition_measured_is_this_breaker_s_first_of_that_kind_after_the_anchor_within_the_run() {
    use crate::defense::breaker::{Reason, State, Transition};
    let sentence =
        |event: &str| format!("breaker inventory {event} no later than the last passing run");
    // Open at 10.4 s, half-open at 15.4 s, closed at 15.6 s.
    let closes = judge(&sentence("closes"), &outage(), Some(&[10_000.0]));
    assert_eq!(
        closes.figure,
        Some(5600.0),
        "the closing, not the opening before it"
    );
    let opening = |breaker: &str, at: f64| Transition {
        at: s(at),
        breaker: breaker.into(),
        from: State::Closed,
        to: State::Open,
        reason: Reason::Manual { action: "test" },
    };
    let mut other = outage();
    other.transitions.insert(0, opening("payments", 10.1));
    let opens = judge(&sentence("opens"), &other, Some(&[10_000.0]));
    assert_eq!(
        opens.figure,
        Some(400.0),
        "another breaker's opening is not this one's"
    );
    let mut at_end = run();
    at_end.transitions.push(opening("inventory", 60.0));
    let late = judge(&sentence("opens"), &at_end, Some(&[10_000.0]));
    assert_eq!(
        late.figure, None,
        "a transition at the run's end is after it"
    );
    assert!(!late.passed);
}

const QUERY: &str =
    "query p99 max during inventory-down no more than the median of the last 3 passing runs + 50ms";

/// Judges `sentence` (a regression sentence on a query) as Prometheus
/// measured it: `figure` on Prometheus's scale, or none.
fn judge_query(sentence: &str, figure: Option<f64>, past: Option<&[f64]>) -> Verdict {
    let mut expectation = parse(sentence).unwrap_or_else(|e| panic!("{sentence}: {e}"));
    let Rule::Regress(r) = &mut expectation.rule else {
        panic!("{sentence}: not a regression sentence");
    };
    r.past = past.map(held_runs);
    let r = r.clone();
    let seen = figure.map_or("query p99 returned no samples".to_string(), |x| {
        format!("max {x}")
    });
    crate::experiment::expect::regress::judge_measured(
        &expectation,
        &r,
        &run(),
        (figure, seen, None),
    )
}

#[test]
fn a_query_sentence_with_a_comparison_parses_to_a_query_figure_on_prometheus_scale() {
    let r = regress(QUERY);
    assert_eq!(r.key, "query p99 max during inventory-down");
    assert_eq!(r.direction, Direction::AtMost);
    // 50ms on Prometheus's scale: seconds.
    assert_eq!(r.margin, Some(Margin::Absolute(0.05)));
    let Measure::Query(m) = &r.measure else {
        panic!("{:?}", r.measure)
    };
    assert_eq!(m.query.text, "p99");
    assert_eq!(m.figure_key(), r.key, "one key for both sentence kinds");
    let less = regress("query ok min no less than the last passing run + 0.01");
    assert_eq!(less.direction, Direction::AtLeast);
    assert_eq!(less.margin, Some(Margin::Absolute(0.01)));
    let share =
        regress("query ok avg before the first fault no less than the last passing run + 5%");
    assert_eq!(share.margin, Some(Margin::Relative(5.0)));
}

#[test]
fn a_query_regression_must_say_more_or_less_and_sum_its_samples_into_one_number() {
    let e = parse("query p99 max no worse than the last passing run").unwrap_err();
    assert!(e.message.contains("'more' or 'less'"), "{e}");
    assert_eq!(e.column, 18, "{e}");
    let e = parse("query p99 at every step no more than the last passing run").unwrap_err();
    assert!(e.message.contains("not 'at every step'"), "{e}");
    let e = parse("query p99 max no more than the last passing run + fast").unwrap_err();
    assert!(e.message.contains("\"50ms\""), "{e}");
}

#[test]
fn a_query_figure_within_the_median_plus_margin_holds_and_one_past_it_fails() {
    // Median of 0.2, 0.25, 0.3 is 0.25; + 50ms is 0.3.
    let past = [0.2, 0.25, 0.3];
    let held = judge_query(QUERY, Some(0.29), Some(&past));
    assert!(held.passed, "{held:?}");
    assert_eq!(held.limit, Some(0.3));
    assert_eq!(held.figure, Some(0.29));
    assert_eq!(held.unit, None, "Prometheus's own scale");
    assert!(
        held.expected.contains("no more than 0.3 "),
        "{}",
        held.expected
    );
    let failed = judge_query(QUERY, Some(0.31), Some(&past));
    assert!(!failed.passed && failed.not_judged.is_none(), "{failed:?}");
}

#[test]
fn a_query_that_gave_nothing_fails_whatever_the_history_and_never_seeds() {
    for past in [
        None,
        Some(&[][..]),
        Some(&[0.2][..]),
        Some(&[0.2, 0.2, 0.2][..]),
    ] {
        let v = judge_query(QUERY, None, past);
        assert!(!v.passed, "{past:?}: {v:?}");
        assert!(v.not_judged.is_none(), "{past:?}: {v:?}");
        assert!(!v.seeds_baseline && !v.awaits_history, "{past:?}: {v:?}");
        assert!(v.seen.contains("returned no samples"), "{v:?}");
    }
    // With a figure and too little history, it seeds as any other.
    let seed = judge_query(QUERY, Some(0.2), Some(&[]));
    assert!(seed.seeds_baseline && seed.not_judged.is_some(), "{seed:?}");
}

#[test]
fn a_query_regression_in_a_run_that_asks_no_prometheus_fails_not_queried() {
    let mut expectation = parse(QUERY).unwrap();
    if let Rule::Regress(r) = &mut expectation.rule {
        r.past = Some(held_runs(&[0.2, 0.2, 0.2]));
    }
    let v = evaluate(&expectation, &run());
    assert!(!v.passed && v.not_judged.is_none(), "{v:?}");
    assert!(v.seen.starts_with("not queried"), "{v:?}");
}
