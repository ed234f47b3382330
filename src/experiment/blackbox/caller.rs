//! Inferring a black-box breaker from both sides of the service: what the
//! caller got (answers that never reached the dependency: short-circuits)
//! and what the dependency saw (each call with its outcome and when it
//! ended). Used whenever firedrill sends the load itself; [`super::infer`]
//! reads arrivals alone for outside traffic.
//!
//! # Rules
//!
//! The walk goes through every event in time order: a call's arrival at
//! the dependency, a call's end (its answer, or when the service gave up
//! on it), and a short-circuit (a caller request answered without any call
//! of it reaching the dependency).
//!
//! * `closed -> open` once [`CallerParams::min_short_circuits`]
//!   short-circuits came with no arrival between them; the breaker opened
//!   when the failure that tripped it ended: the first failed call to end
//!   after the last call it admitted arrived (calls still in flight then
//!   end later, while it is open), if that was before the first of those
//!   answers; else at the first one's send.
//! * While open, a call that reaches the dependency is a trial only once
//!   the breaker has been open for its wait (`wait_in_open`, less
//!   [`wait_tolerance`]: more when a call let through before the open
//!   arrived late; without a declared wait, for longer than
//!   [`CallerParams::gap`]): then `open -> half_open` when the caller sent
//!   its request (paired by id; the service went half-open when it took
//!   that request in, which a loaded caller's later requests may overtake),
//!   else at its arrival. A call whose request was sent before the open
//!   was proven (the first short-circuit's answer) may have been let
//!   through before it and sent late: no proof of a leak. Any other call
//!   is a leak: the breaker let it through while open.
//! * Half-open admits whatever the service lets through (one trial, or a
//!   burst until the first ends): the outcomes decide. The first trial
//!   that fails reopens it when it ends (`half_open -> open`, the wait
//!   starts again); [`CallerParams::probes`] successful trials close it
//!   when the last of them ends (`half_open -> closed`). Short-circuits in
//!   half-open are the calls rejected while the trials are on; so is one
//!   sent before the close whose answer the caller took in only after it
//!   (a loaded load generator's answers come in late): it does not count
//!   towards reopening the breaker, so no transition is dated before the
//!   one it follows.
//! * A call still outstanding (no end) decides nothing: a half-open episode
//!   whose trial never ends stays half-open.
//! * An open interval in which the caller saw no short-circuit at all while
//!   calls kept reaching the dependency contradicts the breaker's declared
//!   settings (a `probes` or `wait_in_open` the service does not have made
//!   the walk reopen a breaker the service had closed): its calls are not
//!   evidence of leaks, and the interval is named
//!   ([`CallerInference::contradictions`]) for the evidence gate.

use std::collections::VecDeque;

use super::infer::{InferredTransition, count as plural};
pub use super::step::{Call, Event, ShortCircuit, Step};
use crate::clock::Duration;
use crate::defense::breaker::State;
use crate::experiment::expect::verdict::latency;

/// How much earlier than its declared wait a breaker may always let its
/// first trial through and still count as on time (the least of
/// [`wait_tolerance`]): the drill dates the open at the end of the failure
/// as the dependency's proxy saw it, a moment before the service itself
/// did.
pub const WAIT_TOLERANCE: Duration = Duration::from_millis(50);

/// How much earlier than its declared `wait` a breaker may let its first
/// trial through and still count as on time: [`WAIT_TOLERANCE`], or the
/// open's `slack` (at most a tenth of the wait) when that is more.
///
/// A busy service may send a call it let through just before it tripped
/// only after the failure that tripped it (74 ms late, seen with a 2 s
/// wait on a loaded 2-core machine); the drill then dates the open at a
/// later failure. The slack is how much earlier a failure that ended
/// after that call's request was sent could have tripped it; it is
/// nothing when every call came as soon as its request, so a leak just
/// before the wait's end is still a leak.
pub fn wait_tolerance(wait: Duration, slack: Duration) -> Duration {
    WAIT_TOLERANCE.max(slack.min(wait / 10))
}

/// Default short-circuits that open a breaker: one answer without a call
/// may be a cache; two in a row show the service stopped calling.
pub const DEFAULT_MIN_SHORT_CIRCUITS: u32 = 2;

