//! `report.html` in a real browser: headless Chromium (installed by
//! `.ci/run` from Debian's packages) opens the page from disk, runs its
//! script, and the test reads the DOM it ended with, every console message
//! it logged, and screenshots at 1400 and 800 px.
//!
//! `FIREDRILL_SCREENSHOTS=DIR cargo test --test html_report` also keeps the
//! screenshots in DIR (the README's picture is made this way).
#![allow(clippy::disallowed_methods)] // real processes, bounded by a deadline

mod browser_support;
mod client_support;

use std::path::PathBuf;
use std::process::Command;

use browser_support::{chromium, count, dom, renders_in_chromium, root, run};

#[test]
fn quickstart_page_draws_its_breaker_fault_and_routes_in_chromium() {
    let (html, report) = renders_in_chromium("experiments/quickstart.yaml", "quickstart");
    browser_support::each_legend_means_one_thing(&html);
    assert_eq!(count(&html, "class=\"row route-row\""), 1);
    assert_eq!(count(&html, "class=\"row latency-row\""), 1);
    assert_eq!(count(&html, "<g class=\"transition\">"), 3);
    assert!(html.contains("id=\"verdict\">PASSED</p>"));
    // The routes table, in the words the console and the README use,
    // each defined on the page.
    let route = &report["routes"][0];
    assert!(html.contains(&format!(
        "<tr><td>{}</td><td>{}</td><td>{:.1}%</td>",
        route["route"].as_str().unwrap(),
        route["requests"],
        route["success_pct"].as_f64().unwrap()
    )));
    for term in firedrill::experiment::vocabulary::TERMS {
        assert_eq!(
            count(&html, &format!("<dt>{}</dt>", term.word)),
            1,
            "{}",
            term.word
        );
    }
}

#[test]
fn flapping_page_draws_every_state_band_in_chromium() {
    let (html, report) = renders_in_chromium(
        "experiments/half_open_flapping_permitted_1.yaml",
        "flapping",
    );
    let transitions = report["breakers"][0]["transitions"]
        .as_array()
        .unwrap()
        .len();
    assert!(transitions > 3, "a flapping run: {transitions} transitions");
    assert_eq!(count(&html, "<g class=\"transition\">"), transitions);
}

#[test]
fn a_halted_run_draws_the_cut_where_it_stopped() {
    let (html, report) = renders_in_chromium("fixtures/experiments/halt_on_errors.yaml", "halted");
    browser_support::each_legend_means_one_thing(&html);
    assert_eq!(report["ending"]["kind"], "halted");
    let cut = report["duration_ms"].as_f64().unwrap()
        / report["planned_duration_ms"].as_f64().unwrap()
        * 100.0;
    assert!(
        html.contains(&format!("id=\"cut\" style=\"left:{cut:.3}%\"")),
        "cut at {cut:.3}%"
    );
    assert!(html.contains("halted at 4s"));
    assert!(html.contains("id=\"verdict\">HALTED</p>"));
}

