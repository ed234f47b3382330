//! sweep.html of a two-parameter sweep in headless Chromium: a heat map
//! with one cell per point, each labelled with its figure, no console
//! message, and screenshots at 1400 and 800 px that are not blank
//! (`FIREDRILL_SCREENSHOTS=DIR` keeps them).

mod browser_support;
mod client_support;

use std::path::Path;
use std::process::Command;

use browser_support::{chromium, colours, dom, screenshot};

#[test]
fn a_two_parameter_sweep_draws_a_heat_map_with_a_cell_per_point_in_chromium() {
    let Some(browser) = chromium() else {
        client_support::missing("chromium (apt-get install chromium)")
    };
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")))
        .args([
            "sweep",
            "experiments/quickstart.yaml",
            "--vary",
            "load.shop.rate=10/s,20/s,40/s",
            "--vary",
            "defense.routes.inventory.breaker.wait_in_open=1s,5s",
            "--seeds",
            "2",
            "--report-dir",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = dir.path().join("sweep.html");
    let (html, messages) = dom(&browser, &page, "");
    assert_eq!(messages, Vec::<String>::new(), "console messages");
    assert_eq!(
        html.matches("<rect class=\"cell\"").count(),
        6,
        "a cell per point"
    );
    let heat_map = html
        .split("<svg class=\"heat-map\"")
        .nth(1)
        .expect("a heat map");
    for value in ["10/s", "20/s", "40/s", "1s", "5s", "wait_in_open", "rate ↓"] {
        assert!(
            heat_map.contains(&format!(">{value}<")),
            "{value}: {heat_map}"
        );
    }
    assert!(
        heat_map.contains(" ± "),
        "two seeds: mean ± spread in the cells"
    );
    assert_eq!(html.matches("<g class=\"bar\"").count(), 0, "no bars");
    for (width, name) in [(1400, "1400"), (800, "800")] {
        let pixels = screenshot(
            &browser,
            &page,
            width,
            &format!("sweep-heat-map-{name}.png"),
        );
        assert!(colours(&pixels) > 50, "the {width}px screenshot is blank");
    }
}