/// What the walk needs to know of the breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallerParams {
    /// The breaker's declared wait in open, if any.
    pub wait_in_open: Option<Duration>,
    /// Without a declared wait: how long the breaker must have been open
    /// before a call counts as a trial rather than a leak.
    pub gap: Duration,
    /// Successful trials that close it.
    pub probes: u32,
    /// Short-circuits in a row that open it.
    pub min_short_circuits: u32,
}

/// A call that reached the dependency while the breaker was open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leak {
    /// When it arrived.
    pub at: Duration,
    /// Its path.
    pub path: String,
    /// The caller request it was made for, if known.
    pub request_id: Option<u64>,
    /// How long the breaker had been open then.
    pub open_for: Duration,
}

/// An open interval the caller contradicts: no request short-circuited,
/// while calls reached the dependency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contradiction {
    /// When the inferred open began.
    pub from: Duration,
    /// When it ended (a trial, or the run's last event).
    pub to: Duration,
    /// The calls that reached the dependency meanwhile.
    pub calls: u64,
}

/// What the walk concluded: the transitions and the calls let through
/// while open.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallerInference {
    /// The transitions, in time order.
    pub transitions: Vec<InferredTransition>,
    /// The leaks, in arrival order.
    pub leaks: Vec<Leak>,
    /// The open intervals the caller's side contradicts.
    pub contradictions: Vec<Contradiction>,
}

/// Where the walk stands.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    /// Closed since `since` (the start, or the close): the short-circuits
    /// seen in a row since the last arrival, the first of them, the end of
    /// the first failure since the last arrival, and the ends of the
    /// failures that may have tripped it, earliest first.
    ///
    /// A call that reached the dependency was let through while closed:
    /// after the caller sent its request (paired by id), but a busy service
    /// may send it only after another call's failure has tripped the
    /// breaker. So a failure that ended after that send may have tripped
    /// it; unpaired, only one that ended after the call arrived.
    Closed {
        since: Duration,
        shorts: u32,
        first: Option<ShortCircuit>,
        failure_ended: Option<Duration>,
        may_have_tripped: VecDeque<Duration>,
    },
    /// Open since `since`, proven open from `proven` (the first
    /// short-circuit's answer), perhaps tripped up to `slack` before
    /// `since`, with `shorts` short-circuits and `calls` calls (leaks) so
    /// far.
    Open {
        since: Duration,
        proven: Duration,
        slack: Duration,
        shorts: u64,
        calls: u64,
    },
    /// Half-open: the trials admitted (the calls that arrived from the
    /// first trial on, whose arrival and index is `first`), how many
    /// succeeded, when it began.
    HalfOpen {
        admitted: u64,
        first: (Duration, u64),
        succeeded: u32,
        since: Duration,
    },
}

/// Infers the breaker from `calls` (any order) and `shorts` (any order).
pub fn infer_from_caller(
    calls: &[Call],
    shorts: &[ShortCircuit],
    params: &CallerParams,
) -> CallerInference {
    let mut all: Vec<Step> = Vec::new();
    for (index, call) in (0..).zip(calls) {
        Step::of_call(index, call.clone(), &mut |s| all.push(s));
    }
    for (index, short) in (0..).zip(shorts) {
        all.push(Step::of_short(index, *short));
    }
    all.sort_unstable_by(Step::order);
    let mut leaks = Vec::new();
    let mut out = walk(all, params, &mut |leak| leaks.push(leak));
    out.leaks = leaks;
    out
}

/// Infers the breaker from its steps in [`Step::order`]; each leak goes to
/// `leak` as it is found (the result's list of leaks stays empty).
pub fn walk(
    steps: impl IntoIterator<Item = Step>,
    params: &CallerParams,
    leak: &mut dyn FnMut(Leak),
) -> CallerInference {
    let mut walk = CallerWalk {
        params,
        leak,
        phase: Phase::Closed {
            since: Duration::ZERO,
            shorts: 0,
            first: None,
            failure_ended: None,
            may_have_tripped: VecDeque::new(),
        },
        out: CallerInference::default(),
    };
    let mut last = None;
    for step in steps {
        last = Some(step.at);
        walk.step(step);
    }
    if let Some(last) = last {
        walk.open_ends(last);
    }
    walk.out
}

