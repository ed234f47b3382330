//! The outputs the pages show are the program's: every fenced block of
//! README.md and of each chapter under docs/ made of `$ firedrill ...`
//! commands (optionally after `cd DIR &&`) is run from the repository's
//! root, and each output line a page shows must appear, in order, in what
//! the command prints (stdout and stderr, as a terminal shows them), line
//! for line; a line `...` on a page stands for lines left out. A changed figure, a reworded
//! message, a missing or reordered line fails.
//!
//! Blocks with any other command (`curl`, a real-clock run) are examples,
//! not outputs, and are not run; the test checks that the tour's blocks
//! are among the ones run.
//!
//! `FIREDRILL_BLESS=1 cargo test --test readme_outputs` writes the
//! program's whole output in place of each output that differs.

use std::path::{Path, PathBuf};
use std::process::Command;

/// One command of a README block and the lines shown after it.
struct Shown {
    /// The command as written, without `$ ` and without `cd DIR && `.
    command: String,
    /// Where it runs, relative to the repository's root.
    dir: PathBuf,
    /// Index in the README's lines of the first output line, and how many.
    output: std::ops::Range<usize>,
    /// The fence's indentation, stripped from every line.
    indent: usize,
}

/// Every runnable command of README.md, block by block.
fn shown(readme: &[&str]) -> Vec<Shown> {
    let mut all = Vec::new();
    let mut i = 0;
    while i < readme.len() {
        let line = readme[i];
        let indent = line.len() - line.trim_start().len();
        if !line.trim_start().starts_with("```") {
            i += 1;
            continue;
        }
        let end = (i + 1..readme.len())
            .find(|&j| readme[j].trim_start().starts_with("```"))
            .expect("every fence closes");
        all.extend(block(readme, i + 1..end, indent));
        i = end + 1;
    }
    all
}

/// The commands of one fenced block (lines `body`), if it is made of
/// `$ firedrill` commands that run in virtual time or need no clock.
fn block(readme: &[&str], body: std::ops::Range<usize>, indent: usize) -> Vec<Shown> {
    let strip = |j: usize| readme[j].get(indent..).unwrap_or("").to_string();
    let mut commands = Vec::new();
    let mut dir = PathBuf::new();
    let mut j = body.start;
    if !strip(j).starts_with("$ ") {
        return Vec::new();
    }
    while j < body.end {
        let mut command = strip(j).strip_prefix("$ ").unwrap_or_default().to_string();
        // Continuation lines.
        while command.ends_with('\\') && j + 1 < body.end {
            command.pop();
            j += 1;
            command.push_str(strip(j).trim());
        }
        j += 1;
        if let Some((cd, rest)) = command.split_once(" && ") {
            let target = cd
                .strip_prefix("cd ")
                .expect("only `cd DIR &&` before a command");
            dir.push(target);
            command = rest.to_string();
        }
        let runnable = command.starts_with("firedrill ") && !command.contains("--clock real");
        if !runnable {
            return Vec::new();
        }
        let start = j;
        while j < body.end && !strip(j).starts_with("$ ") {
            j += 1;
        }
        commands.push(Shown {
            command,
            dir: dir.clone(),
            output: start..j,
            indent,
        });
    }
    commands
}

/// What `command` prints, run by the shell in `dir` with this build's
/// firedrill first on the PATH, stderr into stdout, no colour, without
/// progress lines.
fn run(root: &Path, shown: &Shown) -> String {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_firedrill"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("{} 2>&1", shown.command))
        .current_dir(root.join(&shown.dir))
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    // Heartbeat and sweep progress lines are paced by wall time (a slow
    // machine prints some, a fast one none): the README shows none, and
    // they are left out here.
    String::from_utf8(out.stdout)
        .unwrap()
        .split_inclusive('\n')
        .filter(|line| !line.starts_with("[firedrill] "))
        .collect()
}

/// Whether `printed` is what `shown` shows: line for line (trailing
/// blanks and blank lines at either end aside), where a line `...`
/// (indented or not) stands for any number of lines left out.
fn shows(shown: &[String], printed: &str) -> bool {
    fn trimmed<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
        let lines: Vec<&str> = lines.map(str::trim_end).collect();
        let start = lines
            .iter()
            .position(|l| !l.is_empty())
            .unwrap_or(lines.len());
        let end = lines
            .iter()
            .rposition(|l| !l.is_empty())
            .map_or(start, |e| e + 1);
        lines[start..end].to_vec()
    }
    fn matches(want: &[&str], got: &[&str]) -> bool {
        match want.split_first() {
            None => got.is_empty(),
            Some((line, rest)) if line.trim() == "..." => {
                (0..=got.len()).any(|skip| matches(rest, &got[skip..]))
            }
            Some((line, rest)) => got.first() == Some(line) && matches(rest, &got[1..]),
        }
    }
    matches(
        &trimmed(shown.iter().map(String::as_str)),
        &trimmed(printed.lines()),
    )
}

