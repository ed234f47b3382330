//! The health of one pool server: passive failure tracking (NGINX's
//! `max_fails` within `fail_timeout`) and active checks (NGINX Plus's
//! `fails` and `passes`, `mandatory`), combined. A pure state machine: the
//! caller passes the time and reports each change it returns.

use crate::clock::{Duration, Instant};
use crate::schema::units::Dur;

/// The limits one server's health follows (from the pool's config).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Failed attempts within `fail_timeout` that take the server out (0:
    /// passive tracking off).
    pub max_fails: u32,
    /// The window of `max_fails`, and the time out of rotation.
    pub fail_timeout: Duration,
    /// Consecutive failed checks that take it out.
    pub fails: u32,
    /// Consecutive passed checks that bring it back.
    pub passes: u32,
}

/// One server's health.
#[derive(Debug, Clone)]
pub struct ServerHealth {
    /// Failed attempts in the current passive window.
    window_fails: u32,
    /// When the current passive window opened.
    window_start: Option<Instant>,
    /// Passively out of rotation until then.
    out_until: Option<Instant>,
    /// Came back from a passive ejection and has not succeeded since: one
    /// more failure takes it out again (NGINX).
    probation: bool,
    /// Passes the active checks (always, without checks).
    active_ok: bool,
    /// Failed checks in a row.
    check_fails: u32,
    /// Passed checks in a row.
    check_passes: u32,
    /// The state last reported (a change is reported once).
    reported_up: bool,
    /// Has been in rotation at least once.
    ever_up: bool,
    /// When it last came back after being out (slow start).
    back_since: Option<Instant>,
}

impl ServerHealth {
    /// A new server: in rotation at once, or, when `checked` (active
    /// checks configured), out until it passes them.
    pub fn new(checked: bool) -> ServerHealth {
        ServerHealth {
            window_fails: 0,
            window_start: None,
            out_until: None,
            probation: false,
            active_ok: !checked,
            check_fails: 0,
            check_passes: 0,
            reported_up: !checked,
            ever_up: !checked,
            back_since: None,
        }
    }

    /// Whether it may get calls at `now`.
    pub fn is_up(&self, now: Instant) -> bool {
        self.active_ok && self.out_until.is_none_or(|t| now >= t)
    }

    /// The state last reported.
    pub fn reported_up(&self) -> bool {
        self.reported_up
    }

    /// When it last came back after being out, if it did.
    pub fn back_since(&self) -> Option<Instant> {
        self.back_since
    }

    /// When a passive ejection ends, if one is pending at `now`.
    pub fn passive_return(&self, now: Instant) -> Option<Instant> {
        self.out_until.filter(|&t| t > now)
    }

    /// An attempt sent to the server ended, `failed` or not. Returns what
    /// took it out, when this did.
    pub fn on_attempt(&mut self, failed: bool, now: Instant, limits: &Limits) -> Option<String> {
        if limits.max_fails == 0 || self.passive_return(now).is_some() {
            // Off, or already out (an attempt started before it was taken
            // out): nothing to learn.
            return None;
        }
        if !failed {
            if self.probation {
                self.probation = false;
                self.window_fails = 0;
                self.window_start = None;
            }
            return None;
        }
        if self.probation {
            self.eject(now, limits);
            return Some(format!(
                "passive: failed again after {} out",
                Dur(limits.fail_timeout)
            ));
        }
        if self
            .window_start
            .is_none_or(|start| now - start >= limits.fail_timeout)
        {
            self.window_start = Some(now);
            self.window_fails = 0;
        }
        self.window_fails += 1;
        if self.window_fails < limits.max_fails {
            return None;
        }
        let count = self.window_fails;
        self.eject(now, limits);
        Some(format!(
            "passive: {count} {} within {}",
            if count == 1 { "failure" } else { "failures" },
            Dur(limits.fail_timeout)
        ))
    }

    fn eject(&mut self, now: Instant, limits: &Limits) {
        self.out_until = Some(now + limits.fail_timeout);
        self.probation = true;
        self.window_fails = 0;
        self.window_start = None;
    }

    /// An active check of `what` (`GET /health`) ended: `failure` says why
    /// it failed, `None` when it passed. Returns what decided a change of
    /// the check's verdict, when this did.
    pub fn on_check(
        &mut self,
        what: &str,
        failure: Option<&str>,
        limits: &Limits,
    ) -> Option<String> {
        match failure {
            None => {
                self.check_passes += 1;
                self.check_fails = 0;
                if self.active_ok || self.check_passes < limits.passes {
                    return None;
                }
                self.active_ok = true;
                let n = self.check_passes;
                Some(format!(
                    "active check {what} passed {n} {}",
                    if n == 1 { "time" } else { "times" }
                ))
            }
            Some(why) => {
                self.check_fails += 1;
                self.check_passes = 0;
                if !self.active_ok || self.check_fails < limits.fails {
                    return None;
                }
                self.active_ok = false;
                Some(format!(
                    "active check {what}: {why} ({} failure in a row)",
                    ordinal(self.check_fails)
                ))
            }
        }
    }

    /// Compares the state at `now` with the one last reported: `Some(up)`
    /// when it changed (report it once). A server that comes back after
    /// being in rotation before starts its slow start at `now`; a new
    /// server passing its first checks does not.
    pub fn settle(&mut self, now: Instant) -> Option<bool> {
        let up = self.is_up(now);
        if up == self.reported_up {
            return None;
        }
        self.reported_up = up;
        if up {
            self.back_since = self.ever_up.then_some(now);
            self.ever_up = true;
        }
        Some(up)
    }
}

/// `1st`, `2nd`, `3rd`, `4th`, ..., `11th`, `12th`, `13th`, `21st`.
pub fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

#[cfg(test)]
#[path = "health_tests.rs"]
mod tests;
