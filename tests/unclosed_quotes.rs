//! An unclosed quote is reported by `firedrill validate` at the quote that
//! opens the string, wherever it is: in a value or a key, in a flow list or
//! mapping, in a nested mapping or a list item, across lines, at the end of
//! the file, after a comment, and when a later quote closes it (the
//! parser then breaks on what follows that later quote, lines away).

use assert_cmd::Command;

/// A name, the file's text, and the 1-based line and column of the quote
/// that is never closed (or closed too early).
const CASES: [(&str, &str, (usize, usize)); 17] = [
    ("double_in_a_value", "name: \"abc\nseed: 7\n", (1, 7)),
    ("single_key_at_the_start", "'name: abc\nseed: 7\n", (1, 1)),
    ("double_key_at_the_start", "\"name: abc\nseed: 7\n", (1, 1)),
    (
        "double_key_closed_by_a_later_quote",
        "\"name: abc\nseed: \"7\"\n",
        (1, 1),
    ),
    (
        "double_key_in_a_nested_mapping",
        "name: x\ndefense:\n  \"timeout: 2s\n",
        (3, 3),
    ),
    (
        "double_in_a_flow_list_closed_by_the_next_item",
        "name: x\nexpect: [\"a, \"b\"]\nseed: 7\n",
        (2, 10),
    ),
    (
        "single_in_a_flow_mapping_closed_by_the_next_value",
        "name: x\ntarget: {builtin: 'x, url: 'y'}\n",
        (2, 19),
    ),
    (
        "double_across_lines_closed_by_a_later_value",
        "name: \"abc\nseed: 7\ndescription: \"hello\"\n",
        (1, 7),
    ),
    (
        "single_at_the_end_of_the_file",
        "seed: 7\nname: 'abc",
        (2, 7),
    ),
    (
        "single_after_a_comment_with_an_apostrophe",
        "# don't\nname: 'abc\nseed: 7\n",
        (2, 7),
    ),
    (
        "double_key_after_a_comment",
        "# a comment\n\"name: abc\nseed: 7\n",
        (2, 1),
    ),
    (
        "single_in_a_nested_mapping_closed_lines_later",
        "name: x\ndefense:\n  breakers:\n    inv:\n      match: '/inventory/*\n      wait_in_open: 5s\n  timeout: '2s'\n",
        (5, 14),
    ),
    (
        "double_in_a_list_item_closed_by_the_next_item",
        "name: x\nexpect:\n  - \"breaker inv opens\n  - \"other\"\n",
        (3, 5),
    ),
    (
        "single_closed_early_by_an_apostrophe",
        "name: x\ndescription: 'it's broken'\nseed: 7\n",
        (2, 14),
    ),
    (
        "double_in_a_flow_list_across_lines",
        "name: x\nexpect: [\n  \"a,\n  b\n]\n",
        (3, 3),
    ),
    (
        "double_with_an_escaped_quote_inside",
        "name: \"abc \\\" def\nseed: 7\n",
        (1, 7),
    ),
    (
        "single_with_a_doubled_quote_inside",
        "name: 'it''s\nseed: 7\n",
        (1, 7),
    ),
];

#[test]
fn every_unclosed_quote_is_reported_at_the_quote_that_opens_it_with_what_was_expected() {
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for (name, text, (line, column)) in CASES {
        let file = format!("{name}.yaml");
        std::fs::write(dir.path().join(&file), text).unwrap();
        let output = Command::cargo_bin("firedrill")
            .unwrap()
            .current_dir(dir.path())
            .args(["validate", &file])
            .timeout(std::time::Duration::from_secs(120))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let place = format!("error: {file}:{line}:{column}: ");
        let says_what_was_expected = stderr.contains("quote") && stderr.contains("expected");
        if output.status.code() != Some(2)
            || !stderr.starts_with(&place)
            || !says_what_was_expected
            || stderr.lines().count() != 1
        {
            failures.push(format!(
                "{name}: exit {:?}, expected one line starting {place:?} that says what was expected about the quote, got {stderr:?}",
                output.status.code()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
