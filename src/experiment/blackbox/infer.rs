//! Inferring a black-box circuit breaker's state timeline from what reaches
//! its dependency alone: no calls = open; a trickle of probes after the
//! wait = half-open; full traffic = closed. This is the reading for
//! outside traffic, where what the caller got is not seen; with
//! firedrill's own load, [`super::caller`] reads both sides.
//!
//! [`infer_calls`] takes each call's end too: a stretch counts as a
//! silence only from the moment no call is outstanding (the end of the
//! last call that arrived before it), which is also when the breaker is
//! dated open. [`infer`] takes arrivals alone (calls that end as they
//! come).
//!
//! When the system under test is the user's own service with its own
//! breaker, firedrill sees two things: the requests its load generator
//! *sends* to the service (on the routes that use the dependency) and the
//! requests that *arrive* at the dependency (through the fault proxy in
//! front of it). [`infer`] turns the two sorted lists of times, measured
//! from the drill's start, into the breaker's transitions. It is pure: no
//! I/O, no clock, the same input gives the same output, in O(n log n)
//! (O(n) when the input is sorted, as it should be).
//!
//! # Semantics
//!
//! A *silence* is a stretch longer than [`InferParams::gap`] between two
//! consecutive arrivals during which the service kept being called: at
//! least [`InferParams::min_sends_in_gap`] sends fall strictly inside it.
//! When `sends` is empty the load is external and unobserved: then every
//! stretch longer than `gap` between two arrivals is a silence. A stretch
//! without enough sends is just no traffic and changes nothing (not even a
//! half-open episode's count of trial calls).
//!
//! * The breaker starts `closed` at 0. The time before the first arrival
//!   is never a silence: a breaker does not trip without calls. Without
//!   arrivals nothing is inferred.
//! * `closed -> open` at the last arrival before a silence: the call whose
//!   failure tripped the breaker.
//! * `open -> half_open` at the first arrival after a silence: the trial
//!   call.
//! * `half_open -> closed` at the (`probes` + 1)-th arrival of the
//!   half-open episode when no silence came between: traffic resumed.
//! * `half_open -> open` at the last trial arrival when a silence follows
//!   at most `probes` arrivals.
//! * At the end: a silence from the last arrival to the last send (longer
//!   than `gap`, with at least `min_sends_in_gap` sends after the last
//!   arrival) is an open that never ended. Without sends the end of the
//!   run cannot be told from the end of the traffic, so nothing is
//!   inferred there.
//!
//! Two transitions can share a time (a lone trial call between two
//! silences is `open -> half_open` and `half_open -> open` at once); times
//! never decrease and the walk is always legal: `closed -> open ->
//! half_open -> {open, closed}`.
//!
//! # Evidence
//!
//! Every transition carries the arrivals and sends of the stretch that
//! decided it, and says so in words. A silence's sends are those strictly
//! between its two arrivals (or after the last one); a half-open episode's
//! run from its trial arrival to its closing arrival, both included.
//!
//! | transition | `arrivals` | `sends` | reason |
//! |---|---|---|---|
//! | `closed -> open` | 0 | in the silence | `no arrivals for 2.05s while 41 requests were sent` |
//! | `open -> half_open` | 1 | in the silence | `1 probe after 2.05s of silence` |
//! | `half_open -> closed` | `probes` + 1 | in the episode | `traffic resumed: 2 arrivals in 50ms` |
//! | `half_open -> open` | trials | in the silence | `1 probe, then no arrivals for 2.05s while 40 requests were sent` |

use std::borrow::Cow;

use crate::clock::Duration;
use crate::defense::breaker::State;
use crate::experiment::expect::verdict::latency;

/// How many mean inter-arrival intervals a silence must exceed by default.
///
/// Under Poisson arrivals at rate λ a gap longer than `k / λ` has
/// probability `e^-k`. Four intervals (`e^-4` ≈ 1.8 %) would fake about 22
/// opens a minute at 20 req/s when the load is external; fifteen
/// (`e^-15` ≈ 3e-7) fake one in about three million arrivals (two days at
/// 20 req/s), yet stay well under the waits breakers use (750 ms at
/// 20 req/s against resilience4j's 60 s, opossum's 30 s, pybreaker's 60 s).
pub const GAP_INTERVALS: f64 = 15.0;

