//! What a run shows while it runs.
//!
//! * On a terminal: a compact panel (every line within the terminal's
//!   width, 80 columns at least) above a
//!   progress bar of the run's time, simulated or real: the faults active
//!   now, per route the counts of [`crate::experiment::vocabulary`] with
//!   the rate and latency (p50, p99) of the last interval, each pool's
//!   servers in rotation, each breaker's state and its last transition.
//!   Redrawn every second of a real run, every thousandth of a virtual one
//!   (at least a simulated second). Colour unless `NO_COLOR` is set.
//! * Off a terminal (a CI log, `| cat`): heartbeat lines on stderr, so a
//!   long drill shows it is alive. A real run prints one every
//!   `--progress-interval`; a virtual run looks at each hundredth of its
//!   simulated time and prints that moment when `--progress-interval` of
//!   wall time has passed since its last line, so what a line says is the
//!   same on every machine, only which hundredths get a line and the
//!   speed figure differ. Nothing of it reaches a report file.
//!
//! Nothing with `--quiet`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::clock::{self, Duration, Instant};
use crate::defense::DefenseLine;
use crate::defense::report::Recorder;
use crate::experiment::config::Experiment;
use crate::experiment::drill::drive::load::Load;

mod moment;
mod status;

pub use moment::{Moment, PoolState, RouteCounts, WIDTH};
pub use status::Status;

/// Everything the live view reads.
#[derive(Debug)]
pub struct Watched<'a> {
    /// The experiment.
    pub experiment: &'a Experiment,
    /// The load generator's records.
    pub load: &'a Arc<Load>,
    /// The defense line, if any.
    pub line: Option<Arc<DefenseLine>>,
    /// Breaker transitions so far.
    pub recorder: Arc<Recorder>,
    /// The control endpoint, whose manual faults may be active.
    pub control: Option<Arc<crate::experiment::drill::drive::control::Control>>,
    /// Time zero.
    pub start: Instant,
}

/// How the live view draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// Nothing.
    Off,
    /// The panel and the bar, redrawn every `tick` of the run's clock;
    /// with ANSI colour or without.
    Panel {
        /// Colour the states.
        colour: bool,
        /// How often, on the run's clock.
        tick: Duration,
    },
    /// Real clock: one line every interval.
    Heartbeat(Duration),
    /// Virtual clock: at each hundredth of the run, a line when this much
    /// wall time has passed since the last one.
    Checkpoints(Duration),
}

impl View {
    /// The view for a run of `total`: the panel on a terminal, heartbeat
    /// lines off one (none when `interval` is zero).
    pub fn choose(enabled: bool, real_clock: bool, interval: Duration, total: Duration) -> View {
        let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let colour = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        View::pick(enabled, terminal, colour, real_clock, interval, total)
    }

    /// [`View::choose`] with the terminal and `NO_COLOR` given.
    fn pick(
        enabled: bool,
        terminal: bool,
        colour: bool,
        real_clock: bool,
        interval: Duration,
        total: Duration,
    ) -> View {
        if !enabled {
            View::Off
        } else if terminal {
            let tick = if real_clock {
                Duration::from_secs(1)
            } else {
                Duration::from_secs(total.as_secs().div_ceil(1000).max(1))
            };
            View::Panel { colour, tick }
        } else if interval.is_zero() {
            View::Off
        } else if real_clock {
            View::Heartbeat(interval)
        } else {
            View::Checkpoints(interval)
        }
    }
}

/// Shows the run as `view` says; never returns (the run drops it).
pub async fn show(view: View, watched: Watched<'_>) {
    match view {
        View::Off => std::future::pending().await,
        View::Heartbeat(every) => loop {
            clock::sleep(every).await;
            print(&Moment::read(&watched, every.as_secs()).heartbeat());
        },
        View::Checkpoints(every) => checkpoints(every, &watched).await,
        View::Panel { colour, tick } => panel(colour, tick, &watched).await,
    }
}

/// One heartbeat line on stderr, secrets masked.
fn print(line: &str) {
    eprintln!("{}", crate::schema::vars::mask(line));
}

