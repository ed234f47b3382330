//! Bad sentences: each error's exact message and its column (found
//! independently: the position of the offending text in the sentence).

use crate::experiment::expect::{ParseError, parse};

/// Asserts that `sentence` fails at the first occurrence of `at` (or one
/// past the end when `at` is empty) with `message`.
fn fails(sentence: &str, at: &str, message: &str) {
    let err = parse(sentence).expect_err(sentence);
    let column = if at.is_empty() {
        sentence.chars().count() + 1
    } else {
        sentence[..sentence.find(at).expect("offending text in sentence")]
            .chars()
            .count()
            + 1
    };
    assert_eq!(
        err,
        ParseError {
            column,
            message: message.to_string()
        },
        "{sentence}"
    );
}

#[test]
fn misspelt_state_after_arrow_names_the_states_and_the_closest() {
    fails(
        "breaker inventory goes closed -> open -> clsoed",
        "clsoed",
        "expected a state (closed, open, half_open, forced_open, disabled) after '->', \
         found \"clsoed\" (did you mean \"closed\"?)",
    );
}

#[test]
fn columns_count_characters_not_bytes() {
    let err = parse("breaker inventory goes closed → open → clsoed").unwrap_err();
    assert_eq!(err.column, 40);
    assert!(err.message.contains("after '→'"), "{}", err.message);
}

#[test]
fn unknown_first_word_lists_the_sentence_kinds_and_suggests_one() {
    fails(
        "brekaer inventory never opens",
        "brekaer",
        "expected 'breaker', 'calls', 'route', 'instance', 'pool' or 'query' at the start, found \"brekaer\" \
         (did you mean \"breaker\"?)",
    );
    fails(
        "",
        "",
        "expected 'breaker', 'calls', 'route', 'instance', 'pool' or 'query' at the start, found the end of the sentence",
    );
}

#[test]
fn exact_sequence_must_start_at_closed() {
    fails(
        "breaker inventory goes open -> closed",
        "open",
        "an exact sequence starts at closed (every breaker starts closed), found \"open\"; \
         write 'goes through' to match a part of the sequence",
    );
}

#[test]
fn unknown_verb_after_breaker_name_lists_the_verbs() {
    fails(
        "breaker inventory opnes within 3s of 10s",
        "opnes",
        "expected 'goes', 'opens', 'closes', 'half_opens', 'never' or 'stays' after \
         'inventory', found \"opnes\" (did you mean \"opens\"?)",
    );
    fails(
        "breaker inventory",
        "",
        "expected 'goes', 'opens', 'closes', 'half_opens', 'never' or 'stays' after \
         'inventory', found the end of the sentence",
    );
}

#[test]
fn timing_errors_name_the_missing_piece() {
    fails(
        "breaker inventory opens within 3x of inventory-down.start",
        "3x",
        "expected a duration such as \"3s\" or \"500ms\" after 'within', found \"3x\"",
    );
    fails(
        "breaker inventory opens within 3s",
        "",
        "expected 'of' after '3s', found the end of the sentence",
    );
    fails(
        "breaker inventory opens within 3s af inventory-down.start",
        "af",
        "expected 'of' after '3s', found \"af\" (did you mean \"of\"?)",
    );
    fails(
        "breaker inventory opens within 3s of 10x",
        "10x",
        "expected a duration such as \"3s\" or \"500ms\" after 'of', found \"10x\"",
    );
}

#[test]
fn wait_in_open_belongs_to_half_opens_only() {
    fails(
        "breaker inventory opens within wait_in_open ± 500ms after opening",
        "wait_in_open",
        "a wait give or take a tolerance applies to 'half_opens', not 'opens'",
    );
    fails(
        "breaker inventory half_opens within wait_in_open 500ms after opening",
        "500ms",
        "expected '±' (or '+-') and a tolerance after 'wait_in_open', found \"500ms\"",
    );
    fails(
        "breaker inventory half_opens within wait_in_open ± 500ms after",
        "",
        "expected 'opening' after 'after', found the end of the sentence",
    );
}

#[test]
fn count_errors_say_most_least_and_whole_numbers() {
    fails(
        "breaker inventory opens at mots 2 times",
        "mots",
        "expected 'most' or 'least' after 'at', found \"mots\" (did you mean \"most\"?)",
    );
    fails(
        "breaker inventory opens at most two times",
        "two",
        "expected a whole number of times such as \"2\" after 'most', found \"two\"",
    );
    fails(
        "breaker inventory opens 2 times",
        "2",
        "expected 'within', 'at most', 'at least', 'exactly', 'after' or 'no' (later than ...) after 'opens', found \"2\"",
    );
    fails(
        "breaker inventory opens exactly 1",
        "",
        "expected 'times' after '1', found the end of the sentence",
    );
}

