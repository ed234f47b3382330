//! The name check: unknown breakers, faults, routes and phases are reported
//! with their column and the closest known name.

use super::fixture::{outage, req};
use crate::experiment::expect::{Names, check, parse};

fn names() -> Names {
    let mut t = outage();
    t.requests = vec![req(1, "A", 1.0, 200, 1), req(2, "B", 1.0, 200, 1)];
    Names::of(&t)
}

fn checked(sentence: &str) -> Result<(), String> {
    check(&parse(sentence).unwrap(), &names())
}

#[test]
fn known_names_pass() {
    for sentence in [
        "breaker inventory goes closed -> open -> half_open -> closed",
        "breaker inventory opens within 3s of inventory-down.start",
        "calls to /inventory/* while inventory is open == 0",
        "route B success during inventory-down >= 99%",
        "route A fallback in phase recovery >= 99%",
        "breaker inventory half_opens within wait_in_open ± 500ms after opening",
    ] {
        assert_eq!(checked(sentence), Ok(()), "{sentence}");
    }
}

#[test]
fn an_unknown_breaker_is_located_and_the_closest_suggested() {
    assert_eq!(
        checked("breaker inventori stays closed"),
        Err(
            "unknown breaker \"inventori\" at column 9 (did you mean \"inventory\"?); the \
             breakers are: inventory"
                .to_string()
        )
    );
}

#[test]
fn unknown_names_in_anchors_and_windows_are_all_reported() {
    assert_eq!(
        checked("breaker inventory opens within 3s of inventory-dwn.end"),
        Err(
            "unknown fault \"inventory-dwn\" at column 38 (did you mean \"inventory-down\"?); \
             the faults are: inventory-down"
                .to_string()
        )
    );
    assert_eq!(
        checked("route C success in phase warmup >= 99%"),
        Err(
            "unknown route \"C\" at column 7; the routes are: A, B; unknown phase \"warmup\" at \
             column 26; the phases are: recovery"
                .to_string()
        )
    );
    assert_eq!(
        checked("calls to /inventory/* while payments is open == 0"),
        Err("unknown breaker \"payments\" at column 29; the breakers are: inventory".to_string())
    );
}

#[test]
fn an_experiment_without_breakers_says_so() {
    let none = Names::default();
    assert_eq!(
        check(&parse("breaker inventory never opens").unwrap(), &none),
        Err(
            "unknown breaker \"inventory\" at column 9; the experiment has no breakers".to_string()
        )
    );
}

#[test]
fn a_wait_relative_sentence_on_a_breaker_of_unknown_wait_is_refused_a_written_wait_is_not() {
    let mut names = names();
    names.unknown_waits.insert("inventory".to_string());
    let relative = "breaker inventory half_opens within wait_in_open ± 500ms after opening";
    assert_eq!(
        check(&parse(relative).unwrap(), &names),
        Err("breaker \"inventory\" at column 9 has no known wait_in_open: give system.breakers.inventory.wait_in_open (the service's own wait in open), or write the wait out (`within 2s ± 500ms after opening`)".to_string())
    );
    let written = "breaker inventory half_opens within 2s ± 500ms after opening";
    assert_eq!(check(&parse(written).unwrap(), &names), Ok(()));
}