/// The shortest default gap: at high rates scheduling hiccups (a GC pause
/// in the service, a busy runner) last longer than fifteen intervals.
pub const MIN_GAP: Duration = Duration::from_millis(200);

/// Default trial calls in half-open: opossum and pybreaker admit one;
/// resilience4j's `permitted_calls_in_half_open` is configurable (raise
/// [`InferParams::probes`] to match it).
pub const DEFAULT_PROBES: u32 = 1;

/// Default sends a silence must contain: one send may merely be in flight
/// when the silence ends; two show the service kept being called.
pub const DEFAULT_MIN_SENDS_IN_GAP: u32 = 2;

/// What [`infer`] needs to know about the breaker and the load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InferParams {
    /// A stretch without arrivals longer than this (strictly) is a silence
    /// (given the sends). Shorter than the breaker's wait in open, longer
    /// than the load's natural gaps.
    pub gap: Duration,
    /// Trial calls the breaker admits in half-open: the (`probes` + 1)-th
    /// arrival without a silence closes it.
    pub probes: u32,
    /// Sends a stretch without arrivals must contain to count as a silence
    /// (ignored when there are no sends at all: external load).
    pub min_sends_in_gap: u32,
}

impl InferParams {
    /// Defaults for a load of `requests_per_second` on the routes that use
    /// the dependency: `gap` is [`GAP_INTERVALS`] mean intervals but at
    /// least [`MIN_GAP`] (750 ms at 20 req/s, 1.5 s at 10 req/s, 200 ms from
    /// 75 req/s up), [`DEFAULT_PROBES`] and [`DEFAULT_MIN_SENDS_IN_GAP`].
    ///
    /// A rate that is not positive (or NaN) gives a gap of
    /// [`Duration::MAX`]: without load no silence means anything.
    pub fn for_rate(requests_per_second: f64) -> Self {
        // Zero, negative and NaN rates fail the conversion anyway; -inf
        // would not (15 / -inf is -0.0, a zero gap), hence the test.
        let gap = if requests_per_second > 0.0 {
            Duration::try_from_secs_f64(GAP_INTERVALS / requests_per_second)
                .unwrap_or(Duration::MAX)
                .max(MIN_GAP)
        } else {
            Duration::MAX
        };
        InferParams {
            gap,
            probes: DEFAULT_PROBES,
            min_sends_in_gap: DEFAULT_MIN_SENDS_IN_GAP,
        }
    }
}

/// One inferred transition, with the evidence that decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InferredTransition {
    /// When, since the drill's start (an arrival's time).
    pub at: Duration,
    /// The state left.
    pub from: State,
    /// The state entered.
    pub to: State,
    /// The evidence in words, e.g. `no arrivals for 2.05s while 41 requests
    /// were sent`.
    pub reason: String,
    /// Arrivals in the stretch that decided it (see the module's table).
    pub arrivals: u64,
    /// Sends in the stretch that decided it (0 for external load).
    pub sends: u64,
    /// From when the evidence proves the new state, where that is later
    /// than `at` (an open seen from the caller's side: the first
    /// short-circuit's answer); `None`: from `at`.
    pub proven: Option<Duration>,
}

/// Infers the breaker's transitions from the times requests were sent to
/// the service (`sends`, empty for external load) and the times requests
/// reached the dependency (`arrivals`), both since the drill's start.
///
/// Both lists should be sorted; unsorted input is sorted first. See the
/// module documentation for the rules.
pub fn infer(
    sends: &[Duration],
    arrivals: &[Duration],
    params: &InferParams,
) -> Vec<InferredTransition> {
    let calls: Vec<(Duration, Option<Duration>)> =
        arrivals.iter().map(|&at| (at, Some(at))).collect();
    infer_calls(sends, &calls, params)
}

/// [`infer`] on calls that take time: each `(arrival, end)` (`None`: still
/// outstanding at the end of the run). A stretch counts as a silence only
/// from the moment no call is outstanding: the end of the last call that
/// arrived before it, which is also when the breaker opened (the failure
/// that tripped it ended).
pub fn infer_calls(
    sends: &[Duration],
    calls: &[(Duration, Option<Duration>)],
    params: &InferParams,
) -> Vec<InferredTransition> {
    let sends = sorted(sends);
    let mut calls = calls.to_vec();
    calls.sort_unstable();
    let sends = Sends {
        count: sends.len() as u64,
        last: sends.last().copied(),
        after: sends.iter().copied(),
        before: sends.iter().copied(),
    };
    infer_sorted(sends, calls, params)
}

