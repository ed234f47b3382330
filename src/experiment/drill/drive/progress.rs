//! What a run shows while it runs.
//!
//! * On a terminal: a compact panel redrawn every second — elapsed of
//!   total, the faults active now, per route ok / fallback / rejected /
//!   timeouts, each breaker's state and its last transition. Colour unless
//!   `NO_COLOR` is set.
//! * Off a terminal (a CI log, `| cat`), real clock only: one heartbeat line
//!   every `--progress-interval`, so a long drill shows it is alive.
//!
//! Nothing with `--quiet`.

use std::sync::Arc;

use serde_json::{Value, json};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::clock::{self, Duration, Instant};
use crate::defense::DefenseLine;
use crate::defense::breaker::{State, Transition};
use crate::defense::report::Recorder;
use crate::experiment::config::Experiment;
use crate::experiment::drill::drive::load::Load;

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
    /// The panel, redrawn each second; with ANSI colour or without.
    Panel {
        /// Colour the states.
        colour: bool,
    },
    /// One line every interval.
    Heartbeat(Duration),
}

impl View {
    /// The view for a run: the panel on a terminal, heartbeats off one
    /// (real clock only: a virtual run is over in moments).
    pub fn choose(enabled: bool, real_clock: bool, interval: Duration) -> View {
        if !enabled {
            View::Off
        } else if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            View::Panel {
                colour: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
            }
        } else if real_clock && !interval.is_zero() {
            View::Heartbeat(interval)
        } else {
            View::Off
        }
    }
}

/// One route's counts so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouteCounts {
    /// The route.
    pub name: String,
    /// Answered, not by a fallback.
    pub ok: usize,
    /// Answered by a fallback.
    pub fallback: usize,
    /// Turned away by the defense line (breaker, bulkhead, rate limit).
    pub rejected: usize,
    /// Timed out at the client or in the defense line.
    pub timeouts: usize,
}

/// A moment of the run, as the live view shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Moment {
    /// The experiment's name.
    pub name: String,
    /// Since the start.
    pub elapsed: Duration,
    /// The planned length.
    pub total: Duration,
    /// Faults active now.
    pub active: Vec<String>,
    /// Per route, in the order of `load:`.
    pub routes: Vec<RouteCounts>,
    /// Per breaker: name, state now, last transition.
    pub breakers: Vec<(String, State, Option<Transition>)>,
}

impl Moment {
    /// Reads the run now.
    pub fn read(w: &Watched<'_>) -> Moment {
        let elapsed = clock::now().saturating_duration_since(w.start);
        let e = w.experiment;
        let mut active: Vec<String> = e
            .faults
            .iter()
            .filter(|f| !f.manual && f.window.is_active(elapsed))
            .map(|f| f.name.clone())
            .collect();
        if let Some(control) = &w.control {
            active.extend(control.active());
        }
        let live = w.load.stream().live();
        let routes = e
            .load
            .iter()
            .map(|route| {
                let c = live.get(&route.name).cloned().unwrap_or_default();
                RouteCounts {
                    name: route.name.clone(),
                    ok: c.ok,
                    fallback: c.fallback,
                    rejected: c.rejected,
                    timeouts: c.timeouts,
                }
            })
            .collect();
        let transitions = w.recorder.transitions();
        let breakers = w
            .line
            .iter()
            .flat_map(|line| line.breakers())
            .map(|(name, breaker)| {
                let last = transitions
                    .iter()
                    .rev()
                    .find(|t| t.breaker == name)
                    .cloned();
                (name.to_string(), breaker.state(), last)
            })
            .collect();
        Moment {
            name: e.name.clone(),
            elapsed,
            total: e.duration,
            active,
            routes,
            breakers,
        }
    }

    /// `12.3s / 60.0s  active: stock-down`.
    fn clock_and_faults(&self) -> String {
        let active = if self.active.is_empty() {
            "none".to_string()
        } else {
            self.active.join(", ")
        };
        format!(
            "{} / {}  active: {active}",
            seconds(self.elapsed),
            seconds(self.total)
        )
    }

    /// The panel's lines.
    pub fn panel(&self, colour: bool) -> Vec<String> {
        let paint = |state: State| {
            let text = state.to_string();
            if !colour {
                return text;
            }
            let code = match state {
                State::Closed => "32",
                State::Open => "31;1",
                _ => "33",
            };
            format!("\x1b[{code}m{text}\x1b[0m")
        };
        let mut lines = vec![format!("{}  {}", self.name, self.clock_and_faults())];
        let width = self
            .routes
            .iter()
            .map(|r| r.name.len())
            .max()
            .unwrap_or(0)
            .max(5);
        lines.push(format!(
            "  {:<width$}  {:>8}  {:>8}  {:>8}  {:>8}",
            "route", "ok", "fallback", "rejected", "timeouts"
        ));
        for r in &self.routes {
            lines.push(format!(
                "  {:<width$}  {:>8}  {:>8}  {:>8}  {:>8}",
                r.name, r.ok, r.fallback, r.rejected, r.timeouts
            ));
        }
        for (name, state, last) in &self.breakers {
            let mut line = format!("  breaker {name}: {}", paint(*state));
            if let Some(t) = last {
                line.push_str(&format!(
                    "  last: {} -> {} at {} ({})",
                    t.from,
                    t.to,
                    seconds(t.at),
                    t.reason
                ));
            }
            lines.push(line);
        }
        lines
    }

