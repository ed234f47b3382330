//! A moment of a run as the live view shows it, and its two renderings:
//! the panel's lines (each within the terminal's width, [`WIDTH`] columns
//! at least) and the heartbeat's one line. The counts use the words of [`crate::experiment::vocabulary`].

use crate::clock::{self, Duration};
use crate::defense::breaker::{State, Transition};
use crate::experiment::drill::collect::stream::{Counts, Interval, LiveCounts};
use crate::experiment::vocabulary::{ERRORS, FALLBACK, REJECTED, REQUESTS, SUCCESS, TIMEOUTS};

use super::Watched;

/// The panel's narrowest width: every line fits an 80-column terminal, so
/// a redraw never wraps; a wider terminal gets wider lines.
pub const WIDTH: usize = 80;

/// The longest route name the panel shows whole at [`WIDTH`] columns.
const ROUTE_WIDTH: usize = 16;

/// The longest route name the panel shows whole however wide.
const ROUTE_WIDTH_MAX: usize = 48;

/// One route's counts so far and its last interval.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RouteCounts {
    /// The route.
    pub name: String,
    /// Since the start.
    pub counts: Counts,
    /// Rate and latency over the last interval.
    pub last: Interval,
}

/// One pool: each server and whether it is in rotation now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolState {
    /// The pool.
    pub name: String,
    /// Its servers, in configuration order, each in rotation or not.
    pub servers: Vec<(String, bool)>,
}

impl PoolState {
    /// `2 of 3 in rotation (out: b)`.
    fn describe(&self) -> String {
        let up = self.servers.iter().filter(|(_, up)| *up).count();
        let out: Vec<&str> = self
            .servers
            .iter()
            .filter(|(_, up)| !up)
            .map(|(name, _)| name.as_str())
            .collect();
        let mut text = format!("{up} of {} in rotation", self.servers.len());
        if !out.is_empty() {
            text.push_str(&format!(" (out: {})", out.join(", ")));
        }
        text
    }
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
    /// The whole seconds the interval figures cover.
    pub interval: u64,
    /// Per route, in the order of `load:`.
    pub routes: Vec<RouteCounts>,
    /// Per pool of the defense line.
    pub pools: Vec<PoolState>,
    /// Per breaker: name, state now, last transition.
    pub breakers: Vec<(String, State, Option<Transition>)>,
}