/// The console check sees what a broken page logs: a script error and a
/// blocked fetch (so an empty list above means a clean page).
#[test]
fn the_console_check_sees_script_errors_and_blocked_fetches() {
    let Some(browser) = chromium() else {
        client_support::missing("chromium (apt-get install chromium)")
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("broken.html");
    std::fs::write(
        &page,
        "<!doctype html><html><head><meta http-equiv=\"Content-Security-Policy\" \
         content=\"default-src 'none'; script-src 'unsafe-inline'\"></head><body>\
         <img src=\"http://127.0.0.1:9/x.png\"><script>missing();</script></body></html>",
    )
    .unwrap();
    let (_, messages) = dom(&browser, &page, "");
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(
        messages
            .iter()
            .any(|m| m.contains("Content Security Policy"))
    );
    assert!(messages.iter().any(|m| m.contains("ReferenceError")));
}

/// Every experiment's page is one file with nothing to fetch, under 500 KB.
#[test]
fn every_experiment_page_is_self_contained_and_under_500_kb() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("experiments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 10);
    for file in files {
        let dir = tempfile::tempdir().unwrap();
        run(&file, dir.path());
        let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
        assert!(
            html.len() < 500_000,
            "{}: {} bytes",
            file.display(),
            html.len()
        );
        for fetch in ["src=\"http", "href=\"http", "url(", "@import", "<link"] {
            assert!(!html.contains(fetch), "{}: {fetch}", file.display());
        }
    }
}

/// A long drill is drawn in wider buckets: the page stays bounded.
#[test]
fn a_two_hour_drill_is_drawn_in_wider_buckets_and_stays_small() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join("experiments/quickstart.yaml"))
        .unwrap()
        .replace("duration: 12s", "duration: 2h")
        .replace("rate: 20/s", "rate: 1/s");
    assert!(text.contains("duration: 2h") && text.contains("rate: 1/s"));
    let file = dir.path().join("long.yaml");
    std::fs::write(&file, text).unwrap();
    let reports = dir.path().join("report");
    run(&file, &reports);
    let html = std::fs::read_to_string(reports.join("report.html")).unwrap();
    assert!(html.contains("Buckets of 12s."), "7200 s in 600 buckets");
    assert!(html.len() < 500_000, "{} bytes", html.len());
}

/// `firedrill report DIR` draws the same page again from the files.
#[test]
fn report_command_draws_the_same_page_from_the_files() {
    let dir = tempfile::tempdir().unwrap();
    run(&root().join("experiments/quickstart.yaml"), dir.path());
    let page = dir.path().join("report.html");
    let first = std::fs::read(&page).unwrap();
    std::fs::remove_file(&page).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .arg("report")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        page.display().to_string()
    );
    assert_eq!(std::fs::read(&page).unwrap(), first);
}

/// A bad line in requests.jsonl is a located error, exit 2.
#[test]
fn report_command_names_the_file_and_line_of_a_bad_record() {
    let dir = tempfile::tempdir().unwrap();
    run(&root().join("experiments/quickstart.yaml"), dir.path());
    let requests = dir.path().join("requests.jsonl");
    let mut text = std::fs::read_to_string(&requests).unwrap();
    text.push_str("{\"sent_ms\": \"soon\"}\n");
    let lines = text.lines().count();
    std::fs::write(&requests, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .arg("report")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("requests.jsonl:{lines}:")),
        "{stderr}"
    );
    let missing = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .arg("report")
        .arg(missing.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("report.json"));
}

/// `sweep --report-dir` writes sweep.html: one row per point linked to its
/// own report, one bar per point, nothing logged in Chromium.
#[test]
fn a_sweep_page_has_a_row_and_a_bar_per_point_linked_to_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .current_dir(root())
        .args([
            "sweep",
            "experiments/half_open_flapping_permitted_1.yaml",
            "--vary",
            "defense.routes.stock.breaker.permitted_calls_in_half_open=1,3,5",
            "--chart",
            "half-open-to-open",
            "--report-dir",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let page = dir.path().join("sweep.html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(count(&html, "<tr class=\"point\">"), 3);
    assert_eq!(count(&html, "<g class=\"bar\">"), 3);
    for link in [
        "001-1/report.html",
        "002-3/report.html",
        "003-5/report.html",
    ] {
        assert!(html.contains(&format!("href=\"{link}\"")), "{link}");
        assert!(dir.path().join(link).is_file(), "{link} exists");
    }
    assert!(html.contains("half_open -&gt; open by point"));
    let Some(browser) = chromium() else {
        client_support::missing("chromium (apt-get install chromium)")
    };
    let (dom, messages) = dom(&browser, &page, "");
    assert_eq!(messages, Vec::<String>::new(), "console messages");
    assert_eq!(count(&dom, "<tr class=\"point\">"), 3);
}
