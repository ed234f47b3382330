//! The trend of every figure across runs: a table per experiment (a row
//! per figure, then a row per sentence with its state in each run, a
//! column per run, failed runs marked), CSV (one row per run and figure,
//! for spreadsheets and plotting), or JSON (the runs whole).

use std::fmt::Write as _;

use super::read::{FAILED, HELD, INCONCLUSIVE, NOT_JUDGED, SEED, StoredRun};

/// `firedrill history --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A table per experiment: figures down, runs across.
    Table,
    /// `run,experiment,recorded_at,started_at,seed,verdict,figure,value`.
    Csv,
    /// Every run with its figures and expectations.
    Json,
}

/// `runs` in `format`.
pub fn render(runs: &[StoredRun], format: Format) -> String {
    match format {
        Format::Table => table(runs),
        Format::Csv => csv(runs),
        Format::Json => {
            let mut s = serde_json::to_string_pretty(runs).unwrap_or_default();
            s.push('\n');
            s
        }
    }
}

/// The experiments of `runs`, in the order they first ran.
pub(super) fn experiments(runs: &[StoredRun]) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for r in runs {
        if !names.contains(&r.experiment.as_str()) {
            names.push(&r.experiment);
        }
    }
    names
}

fn table(runs: &[StoredRun]) -> String {
    if runs.is_empty() {
        return "no runs recorded\n".to_string();
    }
    let mut out = String::new();
    for name in experiments(runs) {
        let these: Vec<&StoredRun> = runs.iter().filter(|r| r.experiment == name).collect();
        let failed = these.iter().filter(|r| !r.passed).count();
        let _ = writeln!(
            out,
            "{name}: {} run{}, {failed} not passed",
            these.len(),
            if these.len() == 1 { "" } else { "s" }
        );
        let mut rows: Vec<(String, Vec<String>)> = vec![
            (
                "run".into(),
                these.iter().map(|r| format!("#{}", r.id)).collect(),
            ),
            ("verdict".into(), these.iter().map(|r| verdict(r)).collect()),
            (
                "seed".into(),
                these.iter().map(|r| r.seed.clone()).collect(),
            ),
        ];
        for figure in figure_names(&these) {
            rows.push((
                figure.clone(),
                these
                    .iter()
                    .map(|r| r.figures.get(figure).map_or("-".into(), |v| number(*v)))
                    .collect(),
            ));
        }
        let sentences = sentences(&these);
        for (i, sentence) in sentences.iter().enumerate() {
            rows.push((
                format!("expect {}", i + 1),
                these.iter().map(|r| state_in(r, sentence).into()).collect(),
            ));
        }
        let label = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
        let widths: Vec<usize> = (0..these.len())
            .map(|i| rows.iter().map(|r| r.1[i].len()).max().unwrap_or(0))
            .collect();
        for (name, cells) in &rows {
            let _ = write!(out, "  {name:<label$}");
            for (cell, w) in cells.iter().zip(&widths) {
                let _ = write!(out, "  {cell:>w$}");
            }
            out.push('\n');
        }
        for (i, sentence) in sentences.iter().enumerate() {
            let _ = writeln!(out, "  expect {}: {sentence}", i + 1);
        }
        if !sentences.is_empty() {
            let _ = writeln!(out, "  ({STATES})");
        }
    }
    out
}

/// What the marks of a sentence's state say.
pub(super) const STATES: &str = "held: judged and held; FAILED: judged and failed; seed: not judged \
     (too little history), seeds the baseline; skip: not judged; -: not in the run";

/// Every sentence of `runs`, in the order they first appear.
pub(super) fn sentences<'a>(runs: &[&'a StoredRun]) -> Vec<&'a str> {
    let mut found: Vec<&str> = Vec::new();
    for e in runs.iter().flat_map(|r| &r.expectations) {
        if !found.contains(&e.sentence.as_str()) {
            found.push(&e.sentence);
        }
    }
    found
}

/// `sentence`'s state in `run`, as a mark: `held`, `FAILED`, `seed`,
/// `skip` (not judged), `-` (not in the run); the worst when it is there
/// twice.
pub(super) fn state_in(run: &StoredRun, sentence: &str) -> &'static str {
    let states: Vec<&str> = run
        .expectations
        .iter()
        .filter(|e| e.sentence == sentence)
        .map(|e| e.state.as_str())
        .collect();
    let marks = [
        (FAILED, "FAILED"),
        (INCONCLUSIVE, "????"),
        (NOT_JUDGED, "skip"),
        (SEED, "seed"),
        (HELD, "held"),
    ];
    marks
        .iter()
        .find(|(state, _)| states.contains(state))
        .map_or("-", |(_, mark)| mark)
}

