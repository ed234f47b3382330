//! trend.html of a history in headless Chromium: one chart per figure,
//! every run a point, the run that regressed marked on each of its
//! figures, each sentence's state per run in the table, every point and table row linking to a report.html that
//! exists, no console message, and screenshots at 1400 and 800 px that are
//! not blank (`FIREDRILL_SCREENSHOTS=DIR` keeps them).

mod browser_support;
mod client_support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use browser_support::{chromium, colours, count, dom, screenshot};
use serde_json::Value;

const DRILL: &str = "experiments/history/scheduled-drill.yaml";

#[test]
fn the_trend_page_draws_a_chart_per_figure_with_the_regressed_run_marked_in_chromium() {
    let Some(browser) = chromium() else {
        client_support::missing("chromium (apt-get install chromium)")
    };
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("history.db");
    for seed in 1..=6 {
        let report = dir.path().join(format!("runs/{seed}"));
        let mut command = Command::new(env!("CARGO_BIN_EXE_firedrill"));
        command
            .args(["run", DRILL, "--quiet", "--seed", &seed.to_string()])
            .arg("--history")
            .arg(&history)
            .arg("--report-dir")
            .arg(&report);
        if seed == 6 {
            command.args([
                "--set",
                "defense.routes.inventory.breaker.sliding_window_size=60",
                "--set",
                "defense.routes.inventory.breaker.minimum_calls=60",
            ]);
        }
        let out = command.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(if seed == 6 { 1 } else { 0 }),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let pages = dir.path().join("trend");
    let out = Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .args(["history", "--format", "json", "--history"])
        .arg(&history)
        .arg("--html")
        .arg(&pages)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let runs: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let figures: BTreeSet<&String> = runs
        .iter()
        .flat_map(|r| r["figures"].as_object().unwrap().keys())
        .collect();
    let failed = runs.iter().find(|r| r["passed"] == false).unwrap();
    let failed_figures = failed["figures"].as_object().unwrap().len();

    let page = pages.join("trend.html");
    let (html, messages) = dom(&browser, &page, "");
    assert_eq!(messages, Vec::<String>::new(), "console messages");
    assert_eq!(
        count(&html, "<figure class=\"figure\""),
        figures.len(),
        "a chart per figure"
    );
    for figure in &figures {
        assert!(
            html.contains(&format!("data-figure=\"{figure}\"")),
            "{figure}"
        );
    }
    assert_eq!(
        count(&html, "class=\"run failed\""),
        failed_figures,
        "the regressed run is marked on each of its figures"
    );
    let points: usize = runs
        .iter()
        .map(|r| r["figures"].as_object().unwrap().len())
        .sum();
    assert_eq!(
        count(&html, "<circle class=\"run"),
        points,
        "a point per run and figure"
    );
    sentence_states(&html);
    limits_with_units(&html);
    // Every link, from the points and the table, reaches a report.html.
    let links: BTreeSet<&str> = html
        .split("href=\"")
        .skip(1)
        .map(|rest| &rest[..rest.find('"').unwrap()])
        .collect();
    assert_eq!(links.len(), 6, "{links:?}");
    for link in links {
        assert!(link.starts_with("../runs/"), "{link}");
        assert!(Path::new(&pages).join(link).is_file(), "{link}");
    }
    for (width, name) in [(1400, "1400"), (800, "800")] {
        let pixels = screenshot(&browser, &page, width, &format!("history-trend-{name}.png"));
        assert!(colours(&pixels) > 20, "the {width}px screenshot is blank");
    }
}

/// The limit each regression sentence was judged against, drawn on its
/// figure's chart with the figure's unit: only the sixth run was judged
/// (the five before seeded the baselines), so each chart has one limit.
fn limits_with_units(html: &str) {
    assert_eq!(
        count(html, "<circle class=\"limit\""),
        2,
        "a limit per judged sentence"
    );
    assert_eq!(count(html, "<polyline class=\"limit\""), 2);
    for (figure, unit) in [
        ("breaker inventory opens", " ms<"),
        ("route shop success", "%<"),
    ] {
        let chart = &html[html
            .find(&format!("data-figure=\"{figure}\""))
            .expect(figure)..];
        let chart = &chart[..chart.find("</figure>").unwrap()];
        let caption = if unit == "%<" { "(%)" } else { "(ms)" };
        assert!(
            chart.contains(&format!("<figcaption>{figure} {caption}</figcaption>")),
            "{chart}"
        );
        let title = &chart[chart.find("<circle class=\"limit\"").expect("a limit")..];
        let title = &title[..title.find("</title>").unwrap() + 1];
        assert!(
            title.contains("#6 judged against ") && title.contains(unit),
            "{title}"
        );
    }
}

/// Each sentence's state in each run, in the table: the two regression
/// sentences seeded by runs 1 to 5, the breaker's failed by run 6.
fn sentence_states(html: &str) {
    assert_eq!(
        count(html, "<td class=\"state-"),
        6 * 3,
        "a state per run and sentence"
    );
    assert_eq!(count(html, "<td class=\"state-seed\">seed</td>"), 2 * 5);
    assert_eq!(count(html, "<td class=\"state-failed\">FAILED</td>"), 1);
    // The failed run's row names the sentence that failed, by the column
    // the FAILED mark stands in.
    let row = html
        .split("<tr class=\"run\">")
        .skip(1)
        .find(|r| r.contains("state-failed"))
        .expect("the failed run's row");
    let column = row
        .split("<td class=\"state-")
        .position(|c| c.starts_with("failed"))
        .unwrap();
    assert!(
        row.contains("<td class=\"failed-sentences\"><span title=\""),
        "{row}"
    );
    assert!(
        row.contains(&format!("\">expect {column}</span></td>")),
        "the failed sentence is expect {column}: {row}"
    );
    let passed_rows = html
        .split("<tr class=\"run\">")
        .skip(1)
        .filter(|r| !r.contains("state-failed"))
        .filter(|r| r.contains("<td class=\"failed-sentences\"></td>"))
        .count();
    assert_eq!(passed_rows, 5, "a run with no failed sentence names none");
    assert!(
        html.contains("expect 2: <code>breaker inventory opens no later than"),
        "the sentences the columns stand for"
    );
}