#[test]
fn trailing_words_after_an_optional_window_offer_the_windows() {
    fails(
        "breaker inventory stays closed durin inventory-down",
        "durin",
        "expected a window (during, while, between, in phase) or the end of the sentence \
         after 'closed', found \"durin\" (did you mean \"during\"?)",
    );
    fails(
        "route B success during inventory-down >= 99% please",
        "please",
        "expected the end of the sentence after '99%', found \"please\"",
    );
}

#[test]
fn calls_need_a_slash_glob_and_a_whole_count() {
    fails(
        "calls to inventory/* while inventory is open == 0",
        "inventory/*",
        "invalid path glob `inventory/*`: a path starts with `/`, e.g. `/inventory/*`",
    );
    fails(
        "calls to /inventory/* while inventory is open == 0.5",
        "0.5",
        "expected a whole number such as \"0\" after '==', found \"0.5\"",
    );
    fails(
        "calls to /inventory/* while inventory is open = 0",
        "= 0",
        "expected a comparison (>=, <=, ==, >, <, within) after 'open', found \"=\" \
         (did you mean \"==\"?)",
    );
    fails(
        "calls to /inventory/* while inventory is opn == 0",
        "opn",
        "expected a state (closed, open, half_open, forced_open, disabled) after 'is', \
         found \"opn\" (did you mean \"open\"?)",
    );
}

#[test]
fn route_metric_and_window_typos_get_suggestions() {
    fails(
        "route B sucess during inventory-down >= 99%",
        "sucess",
        "expected a metric (success, fallback, rejected, errors, timeouts, requests, p50, \
         p90, p99, max, amplification, grpc STATUS) after 'B', found \"sucess\" (did you mean \"success\"?)",
    );
    fails(
        "route B success durng inventory-down >= 99%",
        "durng",
        "expected a window (during, while, between, in phase) or a comparison (>=, <=, ==, \
         >, <, within) after 'success', found \"durng\" (did you mean \"during\"?)",
    );
    fails(
        "route A fallback stael while inventory is open >= 99%",
        "stael",
        "expected a fallback kind (stale, static, backup, service), a window or a comparison after \
         'fallback', found \"stael\" (did you mean \"stale\"?)",
    );
    fails(
        "route B success in inventory-down >= 99%",
        "inventory-down",
        "expected 'phase' after 'in', found \"inventory-down\"",
    );
}

#[test]
fn route_values_must_match_the_metric() {
    fails(
        "route B success >= 99",
        "99",
        "expected a percentage from 0% to 100% such as \"99%\" after '>=', found \"99\"",
    );
    fails(
        "route B success >= 120%",
        "120%",
        "expected a percentage from 0% to 100% such as \"99%\" after '>=', found \"120%\"",
    );
    fails(
        "route A p99 latency while inventory is open < 5",
        "5",
        "expected a duration such as \"5ms\" after '<', found \"5\"",
    );
    fails(
        "route A amplification == three",
        "three",
        "expected a number such as \"3\" after '==', found \"three\"",
    );
    fails(
        "route A timeouts within 5 of 600",
        "5 of",
        "expected a tolerance such as \"5%\" after 'within', found \"5\"",
    );
}

#[test]
fn a_window_must_end_after_it_starts() {
    fails(
        "route B success between 40s and 10s >= 99%",
        "10s",
        "the window ends at 10s but starts at 40s: write the earlier time first",
    );
}

#[test]
fn an_unknown_grpc_status_lists_the_statuses_and_suggests_the_closest() {
    fails(
        "route A grpc UNAVAILBLE >= 1%",
        "UNAVAILBLE",
        "expected a gRPC status (OK, CANCELLED, UNKNOWN, ..., UNAVAILABLE, or 0 to 16) after 'grpc', \
         found \"UNAVAILBLE\" (did you mean \"UNAVAILABLE\"?)",
    );
    fails(
        "route A grpc 17 >= 1%",
        "17",
        "expected a gRPC status (OK, CANCELLED, UNKNOWN, ..., UNAVAILABLE, or 0 to 16) after 'grpc', found \"17\"",
    );
}
