//! The progress of a sweep's runs: a bar of the runs done on a terminal;
//! off one (a CI log), a line of the runs done once `--progress-interval`
//! of wall time has passed since the start or the last line, and the last
//! run's line always. While no run finishes (a long point), a heartbeat
//! line every `--progress-interval` says how far each running point has
//! got in its simulated time, as a run's own heartbeat does.

use std::sync::Mutex;
use std::sync::mpsc::{Receiver, RecvTimeoutError};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::clock::{Duration, Stopwatch};
use crate::report::sweep::Running;

/// Shows the runs done as a sweep tells them.
#[derive(Debug)]
pub enum Runs {
    /// Nothing (`--progress-interval 0s` off a terminal).
    Off,
    /// A bar on a terminal.
    Bar(ProgressBar),
    /// Lines on stderr, at most one per `every`.
    Lines {
        /// The shortest wall time between two lines.
        every: Duration,
        /// Since the sweep started.
        wall: Stopwatch,
        /// When the last line was printed, and the runs done it told.
        last: Mutex<(Option<Duration>, Option<usize>)>,
    },
}

impl Runs {
    /// The bar on a terminal, lines every `every` off one.
    pub fn new(every: Duration) -> Runs {
        if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("sweep [{bar:40}] {pos}/{len} runs done  {elapsed}")
                    .expect("a valid template")
                    .progress_chars("=> "),
            );
            Runs::Bar(bar)
        } else if every.is_zero() {
            Runs::Off
        } else {
            Runs::Lines {
                every,
                wall: Stopwatch::start(),
                last: Mutex::new((None, None)),
            }
        }
    }

    /// `done` runs of `total` are done.
    pub fn done(&self, done: usize, total: usize) {
        match self {
            Runs::Off => {}
            Runs::Bar(bar) => {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
            }
            Runs::Lines { every, wall, last } => {
                let now = wall.elapsed();
                let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
                let (printed, told) = *last;
                let new = told != Some(done);
                if new && (done == total || due(printed, now, *every)) {
                    eprintln!("[firedrill] sweep: {done} of {total} runs done");
                    *last = (Some(now), Some(done));
                }
            }
        }
    }

    /// Off a terminal, until `finished` says the sweep is over (its sender
    /// dropped): a heartbeat line once `--progress-interval` has passed
    /// with no line, telling the runs done (of `total`) and how far each
    /// running point has got.
    pub fn beat(&self, finished: &Receiver<()>, total: usize, running: &Running) {
        let Runs::Lines { every, wall, last } = self else {
            return;
        };
        while let Err(RecvTimeoutError::Timeout) = finished.recv_timeout(*every) {
            let now = wall.elapsed();
            let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
            let (printed, told) = *last;
            if !due(printed, now, *every) {
                continue;
            }
            let going = running.describe();
            if going.is_empty() {
                continue;
            }
            let done = told.unwrap_or(0);
            eprintln!(
                "[firedrill] sweep: {done} of {total} runs done; running: {}",
                going.join(", ")
            );
            *last = (Some(now), told);
        }
    }

    /// The sweep is over: the bar goes.
    pub fn finish(&self) {
        if let Runs::Bar(bar) = self {
            bar.finish_and_clear();
        }
    }
}

/// Whether a line is due at `now`, the last one printed at `last`.
fn due(last: Option<Duration>, now: Duration, every: Duration) -> bool {
    now.saturating_sub(last.unwrap_or_default()) >= every
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_due_once_the_interval_has_passed_since_the_last() {
        let s = Duration::from_secs;
        assert!(!due(None, s(9), s(10)), "not before the first interval");
        assert!(due(None, s(10), s(10)));
        assert!(!due(Some(s(10)), s(19), s(10)));
        assert!(due(Some(s(10)), s(20), s(10)));
    }
}
