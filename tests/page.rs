//! The pages that tell a pool's story, a run not healthy before injection
//! and a halted run, opened in headless Chromium (as tests/html_report.rs
//! does), and the report files behind them.
//!
//! `FIREDRILL_SCREENSHOTS=DIR cargo test --test page` keeps the
//! screenshots (`pool-1400.png`, `not-healthy-800.png`, ...) in DIR.
#![allow(clippy::disallowed_methods)] // real processes, bounded by a deadline

mod browser_support;
mod client_support;

use browser_support::{count, renders_in_chromium, root, run};
use serde_json::Value;

/// The `x` and `width` percentages of every rect of `class` in `html`.
fn rects(html: &str, class: &str) -> Vec<(f64, f64)> {
    html.split(&format!("<rect class=\"{class}\" x=\""))
        .skip(1)
        .map(|rest| {
            let x = rest.split('%').next().unwrap().parse().unwrap();
            let width = rest.split("width=\"").nth(1).unwrap();
            (x, width.split('%').next().unwrap().parse().unwrap())
        })
        .collect()
}

/// `ms` as the page writes a position on a `axis_ms` axis.
fn pct(ms: f64, axis_ms: f64) -> f64 {
    (ms / axis_ms * 10_000.0).round() / 100.0
}

/// `firedrill run` of `experiment` in virtual time with its console
/// summary: the report directory, the exit code and stdout.
fn console_run(experiment: &str) -> (tempfile::TempDir, Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .arg("run")
        .arg(root().join(experiment))
        .args(["--clock", "virtual", "--report-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    (dir, out.status.code(), stdout)
}

/// Server `name`'s health changes in report.json: (at_ms, healthy).
fn changes(report: &Value, name: &str) -> Vec<(f64, bool)> {
    report["pools"][0]["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap()["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["at_ms"].as_f64().unwrap(),
                c["healthy"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[test]
fn the_pool_page_draws_a_health_band_per_server_with_the_ejection_where_it_was() {
    let (html, report) = renders_in_chromium("experiments/pool_instance_dies.yaml", "pool");
    browser_support::each_legend_means_one_thing(&html);
    let axis = report["duration_ms"].as_f64().unwrap();
    assert_eq!(count(&html, "class=\"row health-row\""), 3, "a, b and c");
    // b is ejected where report.json says, and ramps for the 12 s slow
    // start when it comes back; a and c are never ejected.
    let b = changes(&report, "b");
    let (out, back) = (b[1], b[2]);
    assert_eq!((out.1, back.1), (false, true), "{b:?}");
    let ejected = rects(&html, "health hs-ejected");
    assert_eq!(ejected.len(), 1, "only b is ever ejected: {ejected:?}");
    assert!(
        (ejected[0].0 - pct(out.0, axis)).abs() < 0.01,
        "{ejected:?}"
    );
    assert!(
        (ejected[0].1 - pct(back.0 - out.0, axis)).abs() < 0.01,
        "{ejected:?}"
    );
    let ramping = rects(&html, "health hs-ramping");
    assert_eq!(ramping.len(), 1);
    assert!((ramping[0].0 - pct(back.0, axis)).abs() < 0.01);
    assert!((ramping[0].1 - pct(12_000.0, axis)).abs() < 0.01);
    // Before the first check passes no server is in rotation: named.
    assert_eq!(count(&html, "health hs-waiting"), 3);
    assert!(html.contains("no server in rotation yet: before the first health check passes"));
    // The journal has the five health changes; the page does not say
    // nothing happened.
    assert_eq!(count(&html, "<td>health</td>"), 5);
    assert!(!html.contains("No breaker changed state"));
    assert!(html.contains("b-down on instance b"));
}

#[test]
fn the_pool_page_draws_each_servers_share_per_bucket_and_b_has_none_while_ejected() {
    let (html, report) = renders_in_chromium("experiments/pool_instance_dies.yaml", "pool-share");
    for class in ["share server-1", "share server-2", "share server-3"] {
        assert!(
            count(&html, &format!("<rect class=\"{class}\"")) > 20,
            "{class}"
        );
    }
    let b = changes(&report, "b");
    let (out, back) = (b[1].0 / 1000.0, b[2].0 / 1000.0);
    let mut seen = 0;
    for second in (out as u32)..(back as u32) {
        let title = format!("<g><title>{second}s–{}s: ", second + 1);
        let text = html.split(&title).nth(1).expect(&title);
        let text = text.split("</title>").next().unwrap();
        assert!(text.contains("b 0% (0)"), "{second}s: {text}");
        seen += 1;
    }
    assert_eq!(seen, 9, "12 s to 21 s");
    // After slow start, a third each.
    let late = html.split("<g><title>40s–41s: ").nth(1).unwrap();
    assert!(
        late.starts_with("a 3") && late.contains("b 3"),
        "{}",
        &late[..40]
    );
}

#[test]
fn the_pools_requests_name_their_server_and_the_first_second_has_no_server() {
    let dir = tempfile::tempdir().unwrap();
    run(
        &root().join("experiments/pool_instance_dies.yaml"),
        dir.path(),
    );
    let text = std::fs::read_to_string(dir.path().join("requests.jsonl")).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Sent before the first check passed and never answered by a server
    // (a retry after 1 s may reach one).
    let early: Vec<&Value> = lines
        .iter()
        .filter(|r| r["sent_ms"].as_f64().unwrap() < 1000.0 && r["reached_dependency"] == 0)
        .collect();
    assert!(early.len() > 50, "{}", early.len());
    for r in &early {
        assert_eq!(r["defense_error"], "no_server", "{r}");
        assert!(r.get("served_by").is_none(), "{r}");
    }
    assert!(!text.contains("\"defense_error\":\"connect\""));
    let answered = lines.iter().filter(|r| r["status"] == 200);
    for r in answered {
        let server = r["served_by"]["server"].as_str().unwrap();
        assert!(["a", "b", "c"].contains(&server), "{r}");
    }
}

#[test]
fn a_run_not_healthy_before_injection_reads_not_healthy_with_its_expectations_not_judged() {
    let (html, report) =
        renders_in_chromium("fixtures/steady/unhealthy_before.yaml", "not-healthy");
    assert_eq!(report["verdict"], "not_healthy");
    assert!(html.contains("id=\"verdict\">NOT HEALTHY</p>"));
    assert!(html.contains("Not healthy before injection: the steady state failed"));
    // The steady state's failure first, then the expectation not judged.
    let verdicts = report["verdicts"].as_array().unwrap();
    assert!(
        verdicts[0]["expectation"]
            .as_str()
            .unwrap()
            .contains("between 0s and 3s")
    );
    assert!(verdicts[0]["not_judged"].is_null());
    assert_eq!(verdicts[1]["expectation"], "route shop requests >= 1");
    assert!(verdicts[1]["not_judged"].is_string());
    assert!(html.contains("id=\"expect-1\" class=\"fail\""));
    assert!(html.contains("id=\"expect-2\" class=\"skip"));
    assert_eq!(count(&html, "✗ FAIL"), 1);
    assert!(html.contains("not healthy at 3s"));
}

#[test]
fn a_run_not_healthy_before_injection_is_skipped_in_junit_and_says_so_on_the_console() {
    let (dir, code, stdout) = console_run("fixtures/steady/unhealthy_before.yaml");
    assert_eq!(code, Some(4));
    assert!(
        stdout.contains(
            "NOT HEALTHY BEFORE INJECTION: 0 of 1 steady-state check held; 1 expectation not judged"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("  skip route shop requests >= 1"),
        "{stdout}"
    );
    assert!(!stdout.contains("FAIL route shop requests"), "{stdout}");
    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    assert!(
        junit.contains("tests=\"2\" skipped=\"1\" failures=\"1\" errors=\"0\""),
        "{junit}"
    );
    assert!(junit.contains("<skipped message=\"not judged: not healthy before injection"));
}

/// Halted at about 4 s of a 2 h drill drawn in 12 s buckets: the first
/// bucket is partial, and nothing of it is drawn past the halt line.
#[test]
fn a_halted_run_draws_nothing_past_the_halt_line_and_says_what_halted_it() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join("fixtures/experiments/halt_on_errors.yaml"))
        .unwrap()
        .replace("duration: 60s", "duration: 2h");
    assert!(text.contains("duration: 2h"));
    let file = dir.path().join("halted_long.yaml");
    std::fs::write(&file, text).unwrap();
    let (html, report) = renders_in_chromium(file.to_str().unwrap(), "halted-long");
    assert!(html.contains("Buckets of 12s."));
    let cut = pct(
        report["duration_ms"].as_f64().unwrap(),
        report["planned_duration_ms"].as_f64().unwrap(),
    );
    let bars: Vec<(f64, f64)> = ["success", "error"]
        .iter()
        .flat_map(|c| rects(&html, c))
        .collect();
    assert!(!bars.is_empty());
    for (x, width) in bars {
        assert!(
            x + width <= cut + 0.001,
            "a bar to {}% past the cut at {cut}%",
            x + width
        );
    }
    assert!(html.contains("Halted at 4s by <code>route shop success &lt; 50% for 2s</code>"));
    assert!(html.contains("id=\"verdict\">HALTED</p>"));
}

#[test]
fn a_halted_runs_console_verdict_says_what_halted_it_without_contradiction() {
    let (_dir, code, stdout) = console_run("fixtures/experiments/halt_on_errors.yaml");
    assert_eq!(code, Some(1));
    assert!(!stdout.contains("FAILED (halted)"), "{stdout}");
    assert!(
        stdout.contains(
            "HALTED at 4.0s by `route shop success < 50% for 2s`, so the run fails; \
             1 of 1 expectation held over the 4.0s it ran"
        ),
        "{stdout}"
    );
}
