//! The page drawn from pictures made here: where a halted run's last
//! bucket ends, where a latency step rises, how a run not healthy before
//! injection and its expectations read, and a pool's journal.

use super::render;
use crate::clock::Duration;
use crate::experiment::timeline::RequestRecord;
use crate::report::html::picture::{Facts, Fold};

/// Facts of a 10 s run that stopped at `duration_ms`, ending as `ending`
/// (JSON), with `more` fields (JSON members, each followed by a comma).
fn facts(duration_ms: f64, ending: &str, more: &str) -> Facts {
    let text = format!(
        "{{{more} \"experiment\": \"t\", \"seed\": 1, \"clock\": \"virtual\", \
         \"duration_ms\": {duration_ms}, \"planned_duration_ms\": 10000.0, \
         \"ending\": {ending}, \"passed\": false, \"verdicts\": [], \"breakers\": [], \
         \"faults\": []}}"
    );
    serde_json::from_str(&text).unwrap()
}

/// Twenty requests a second from 0 up to `until_ms`, each answered in
/// `latency(sent_ms)` milliseconds.
fn fold(until_ms: f64, latency: impl Fn(f64) -> f64) -> Fold {
    let mut fold = Fold::new(10_000.0);
    let mut sent = 0.0;
    let mut id = 0;
    while sent < until_ms {
        let mut r = RequestRecord::sent(id, "shop", "/shop", Duration::ZERO);
        r.status = Some(200);
        fold.request(sent, Some(latency(sent)), &r);
        sent += 50.0;
        id += 1;
    }
    fold
}

/// Every `x` and `width` percentage pair of the rects of one class.
fn rects(html: &str, class: &str) -> Vec<(f64, f64)> {
    let start = format!("<rect class=\"{class}\" x=\"");
    html.split(&start)
        .skip(1)
        .map(|rest| {
            let x: f64 = rest.split('%').next().unwrap().parse().unwrap();
            let width = rest.split("width=\"").nth(1).unwrap();
            (x, width.split('%').next().unwrap().parse().unwrap())
        })
        .collect()
}