    /// The heartbeat line.
    pub fn heartbeat(&self) -> String {
        let mut line = format!("[firedrill] {}", self.clock_and_faults());
        for r in &self.routes {
            line.push_str(&format!(
                "  {}: ok {} fallback {} rejected {} timeouts {}",
                r.name, r.ok, r.fallback, r.rejected, r.timeouts
            ));
        }
        for (name, state, last) in &self.breakers {
            line.push_str(&format!("  breaker {name}: {state}"));
            if let Some(t) = last {
                line.push_str(&format!(" since {}", seconds(t.at)));
            }
        }
        line
    }
}

/// What the control endpoint's `GET /status` reads, owned so each
/// connection can hold it.
#[derive(Debug, Clone)]
pub struct Status {
    /// The experiment.
    pub experiment: Arc<Experiment>,
    /// The load generator.
    pub load: Arc<Load>,
    /// The defense line, if any.
    pub line: Option<Arc<DefenseLine>>,
    /// Breaker transitions.
    pub recorder: Arc<Recorder>,
    /// The control state.
    pub control: Arc<crate::experiment::drill::drive::control::Control>,
    /// Time zero.
    pub start: Instant,
}

impl Status {
    /// The run now, as JSON.
    pub fn now(&self) -> Value {
        let watched = Watched {
            experiment: &self.experiment,
            load: &self.load,
            line: self.line.clone(),
            recorder: self.recorder.clone(),
            control: Some(self.control.clone()),
            start: self.start,
        };
        let m = Moment::read(&watched);
        let active = self.control.active();
        json!({
            "experiment": m.name,
            "elapsed_ms": crate::defense::breaker::millis(m.elapsed),
            "duration_ms": crate::defense::breaker::millis(m.total),
            "active_faults": m.active,
            "manual_faults": self.control.manual_names().map(|name| json!({
                "name": name,
                "active": active.iter().any(|a| a == name),
            })).collect::<Vec<_>>(),
            "routes": m.routes.iter().map(|r| json!({
                "route": r.name, "ok": r.ok, "fallback": r.fallback,
                "rejected": r.rejected, "timeouts": r.timeouts,
            })).collect::<Vec<_>>(),
            "breakers": m.breakers.iter().map(|(name, state, last)| json!({
                "name": name,
                "state": state.to_string(),
                "last_transition": last,
            })).collect::<Vec<_>>(),
        })
    }
}

/// `12.3s`.
fn seconds(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

/// Shows the run as `view` says; never returns (the run drops it).
pub async fn show(view: View, watched: Watched<'_>) {
    match view {
        View::Off => std::future::pending().await,
        View::Heartbeat(every) => loop {
            clock::sleep(every).await;
            let line = Moment::read(&watched).heartbeat();
            eprintln!("{}", crate::schema::vars::mask(&line));
        },
        View::Panel { colour } => {
            // indicatif redraws the lines in place and clears them at the
            // end of the run.
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(ProgressStyle::with_template("{msg}").expect("a valid template"));
            loop {
                let lines = Moment::read(&watched).panel(colour);
                bar.set_message(crate::schema::vars::mask(&lines.join("\n")).into_owned());
                clock::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::defense::breaker::Reason;

    fn moment() -> Moment {
        Moment {
            name: "drill".into(),
            elapsed: Duration::from_millis(12_300),
            total: Duration::from_secs(60),
            active: vec!["stock-down".into()],
            routes: vec![RouteCounts {
                name: "shop".into(),
                ok: 100,
                fallback: 20,
                rejected: 18,
                timeouts: 2,
            }],
            breakers: vec![(
                "stock".into(),
                State::Open,
                Some(Transition {
                    at: Duration::from_millis(10_500),
                    breaker: "stock".into(),
                    from: State::Closed,
                    to: State::Open,
                    reason: Reason::Manual {
                        action: "force_open",
                    },
                }),
            )],
        }
    }

    #[test]
    fn the_panel_shows_active_faults_route_counts_and_the_last_transition() {
        let lines = moment().panel(false);
        assert_eq!(lines[0], "drill  12.3s / 60.0s  active: stock-down");
        assert_eq!(lines[1], "  route        ok  fallback  rejected  timeouts");
        assert_eq!(lines[2], "  shop        100        20        18         2");
        assert!(
            lines[3].starts_with("  breaker stock: open  last: closed -> open at 10.5s ("),
            "{}",
            lines[3]
        );
    }

    #[test]
    fn colour_marks_the_state_only_when_asked() {
        let coloured = moment().panel(true).join("\n");
        assert!(coloured.contains("\x1b[31;1mopen\x1b[0m"));
        assert!(!moment().panel(false).join("\n").contains('\x1b'));
    }

    #[test]
    fn the_heartbeat_is_one_line_with_the_same_figures() {
        let line = moment().heartbeat();
        assert_eq!(
            line,
            "[firedrill] 12.3s / 60.0s  active: stock-down  shop: ok 100 fallback 20 rejected 18 timeouts 2  breaker stock: open since 10.5s"
        );
    }
}
