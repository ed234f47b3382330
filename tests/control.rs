//! The control endpoint of a real-time run (`firedrill run --control`):
//! people start and stop a manual fault, read the status, halt the drill;
//! the same token and loopback rules as `firedrill server`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

mod browser_support;
mod client_support;

const DRILL: &str = "fixtures/live/manual_fault.yaml";

/// A running drill with its control endpoint's base URL.
struct Drill {
    child: Child,
    base: String,
    dir: tempfile::TempDir,
}

impl Drill {
    fn start(extra: &[&str]) -> Drill {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_firedrill"))
            .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")))
            .args([
                "run",
                DRILL,
                "--quiet",
                "--control",
                "127.0.0.1:0",
                "--report-dir",
            ])
            .arg(dir.path())
            .args(extra)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let mut lines = BufReader::new(stderr).lines();
        let base = loop {
            let line = lines
                .next()
                .expect("firedrill ended before its control endpoint")
                .unwrap();
            if let Some(url) = line.strip_prefix("control endpoint listening on ") {
                break url.trim().to_string();
            }
        };
        // Keep draining stderr so the child never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Drill { child, base, dir }
    }

    /// Waits for the run to end (a halt was asked) and returns its exit code.
    fn wait(mut self) -> (Option<i32>, Value, tempfile::TempDir) {
        let status = self.child.wait().unwrap();
        let report =
            serde_json::from_slice(&std::fs::read(self.dir.path().join("report.json")).unwrap())
                .unwrap();
        (status.code(), report, self.dir)
    }
}

fn call(method: reqwest::Method, url: &str, token: Option<&str>) -> (u16, Value) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut req = reqwest::Client::new().request(method, url);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let bytes = resp.bytes().await.unwrap();
        (status, serde_json::from_slice(&bytes).unwrap())
    })
}

#[allow(clippy::disallowed_methods)] // People act in wall time.
fn pause(d: Duration) {
    std::thread::sleep(d);
}

#[test]
fn people_start_and_stop_a_manual_fault_and_halt_the_drill_in_real_time() {
    let drill = Drill::start(&[]);
    let base = drill.base.clone();
    let (code, status) = call(reqwest::Method::GET, &format!("{base}/status"), None);
    assert_eq!(code, 200, "{status}");
    assert_eq!(status["manual_faults"][0]["name"], "dep-down");
    assert_eq!(status["manual_faults"][0]["active"], false);
    assert_eq!(status["active_faults"], serde_json::json!([]));

    let (code, started) = call(
        reqwest::Method::POST,
        &format!("{base}/faults/dep-down/start"),
        None,
    );
    assert_eq!(code, 200, "{started}");
    let (_, status) = call(reqwest::Method::GET, &format!("{base}/status"), None);
    assert_eq!(status["active_faults"], serde_json::json!(["dep-down"]));
    let (code, again) = call(
        reqwest::Method::POST,
        &format!("{base}/faults/dep-down/start"),
        None,
    );
    assert_eq!(code, 409, "{again}");
    pause(Duration::from_millis(1000));
    let (code, stopped) = call(
        reqwest::Method::POST,
        &format!("{base}/faults/dep-down/stop"),
        None,
    );
    assert_eq!(code, 200, "{stopped}");
    let (code, unknown) = call(
        reqwest::Method::POST,
        &format!("{base}/faults/nope/start"),
        None,
    );
    assert_eq!(code, 404, "{unknown}");
    pause(Duration::from_millis(300));
    let (code, _) = call(reqwest::Method::POST, &format!("{base}/halt"), None);
    assert_eq!(code, 200);

    let (exit, report, dir) = drill.wait();
    assert_eq!(exit, Some(1), "a halt ends the drill as failed: {report:#}");
    assert_eq!(report["ending"]["kind"], "halted");
    let fault = &report["faults"][0];
    let window = &fault["windows_ms"][0];
    let (from, to) = (window[0].as_f64().unwrap(), window[1].as_f64().unwrap());
    assert_eq!(
        (from, to),
        (
            started["started_ms"].as_f64().unwrap(),
            stopped["stopped_ms"].as_f64().unwrap()
        ),
        "the window is when people started and stopped it"
    );
    assert!(to - from >= 900.0, "{window}");
    assert!(fault["injected"].as_u64().unwrap() > 0, "{fault}");
    // Every 503 was sent about inside the window, and no 200 well inside it
    // (generous margins: a request sent just before a change may reach the
    // proxy after it on a busy machine).
    let requests = std::fs::read_to_string(dir.path().join("requests.jsonl")).unwrap();
    let mut inside = 0;
    for line in requests.lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        let sent = r["sent_ms"].as_f64().unwrap();
        match r["status"].as_u64() {
            Some(503) => {
                assert!(sent >= from - 500.0 && sent <= to, "{line}");
                inside += 1;
            }
            Some(200) => assert!(sent < from + 5.0 || sent > to - 500.0, "{line}"),
            _ => {}
        }
    }
    assert!(
        inside >= 10,
        "50 requests a second for a second: {inside} got 503"
    );
    manual_fault_reads_as_manual_in_the_browser(&dir.path().join("report.html"), from, to);
}

