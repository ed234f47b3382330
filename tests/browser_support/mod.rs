//! Headless Chromium for the page tests (`html_report.rs`, `sweep.rs`):
//! the DOM a page ends with after its script ran, its console messages,
//! and screenshots. `FIREDRILL_SCREENSHOTS=DIR` keeps the screenshots in
//! DIR.
#![allow(dead_code, unreachable_pub, clippy::disallowed_methods)] // real processes, bounded by a deadline

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

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

/// Runs a command, killing it if it outlives a minute.
pub(crate) fn bounded(mut command: Command) -> Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // 1,200 polls 50 ms apart: about a minute.
    for _ in 0..1200 {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
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
