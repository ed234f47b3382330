//! Game days judged by the team's own monitoring, against a real
//! Prometheus (Debian's package, started per test by prometheus_support)
//! scraping the real checkout service (tests/services/checkout, the
//! Python prometheus_client) every second: the example of
//! docs/monitoring.md (experiments/prometheus/checkout.yaml) passes against
//! the service as written and fails against one that waits for its slow
//! dependency; a query with a typo, a query that returns nothing and a
//! Prometheus that is down each fail, located, and never pass.

mod blackbox_support;
mod browser_support;
mod client_support;
mod port_support;
mod prometheus_support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use blackbox_support::{Drill, Service, free_port};
use prometheus_support::Prometheus;

/// The example drill of docs/monitoring.md.
const EXAMPLE: &str = "experiments/prometheus/checkout.yaml";
/// Its p99 query, as written there.
const P99: &str =
    "histogram_quantile(0.99, sum by (le) (rate(checkout_request_duration_seconds_bucket[3s])))";
/// Its sentence judged during the fault.
const DURING: &str = "query checkout_p99 max during inventory-slow <= 300ms";
/// Its sentence judged before the first fault.
const BEFORE: &str = "query checkout_p99 at every step before the first fault <= 100ms";

/// The checkout service calling the drill's inventory proxy on
/// `inventory_port`, giving up on it after `call_timeout_ms`.
fn checkout(inventory_port: u16, call_timeout_ms: u64) -> Service {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = root.join("tests/services/checkout/.venv/bin/python");
    let service = root.join("tests/services/checkout/service.py");
    Service::program(
        python.to_str().unwrap(),
        &[service.to_str().unwrap()],
        &[
            (
                "DEPENDENCY_URL",
                format!("http://127.0.0.1:{inventory_port}"),
            ),
            ("CALL_TIMEOUT_MS", call_timeout_ms.to_string()),
        ],
    )
}

/// Runs the example with the PromQL of `checkout_p99` replaced by
/// `promql`, the service on `service`, Prometheus on `prometheus_port`,
/// `env` set.
fn drill(
    dir: &Path,
    service: u16,
    inventory: u16,
    prometheus_port: u16,
    promql: &str,
    env: &[(&str, &str)],
) -> Drill {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(EXAMPLE))
        .unwrap()
        .replace(P99, promql);
    drill_text(dir, &text, service, inventory, prometheus_port, env)
}

/// Runs the experiment `text` (written in `dir`) as [`drill`] runs the
/// example.
fn drill_text(
    dir: &Path,
    text: &str,
    service: u16,
    inventory: u16,
    prometheus_port: u16,
    env: &[(&str, &str)],
) -> Drill {
    let file = dir.join("checkout.yaml");
    std::fs::write(&file, text).unwrap();
    let reports = dir.join("report");
    let mut command = Command::new(env!("CARGO_BIN_EXE_firedrill"));
    command
        .env("CHECKOUT_PORT", service.to_string())
        .env("INVENTORY_PORT", inventory.to_string())
        .env("PROMETHEUS_PORT", prometheus_port.to_string())
        .envs(env.iter().copied())
        .arg("run")
        .arg(&file)
        .arg("--report-dir")
        .arg(&reports);
    Drill::finish(command, &reports)
}

/// The example against a checkout service giving up after
/// `call_timeout_ms`, judged by a fresh Prometheus scraping it.
fn example(call_timeout_ms: u64, promql: &str) -> Drill {
    let dir = tempfile::tempdir().unwrap();
    let inventory = free_port();
    let service = checkout(inventory, call_timeout_ms);
    let prometheus = Prometheus::start(&[service.port], None);
    drill(
        dir.path(),
        service.port,
        inventory,
        prometheus.port,
        promql,
        &[],
    )
}

