//! The page's colours stay apart for colour-blind readers: every colour of
//! a category is a custom property of page.css's `:root`, and these tests
//! read them from there and measure each pair a reader must tell apart, as
//! seen with normal vision and simulated protanopia and deuteranopia
//! (Machado, Oliveira and Fernandes 2009, full severity), as the distance
//! in CIELAB (CIE76).

/// The categories drawn together on one track, which must stay apart from
/// each other: a route's outcomes, a breaker's states, a dependency's
/// arrivals, a pool server's health, the servers' shares.
pub(super) const TRACKS: &[(&str, &[&str])] = &[
    (
        "route outcomes",
        &[
            "success",
            "stale",
            "backup",
            "static",
            "service",
            "rejected",
            "timeout",
            "no-server",
            "error",
        ],
    ),
    (
        "breaker states",
        &["closed", "open", "half-open", "forced-open", "disabled"],
    ),
    ("dependency arrivals", &["reached", "faulted"]),
    (
        "pool server health",
        &["hs-in", "hs-ramping", "hs-ejected", "hs-waiting"],
    ),
    (
        "server shares",
        &[
            "server-1", "server-2", "server-3", "server-4", "server-5", "server-6",
        ],
    ),
];

/// Pairs on different tracks that mean different things and sit close to
/// each other on the page: they must be further apart still.
pub(super) const ACROSS: &[(&str, &str)] = &[("faulted", "open"), ("service", "reached")];

/// The least distance between two categories of one track.
pub(super) const ON_A_TRACK: f64 = 15.0;
/// The least distance between two categories of [`ACROSS`].
pub(super) const ACROSS_TRACKS: f64 = 50.0;

#[cfg(test)]
mod tests {
    use super::*;

    /// How a protanope and a deuteranope see linear RGB (Machado et al.,
    /// severity 1.0); the identity for normal vision.
    const VISIONS: [(&str, [[f64; 3]; 3]); 3] = [
        (
            "normal vision",
            [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
        ),
        (
            "protanopia",
            [
                [0.152286, 1.052583, -0.204868],
                [0.114503, 0.786281, 0.099216],
                [-0.003882, -0.048116, 1.051998],
            ],
        ),
        (
            "deuteranopia",
            [
                [0.367322, 0.860646, -0.227968],
                [0.280085, 0.672501, 0.047413],
                [-0.011820, 0.042940, 0.968881],
            ],
        ),
    ];

    /// The `--name: #rrggbb;` custom properties of `css`'s `:root`.
    fn colours(css: &str) -> Vec<(String, [u8; 3])> {
        let root = css.split(":root {").nth(1).unwrap_or_default();
        let root = root.split('}').next().unwrap_or_default();
        root.split(';')
            .filter_map(|decl| {
                let (name, value) = decl.split_once(':')?;
                let name = name.trim().strip_prefix("--")?;
                let hex = value.trim().strip_prefix('#')?;
                let byte = |i: usize| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok();
                Some((name.to_string(), [byte(0)?, byte(2)?, byte(4)?]))
            })
            .collect()
    }

    fn colour_of(css: &str, name: &str) -> [u8; 3] {
        colours(css)
            .into_iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("page.css's :root has no --{name}: #rrggbb"))
            .1
    }

