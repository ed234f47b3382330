//! When a fault is active: a start (`at`), an optional length (`for`) and an
//! optional repeating `pattern` of down/up phases for flapping dependencies.

use serde::Deserialize;

use crate::clock::Duration;
use crate::schema::units::Dur;

/// A repeating pattern inside the window: the fault is active for `down`,
/// then inactive for `up`, and again; each cycle starts with `down`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping with up and down, e.g. `{ up: 20s, down: 10s }`"
)]
pub struct Pattern {
    /// How long the dependency is healthy (fault inactive) in each cycle.
    pub up: Dur,
    /// How long the dependency is failing (fault active) in each cycle.
    pub down: Dur,
}

/// The shortest phase of a [`Pattern`]: a 1 us pattern gave 15 million
/// windows in one run (9 GB of memory, a 3.8 GB report).
pub const MIN_PHASE: Duration = Duration::from_millis(1);

/// The most windows one fault's pattern may open in one run (each is an
/// interval on the report's timeline).
pub const MAX_WINDOWS: u128 = 10_000;

/// The most windows all the faults' patterns together may open in one run.
/// Each window is held in memory and written to every report (about 230
/// bytes of report.html, 60 of report.json): 100 faults of 10,000 windows
/// took 600 MB of memory and wrote a 228 MB report.html. At this limit a
/// run peaks under 60 MB and its report.html stays under 5 MB
/// (BENCHMARKS.md).
pub const MAX_RUN_WINDOWS: u128 = 20_000;

/// The time window of a fault, relative to the start of the proxy or run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// When the window opens.
    pub start: Duration,
    /// How long it stays open; `None`: until the end.
    pub length: Option<Duration>,
    /// Flapping inside the window.
    pub pattern: Option<Pattern>,
}

impl Default for Window {
    fn default() -> Self {
        Window {
            start: Duration::ZERO,
            length: None,
            pattern: None,
        }
    }
}

impl Window {
    /// A window, checked: `for` and the pattern's phases must be positive.
    pub fn new(
        start: Duration,
        length: Option<Duration>,
        pattern: Option<Pattern>,
    ) -> Result<Window, String> {
        if length == Some(Duration::ZERO) {
            return Err(
                "for: must be longer than 0s (leave it out for \"until the end\")".to_string(),
            );
        }
        if let Some(p) = pattern {
            for (name, phase) in [("up", p.up), ("down", p.down)] {
                if phase.get().is_zero() {
                    return Err(format!("pattern.{name}: must be longer than 0s"));
                }
                if phase.get() < MIN_PHASE {
                    return Err(format!(
                        "pattern.{name}: `{phase}` is too short: expected at least {} (a shorter phase flaps faster than a request sees it)",
                        Dur(MIN_PHASE)
                    ));
                }
            }
        }
        Ok(Window {
            start,
            length,
            pattern,
        })
    }

    /// Why the pattern opens too many windows in a run of `duration`
    /// (more than [`MAX_WINDOWS`]), counted without listing them.
    pub fn too_many_windows(&self, duration: Duration) -> Option<String> {
        let windows = self.pattern_windows(duration);
        (windows > MAX_WINDOWS).then(|| {
            format!(
                "the pattern opens {windows} windows in the run: expected at most {MAX_WINDOWS} per fault (longer `up` and `down` phases)"
            )
        })
    }

    /// How many windows the pattern opens in a run of `duration` (0
    /// without a pattern), counted without listing them.
    pub fn pattern_windows(&self, duration: Duration) -> u128 {
        let Some(p) = self.pattern else {
            return 0;
        };
        let open = self.end().unwrap_or(duration).min(duration);
        let within = open.saturating_sub(self.start).as_nanos();
        within.div_ceil((p.up.get() + p.down.get()).as_nanos())
    }

    /// The end of the window, if it has one.
    pub fn end(&self) -> Option<Duration> {
        self.length.map(|l| self.start + l)
    }

    /// Whether the fault is active `elapsed` after the start.
    pub fn is_active(&self, elapsed: Duration) -> bool {
        self.next_change(elapsed).0
    }

    /// The `[start, end)` intervals the window is active within
    /// `[0, duration)`.
    pub fn windows_within(&self, duration: Duration) -> Vec<(Duration, Duration)> {
        let mut out = Vec::new();
        let mut t = Duration::ZERO;
        while t < duration {
            let (active, next) = self.next_change(t);
            let end = next.unwrap_or(duration).min(duration);
            if active {
                out.push((t, end));
            }
            match next {
                Some(n) if n > t => t = n,
                _ => break,
            }
        }
        out
    }