#[test]
fn the_example_passes_against_checkout_as_written_judged_by_a_real_prometheus() {
    let run = example(100, P99);
    assert_eq!(run.exit, Some(0), "{}", run.output);
    for sentence in [DURING, BEFORE] {
        let v = run.verdict(sentence);
        assert_eq!(v["passed"], true, "{v}");
        // The figure is Prometheus's, on its own scale (seconds).
        let figure = v["figure"].as_f64().expect("a figure");
        assert!(figure > 0.0 && figure <= 0.3, "{v}");
        assert_eq!(v["unit"], "s", "{v}");
        assert!(v["seen"].as_str().unwrap().contains("step(s) of 1s"), "{v}");
    }
    // junit.xml shows Prometheus's figure of each query that held.
    assert!(run.junit.contains("<system-out>seen max "), "{}", run.junit);
}

#[test]
fn the_page_draws_the_query_under_the_bands_and_the_history_trends_its_figure() {
    let Some(browser) = browser_support::chromium() else {
        client_support::missing("chromium (apt-get install chromium)")
    };
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("history.db");
    let inventory = free_port();
    let service = checkout(inventory, 100);
    let prometheus = Prometheus::start(&[service.port], None);
    let run = drill(
        dir.path(),
        service.port,
        inventory,
        prometheus.port,
        P99,
        &[("FIREDRILL_HISTORY", history.to_str().unwrap())],
    );
    assert_eq!(run.exit, Some(0), "{}", run.output);
    // report.json: the query's series over the run, in the bound's unit,
    // with the windows its two sentences were judged over.
    let queries = run.report["queries"].as_array().expect("queries");
    assert_eq!(queries.len(), 1, "one row per query: {queries:?}");
    let q = &queries[0];
    assert_eq!(q["name"], "checkout_p99", "{q}");
    assert_eq!(q["unit"], "ms", "{q}");
    let judged: Vec<&Value> = [DURING, BEFORE]
        .iter()
        .flat_map(|s| run.verdict(s)["judged_ms"].as_array().unwrap())
        .collect();
    assert_eq!(
        q["judged_ms"]
            .as_array()
            .unwrap()
            .iter()
            .collect::<Vec<_>>(),
        judged,
        "{q}"
    );
    let duration = run.report["duration_ms"].as_f64().unwrap();
    let points: Vec<f64> = q["series"][0]["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[0].as_f64().unwrap())
        .collect();
    // A sample a second over the 8 s run (a quantile over no traffic yet
    // may miss the first ones).
    assert!(points.len() >= 5, "{q}");
    assert!(
        points
            .iter()
            .all(|t| (-1000.0..=duration + 1000.0).contains(t)),
        "points on the run's axis: {points:?}"
    );
    // The page in Chromium: the query's row under the fault's band, one
    // line per series, one mark per window judged, no console message.
    let page = dir.path().join("report/report.html");
    let (html, messages) = browser_support::dom(&browser, &page, "#expect-1");
    assert_eq!(messages, Vec::<String>::new(), "console messages");
    let fault = html
        .find("<rect class=\"fault\"")
        .expect("the fault's band");
    let row = html
        .find("<div class=\"row query-row\">")
        .expect("the query's row");
    assert!(fault < row, "the query is drawn under the fault's band");
    let row = &html[row..];
    let row = &row[..row.find("</div></div>").unwrap()];
    assert!(row.contains("<b>query checkout_p99</b>"), "{row}");
    assert_eq!(
        browser_support::count(row, "<polyline class=\"query-line"),
        1,
        "{row}"
    );
    assert_eq!(
        browser_support::count(row, "<rect class=\"query-judged\""),
        judged.len(),
        "{row}"
    );
    assert_eq!(
        browser_support::count(row, "<circle class=\"query-point\""),
        points.len(),
        "{row}"
    );
    // The history keeps the query's figure and trends it.
    let table = history_of(history.to_str().unwrap(), &[]);
    let figure = run.verdict(DURING)["figure"].as_f64().unwrap();
    let line = table
        .lines()
        .find(|l| {
            l.trim_start()
                .starts_with("query checkout_p99 max during inventory-slow ")
        })
        .unwrap_or_else(|| panic!("no trend row for the query's figure:\n{table}"));
    let shown: f64 = line.split_whitespace().last().unwrap().parse().unwrap();
    assert!((shown - figure).abs() < 0.001, "{line} against {figure}");
}

/// What `firedrill history --history HISTORY ARGS` prints; it must succeed.
fn history_of(history: &str, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .args(["history", "--history", history])
        .args(args)
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    printed
}

/// A regression sentence on the example's p99 during the fault.
const REGRESSION: &str = "query checkout_p99 max during inventory-slow no more than the max of the last 2 passing runs + 50%";

#[test]
fn a_query_regression_seeds_holds_against_checkout_as_written_and_fails_one_that_waits() {
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("history.db");
    let history = history.to_str().unwrap();
    let inventory = free_port();
    // Two services scraped by one Prometheus, the idle one adding nothing
    // to the p99's summed rates: checkout as written, and one that waits
    // for its slow dependency.
    let good = checkout(inventory, 100);
    let slow = checkout(inventory, 2000);
    let prometheus = Prometheus::start(&[good.port, slow.port], None);
    // The bounded sentence on the same figure loosened, so the regression
    // sentence alone fails the slow run; both keep one figure.
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(EXAMPLE))
        .unwrap()
        .replace(DURING, "query checkout_p99 max during inventory-slow <= 5s")
        .replace("expect:\n", &format!("expect:\n  - {REGRESSION}\n"));
    let run = |service: u16| {
        let out = dir.path().join(format!("run-{service}"));
        std::fs::create_dir_all(&out).unwrap();
        drill_text(
            &out,
            &text,
            service,
            inventory,
            prometheus.port,
            &[("FIREDRILL_HISTORY", history)],
        )
    };
    let mut figures = Vec::new();
    for i in 0..3 {
        let r = run(good.port);
        assert_eq!(r.exit, Some(0), "run {}: {}", i + 1, r.output);
        let v = r.verdict(REGRESSION);
        // The first two seed the baseline; the third is judged and holds.
        let seeds = i < 2;
        assert_eq!(v["seeds_baseline"] == true, seeds, "run {}: {v}", i + 1);
        assert_eq!(v["passed"] == true, !seeds, "run {}: {v}", i + 1);
        // On Prometheus's scale: seconds; every call given up after 100 ms.
        let figure = v["figure"].as_f64().expect("a figure");
        assert!((0.1..0.2).contains(&figure), "run {}: {v}", i + 1);
        figures.push(figure);
    }
    let broken = run(slow.port);
    assert_eq!(broken.exit, Some(1), "{}", broken.output);
    let v = broken.verdict(REGRESSION);
    assert_eq!(v["passed"], false, "{v}");
    assert!(v.get("not_judged").is_none(), "judged: {v}");
    let limit = v["limit"].as_f64().expect("the limit judged against");
    let expected = figures[1].max(figures[2]) * 1.5;
    assert!(
        (limit - expected).abs() < 1e-9,
        "{limit} against {expected}: {v}"
    );
    assert!(v["figure"].as_f64().unwrap() > limit, "{v}");
    assert_eq!(v["baseline_runs"], serde_json::json!([2, 3]), "{v}");
    // Only the regression sentence failed it.
    assert_eq!(broken.failed(), [REGRESSION], "{}", broken.output);
    // The history trends the figure the two sentences share.
    let runs: Vec<Value> =
        serde_json::from_str(&history_of(history, &["--format", "json"])).unwrap();
    let kept: Vec<f64> = runs
        .iter()
        .map(|r| {
            r["figures"]["query checkout_p99 max during inventory-slow"]
                .as_f64()
                .unwrap()
        })
        .collect();
    assert_eq!(kept[..3], figures[..], "{kept:?}");
    assert!(kept[3] > limit, "{kept:?}");
}