/// README.md and every chapter under docs/, relative to the root.
fn pages(root: &Path) -> Vec<PathBuf> {
    let mut pages = vec![PathBuf::from("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .map(|p| PathBuf::from("docs").join(p.file_name().unwrap()))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// Every shown output of one page that differs from what the program
/// prints, each as a message; with `bless`, the page rewritten with the
/// program's output in place of each.
fn differences(root: &Path, page: &Path, bless: bool) -> (Vec<String>, Vec<String>) {
    let text = std::fs::read_to_string(root.join(page)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let all = shown(&lines);
    let mut replaced: Vec<(std::ops::Range<usize>, Vec<String>)> = Vec::new();
    let mut wrong = Vec::new();
    for s in &all {
        let want: Vec<String> = s
            .output
            .clone()
            .map(|j| lines[j].get(s.indent..).unwrap_or("").to_string())
            .collect();
        let printed = run(root, s);
        if !shows(&want, &printed) {
            let pad = " ".repeat(s.indent);
            let new = printed
                .lines()
                .map(|l| format!("{pad}{l}").trim_end().to_string());
            replaced.push((s.output.clone(), new.collect()));
            wrong.push(format!(
                "{} line {}: `{}` (in {}) shows\n{}\nbut prints\n{printed}",
                page.display(),
                s.output.start + 1,
                s.command,
                s.dir.display(),
                want.join("\n")
            ));
        }
    }
    if bless && !replaced.is_empty() {
        let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        for (range, new) in replaced.into_iter().rev() {
            out.splice(range, new);
        }
        std::fs::write(root.join(page), out.join("\n") + "\n").unwrap();
    }
    let ran = all.into_iter().map(|s| s.command).collect();
    (wrong, ran)
}

#[test]
fn every_firedrill_output_a_page_shows_is_what_the_program_prints() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bless = std::env::var_os("FIREDRILL_BLESS").is_some();
    let mut wrong = Vec::new();
    let mut ran = Vec::new();
    for page in pages(root) {
        let (w, r) = differences(root, &page, bless);
        wrong.extend(w);
        ran.extend(r.into_iter().map(|c| (page.clone(), c)));
    }
    for (page, tour) in [
        (
            "README.md",
            "firedrill run experiments/quickstart.yaml --clock virtual",
        ),
        (
            "docs/fault-proxy.md",
            "firedrill validate probability_over_100.yaml",
        ),
        (
            "docs/experiments.md",
            "firedrill validate several_problems.yaml",
        ),
    ] {
        assert!(
            ran.iter().any(|(p, c)| p == Path::new(page) && c == tour),
            "{page}'s `{tour}` is not run: {ran:#?}"
        );
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

#[test]
fn a_shown_output_matches_line_for_line_where_dots_stand_for_lines_left_out() {
    let printed = "\n  ok   x 1\n  ok   y 2\n\n  PASSED: 2 of 2\n";
    let shown = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(shows(
        &shown(&["  ok   x 1", "  ok   y 2", "", "  PASSED: 2 of 2"]),
        printed
    ));
    assert!(shows(&shown(&["  ...", "  PASSED: 2 of 2"]), printed));
    assert!(shows(&shown(&["  ok   x 1", "..."]), printed));
    // A line left out without `...`, a changed figure, another order.
    assert!(!shows(
        &shown(&["  ok   x 1", "", "  PASSED: 2 of 2"]),
        printed
    ));
    assert!(!shows(&shown(&["  ok   x 2", "..."]), printed));
    assert!(!shows(
        &shown(&["...", "  PASSED: 2 of 2", "  ok   x 1"]),
        printed
    ));
}

#[test]
fn the_journal_line_the_defense_line_chapter_shows_is_the_first_transition_of_the_virtual_quickstart()
 {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("docs/defense-line.md")).unwrap();
    let shown = page
        .lines()
        .find(|l| l.starts_with("{\"at_ms\":"))
        .expect("the defense line chapter shows a journal line");
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .args([
            "run",
            "experiments/quickstart.yaml",
            "--clock",
            "virtual",
            "--quiet",
        ])
        .arg("--report-dir")
        .arg(dir.path())
        .current_dir(root)
        .status()
        .unwrap();
    assert!(status.success());
    let journal = std::fs::read_to_string(dir.path().join("journal.jsonl")).unwrap();
    assert_eq!(shown, journal.lines().next().unwrap());
}

/// The legend of the counts in getting started is the one the program
/// defines (`src/experiment/vocabulary.rs`), word for word.
#[test]
fn the_legend_of_the_counts_is_the_vocabulary_the_program_counts_with() {
    let page = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/getting-started.md"),
    )
    .unwrap();
    let legend = page
        .split("<!-- vocabulary: begin -->\n")
        .nth(1)
        .and_then(|rest| rest.split("<!-- vocabulary: end -->").next())
        .expect("getting started has the vocabulary markers");
    assert_eq!(
        legend,
        firedrill::experiment::vocabulary::legend_markdown(),
        "docs/getting-started.md's legend differs from src/experiment/vocabulary.rs"
    );
}