#[test]
fn a_halted_runs_last_bucket_ends_at_the_halt_line() {
    // Halted at 4.5 s of 10 s: the bucket 4-5 s is half run.
    let halted = r#"{"kind": "halted", "condition": "route shop success < 50% for 2s"}"#;
    let html = render(&fold(4500.0, |_| 10.0).picture(facts(4500.0, halted, "")));
    let bars = rects(&html, "success");
    assert_eq!(bars.len(), 5, "buckets 0 to 4");
    let end = bars.iter().map(|(x, w)| x + w).fold(0.0, f64::max);
    assert!(
        (end - 45.0).abs() < 0.01,
        "the last bar ends at {end}%, not 45%"
    );
    // Its ten requests in half a bucket stand as tall as a whole bucket's
    // twenty: a halt is not a drop in traffic.
    let heights: Vec<&str> = html
        .split("<rect class=\"success\"")
        .skip(1)
        .map(|r| {
            r.split("height=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
        })
        .collect();
    assert_eq!(heights.first(), heights.last(), "{heights:?}");
    assert!(
        html.contains("<title>4s–4.5s: 10 success</title>"),
        "the count as it is"
    );
}

#[test]
fn a_latency_step_rises_where_its_bucket_starts_not_before() {
    // 20 ms until 5 s, then 200 ms: the step goes up at x = 500 of 1000.
    let html = render(
        &fold(10_000.0, |t| if t < 5000.0 { 20.0 } else { 200.0 }).picture(facts(
            10_000.0,
            r#"{"kind": "completed"}"#,
            "",
        )),
    );
    let path = html
        .split("<path class=\"step line-p50\" vector-effect=\"non-scaling-stroke\" d=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    // Top 200 ms: 20 ms sits at y 90.2, 200 ms at y 2.
    assert_eq!(
        path,
        "M0.00,90.20 H100.00 V90.20 H200.00 V90.20 H300.00 V90.20 H400.00 V90.20 H500.00 V2.00 H600.00 V2.00 H700.00 V2.00 H800.00 V2.00 H900.00 V2.00 H1000.00"
    );
    assert!(html.contains("<title>5s–6s: p50 200ms, p99 200ms</title>"));
    assert!(html.contains("<span class=\"ytick top\" style=\"top:0.0%\">200ms</span>"));
}

#[test]
fn a_run_not_healthy_before_injection_says_so_and_leaves_its_expectations_not_judged() {
    let ending = r#"{"kind": "not_healthy", "failed": ["route shop success between 0s and 3s >= 99% (seen: 0.0%)"]}"#;
    let verdicts = r#"[
        {"expectation": "route shop success between 0s and 3s >= 99%", "passed": false,
         "expected": "99%", "seen": "0.0%"},
        {"expectation": "route shop requests >= 1", "passed": false, "expected": "",
         "seen": "", "not_judged": "not healthy before injection, no fault was injected"}]"#;
    let mut f = facts(3000.0, ending, r#""verdict": "not_healthy","#);
    f.verdicts = serde_json::from_str(verdicts).unwrap();
    let html = render(&fold(3000.0, |_| 10.0).picture(f));
    assert!(html.contains("id=\"verdict\">NOT HEALTHY</p>"));
    assert!(html.contains("<title>t — not healthy</title>"));
    assert!(html.contains("Not healthy before injection: the steady state failed"));
    assert!(html.contains("<li>route shop success between 0s and 3s &gt;= 99% (seen: 0.0%)</li>"));
    let first = html.find("id=\"expect-1\" class=\"fail\"").unwrap();
    let second = html.find("id=\"expect-2\" class=\"skip\"").unwrap();
    assert!(first < second, "the steady state's failure first");
    assert!(html.contains("– not judged</span> <code>route shop requests &gt;= 1</code>"));
    assert!(html.contains("not judged: not healthy before injection, no fault was injected"));
    assert_eq!(
        html.matches("✗ FAIL").count(),
        1,
        "only the steady state fails"
    );
}

#[test]
fn a_pools_health_changes_are_in_the_journal_and_no_breaker_is_not_nothing() {
    let pools = r#""pools": [{"name": "inventory", "starts_out": true, "slow_start_ms": 3000.0,
        "servers": [{"name": "b", "changes": [
            {"at_ms": 1000.0, "healthy": true, "by": "active check passed 2 times"},
            {"at_ms": 5000.0, "healthy": false, "by": "active check: status 503"}]}]}],"#;
    let f = facts(10_000.0, r#"{"kind": "completed"}"#, pools);
    let html = render(&Fold::new(10_000.0).picture(f));
    assert!(!html.contains("No breaker changed state"), "health changed");
    assert!(html.contains(
        "<tr><td>1s</td><td>pool inventory instance b</td><td>not in rotation yet → in rotation</td>\
         <td>health</td><td>active check passed 2 times</td></tr>"
    ));
    assert!(html.contains("<td>in rotation → ejected</td>"));
    // The band: waiting, in, ejected from 5 s on.
    assert_eq!(rects(&html, "health hs-waiting"), [(0.0, 10.0)]);
    assert_eq!(rects(&html, "health hs-in"), [(10.0, 40.0)]);
    assert_eq!(rects(&html, "health hs-ejected"), [(50.0, 50.0)]);
    assert!(html.contains("no server in rotation yet: before the first health check passes"));
    // Without pools or breakers, the old sentence.
    let none =
        render(&Fold::new(10_000.0).picture(facts(10_000.0, r#"{"kind": "completed"}"#, "")));
    assert!(none.contains("<p>No breaker changed state.</p>"));
}

#[test]
fn the_routes_table_counts_in_the_vocabulary_and_the_page_defines_every_word() {
    let routes = r#""routes": [
        {"route": "shop", "requests": 1000, "success_pct": 97.5, "fallback_pct": 40.8,
         "errors_pct": 2.5, "rejected_pct": 38.0, "timeouts": 15,
         "latency_ms": {"p50": 1.31, "p90": 3.0, "p99": 12.5, "max": 20.0}},
        {"route": "old", "requests": 10, "success_pct": 90.0, "fallback_pct": 0.0,
         "rejected_pct": 0.0, "timeouts": 0, "latency_ms": {"p50": 1.0, "p99": 2.0}}],"#;
    let html =
        render(&Fold::new(10_000.0).picture(facts(10_000.0, r#"{"kind": "completed"}"#, routes)));
    let section = html
        .split("<section id=\"routes\">")
        .nth(1)
        .expect("a routes section");
    let section = section.split("</section>").next().unwrap();
    // The columns, in the vocabulary's order, each with its meaning.
    let mut at = 0;
    for term in crate::experiment::vocabulary::TERMS {
        let th = format!(
            "<th><abbr title=\"{}\">{}</abbr></th>",
            super::esc(term.meaning),
            term.word
        );
        let found = section[at..]
            .find(&th)
            .unwrap_or_else(|| panic!("no column {}", term.word));
        at += found + th.len();
        // And defined below the table, once.
        assert_eq!(
            section.matches(&format!("<dt>{}</dt>", term.word)).count(),
            1,
            "{}",
            term.word
        );
    }
    assert!(section.contains(
        "<tr><td>shop</td><td>1000</td><td>97.5%</td><td>40.8%</td><td>2.5%</td>\
         <td>38.0%</td><td>15</td><td>1.3ms</td><td>12.5ms</td></tr>"
    ));
    // A report of an older version has no errors_pct: 100 - success.
    assert!(
        section.contains("<tr><td>old</td><td>10</td><td>90.0%</td><td>0.0%</td><td>10.0%</td>")
    );
    assert!(section.contains("<dd>the caller got a success status (2xx or 3xx, or the route&#39;s own <code>success</code> list)"));
    // No load of its own: no table.
    let none =
        render(&Fold::new(10_000.0).picture(facts(10_000.0, r#"{"kind": "completed"}"#, "")));
    assert!(!none.contains("id=\"routes\""));
}