/// The heartbeat of a virtual run: each hundredth of its simulated time,
/// the moment when `every` of wall time has passed since the last line.
async fn checkpoints(every: Duration, watched: &Watched<'_>) {
    let total = watched.experiment.duration;
    let wall = clock::Stopwatch::start();
    let mut printed = (wall.elapsed(), Duration::ZERO);
    for hundredth in 1..100u32 {
        clock::sleep_until(watched.start + total * hundredth / 100).await;
        let now = wall.elapsed();
        if now.saturating_sub(printed.0) < every {
            continue;
        }
        let since = clock::now().saturating_duration_since(watched.start) - printed.1;
        let moment = Moment::read(watched, since.as_secs());
        let speed = moment.elapsed.as_secs_f64() / now.as_secs_f64().max(1e-3);
        print(&format!(
            "{}  ({} of wall time, {speed:.0}x real time)",
            moment.heartbeat(),
            moment::seconds(now)
        ));
        printed = (now, moment.elapsed);
    }
    std::future::pending().await
}

/// Publishes how far the run has got into `reached` (its simulated
/// milliseconds) at each hundredth of its `total`, as [`checkpoints`]
/// looks at it: a sweep's heartbeat reads it.
pub async fn publish(reached: Arc<AtomicU64>, start: Instant, total: Duration) {
    for hundredth in 1..100u32 {
        let at = total * hundredth / 100;
        clock::sleep_until(start + at).await;
        reached.store(
            u64::try_from(at.as_millis()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }
}

/// The terminal's width in columns (stderr's), read at each redraw so a
/// resized terminal is used whole; 0 when unknown (the panel then keeps
/// to its 80).
fn columns() -> usize {
    rustix::termios::tcgetwinsize(std::io::stderr()).map_or(0, |w| usize::from(w.ws_col))
}

/// The panel above a bar of the run's time, redrawn every `tick`.
async fn panel(colour: bool, tick: Duration, watched: &Watched<'_>) {
    let total = watched.experiment.duration;
    // indicatif redraws the lines in place and clears them at the end of
    // the run.
    let bar = ProgressBar::with_draw_target(
        Some(u64::try_from(total.as_millis()).unwrap_or(u64::MAX)),
        ProgressDrawTarget::stderr(),
    );
    bar.set_style(
        ProgressStyle::with_template("{msg}\n  [{bar:50}] {percent:>3}%")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    loop {
        let moment = Moment::read(watched, tick.as_secs());
        bar.set_position(u64::try_from(moment.elapsed.as_millis()).unwrap_or(u64::MAX));
        let lines = moment.panel(colour, columns());
        bar.set_message(crate::schema::vars::mask(&lines.join("\n")).into_owned());
        clock::sleep(tick).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_terminal_gets_the_panel_every_second_of_a_real_run_and_every_thousandth_of_a_virtual_one()
    {
        let day = Duration::from_secs(86_400);
        let ten = Duration::from_secs(10);
        assert_eq!(
            View::pick(true, true, true, true, ten, day),
            View::Panel {
                colour: true,
                tick: Duration::from_secs(1)
            }
        );
        assert_eq!(
            View::pick(true, true, false, false, ten, day),
            View::Panel {
                colour: false,
                tick: Duration::from_secs(87)
            }
        );
        assert_eq!(
            View::pick(true, true, true, false, ten, Duration::from_secs(12)),
            View::Panel {
                colour: true,
                tick: Duration::from_secs(1)
            }
        );
    }

    #[test]
    fn off_a_terminal_a_real_run_beats_by_its_clock_and_a_virtual_one_by_checkpoints() {
        let ten = Duration::from_secs(10);
        let day = Duration::from_secs(86_400);
        assert_eq!(
            View::pick(true, false, true, true, ten, day),
            View::Heartbeat(ten)
        );
        assert_eq!(
            View::pick(true, false, true, false, ten, day),
            View::Checkpoints(ten)
        );
        assert_eq!(
            View::pick(true, false, true, false, Duration::ZERO, day),
            View::Off
        );
        assert_eq!(
            View::pick(true, false, true, true, Duration::ZERO, day),
            View::Off
        );
        assert_eq!(View::pick(false, true, true, true, ten, day), View::Off);
    }
}