#[test]
fn a_checkout_that_waits_for_its_slow_dependency_fails_the_p99_sentence() {
    let run = example(2000, P99);
    assert_eq!(run.exit, Some(1), "{}", run.output);
    let v = run.verdict(DURING);
    assert_eq!(v["passed"], false, "{v}");
    assert!(v["figure"].as_f64().unwrap() > 0.3, "{v}");
    // Before the fault it was as fast as ever.
    assert_eq!(run.verdict(BEFORE)["passed"], true, "{}", run.output);
}

#[test]
fn a_query_with_a_typo_fails_naming_the_query_and_prometheus_own_message() {
    // One closing parenthesis short.
    let typo = &P99[..P99.len() - 1];
    let run = example(100, typo);
    assert_eq!(run.exit, Some(1), "{}", run.output);
    let v = run.verdict(DURING);
    assert_eq!(v["passed"], false, "{v}");
    let seen = v["seen"].as_str().unwrap();
    assert!(
        seen.starts_with("query checkout_p99 (`histogram_quantile"),
        "{seen}"
    );
    assert!(
        seen.contains("Prometheus: ") && seen.contains("parse error"),
        "{seen}"
    );
}

#[test]
fn a_query_that_returns_nothing_fails_and_never_passes() {
    let run = example(100, &P99.replace("checkout_request", "checkout_requets"));
    assert_eq!(run.exit, Some(1), "{}", run.output);
    for sentence in [DURING, BEFORE] {
        let v = run.verdict(sentence);
        assert_eq!(v["passed"], false, "{v}");
        assert!(
            v["seen"].as_str().unwrap().contains("returned no samples"),
            "{v}"
        );
        assert!(v.get("figure").is_none(), "{v}");
    }
}

