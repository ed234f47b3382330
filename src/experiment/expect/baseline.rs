//! A regression sentence's baseline: the past runs the history handed
//! over (only runs in which the sentence was judged and held, or which
//! seeded it; see `history::read`), the limit the newest of them make, and
//! the words that name them (`median of runs #6, #7 and seeds #3, #4, #5:
//! 750ms + 500ms`).
//!
//! While the history holds fewer such runs than the sentence needs, the
//! sentence is not judged and this run may seed its baseline: the very
//! first run does (there is nothing to compare it with, and the sentence
//! says so); a later one does only when its figure holds against the
//! seeds before it, compared as the sentence will compare once judged, so
//! a worse run during the first runs is said and kept out of the norm.

use super::ast::{Baseline, Direction, Margin, Regress, Stat, ValueKind};
use super::verdict::show;

pub use super::ast::PastRun;

/// A limit and what it was made of.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Made {
    /// The limit the figure is compared with (the baseline plus the margin
    /// towards the worse side).
    pub limit: f64,
    /// The runs it was made of, oldest first.
    pub runs: Vec<i64>,
    /// `median of runs #6, #7 and seeds #3, #4, #5: 750ms + 500ms`.
    pub words: String,
}

/// What the history allows for `regress`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Basis {
    /// The run keeps no history.
    NoHistory,
    /// Enough past runs: the sentence is judged against this limit.
    Judged(Made),
    /// Too few: not judged. `Some`: the limit of the seeds so far, which
    /// this run must hold against to seed the baseline; `None`: there is
    /// no past run at all, and this run seeds it as it is.
    Short(Option<Made>),
}

/// The basis for `regress`, of the value `kind`.
pub(crate) fn basis(regress: &Regress, kind: ValueKind) -> Basis {
    let Some(past) = &regress.past else {
        return Basis::NoHistory;
    };
    let needed = regress.baseline.runs();
    if past.len() >= needed {
        return Basis::Judged(made(regress, &past[..needed], kind));
    }
    Basis::Short((!past.is_empty()).then(|| made(regress, past, kind)))
}

/// Why a sentence with too few past runs is not judged, and whether this
/// run seeds its baseline: its figure held against the seeds so far, or
/// there were none.
pub(crate) fn short(regress: &Regress, so_far: Option<&Made>, held: bool) -> (String, bool) {
    let have = regress.past.as_ref().map_or(0, Vec::len);
    let needed = regress.baseline.runs();
    let head = format!(
        "the history has {have} past run{} fit for its baseline; {} needs {needed}",
        if have == 1 { "" } else { "s" },
        baseline_words(regress)
    );
    match so_far {
        None => (
            format!(
                "{head}; this run seeds it, the first seed, taken as it is (nothing before it to compare with)"
            ),
            true,
        ),
        Some(made) if held => (
            format!(
                "{head}; this run seeds it: it holds against the {} so far ({})",
                if have == 1 { "one" } else { "ones" },
                made.words
            ),
            true,
        ),
        Some(made) => (
            format!(
                "{head}; this run does not seed it: it would not hold against the {} so far ({})",
                if have == 1 { "one" } else { "ones" },
                made.words
            ),
            false,
        ),
    }
}

/// The limit `used` (newest first, not empty) make for `regress`.
fn made(regress: &Regress, used: &[PastRun], kind: ValueKind) -> Made {
    let values: Vec<f64> = used.iter().map(|p| p.value).collect();
    let (base, stat) = match regress.baseline {
        Baseline::Last => (values[0], None),
        Baseline::Of { stat, .. } => (summed(&values, stat), Some(stat)),
    };
    let margin = match regress.margin {
        None => 0.0,
        Some(Margin::Relative(p)) => base.abs() * p / 100.0,
        Some(Margin::Absolute(x)) => x,
    };
    let limit = match regress.direction {
        Direction::AtMost => base + margin,
        Direction::AtLeast => base - margin,
    };
    let mut runs: Vec<i64> = used.iter().map(|p| p.run).collect();
    runs.sort_unstable();
    let of = runs_words(used, stat.filter(|_| used.len() > 1));
    Made {
        limit,
        runs,
        words: format!("{of}: {}", base_words(base, regress.margin, kind)),
    }
}

/// `run #5`, `seed #1`, `median of runs #6, #7 and seeds #3, #4, #5`.
fn runs_words(used: &[PastRun], stat: Option<Stat>) -> String {
    let list = |seed: bool| {
        let mut ids: Vec<i64> = used
            .iter()
            .filter(|p| p.seed == seed)
            .map(|p| p.run)
            .collect();
        ids.sort_unstable();
        let words: Vec<String> = ids.iter().map(|id| format!("#{id}")).collect();
        (ids.len(), words.join(", "))
    };
    let (judged, judged_ids) = list(false);
    let (seeds, seed_ids) = list(true);
    let plural = |n: usize, one: &str, many: &str| {
        if n == 1 {
            one.to_string()
        } else {
            many.to_string()
        }
    };
    let runs = match (judged, seeds) {
        (_, 0) => format!("{} {judged_ids}", plural(judged, "run", "runs")),
        (0, _) => format!("{} {seed_ids}", plural(seeds, "seed", "seeds")),
        _ => format!(
            "{} {judged_ids} and {} {seed_ids}",
            plural(judged, "run", "runs"),
            plural(seeds, "seed", "seeds")
        ),
    };
    match stat {
        None => runs,
        Some(stat) => format!("{} of {runs}", stat_word(stat)),
    }
}