/// The sends of [`infer_sorted`]: how many, the last, and the sorted list
/// twice, read once each (the counts up to the quiet before an arrival and
/// up to the arrival move forward each on its own).
#[derive(Debug)]
pub struct Sends<I> {
    /// How many.
    pub count: u64,
    /// The last one (the latest).
    pub last: Option<Duration>,
    /// Every send, sorted.
    pub after: I,
    /// Every send, sorted, again.
    pub before: I,
}

/// [`infer_calls`] on `calls` sorted by arrival then end, read once in
/// order, and `sends`: nothing is held but the transitions.
pub fn infer_sorted<I: Iterator<Item = Duration>>(
    sends: Sends<I>,
    calls: impl IntoIterator<Item = (Duration, Option<Duration>)>,
    params: &InferParams,
) -> Vec<InferredTransition> {
    let mut walk = Walk {
        count: sends.count,
        last: sends.last,
        quiet: Ranks::new(sends.after),
        arrival: Ranks::new(sends.before),
        params,
        state: State::Closed,
        trials: 0,
        trial_start: Duration::ZERO,
        before_trial: 0,
        out: Vec::new(),
    };
    // When the calls so far had all ended (each and every one before it):
    // the quiet that may follow starts there. It never goes back, nor do
    // the arrivals: each count of sends moves forward.
    let mut quiet_from: Option<Duration> = None;
    for (at, end) in calls {
        let upto = walk.arrival.at(at);
        let silence = match quiet_from {
            Some(prev) => walk.silence(prev, Some((at, upto.0))),
            None => None,
        };
        match silence {
            Some(silence) => {
                walk.open(&silence);
                walk.trial(at, upto, &silence);
            }
            None if walk.state == State::HalfOpen => {
                walk.trials = walk.trials.saturating_add(1);
                walk.close_if_enough(at, upto.1);
            }
            None => {}
        }
        let busy = quiet_from.unwrap_or(Duration::ZERO);
        quiet_from = Some(busy.max(end.unwrap_or(Duration::MAX)).max(at));
    }
    if let Some(last) = quiet_from
        && let Some(silence) = walk.silence(last, None)
    {
        walk.open(&silence);
    }
    walk.out
}

/// Counts of sorted sends below and up to a time that never goes back.
struct Ranks<I: Iterator<Item = Duration>> {
    /// The sends not yet counted.
    sends: std::iter::Peekable<I>,
    /// The last time asked about.
    key: Option<Duration>,
    /// Sends before it.
    below: u64,
    /// Sends at it.
    equal: u64,
}

impl<I: Iterator<Item = Duration>> Ranks<I> {
    fn new(sends: I) -> Self {
        Ranks {
            sends: sends.peekable(),
            key: None,
            below: 0,
            equal: 0,
        }
    }

    /// Sends strictly before `at`, and up to `at` included; `at` is no
    /// earlier than the time asked about before.
    fn at(&mut self, at: Duration) -> (u64, u64) {
        debug_assert!(self.key.is_none_or(|key| key <= at), "ranks go forward");
        if self.key != Some(at) {
            self.below += self.equal;
            self.equal = 0;
            while self.sends.next_if(|&s| s < at).is_some() {
                self.below += 1;
            }
            while self.sends.next_if(|&s| s == at).is_some() {
                self.equal += 1;
            }
            self.key = Some(at);
        }
        (self.below, self.below + self.equal)
    }
}

/// The input as sorted, copied only when it is not.
fn sorted(times: &[Duration]) -> Cow<'_, [Duration]> {
    if times.is_sorted() {
        Cow::Borrowed(times)
    } else {
        let mut owned = times.to_vec();
        owned.sort_unstable();
        Cow::Owned(owned)
    }
}

/// A stretch without arrivals that counts.
#[derive(Debug)]
struct Silence {
    /// The last arrival before it.
    after: Duration,
    /// How long it lasted (to the next arrival, or to the last send).
    length: Duration,
    /// Sends strictly inside it.
    sends: u64,
    /// It runs to the end of the run.
    at_end: bool,
}