#[test]
fn prometheus_down_at_start_is_exit_3_naming_the_source_and_masking_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let inventory = free_port();
    let service = checkout(inventory, 100);
    let nobody = free_port();
    let token = "tok-9f3a7c1e55";
    let run = drill(
        dir.path(),
        service.port,
        inventory,
        nobody,
        P99,
        &[("PROMETHEUS_TOKEN", token)],
    );
    assert_eq!(run.exit, Some(3), "{}", run.output);
    assert!(run.output.contains("prometheus.team.url"), "{}", run.output);
    assert!(
        run.output.contains("Prometheus unreachable at start"),
        "{}",
        run.output
    );
    assert!(!run.output.contains(token), "{}", run.output);
    // Nothing ran: no report.
    assert!(run.report.is_null(), "{}", run.report);
}

#[test]
fn a_virtual_time_experiment_with_a_prometheus_source_is_refused_located() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("virtual.yaml");
    std::fs::write(
        &file,
        "name: v\nduration: 2s\nload:\n  - { name: a, request: GET /health, rate: 5/s }\n\
         prometheus:\n  team: { url: 'http://127.0.0.1:9' }\n\
         queries:\n  up: up\nexpect:\n  - query up min >= 1\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .arg("validate")
        .arg(&file)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("prometheus") && text.contains("needs `clock: real`"),
        "{text}"
    );
    assert!(
        text.contains("virtual.yaml:6:3: prometheus"),
        "located at the source: {text}"
    );
}

/// Prometheus's rule file of the halt test: checkout's p99 over 300 ms.
const RULES: &str = "groups:
  - name: checkout
    rules:
      - alert: CheckoutSlow
        expr: histogram_quantile(0.99, sum by (le) (rate(checkout_request_duration_seconds_bucket[3s]))) > 0.3
";

/// The example with `halt: [alert CheckoutSlow firing]`, against a
/// checkout giving up after `call_timeout_ms`, judged by a Prometheus
/// evaluating [`RULES`].
fn halted_example(call_timeout_ms: u64) -> (Drill, Prometheus) {
    edited_example_with(
        call_timeout_ms,
        Some(RULES),
        "halt:\n  - alert CheckoutSlow firing\n",
    )
}

/// The example with `keys` (YAML) before its `expect:`, against a
/// checkout giving up after `call_timeout_ms`, judged by a Prometheus
/// evaluating `rules`.
fn edited_example(call_timeout_ms: u64, rules: Option<&str>, keys: &str) -> Drill {
    edited_example_with(call_timeout_ms, rules, keys).0
}

/// [`edited_example`], with its Prometheus still running.
fn edited_example_with(
    call_timeout_ms: u64,
    rules: Option<&str>,
    keys: &str,
) -> (Drill, Prometheus) {
    let (drill, prometheus) = edited_example_then(call_timeout_ms, rules, keys, None);
    (drill, prometheus.expect("not stopped"))
}