impl Moment {
    /// Reads the run now, its interval figures over the last `interval`
    /// whole seconds (at least one).
    pub fn read(w: &Watched<'_>, interval: u64) -> Moment {
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
        let interval = interval.clamp(1, LiveCounts::SECONDS);
        let to = elapsed.as_secs();
        let from = to.saturating_sub(interval);
        let live = w.load.stream().live();
        let routes = e
            .load
            .iter()
            .map(|route| {
                let c = live.get(&route.name).cloned().unwrap_or_default();
                RouteCounts {
                    name: route.name.clone(),
                    counts: c.counts,
                    last: c.interval(from, to),
                }
            })
            .collect();
        let pools = w
            .line
            .iter()
            .flat_map(|line| line.pools())
            .map(|pool| PoolState {
                name: pool.name().to_string(),
                servers: pool
                    .servers()
                    .iter()
                    .map(|s| s.name.clone())
                    .zip(pool.healthy())
                    .collect(),
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
            interval,
            routes,
            pools,
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
        let nanos = |d: Duration| d.as_nanos();
        let percent = (nanos(self.elapsed) * 100)
            .checked_div(nanos(self.total))
            .unwrap_or(100);
        format!(
            "{} / {} ({percent}%)  active: {active}",
            seconds(self.elapsed),
            seconds(self.total)
        )
    }

    /// The panel's lines, none wider than `columns` (the terminal's width;
    /// [`WIDTH`] when narrower).
    pub fn panel(&self, colour: bool, columns: usize) -> Vec<String> {
        let columns = columns.max(WIDTH);
        let route_width = (ROUTE_WIDTH + columns - WIDTH).min(ROUTE_WIDTH_MAX);
        let fit = |text: &str| fit_to(text, columns);
        let mut lines = vec![fit(&format!("{}  {}", self.name, self.clock_and_faults()))];
        let last = format!("last {}s", self.interval);
        let width = self
            .routes
            .iter()
            .map(|r| r.name.chars().count().min(route_width))
            .chain([5, last.len()])
            .max()
            .unwrap_or(5);
        let words = [REQUESTS, SUCCESS, FALLBACK, ERRORS, REJECTED, TIMEOUTS].map(|t| t.word);
        let row = |first: &str, cells: [String; 6]| {
            let mut line = format!("  {first:<width$}");
            for cell in cells {
                line.push_str(&format!("  {cell:>8}"));
            }
            line
        };
        lines.push(row("route", words.map(String::from)));
        for r in &self.routes {
            let c = &r.counts;
            let counts = [
                c.requests, c.success, c.fallback, c.errors, c.rejected, c.timeouts,
            ];
            lines.push(row(
                &fit_to(&r.name, route_width),
                counts.map(|n| n.to_string()),
            ));
        }
        if !self.routes.is_empty() {
            lines.push(format!(
                "  {last:<width$}  {:>8}  {:>8}  {:>8}",
                "req/s", "p50", "p99"
            ));
            for r in &self.routes {
                lines.push(format!(
                    "  {:<width$}  {:>8.1}  {:>8}  {:>8}",
                    fit_to(&r.name, route_width),
                    r.last.rate,
                    millis(r.last.p50),
                    millis(r.last.p99)
                ));
            }
        }
        for p in &self.pools {
            lines.push(fit(&format!("  pool {}: {}", p.name, p.describe())));
        }
        for (name, state, last) in &self.breakers {
            lines.push(breaker_line(name, *state, last.as_ref(), colour, columns));
        }
        lines
    }

    /// The heartbeat line.
    pub fn heartbeat(&self) -> String {
        let mut line = format!("[firedrill] {}", self.clock_and_faults());
        for r in &self.routes {
            line.push_str(&format!(
                "  {}: {} {} {} {} {} {} {} {} {} {} {} {}, last {}s {:.1} req/s p50 {} p99 {}",
                r.name,
                REQUESTS.word,
                r.counts.requests,
                SUCCESS.word,
                r.counts.success,
                FALLBACK.word,
                r.counts.fallback,
                ERRORS.word,
                r.counts.errors,
                REJECTED.word,
                r.counts.rejected,
                TIMEOUTS.word,
                r.counts.timeouts,
                self.interval,
                r.last.rate,
                millis(r.last.p50),
                millis(r.last.p99),
            ));
        }
        for p in &self.pools {
            line.push_str(&format!("  pool {}: {}", p.name, p.describe()));
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

/// `  breaker stock: open  last: closed -> open at 10.5s (reason)`, cut to
/// `columns`, the state coloured when asked.
fn breaker_line(
    name: &str,
    state: State,
    last: Option<&Transition>,
    colour: bool,
    columns: usize,
) -> String {
    let head = format!("  breaker {name}: ");
    let text = state.to_string();
    let mut tail = String::new();
    if let Some(t) = last {
        tail = format!(
            "  last: {} -> {} at {} ({})",
            t.from,
            t.to,
            seconds(t.at),
            t.reason
        );
    }
    let plain = fit_to(&format!("{head}{text}{tail}"), columns);
    if !colour || !plain.starts_with(&format!("{head}{text}")) {
        return plain;
    }
    let code = match state {
        State::Closed => "32",
        State::Open => "31;1",
        _ => "33",
    };
    let rest = &plain[head.len() + text.len()..];
    format!("{head}\x1b[{code}m{text}\x1b[0m{rest}")
}

/// `text` cut to `width` characters, an ellipsis marking the cut.
fn fit_to(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(width - 1).collect();
    cut.push('…');
    cut
}

/// `12.3s`.
pub(super) fn seconds(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

/// `20.0ms`, or `-` when no answer came.
fn millis(d: Option<Duration>) -> String {
    d.map_or_else(
        || "-".to_string(),
        |d| format!("{:.1}ms", d.as_secs_f64() * 1000.0),
    )
}

#[cfg(test)]
#[path = "moment_tests.rs"]
mod tests;