/// The page of a run with a manual fault, opened in Chromium: the window
/// is drawn where people started and stopped it, marked manual in its
/// band, its name and the legend.
fn manual_fault_reads_as_manual_in_the_browser(page: &Path, from: f64, to: f64) {
    let Some(browser) = browser_support::chromium() else {
        client_support::missing("chromium (apt-get install chromium)")
    };
    let (html, messages) = browser_support::dom(&browser, page, "");
    assert_eq!(messages, Vec::<String>::new(), "console messages");
    let band = html
        .split("<rect class=\"fault manual\"")
        .nth(1)
        .expect("the manual fault's band is marked manual");
    assert!(
        band.contains("<title>dep-down (manual) (status)"),
        "{}",
        &band[..band.len().min(300)]
    );
    assert_eq!(
        browser_support::count(&html, "<rect class=\"fault manual\""),
        1
    );
    assert_eq!(browser_support::count(&html, "<rect class=\"fault\""), 0);
    assert!(html.contains("<span class=\"swatch manual\"></span>manual fault (started by people)"));
    assert!(html.contains(", started by people"));
    let axis: f64 = html
        .split("data-axis-ms=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .and_then(|n| n.parse().ok())
        .expect("the page's axis");
    let attr = |name: &str| -> f64 {
        band.split(&format!("{name}=\""))
            .nth(1)
            .unwrap()
            .split('%')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(
        (attr("x") - from / axis * 100.0).abs() < 0.001,
        "starts where people started it"
    );
    assert!(
        (attr("width") - (to - from) / axis * 100.0).abs() < 0.001,
        "ends where they stopped it"
    );
}

#[test]
fn the_control_endpoint_wants_its_token_and_refuses_browsers() {
    let drill = Drill::start(&["--control-token", "s3cret-token"]);
    let base = drill.base.clone();
    let (code, body) = call(reqwest::Method::GET, &format!("{base}/status"), None);
    assert_eq!(code, 401, "{body}");
    let (code, _) = call(
        reqwest::Method::GET,
        &format!("{base}/status"),
        Some("s3cret-token"),
    );
    assert_eq!(code, 200);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let browser = runtime.block_on(async {
        reqwest::Client::new()
            .post(format!("{base}/halt"))
            .bearer_auth("s3cret-token")
            .header("user-agent", "Mozilla/5.0")
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    });
    assert_eq!(browser, 403, "a web page cannot halt a drill");
    let (code, _) = call(
        reqwest::Method::POST,
        &format!("{base}/halt"),
        Some("s3cret-token"),
    );
    assert_eq!(code, 200);
    let (exit, _, _) = drill.wait();
    assert_eq!(exit, Some(1));
}

#[test]
fn control_on_a_non_loopback_address_needs_a_token_and_a_real_clock() {
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_firedrill"))
            .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")))
            .args(["run", DRILL])
            .args(args)
            .env_remove("FIREDRILL_CONTROL_TOKEN")
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stderr) = run(&["--control", "0.0.0.0:0"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("--control 0.0.0.0:0: not a loopback address"),
        "{stderr}"
    );
    let (code, stderr) = run(&["--control", "127.0.0.1:0", "--clock", "virtual"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("give --clock real"), "{stderr}");
}