/// The inference in progress.
struct Walk<'a, I: Iterator<Item = Duration>> {
    /// How many sends there are.
    count: u64,
    /// The last send.
    last: Option<Duration>,
    /// Counts of sends up to the quiet before each arrival.
    quiet: Ranks<I>,
    /// Counts of sends up to each arrival.
    arrival: Ranks<I>,
    /// The parameters.
    params: &'a InferParams,
    /// The state after the transitions so far.
    state: State,
    /// Arrivals in the current half-open episode.
    trials: u32,
    /// The first arrival of the current half-open episode.
    trial_start: Duration,
    /// Sends strictly before it.
    before_trial: u64,
    /// The transitions so far.
    out: Vec<InferredTransition>,
}

impl<I: Iterator<Item = Duration>> Walk<'_, I> {
    /// Sends strictly after `from`, and strictly before `to` when given
    /// (with the count of sends before it).
    fn sends_between(&mut self, from: Duration, to: Option<(Duration, u64)>) -> u64 {
        let start = self.quiet.at(from).1;
        let end = to.map_or(self.count, |(_, before)| before);
        end.saturating_sub(start)
    }

    /// The silence after the arrival at `after`, up to the arrival at
    /// `until` or (`None`) to the end of the run, if it counts as one.
    fn silence(&mut self, after: Duration, until: Option<(Duration, u64)>) -> Option<Silence> {
        let external = self.count == 0;
        let end = match until {
            Some((next, _)) => next,
            // Without sends the end of the run is unknown.
            None => self.last?,
        };
        let length = end.saturating_sub(after);
        let sends = self.sends_between(after, until);
        let enough = external || sends >= u64::from(self.params.min_sends_in_gap);
        (length > self.params.gap && enough).then_some(Silence {
            after,
            length,
            sends,
            at_end: until.is_none(),
        })
    }

    /// `closed -> open` or `half_open -> open` at the start of `silence`.
    fn open(&mut self, silence: &Silence) {
        let quiet = quiet(silence, self.count == 0);
        let (arrivals, reason) = match self.state {
            State::HalfOpen => (
                u64::from(self.trials),
                format!("{}, then {quiet}", count(self.trials, "probe")),
            ),
            _ => (0, quiet),
        };
        self.push(silence.after, State::Open, reason, arrivals, silence.sends);
    }

    /// `open -> half_open` at the trial call `at` that ended `silence`
    /// (`sends`: the sends before it, and up to it).
    fn trial(&mut self, at: Duration, sends: (u64, u64), silence: &Silence) {
        let reason = format!("1 probe after {} of silence", latency(silence.length));
        self.push(at, State::HalfOpen, reason, 1, silence.sends);
        self.trials = 1;
        self.trial_start = at;
        self.before_trial = sends.0;
        self.close_if_enough(at, sends.1);
    }

    /// `half_open -> closed` at `at` once more than `probes` arrivals came
    /// (`upto`: the sends up to `at`).
    fn close_if_enough(&mut self, at: Duration, upto: u64) {
        if self.trials <= self.params.probes {
            return;
        }
        let took = at.saturating_sub(self.trial_start);
        let reason = format!(
            "traffic resumed: {} in {}",
            count(self.trials, "arrival"),
            latency(took)
        );
        let sends = upto.saturating_sub(self.before_trial);
        self.push(at, State::Closed, reason, u64::from(self.trials), sends);
    }

    /// Records a transition from the current state to `to`.
    fn push(&mut self, at: Duration, to: State, reason: String, arrivals: u64, sends: u64) {
        self.out.push(InferredTransition {
            at,
            from: self.state,
            to,
            reason,
            arrivals,
            sends,
            proven: None,
        });
        self.state = to;
    }
}

/// `no arrivals for 2.05s while 41 requests were sent`, and its variants
/// for external load and for a silence that runs to the end.
fn quiet(silence: &Silence, external: bool) -> String {
    let length = latency(silence.length);
    if external {
        return format!("no arrivals for {length} (external load: sends not observed)");
    }
    let verb = if silence.sends == 1 { "was" } else { "were" };
    let tail = if silence.at_end {
        ", until the end of the run"
    } else {
        ""
    };
    format!(
        "no arrivals for {length} while {} {verb} sent{tail}",
        count(silence.sends, "request")
    )
}

/// `1 probe`, `3 probes`.
pub(super) fn count(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    let s = if n == 1 { "" } else { "s" };
    format!("{n} {noun}{s}")
}

#[cfg(test)]
#[path = "infer_tests.rs"]
mod tests;
