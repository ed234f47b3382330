//! Bands over time: a breaker's states, a pool server's health (waiting
//! for its first check, in rotation, ramping up in slow start, ejected) and
//! the spans when no server of a pool was in rotation.

use super::facts::{PoolFacts, ServerFacts, TransitionFacts};

/// A breaker's states as `[from, to)` segments over `[0, end)`, starting
/// closed.
pub fn segments(transitions: &[TransitionFacts], end: f64) -> Vec<(f64, f64, String)> {
    let mut out = Vec::new();
    let mut from = 0.0;
    let mut state = "closed".to_string();
    for t in transitions {
        let at = t.at_ms.min(end);
        if at > from {
            out.push((from, at, state.clone()));
        }
        from = from.max(at);
        state.clone_from(&t.to);
    }
    if end > from {
        out.push((from, end, state));
    }
    out
}

/// Where a pool server stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HealthState {
    /// Not in rotation yet: its first health checks have not passed.
    Waiting,
    /// In rotation with its full share.
    InRotation,
    /// Back in rotation, its share ramping up over slow start.
    Ramping,
    /// Taken out of rotation.
    Ejected,
}

impl HealthState {
    /// Every state, in the order the legend lists them.
    pub const ALL: [HealthState; 4] = [
        HealthState::InRotation,
        HealthState::Ramping,
        HealthState::Ejected,
        HealthState::Waiting,
    ];

    /// Its CSS class.
    pub fn class(self) -> &'static str {
        match self {
            HealthState::Waiting => "hs-waiting",
            HealthState::InRotation => "hs-in",
            HealthState::Ramping => "hs-ramping",
            HealthState::Ejected => "hs-ejected",
        }
    }

    /// What the page calls it.
    pub fn label(self) -> &'static str {
        match self {
            HealthState::Waiting => "not in rotation yet",
            HealthState::InRotation => "in rotation",
            HealthState::Ramping => "ramping (slow start)",
            HealthState::Ejected => "ejected",
        }
    }

    /// Whether it takes calls.
    pub fn serves(self) -> bool {
        matches!(self, HealthState::InRotation | HealthState::Ramping)
    }
}

/// A pool server's health as `[from, to)` segments over `[0, end)`: out
/// until its first check passes when the pool checks (else in rotation),
/// ejected and back at each change, and a server coming back after it was
/// in rotation ramps for the pool's slow start (a first entry does not, as
/// the pool itself does it).
pub fn health_segments(
    pool: &PoolFacts,
    server: &ServerFacts,
    end: f64,
) -> Vec<(f64, f64, HealthState)> {
    let ramp = pool.slow_start_ms.unwrap_or(0.0);
    let start = if pool.starts_out {
        HealthState::Waiting
    } else {
        HealthState::InRotation
    };
    let mut walk = Walk {
        out: Vec::new(),
        from: 0.0,
        state: start,
        ramp_end: 0.0,
    };
    let mut ever_up = !pool.starts_out;
    for change in &server.changes {
        let at = change.at_ms.min(end);
        walk.advance(at);
        walk.state = match (change.healthy, ever_up && ramp > 0.0) {
            (false, _) => HealthState::Ejected,
            (true, true) => HealthState::Ramping,
            (true, false) => HealthState::InRotation,
        };
        walk.ramp_end = at + ramp;
        ever_up |= change.healthy;
    }
    walk.advance(end);
    walk.out
}

/// A server's segments as they are walked.
struct Walk {
    /// The segments so far.
    out: Vec<(f64, f64, HealthState)>,
    /// Where the current segment starts.
    from: f64,
    /// Its state.
    state: HealthState,
    /// When a ramp ends.
    ramp_end: f64,
}

impl Walk {
    /// Closes the segments up to `to` (a ramp turns into full rotation
    /// at its end).
    fn advance(&mut self, to: f64) {
        if self.state == HealthState::Ramping && self.ramp_end < to {
            if self.ramp_end > self.from {
                self.out
                    .push((self.from, self.ramp_end, HealthState::Ramping));
            }
            self.from = self.from.max(self.ramp_end);
            self.state = HealthState::InRotation;
        }
        if to > self.from {
            self.out.push((self.from, to, self.state));
            self.from = to;
        }
    }
}

