//! Headless Chromium on a report page (the tests of `report.html`
//! share it): a run into a report directory, the DOM after the page's
//! script ran with every console message, and screenshots at 1400 and 800
//! px, kept in `FIREDRILL_SCREENSHOTS=DIR` when set.
#![allow(dead_code, unreachable_pub, clippy::disallowed_methods)] // each test file uses its own part; real processes, bounded by a deadline

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::client_support;

/// Chromium, when installed.
pub(crate) fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .filter_map(|name| {
            std::env::var_os("PATH")?
                .to_str()?
                .split(':')
                .map(|dir| Path::new(dir).join(name))
                .find(|p| p.is_file())
        })
        .next()
}

/// Runs a command, killing it if it outlives a minute. Its output is read
/// while it runs: a DOM over a pipe's 64 KiB would otherwise block the
/// browser on its write, and it would never exit.
pub(crate) fn bounded(mut command: Command) -> Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    // 1,200 polls 50 ms apart: about a minute.
    for _ in 0..1200 {
        if let Some(status) = child.try_wait().unwrap() {
            return Output {
                status,
                stdout: stdout.join().unwrap(),
                stderr: stderr.join().unwrap(),
            };
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    panic!("{command:?} did not finish within a minute");
}

/// Headless Chromium on `page` (with `#hash`): flags first.
pub(crate) fn browse(browser: &Path, page: &Path, hash: &str, flags: &[&str]) -> Output {
    let mut command = Command::new(browser);
    command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .args(flags)
        .arg(format!("file://{}{hash}", page.display()));
    bounded(command)
}

/// The console messages a page logged (Chromium writes each as a
/// `:CONSOLE` line when logging to stderr): errors, blocked fetches, logs.
pub(crate) fn console(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect()
}

/// The DOM after the page's script ran, and its console messages.
pub(crate) fn dom(browser: &Path, page: &Path, hash: &str) -> (String, Vec<String>) {
    let out = browse(browser, page, hash, &["--dump-dom"]);
    assert!(out.status.success(), "{out:?}");
    (
        String::from_utf8_lossy(&out.stdout).to_string(),
        console(&out),
    )
}

/// A screenshot at `width` px: its pixels, as RGBA rows.
pub(crate) fn screenshot(browser: &Path, page: &Path, width: u32, keep_as: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("shot.png");
    let out = browse(
        browser,
        page,
        "",
        &[
            &format!("--window-size={width},1300"),
            &format!("--screenshot={}", png.display()),
        ],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(console(&out), Vec::<String>::new());
    if let Some(keep) = std::env::var_os("FIREDRILL_SCREENSHOTS") {
        std::fs::create_dir_all(&keep).unwrap();
        std::fs::copy(&png, Path::new(&keep).join(keep_as)).unwrap();
    }
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    assert_eq!(info.width, width);
    pixels.truncate(info.buffer_size());
    pixels
}

/// Distinct colours among the pixels (RGB or RGBA alike: taken 3 bytes at
/// a time, enough to tell a blank page from a drawn one).
pub(crate) fn colours(pixels: &[u8]) -> usize {
    let mut seen: Vec<[u8; 3]> = pixels.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
    seen.sort_unstable();
    seen.dedup();
    seen.len()
}

/// Runs `experiment` in virtual time into `dir`; returns report.json.
pub(crate) fn run(experiment: &Path, dir: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .arg("run")
        .arg(experiment)
        .args(["--clock", "virtual", "--quiet", "--report-dir"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        // 0 passed, 1 failed, 4 not healthy before injection.
        matches!(out.status.code(), Some(0 | 1 | 4)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&std::fs::read(dir.join("report.json")).unwrap()).unwrap()
}

pub(crate) fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub(crate) fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

/// State bands a list of transitions makes over `[0, duration)`: one to
/// start, one more per transition that moves time on.
pub(crate) fn bands(transitions: &[Value], duration: f64) -> usize {
    let mut last = 0.0;
    let mut bands = 0;
    for t in transitions {
        let at = t["at_ms"].as_f64().unwrap().min(duration);
        if at > last {
            bands += 1;
            last = at;
        }
    }
    bands + usize::from(duration > last)
}

/// Every band the page must draw: each breaker's, and the service's own
/// where it reported one.
pub(crate) fn expected_bands(report: &Value) -> usize {
    let duration = report["duration_ms"].as_f64().unwrap();
    report["breakers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            let own = bands(b["transitions"].as_array().unwrap(), duration);
            own + b["reported"].as_array().map_or(0, |r| bands(r, duration))
        })
        .sum()
}

/// The page of `experiment` opened in Chromium: no console message, one
/// state band per breaker state and one shaded band per fault window in
/// the DOM, the chosen expectation's judged window marked, and screenshots
/// that are not blank at either width.
pub(crate) fn renders_in_chromium(experiment: &str, keep_as: &str) -> (String, Value) {
    let Some(browser) = chromium() else {
        client_support::missing("chromium (apt-get install chromium)")
    };
    let dir = tempfile::tempdir().unwrap();
    let report = run(&root().join(experiment), dir.path());
    let page = dir.path().join("report.html");
    // The last expectation, chosen in the address.
    let chosen = report["verdicts"].as_array().unwrap().len();
    let (html, messages) = dom(&browser, &page, &format!("#expect-{chosen}"));
    assert_eq!(messages, Vec::<String>::new(), "console messages");
    assert_eq!(
        count(&html, "<rect class=\"state st-"),
        expected_bands(&report),
        "state bands"
    );
    let windows: usize = report["faults"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["windows_ms"].as_array().unwrap().len())
        .sum();
    assert_eq!(
        count(&html, "<rect class=\"fault\""),
        windows,
        "fault windows"
    );
    let selected = format!("<li id=\"expect-{chosen}\" class=\"");
    let class = html.split(&selected).nth(1).unwrap_or_default();
    assert!(
        ["pass", "fail", "skip"]
            .iter()
            .any(|c| class.starts_with(&format!("{c} selected\""))),
        "the expectation in the address is selected"
    );
    let judged = &report["verdicts"][chosen - 1]["judged_ms"];
    let marks = html
        .split("<div id=\"judged\">")
        .nth(1)
        .unwrap()
        .split("</div></div>")
        .next()
        .unwrap()
        .to_string();
    assert_eq!(
        count(&marks, "class=\"span\""),
        judged.as_array().unwrap().len(),
        "one mark per judged interval: {marks}"
    );
    for (width, name) in [(1400, "1400"), (800, "800")] {
        let pixels = screenshot(&browser, &page, width, &format!("{keep_as}-{name}.png"));
        assert!(
            colours(&pixels) > 50,
            "the {width}px screenshot is blank ({} colours)",
            colours(&pixels)
        );
    }
    (html, report)
}

/// The swatch classes each track's legend on a report page lists: the
/// track (`data-track`), and what each swatch is drawn with.
pub(crate) fn legends(html: &str) -> Vec<(String, Vec<String>)> {
    html.split("<ul class=\"legend\" data-track=\"")
        .skip(1)
        .map(|rest| {
            let (track, rest) = rest.split_once('"').unwrap();
            let list = rest.split("</ul>").next().unwrap();
            let swatches = list
                .split("<span class=\"swatch ")
                .skip(1)
                .map(|s| s.split('"').next().unwrap().to_string())
                .collect();
            (track.to_string(), swatches)
        })
        .collect()
}

/// Which track a swatch class belongs to: every colour of a track stays
/// apart from the others of its track (src/report/html/page/palette.rs),
/// not from those of another, so a legend must hold one track's only.
pub(crate) fn track_of(class: &str) -> &'static str {
    match class {
        c if c.starts_with("st-") => "breakers",
        c if c.starts_with("hs-") || c.starts_with("server-") => "pools",
        "no-server-span" => "pools",
        "reached" | "faulted" => "dependencies",
        "recorded" | "manual" => "faults",
        _ => "requests",
    }
}

/// Every legend of `html` holds one track's colours, each once, and no
/// track has two legends.
pub(crate) fn each_legend_means_one_thing(html: &str) {
    let legends = legends(html);
    assert!(!legends.is_empty(), "no legend: {html}");
    let mut tracks: Vec<&str> = legends.iter().map(|(t, _)| t.as_str()).collect();
    tracks.sort_unstable();
    let listed = tracks.len();
    tracks.dedup();
    assert_eq!(
        tracks.len(),
        listed,
        "a track with two legends: {legends:?}"
    );
    for (track, swatches) in &legends {
        for s in swatches {
            assert_eq!(track_of(s), track, "{s} under {track}: {legends:?}");
        }
        let mut unique = swatches.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), swatches.len(), "{track}: {swatches:?}");
    }
}