/// [`edited_example_with`], its Prometheus stopped `stop_after` into the
/// drill when given (then none is handed back).
fn edited_example_then(
    call_timeout_ms: u64,
    rules: Option<&str>,
    keys: &str,
    stop_after: Option<std::time::Duration>,
) -> (Drill, Option<Prometheus>) {
    let dir = tempfile::tempdir().unwrap();
    let inventory = free_port();
    let service = checkout(inventory, call_timeout_ms);
    let prometheus = Prometheus::start(&[service.port], rules);
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(EXAMPLE))
        .unwrap()
        .replace("expect:\n", &format!("{keys}expect:\n"));
    let file = dir.path().join("edited.yaml");
    std::fs::write(&file, text).unwrap();
    let reports = dir.path().join("report");
    let mut command = Command::new(env!("CARGO_BIN_EXE_firedrill"));
    command
        .env("CHECKOUT_PORT", service.port.to_string())
        .env("INVENTORY_PORT", inventory.to_string())
        .env("PROMETHEUS_PORT", prometheus.port.to_string())
        .arg("run")
        .arg(&file)
        .arg("--report-dir")
        .arg(&reports);
    let prometheus = match stop_after {
        Some(after) => {
            // A real process on the wall clock: stopped while the drill runs.
            #[allow(clippy::disallowed_methods)]
            std::thread::spawn(move || {
                std::thread::sleep(after);
                drop(prometheus);
            });
            None
        }
        None => Some(prometheus),
    };
    let drill = Drill::finish(command, &reports);
    (drill, prometheus)
}

#[test]
fn a_steady_state_query_is_judged_over_the_warm_up_and_after_the_last_fault() {
    let run = edited_example(
        100,
        None,
        "steady_state:\n  - query checkout_p99 max <= 300ms\n",
    );
    assert_eq!(run.exit, Some(0), "{}", run.output);
    for window in ["between 0s and 3s", "between 6s and 8s"] {
        let v = run.verdict(&format!("query checkout_p99 max {window} <= 300ms"));
        assert_eq!(v["passed"], true, "{v}");
        assert!(
            v["figure"].as_f64().expect("Prometheus's figure") > 0.0,
            "{v}"
        );
        assert!(v["seen"].as_str().unwrap().contains("step(s) of 1s"), "{v}");
    }
}

#[test]
fn a_steady_state_query_failing_over_the_warm_up_is_exit_4_and_injects_no_fault() {
    // Checkout's p99 is never under 1 ms: its lowest bucket is 5 ms.
    let run = edited_example(
        100,
        None,
        "steady_state:\n  - query checkout_p99 max <= 1ms\n",
    );
    assert_eq!(run.exit, Some(4), "{}", run.output);
    let ending = &run.report["ending"];
    assert_eq!(ending["kind"], "not_healthy", "{}", run.report);
    let failed = ending["failed"][0].as_str().unwrap();
    assert!(
        failed.starts_with("query checkout_p99 max between 0s and 3s <= 1ms (seen: max "),
        "{failed}"
    );
    // No fault was injected: the run stopped as the fault was to start.
    assert_eq!(run.report["faults"][0]["injected"], 0, "{}", run.report);
    let v = run.verdict("query checkout_p99 max between 0s and 3s <= 1ms");
    assert_eq!(v["passed"], false, "{v}");
}