/// The spans of `[0, end)` when no server of `pool` (backups included)
/// was in rotation, each with whether it is the first wait, before any
/// server ever passed a health check.
pub fn no_server_spans(pool: &PoolFacts, end: f64) -> Vec<(f64, f64, bool)> {
    let bands: Vec<_> = pool
        .servers
        .iter()
        .map(|s| health_segments(pool, s, end))
        .collect();
    let mut cuts: Vec<f64> = bands
        .iter()
        .flatten()
        .flat_map(|(a, b, _)| [*a, *b])
        .collect();
    cuts.sort_by(f64::total_cmp);
    cuts.dedup();
    let serving = |t: f64| {
        bands
            .iter()
            .any(|band| band.iter().any(|(a, b, s)| *a <= t && t < *b && s.serves()))
    };
    let mut out: Vec<(f64, f64, bool)> = Vec::new();
    let mut ever = false;
    for pair in cuts.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if serving(a) {
            ever = true;
            continue;
        }
        match out.last_mut() {
            Some(last) if last.1 == a => last.1 = b,
            _ => out.push((a, b, !ever)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::html::picture::HealthFacts;

    fn t(at_ms: f64, to: &str) -> TransitionFacts {
        TransitionFacts {
            at_ms,
            from: String::new(),
            to: to.to_string(),
            reason: String::new(),
        }
    }

    #[test]
    fn segments_start_closed_and_cover_the_run_up_to_the_cut() {
        let s = segments(&[t(1000.0, "open"), t(3000.0, "half_open")], 4000.0);
        assert_eq!(
            s,
            [
                (0.0, 1000.0, "closed".to_string()),
                (1000.0, 3000.0, "open".to_string()),
                (3000.0, 4000.0, "half_open".to_string()),
            ]
        );
        // A transition at the very end and one past a cut add no segment.
        let s = segments(&[t(0.0, "open"), t(5000.0, "closed")], 2000.0);
        assert_eq!(s, [(0.0, 2000.0, "open".to_string())]);
    }

    fn change(at_ms: f64, healthy: bool) -> HealthFacts {
        HealthFacts {
            at_ms,
            healthy,
            by: String::new(),
        }
    }

    /// Pool `inventory` of servers a and b with these changes, checked
    /// (servers start out) and a slow start of 12 s.
    fn pool(a: Vec<HealthFacts>, b: Vec<HealthFacts>) -> PoolFacts {
        let server = |name: &str, changes| ServerFacts {
            name: name.to_string(),
            backup: false,
            changes,
        };
        PoolFacts {
            name: "inventory".to_string(),
            starts_out: true,
            slow_start_ms: Some(12_000.0),
            servers: vec![server("a", a), server("b", b)],
        }
    }

    #[test]
    fn a_server_waits_for_its_first_check_then_ramps_only_when_it_comes_back() {
        use HealthState::*;
        let p = pool(
            vec![change(1000.0, true)],
            vec![
                change(1000.0, true),
                change(12_000.0, false),
                change(21_000.0, true),
            ],
        );
        assert_eq!(
            health_segments(&p, &p.servers[1], 45_000.0),
            [
                (0.0, 1000.0, Waiting),
                (1000.0, 12_000.0, InRotation),
                (12_000.0, 21_000.0, Ejected),
                (21_000.0, 33_000.0, Ramping),
                (33_000.0, 45_000.0, InRotation),
            ]
        );
        // A run cut in the ramp ends it there.
        assert_eq!(
            health_segments(&p, &p.servers[1], 25_000.0).last(),
            Some(&(21_000.0, 25_000.0, Ramping))
        );
    }

    #[test]
    fn an_ejection_during_the_ramp_ends_it_and_a_pool_without_checks_starts_in() {
        use HealthState::*;
        let mut p = pool(
            vec![],
            vec![
                change(5000.0, false),
                change(8000.0, true),
                change(10_000.0, false),
            ],
        );
        p.starts_out = false;
        assert_eq!(
            health_segments(&p, &p.servers[1], 12_000.0),
            [
                (0.0, 5000.0, InRotation),
                (5000.0, 8000.0, Ejected),
                (8000.0, 10_000.0, Ramping),
                (10_000.0, 12_000.0, Ejected),
            ]
        );
        assert_eq!(
            health_segments(&p, &p.servers[0], 12_000.0),
            [(0.0, 12_000.0, InRotation)]
        );
    }

    #[test]
    fn no_server_spans_name_the_first_wait_and_a_later_total_outage() {
        let p = pool(
            vec![
                change(1000.0, true),
                change(5000.0, false),
                change(9000.0, true),
            ],
            vec![
                change(2000.0, true),
                change(6000.0, false),
                change(8000.0, true),
            ],
        );
        assert_eq!(
            no_server_spans(&p, 10_000.0),
            [(0.0, 1000.0, true), (6000.0, 8000.0, false)]
        );
        // One server in rotation all along: never without one.
        let q = pool(vec![change(0.0, true)], vec![]);
        assert_eq!(no_server_spans(&q, 10_000.0), []);
    }
}
