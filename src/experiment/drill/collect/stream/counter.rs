//! What the stream counts of each final request and hit: one counter per
//! expectation, the live view's figures per route, and the scene the
//! windows are read in.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{ManualFaults, StreamSetup};
use crate::clock::Duration;
use crate::defense::breaker::{State, Transition};
use crate::defense::report::HealthChange;
use crate::experiment::expect::ast::{Expectation, Rule, Server, Window};
use crate::experiment::expect::tally::{RouteTally, ShareTally, Tally, counts_hit};
use crate::experiment::expect::window::{Scene, interval_start};
use crate::experiment::timeline::{RequestRecord, TargetHit};

/// What one expectation counts, as the stream sees it.
#[derive(Clone)]
pub(super) enum Counter {
    /// A breaker sentence: nothing.
    None,
    /// A route sentence: the route, its window and its tally.
    Route(Expectation, RouteTally),
    /// A calls sentence.
    Calls(Expectation, crate::experiment::expect::tally::CallTally),
    /// A pool share sentence: its window and the pool calls in it.
    Share(Window, ShareTally),
}

impl Counter {
    pub(super) fn of(expectation: &Expectation) -> Counter {
        match &expectation.rule {
            Rule::Route { .. } => Counter::Route(expectation.clone(), RouteTally::default()),
            Rule::Calls { .. } => Counter::Calls(expectation.clone(), Default::default()),
            rule @ Rule::Pool(_) => match rule.counted_window() {
                Some(window) => Counter::Share(window.clone(), ShareTally::default()),
                None => Counter::None,
            },
            _ => Counter::None,
        }
    }

    pub(super) fn tally(&self) -> Tally {
        match self {
            Counter::None => Tally::None,
            Counter::Route(_, t) => Tally::Route(t.clone()),
            Counter::Calls(_, t) => Tally::Calls(t.clone()),
            Counter::Share(_, t) => Tally::Share(t.clone()),
        }
    }

    /// Counts a final request if it is this sentence's.
    pub(super) fn request(&mut self, r: &RequestRecord, scene: &impl Scene) {
        if let Counter::Route(e, tally) = self
            && let Rule::Route { route, window, .. } = &e.rule
            && r.route == route.text
            && interval_start(window, scene, r.sent).is_some()
        {
            tally.add(r);
        }
        if let Counter::Share(window, tally) = self
            && r.served_by.is_some()
            && interval_start(window, scene, r.sent).is_some()
        {
            tally.add(r);
        }
    }

    /// Counts a target hit if it is this sentence's; `sent` is when its
    /// request was sent, if known.
    pub(super) fn hit(&mut self, hit: &TargetHit, sent: Option<Duration>, scene: &impl Scene) {
        if let Counter::Calls(e, tally) = self
            && let Rule::Calls {
                glob,
                instance,
                window,
                ..
            } = &e.rule
            && counts_hit(glob, instance.as_ref(), hit)
            && let Some(from) = interval_start(window, scene, hit.at)
            && sent.is_none_or(|s| s > from)
        {
            tally.add(hit);
        }
    }
}

/// Figures a live view shows per route.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveCounts {
    /// Answered, not by a fallback.
    pub ok: usize,
    /// Answered by a fallback.
    pub fallback: usize,
    /// Turned away by the defense line.
    pub rejected: usize,
    /// Timed out.
    pub timeouts: usize,
}

impl LiveCounts {
    pub(super) fn add(&mut self, r: &RequestRecord) {
        self.rejected += usize::from(r.rejected_by.is_some());
        self.timeouts += usize::from(r.timed_out());
        if r.fallback.is_some() {
            self.fallback += 1;
        } else if r.succeeded() {
            self.ok += 1;
        }
    }
}

/// The run as far as the windows need it.
pub(super) struct Known<'a> {
    end: Duration,
    fault_spans: &'a BTreeMap<String, (Duration, Duration)>,
    phases: &'a BTreeMap<String, (Duration, Duration)>,
    transitions: &'a [Transition],
    health: &'a [HealthChange],
    control: Option<&'a dyn ManualFaults>,
    now: Duration,
}

impl Scene for Known<'_> {
    fn end(&self) -> Duration {
        self.end
    }
    fn fault_span(&self, name: &str) -> Option<(Duration, Duration)> {
        if let Some(span) = self.fault_spans.get(name) {
            return Some(*span);
        }
        let windows = self.control?.windows(self.now).remove(name)?;
        Some((windows.first()?.0, windows.last()?.1))
    }
    fn phase(&self, name: &str) -> Option<(Duration, Duration)> {
        self.phases.get(name).copied()
    }
    fn last_transition(&self, name: &str, t: Duration) -> Option<(Duration, State)> {
        self.transitions
            .iter()
            .rfind(|tr| tr.breaker == name && tr.at <= t)
            .map(|tr| (tr.at, tr.to))
    }
    fn last_health(&self, server: &Server, t: Duration) -> Option<(Duration, bool)> {
        self.health
            .iter()
            .rfind(|h| server.is(&h.pool, &h.server) && h.at <= t)
            .map(|h| (h.at, h.healthy))
    }
}

/// The scene of the windows: the run as known at `now` (the end: all).
pub(super) fn known<'a>(
    setup: &'a StreamSetup,
    transitions: &'a [Transition],
    health: &'a [HealthChange],
    end: Duration,
    control: Option<&'a Arc<dyn ManualFaults>>,
    now: Option<Duration>,
) -> Known<'a> {
    Known {
        end,
        fault_spans: &setup.fault_spans,
        phases: &setup.phases,
        transitions,
        health,
        control: control.map(|c| &**c),
        now: now.unwrap_or(end),
    }
}