    /// CIELAB (D65) of an sRGB colour seen through `vision`.
    fn lab(rgb: [u8; 3], vision: &[[f64; 3]; 3]) -> [f64; 3] {
        let linear = rgb.map(|c| {
            let c = f64::from(c) / 255.0;
            if c <= 0.04045 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            }
        });
        let seen: Vec<f64> = vision
            .iter()
            .map(|row| {
                (0..3)
                    .map(|i| row[i] * linear[i])
                    .sum::<f64>()
                    .clamp(0.0, 1.0)
            })
            .collect();
        let (r, g, b) = (seen[0], seen[1], seen[2]);
        let x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047;
        let y = 0.2126 * r + 0.7152 * g + 0.0722 * b;
        let z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883;
        let f = |t: f64| {
            if t > 0.008856 {
                t.cbrt()
            } else {
                7.787 * t + 16.0 / 116.0
            }
        };
        [
            116.0 * f(y) - 16.0,
            500.0 * (f(x) - f(y)),
            200.0 * (f(y) - f(z)),
        ]
    }

    /// The least distance between `a` and `b` over the three visions, and
    /// the vision it is least in.
    fn distance(a: [u8; 3], b: [u8; 3]) -> (f64, &'static str) {
        VISIONS
            .iter()
            .map(|(name, m)| {
                let (p, q) = (lab(a, m), lab(b, m));
                let d = (0..3).map(|i| (p[i] - q[i]).powi(2)).sum::<f64>().sqrt();
                (d, *name)
            })
            .min_by(|x, y| x.0.total_cmp(&y.0))
            .unwrap_or((0.0, "none"))
    }

    /// Every pair closer than its least distance, as a sentence each.
    fn too_close(css: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut check = |a: &str, b: &str, least: f64, why: &str| {
            let (d, vision) = distance(colour_of(css, a), colour_of(css, b));
            if d < least {
                out.push(format!(
                    "{a} and {b} ({why}) are {d:.1} apart in {vision}, under {least}"
                ));
            }
        };
        for (track, names) in TRACKS {
            for (i, a) in names.iter().enumerate() {
                for b in &names[i + 1..] {
                    check(a, b, ON_A_TRACK, track);
                }
            }
        }
        for (a, b) in ACROSS {
            check(a, b, ACROSS_TRACKS, "across tracks");
        }
        out
    }

    #[test]
    fn every_pair_a_reader_tells_apart_stays_apart_with_colour_blindness() {
        let problems = too_close(super::super::CSS);
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    #[test]
    fn the_old_palette_fails_the_check_and_says_which_pair_is_too_close() {
        // The page's colours before: "answered by a fault" was the open
        // breaker's vermillion, the service's fallback a light blue beside
        // the dependency's blue.
        let old = super::super::CSS
            .replacen("--faulted: #CC79A7", "--faulted: #D55E00", 1)
            .replacen("--service: #F0E442", "--service: #7FC6EC", 1);
        let problems = too_close(&old);
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("faulted and open (across tracks) are 0.0 apart")),
            "{problems:?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("service and reached (across tracks)")),
            "{problems:?}"
        );
        // Orange for rejected beside a yellow one step off: too close for
        // a deuteranope though plain to normal vision.
        let close = super::super::CSS.replacen("--rejected: #E69F00", "--rejected: #F0D040", 1);
        let problems = too_close(&close);
        assert!(
            problems
                .iter()
                .any(|p| p.contains("service and rejected (route outcomes)")),
            "{problems:?}"
        );
    }

    #[test]
    fn a_missing_colour_is_named() {
        let result =
            std::panic::catch_unwind(|| colour_of(":root { --open: #D55E00; }", "faulted"));
        let message = result.unwrap_err();
        let text = message
            .downcast_ref::<String>()
            .map(String::as_str)
            .unwrap_or_default();
        assert_eq!(text, "page.css's :root has no --faulted: #rrggbb");
    }

    #[test]
    fn simulated_deuteranopia_brings_red_and_green_together() {
        // The simulation itself: pure red and green are far apart to
        // normal vision and close for a deuteranope.
        let (red, green) = ([213, 94, 0], [0, 158, 115]);
        let normal = &VISIONS[0].1;
        let deutan = &VISIONS[2].1;
        let d = |m| {
            let (p, q) = (lab(red, m), lab(green, m));
            (0..3).map(|i| (p[i] - q[i]).powi(2)).sum::<f64>().sqrt()
        };
        assert!(d(normal) > 80.0, "{}", d(normal));
        assert!(
            d(deutan) < d(normal) / 1.5,
            "{} vs {}",
            d(deutan),
            d(normal)
        );
    }
}