    /// Whether the fault is active at `elapsed`, and when that next changes
    /// (`None`: never again).
    pub fn next_change(&self, elapsed: Duration) -> (bool, Option<Duration>) {
        if elapsed < self.start {
            return (false, Some(self.start));
        }
        if let Some(end) = self.end()
            && elapsed >= end
        {
            return (false, None);
        }
        let Some(p) = self.pattern else {
            return (true, self.end());
        };
        let cycle = p.down.get() + p.up.get();
        let into = elapsed - self.start;
        let cycles = (into.as_nanos() / cycle.as_nanos()) as u32;
        let offset = into - cycle * cycles;
        let cycle_start = self.start + cycle * cycles;
        let (active, change) = if offset < p.down.get() {
            (true, cycle_start + p.down.get())
        } else {
            (false, cycle_start + cycle)
        };
        let change = match self.end() {
            Some(end) if end < change => end,
            _ => change,
        };
        (active, Some(change))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    #[test]
    fn the_windows_within_a_run_are_clipped_to_it_and_a_pattern_gives_one_per_down_phase() {
        let once = Window::new(s(10), Some(s(30)), None).unwrap();
        assert_eq!(once.windows_within(s(60)), [(s(10), s(40))]);
        assert_eq!(once.windows_within(s(25)), [(s(10), s(25))]);
        let flapping = Window::new(
            s(0),
            Some(s(10)),
            Some(Pattern {
                up: Dur(s(2)),
                down: Dur(s(1)),
            }),
        )
        .unwrap();
        assert_eq!(
            flapping.windows_within(s(60)),
            [(s(0), s(1)), (s(3), s(4)), (s(6), s(7)), (s(9), s(10))]
        );
    }

    #[test]
    fn a_window_opening_at_the_end_of_the_run_has_no_interval_within_it() {
        let late = Window::new(s(20), None, None).unwrap();
        assert_eq!(late.windows_within(s(20)), []);
        assert_eq!(late.windows_within(s(21)), [(s(20), s(21))]);
    }

    #[test]
    fn window_is_active_from_at_for_its_length() {
        let w = Window::new(s(10), Some(s(30)), None).unwrap();
        assert!(!w.is_active(s(9)));
        assert!(w.is_active(s(10)));
        assert!(w.is_active(s(39)));
        assert!(!w.is_active(s(40)));
        assert_eq!(w.next_change(s(0)), (false, Some(s(10))));
        assert_eq!(w.next_change(s(12)), (true, Some(s(40))));
        assert_eq!(w.next_change(s(40)), (false, None));
    }

    #[test]
    fn pattern_alternates_down_then_up_and_stops_at_the_window_end() {
        let p = Pattern {
            up: Dur(s(2)),
            down: Dur(s(3)),
        };
        let w = Window::new(s(1), Some(s(9)), Some(p)).unwrap();
        let active: Vec<bool> = (0..12).map(|t| w.is_active(s(t))).collect();
        // t:      0      1     2     3     4      5      6     7     8     9      10     11
        let want = [
            false, true, true, true, false, false, true, true, true, false, false, false,
        ];
        assert_eq!(active, want);
        assert_eq!(w.next_change(s(7)), (true, Some(s(9))));
        assert_eq!(w.next_change(s(9)), (false, Some(s(10))));
    }

    #[test]
    fn zero_length_windows_and_phases_are_rejected() {
        assert!(Window::new(s(0), Some(Duration::ZERO), None).is_err());
        let p = Pattern {
            up: Dur(s(0)),
            down: Dur(s(1)),
        };
        assert!(Window::new(s(0), None, Some(p)).is_err());
    }

    #[test]
    fn a_pattern_phase_under_one_millisecond_is_refused_saying_the_minimum() {
        let p = Pattern {
            up: Dur(Duration::from_micros(1)),
            down: Dur(s(1)),
        };
        let err = Window::new(s(0), None, Some(p)).unwrap_err();
        assert_eq!(
            err,
            "pattern.up: `1us` is too short: expected at least 1ms (a shorter phase flaps faster than a request sees it)"
        );
        let p = Pattern {
            up: Dur(s(1)),
            down: Dur(Duration::from_micros(999)),
        };
        assert!(
            Window::new(s(0), None, Some(p))
                .unwrap_err()
                .starts_with("pattern.down: `999us` is too short")
        );
    }

    #[test]
    fn more_windows_than_the_maximum_in_a_run_are_counted_without_listing_them() {
        let p = Pattern {
            up: Dur(Duration::from_millis(1)),
            down: Dur(Duration::from_millis(1)),
        };
        let w = Window::new(s(0), None, Some(p)).unwrap();
        assert_eq!(w.too_many_windows(s(20)), None);
        assert_eq!(
            w.too_many_windows(s(21)).as_deref(),
            Some(
                "the pattern opens 10500 windows in the run: expected at most 10000 per fault (longer `up` and `down` phases)"
            )
        );
        assert_eq!(
            Window::new(s(0), None, None)
                .unwrap()
                .too_many_windows(s(86_400)),
            None
        );
    }
}