fn stat_word(stat: Stat) -> &'static str {
    match stat {
        Stat::Median => "median",
        Stat::Mean => "mean",
        Stat::Min => "min",
        Stat::Max => "max",
    }
}

/// `the median of the last 10 passing runs`.
pub(crate) fn baseline_words(regress: &Regress) -> String {
    match regress.baseline {
        Baseline::Last => "the last passing run".into(),
        Baseline::Of { stat, runs } => {
            format!("the {} of the last {runs} passing runs", stat_word(stat))
        }
    }
}

/// `750ms + 500ms`.
fn base_words(base: f64, margin: Option<Margin>, kind: ValueKind) -> String {
    let margin = match margin {
        None => String::new(),
        Some(Margin::Relative(p)) => format!(" + {}%", super::verdict::ratio(p)),
        Some(Margin::Absolute(x)) => format!(" + {}", show(x, kind)),
    };
    format!("{}{margin}", show(base, kind))
}

/// `values` summed up as `stat`.
fn summed(values: &[f64], stat: Stat) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match stat {
        Stat::Median if n % 2 == 1 => sorted[n / 2],
        Stat::Median => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
        Stat::Mean => sorted.iter().sum::<f64>() / n as f64,
        Stat::Min => sorted[0],
        Stat::Max => sorted[n - 1],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn past(runs: &[(i64, f64, bool)]) -> Vec<PastRun> {
        runs.iter()
            .map(|&(run, value, seed)| PastRun { run, value, seed })
            .collect()
    }

    fn opens(baseline: &str, given: Option<Vec<PastRun>>) -> Regress {
        let sentence = format!("breaker inventory opens no later than {baseline}");
        match crate::experiment::expect::parse(&sentence).unwrap().rule {
            super::super::ast::Rule::Regress(mut r) => {
                r.past = given;
                r
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(summed(&[4.0, 1.0, 3.0, 2.0], Stat::Median), 2.5);
        assert_eq!(summed(&[5.0, 1.0, 3.0], Stat::Median), 3.0);
        assert_eq!(summed(&[5.0, 1.0, 3.0], Stat::Mean), 3.0);
        assert_eq!(summed(&[5.0, 1.0, 3.0], Stat::Min), 1.0);
        assert_eq!(summed(&[5.0, 1.0, 3.0], Stat::Max), 5.0);
    }

    #[test]
    fn a_judged_baseline_names_its_runs_oldest_first_and_its_seeds_apart() {
        let r = opens(
            "the median of the last 3 passing runs + 500ms",
            Some(past(&[
                (7, 700.0, false),
                (4, 900.0, true),
                (6, 800.0, false),
                (2, 100.0, true),
            ])),
        );
        let Basis::Judged(made) = basis(&r, ValueKind::Duration) else {
            panic!("three past runs are enough")
        };
        assert_eq!(made.runs, vec![4, 6, 7], "the newest three, not #2");
        assert_eq!(made.limit, 1300.0);
        assert_eq!(
            made.words,
            "median of runs #6, #7 and seed #4: 800ms + 500ms"
        );
        let last = opens("the last passing run", Some(past(&[(9, 640.0, false)])));
        let Basis::Judged(made) = basis(&last, ValueKind::Duration) else {
            panic!("one run is enough")
        };
        assert_eq!(made.words, "run #9: 640ms");
    }

    #[test]
    fn too_few_runs_seed_the_first_as_it_is_and_a_later_one_only_if_it_holds_against_them() {
        let none = opens("the max of the last 3 passing runs", Some(vec![]));
        assert_eq!(basis(&none, ValueKind::Duration), Basis::Short(None));
        let (why, seeds) = short(&none, None, false);
        assert!(seeds, "the first run seeds whatever it shows");
        assert!(why.contains("the first seed, taken as it is"), "{why}");

        let two = opens(
            "the max of the last 3 passing runs + 100ms",
            Some(past(&[(2, 500.0, true), (1, 600.0, true)])),
        );
        let Basis::Short(Some(so_far)) = basis(&two, ValueKind::Duration) else {
            panic!("two seeds of three")
        };
        assert_eq!(so_far.limit, 700.0);
        assert_eq!(so_far.words, "max of seeds #1, #2: 600ms + 100ms");
        let (why, seeds) = short(&two, Some(&so_far), true);
        assert!(seeds);
        assert_eq!(
            why,
            "the history has 2 past runs fit for its baseline; the max of the last 3 passing runs \
             needs 3; this run seeds it: it holds against the ones so far (max of seeds #1, #2: \
             600ms + 100ms)"
        );
        let (why, seeds) = short(&two, Some(&so_far), false);
        assert!(!seeds, "a worse run does not become the norm");
        assert!(why.contains("this run does not seed it"), "{why}");
        assert_eq!(
            basis(&opens("the last passing run", None), ValueKind::Duration),
            Basis::NoHistory
        );
    }
}