#[test]
fn an_alert_firing_mid_drill_halts_it_within_two_scrape_intervals_and_removes_the_fault() {
    let (run, prometheus) = halted_example(2000);
    assert_eq!(run.exit, Some(1), "{}", run.output);
    let ending = &run.report["ending"];
    assert_eq!(ending["kind"], "halted", "{}", run.report);
    assert_eq!(ending["condition"], "alert CheckoutSlow firing", "{ending}");
    let seen = ending["seen"].as_str().unwrap();
    assert!(
        seen.contains("alert CheckoutSlow firing in Prometheus team"),
        "{seen}"
    );
    assert!(
        run.output.contains(
            "HALTED: alert CheckoutSlow firing (alert CheckoutSlow firing in Prometheus team ({__name__=\"ALERTS\", alertname=\"CheckoutSlow\""
        ),
        "{}",
        run.output
    );
    // When it fired, by Prometheus's own samples of ALERTS: the first
    // evaluation that found it firing (the rule has no `for:`, so that is
    // its activeAt).
    let (status, body) = prometheus.get(
        "/api/v1/query?query=ALERTS%7Balertname%3D%22CheckoutSlow%22%2Calertstate%3D%22firing%22%7D%5B5m%5D",
    );
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    let fired_ms = answer["data"]["result"][0]["values"][0][0]
        .as_f64()
        .unwrap_or_else(|| panic!("no firing sample of ALERTS: {body}"))
        * 1000.0;
    // When the drill removed its fault, in its own times: the fault's
    // window as applied ends there, and the run with it.
    let started = run.report["started_at_unix_ms"].as_f64().unwrap();
    let duration = run.report["duration_ms"].as_f64().expect("duration_ms");
    let windows = &run.report["faults"][0]["windows_ms"];
    let removed = windows[0][1].as_f64().expect("an applied window");
    assert!(removed <= duration, "{windows} after {duration}");
    let scrape_ms = 1000.0; // prometheus_support::SCRAPE_INTERVAL
    let removed_ms = started + removed;
    eprintln!(
        "fault removed {:.0} ms after the alert fired",
        removed_ms - fired_ms
    );
    assert!(
        removed_ms >= fired_ms && removed_ms <= fired_ms + 2.0 * scrape_ms,
        "fault removed {:.0} ms after the alert fired (bound: two scrape intervals, {} ms)",
        removed_ms - fired_ms,
        2.0 * scrape_ms
    );
}

#[test]
fn prometheus_stopping_mid_drill_is_said_once_not_per_poll() {
    // Stopped 4 s in: the halt's polls fail every second after that.
    let (run, _) = edited_example_then(
        100,
        Some(RULES),
        "halt:\n  - alert CheckoutSlow firing\n",
        Some(std::time::Duration::from_secs(4)),
    );
    let warned: Vec<&str> = run
        .output
        .lines()
        .filter(|l| l.starts_with("warning: halt: Prometheus team stopped answering at "))
        .collect();
    assert_eq!(warned.len(), 1, "{}", run.output);
    assert!(
        warned[0]
            .contains("`alert CheckoutSlow firing` cannot halt the drill until it answers again"),
        "{}",
        warned[0]
    );
    // The report keeps it too: a reader of report.json learns the stop
    // button was off from then on.
    let warnings = run.report["warnings"].as_array().expect("warnings");
    assert!(
        warnings.iter().any(|w| w.as_str().is_some_and(|w| w
            .starts_with("halt: Prometheus team stopped answering at ")
            && w.ends_with("cannot halt the drill until it answers again"))),
        "{}",
        run.report
    );
    // The drill ran to its end; the query sentences then fail, located.
    assert_eq!(run.report["ending"]["kind"], "completed", "{}", run.report);
    assert_eq!(run.exit, Some(1), "{}", run.output);
}

#[test]
fn the_same_alert_never_fires_against_checkout_as_written_and_the_drill_completes() {
    let (run, _) = halted_example(100);
    assert_eq!(run.exit, Some(0), "{}", run.output);
    assert_eq!(run.report["ending"]["kind"], "completed", "{}", run.report);
}

#[test]
fn a_halt_on_an_unknown_source_or_query_is_a_located_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("halts.yaml");
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(EXAMPLE))
        .unwrap()
        .replace(
            "expect:\n",
            "halt:\n  - alert CheckoutSlow firing on stagin\n  - query checkout_p9 > 500ms\nexpect:\n",
        );
    std::fs::write(&file, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .arg("validate")
        .arg(&file)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("halt[0]: column 30: no `prometheus:` source named `stagin`"),
        "{text}"
    );
    assert!(
        text.contains("halt[1]: column 7: unknown query `checkout_p9`"),
        "{text}"
    );
}