/// A call that arrived, as the walk reads it.
struct Arrived {
    at: Duration,
    index: u64,
    path: String,
    request_id: Option<u64>,
    sent: Option<Duration>,
}

/// The walk in progress.
struct CallerWalk<'a> {
    params: &'a CallerParams,
    leak: &'a mut dyn FnMut(Leak),
    phase: Phase,
    out: CallerInference,
}

impl CallerWalk<'_> {
    /// Takes one step.
    fn step(&mut self, step: Step) {
        let Step { at, index, event } = step;
        match (&mut self.phase, event) {
            (
                Phase::Closed {
                    failure_ended,
                    may_have_tripped,
                    ..
                },
                Event::End { failed: true, .. },
            ) => {
                failure_ended.get_or_insert(at);
                may_have_tripped.push_back(at);
            }
            (
                Phase::Closed {
                    shorts,
                    first,
                    failure_ended,
                    may_have_tripped,
                    ..
                },
                Event::Arrival { sent, .. },
            ) => {
                *shorts = 0;
                *first = None;
                *failure_ended = None;
                let ruled_out = |ended: Duration| match sent {
                    Some(sent) => ended < sent.min(at),
                    None => ended <= at,
                };
                while may_have_tripped.front().is_some_and(|&e| ruled_out(e)) {
                    may_have_tripped.pop_front();
                }
            }
            (Phase::Closed { .. }, Event::Short { sent }) => {
                self.short_while_closed(ShortCircuit { sent, answered: at })
            }
            (
                Phase::Open {
                    since,
                    proven,
                    slack,
                    calls,
                    ..
                },
                Event::Arrival {
                    path,
                    request_id,
                    sent,
                },
            ) => {
                let (since, proven, slack) = (*since, *proven, *slack);
                *calls += 1;
                let call = Arrived {
                    at,
                    index,
                    path,
                    request_id,
                    sent,
                };
                self.arrival_while_open(since, proven, slack, call);
            }
            (Phase::Open { shorts, .. }, Event::Short { .. }) => *shorts += 1,
            (Phase::HalfOpen { admitted, .. }, Event::Arrival { .. }) => *admitted += 1,
            // A trial: a call that arrived from the first trial on, before
            // now (an end before its arrival is no trial's).
            (Phase::HalfOpen { first, .. }, Event::End { failed, arrived })
                if (arrived, index) >= *first && arrived < at =>
            {
                self.trial_ended(at, failed);
            }
            _ => {}
        }
    }

    /// A short-circuit while closed: the breaker opened once enough came
    /// in a row. One sent before the breaker closed was rejected by the
    /// half-open breaker (its answer only came in late): it says nothing
    /// of this closed spell.
    fn short_while_closed(&mut self, short: ShortCircuit) {
        let Phase::Closed {
            since,
            shorts,
            first,
            failure_ended,
            may_have_tripped,
        } = &mut self.phase
        else {
            return;
        };
        if short.sent < *since {
            return;
        }
        *shorts += 1;
        let first = *first.get_or_insert(short);
        if *shorts < self.params.min_short_circuits.max(1) {
            return;
        }
        let (at, why) = match failure_ended {
            Some(ended) if *ended <= first.answered => (
                *ended,
                format!("the failure that tripped it ended at {}", latency(*ended)),
            ),
            _ => (first.sent, "no failure seen before".to_string()),
        };
        let count = *shorts;
        let earliest = may_have_tripped.front().map_or(at, |&e| e.min(at));
        let reason = format!(
            "{} answered without reaching the dependency; {why}",
            plural(count, "request")
        );
        self.push(at, State::Open, reason, 0, u64::from(count));
        // The service had opened once it answered the first short-circuit;
        // a request it ran beside the tripping failure may reach the
        // dependency between `at` and then.
        if let Some(last) = self.out.transitions.last_mut() {
            last.proven = (first.answered > at).then_some(first.answered);
        }
        self.phase = Phase::Open {
            since: at,
            proven: first.answered.max(at),
            slack: at - earliest,
            shorts: u64::from(count),
            calls: 0,
        };
    }

    /// A call that reached the dependency while open: a trial once the
    /// wait is over (the open perhaps `slack` earlier), a leak before
    /// (unless its request was sent before the open was `proven`).
    fn arrival_while_open(
        &mut self,
        since: Duration,
        proven: Duration,
        slack: Duration,
        call: Arrived,
    ) {
        let open_for = call.at.saturating_sub(since);
        let waited = match self.params.wait_in_open {
            Some(wait) => open_for >= wait.saturating_sub(wait_tolerance(wait, slack)),
            None => open_for > self.params.gap,
        };
        if !waited {
            if call.sent.is_some_and(|sent| sent <= proven) {
                // Its request was sent before the breaker was known open:
                // it may be a call the service let through while closed
                // and sent late (`calls to` does not count it either), no
                // proof of a leak.
                if let Phase::Open { calls, .. } = &mut self.phase {
                    *calls -= 1;
                }
                return;
            }
            (self.leak)(Leak {
                at: call.at,
                path: call.path,
                request_id: call.request_id,
                open_for,
            });
            return;
        }
        // The trial itself is no call of the open interval.
        if let Phase::Open { calls, .. } = &mut self.phase {
            *calls -= 1;
        }
        // Half-open from when its request was sent, if known: a request
        // sent after it reached a half-open (or closed) breaker, however
        // late the service took it in.
        let at = call
            .sent
            .map_or(call.at, |sent| sent.max(since).min(call.at));
        self.open_ends(at);
        let shorts = match self.phase {
            Phase::Open { shorts, .. } => shorts,
            _ => 0,
        };
        let reason = format!(
            "a trial call after {} open ({} short-circuited)",
            latency(open_for),
            plural(shorts, "request")
        );
        self.push(at, State::HalfOpen, reason, 1, shorts);
        self.phase = Phase::HalfOpen {
            admitted: 1,
            first: (call.at, call.index),
            succeeded: 0,
            since: at,
        };
    }

    /// A trial ended at `at`: a failure reopens, enough successes close.
    fn trial_ended(&mut self, at: Duration, failed: bool) {
        let Phase::HalfOpen {
            admitted,
            succeeded,
            since,
            ..
        } = &mut self.phase
        else {
            return;
        };
        let admitted = *admitted;
        let took = latency(at.saturating_sub(*since));
        if failed {
            let reason = format!(
                "a trial failed, {took} into half-open ({} admitted)",
                plural(admitted, "trial")
            );
            self.push(at, State::Open, reason, admitted, 0);
            self.phase = Phase::Open {
                since: at,
                proven: at,
                slack: Duration::ZERO,
                shorts: 0,
                calls: 0,
            };
            return;
        }
        *succeeded += 1;
        if *succeeded < self.params.probes.max(1) {
            return;
        }
        let reason = format!(
            "{} succeeded, {took} into half-open ({} admitted)",
            plural(u64::from(*succeeded), "trial"),
            plural(admitted, "trial")
        );
        self.push(at, State::Closed, reason, admitted, 0);
        self.phase = Phase::Closed {
            since: at,
            shorts: 0,
            first: None,
            failure_ended: None,
            may_have_tripped: VecDeque::new(),
        };
    }

    /// An open interval ends at `at` (a trial, or the walk's end): one in
    /// which the caller saw no short-circuit while enough calls reached the
    /// dependency to have opened a closed breaker is a contradiction.
    fn open_ends(&mut self, at: Duration) {
        if let Phase::Open {
            since,
            shorts: 0,
            calls,
            ..
        } = self.phase
            && calls >= u64::from(self.params.min_short_circuits.max(1))
        {
            self.out.contradictions.push(Contradiction {
                from: since,
                to: at,
                calls,
            });
        }
    }

    /// Records a transition from the current state to `to`.
    fn push(&mut self, at: Duration, to: State, reason: String, arrivals: u64, sends: u64) {
        let from = match self.phase {
            Phase::Closed { .. } => State::Closed,
            Phase::Open { .. } => State::Open,
            Phase::HalfOpen { .. } => State::HalfOpen,
        };
        self.out.transitions.push(InferredTransition {
            at,
            from,
            to,
            reason,
            arrivals,
            sends,
            proven: None,
        });
    }
}

#[cfg(test)]
#[path = "caller_tests.rs"]
mod tests;