/// Every figure any of `runs` has, by name.
pub(super) fn figure_names<'a>(runs: &[&'a StoredRun]) -> Vec<&'a String> {
    let mut names: Vec<&String> = runs.iter().flat_map(|r| r.figures.keys()).collect();
    names.sort();
    names.dedup();
    names
}

/// `passed`, or the verdict in capitals so a failure stands out.
fn verdict(run: &StoredRun) -> String {
    if run.passed {
        run.verdict.clone()
    } else {
        run.verdict.to_uppercase()
    }
}

/// A figure with at most three decimals, trailing zeros cut.
pub fn number(value: f64) -> String {
    let s = format!("{value:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.into() }
}

fn csv(runs: &[StoredRun]) -> String {
    let mut out = String::from("run,experiment,recorded_at,started_at,seed,verdict,figure,value\n");
    for r in runs {
        for (figure, value) in &r.figures {
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{}",
                r.id,
                field(&r.experiment),
                field(&r.recorded_at),
                field(r.started_at.as_deref().unwrap_or("")),
                field(&r.seed),
                r.verdict,
                field(figure),
                number(*value)
            );
        }
    }
    out
}

/// A CSV field, quoted when it must be (RFC 4180).
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: i64, passed: bool, p99: f64) -> StoredRun {
        StoredRun {
            id,
            experiment: "shop".into(),
            file_hash: "0".into(),
            build: "b".into(),
            seed: id.to_string(),
            clock: "virtual".into(),
            started_at: None,
            recorded_at: "2026-12-03T00:00:00.000Z".into(),
            host: None,
            verdict: if passed { "passed" } else { "failed" }.into(),
            passed,
            duration_ms: 1000.0,
            report_dir: None,
            figures: [("route.a.p99_ms".to_string(), p99)].into_iter().collect(),
            expectations: vec![],
        }
    }

    fn expectation(sentence: &str, state: &str) -> super::super::read::StoredExpectation {
        super::super::read::StoredExpectation {
            sentence: sentence.into(),
            passed: state == HELD,
            not_judged: None,
            expected: String::new(),
            seen: String::new(),
            figure: None,
            state: state.into(),
            baseline_runs: vec![],
            figure_key: None,
            figure_limit: None,
            figure_unit: None,
        }
    }

    #[test]
    fn the_table_shows_each_sentence_s_state_per_run() {
        let mut runs = [run(1, true, 1.0), run(2, true, 1.0), run(3, false, 1.0)];
        runs[0].expectations = vec![expectation("a no later than b", SEED)];
        runs[1].expectations = vec![
            expectation("a no later than b", NOT_JUDGED),
            expectation("c", HELD),
        ];
        runs[2].expectations = vec![expectation("a no later than b", FAILED)];
        let text = render(&runs, Format::Table);
        let row = |label: &str| {
            text.lines()
                .find(|l| l.trim_start().starts_with(label))
                .unwrap_or_else(|| panic!("{label}: {text}"))
                .split_whitespace()
                .skip(2)
                .collect::<Vec<_>>()
        };
        assert_eq!(row("expect 1 "), ["seed", "skip", "FAILED"]);
        assert_eq!(row("expect 2 "), ["-", "held", "-"]);
        assert!(text.contains("  expect 1: a no later than b\n"), "{text}");
        assert!(
            text.contains("seed: not judged (too little history)"),
            "{text}"
        );
    }

    #[test]
    fn the_table_puts_runs_across_and_marks_a_failed_one() {
        let text = render(&[run(1, true, 12.5), run(2, false, 40.0)], Format::Table);
        assert!(text.starts_with("shop: 2 runs, 1 not passed\n"), "{text}");
        assert!(text.contains("#1"), "{text}");
        assert!(text.contains("FAILED"), "{text}");
        let p99 = text.lines().find(|l| l.contains("route.a.p99_ms")).unwrap();
        assert!(p99.trim_end().ends_with("12.5      40"), "{p99}");
    }

    #[test]
    fn csv_quotes_a_field_with_a_comma_and_has_a_row_per_figure() {
        let mut r = run(3, true, 1.0);
        r.experiment = "a,b".into();
        let text = render(&[r], Format::Csv);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(
            lines[1],
            "3,\"a,b\",2026-12-03T00:00:00.000Z,,3,passed,route.a.p99_ms,1"
        );
    }

    #[test]
    fn numbers_keep_three_decimals_at_most() {
        assert_eq!(number(1.23456), "1.235");
        assert_eq!(number(40.0), "40");
        assert_eq!(number(-0.0001), "0");
    }
}
