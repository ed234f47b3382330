//! What the walk of [`super::caller`] reads: each call that reached the
//! dependency and each short-circuit the caller got, and the steps they
//! make (an arrival, an end, an answer without a call), in the walk's
//! order.

use crate::clock::Duration;

/// One call that reached the dependency, as its fault proxy saw it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Call {
    /// When it arrived, since the drill's start.
    pub at: Duration,
    /// When it ended (answered, or the service gave up on it); `None`:
    /// still outstanding when the run ended.
    pub ended: Option<Duration>,
    /// A failure: a 5xx, or no answer (cut, blackholed, abandoned).
    pub failed: bool,
    /// It ended without an answer: the proxy let it go when the service
    /// closed its connection (or a fault cut it).
    pub let_go: bool,
    /// Its path.
    pub path: String,
    /// The caller request it was made for, when the service passed the
    /// request's id on.
    pub request_id: Option<u64>,
    /// When the caller sent that request (paired by id): a trial's breaker
    /// went half-open when the service took the request in, between this
    /// and the call's arrival.
    pub sent: Option<Duration>,
}

/// A caller request answered without any call of it reaching the
/// dependency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ShortCircuit {
    /// When the load sent it.
    pub sent: Duration,
    /// When the service answered it.
    pub answered: Duration,
}

/// One event of the walk, with what the walk needs of its call or
/// short-circuit (the walk keeps no list of them: its events may come from
/// disk). Events go in time order; at one instant ends come first, then
/// arrivals, then short-circuits, each kind by its call's place in arrival
/// order (its short-circuit's in answer order): [`Step::order`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Step {
    /// When it happened.
    pub at: Duration,
    /// Its call's place in arrival order, or its short-circuit's in answer
    /// order.
    pub index: u64,
    /// What happened.
    pub event: Event,
}

/// What happened at a [`Step`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Event {
    /// A call ended.
    End {
        /// It failed.
        failed: bool,
        /// When it arrived: a half-open breaker's trials are the calls that
        /// arrived from its first on.
        arrived: Duration,
    },
    /// A call arrived.
    Arrival {
        /// Its path, for a leak.
        path: String,
        /// Its request's id, for a leak.
        request_id: Option<u64>,
        /// When its request was sent, for a trial.
        sent: Option<Duration>,
    },
    /// A short-circuit was answered.
    Short {
        /// When it was sent.
        sent: Duration,
    },
}

impl Event {
    /// Ends, then arrivals, then short-circuits.
    fn rank(&self) -> u8 {
        match self {
            Event::End { .. } => 0,
            Event::Arrival { .. } => 1,
            Event::Short { .. } => 2,
        }
    }
}

impl Step {
    /// The walk's order: by time, then kind, then index (no two steps
    /// share all three).
    pub fn order(a: &Step, b: &Step) -> std::cmp::Ordering {
        (a.at, a.event.rank(), a.index).cmp(&(b.at, b.event.rank(), b.index))
    }
}

impl Step {
    /// The steps of `call`, the `index`-th in arrival order (its end, if
    /// it ended, and its arrival), handed to `take`.
    pub fn of_call(index: u64, call: Call, take: &mut dyn FnMut(Step)) {
        if let Some(ended) = call.ended {
            take(Step {
                at: ended,
                index,
                event: Event::End {
                    failed: call.failed,
                    arrived: call.at,
                },
            });
        }
        take(Step {
            at: call.at,
            index,
            event: Event::Arrival {
                path: call.path,
                request_id: call.request_id,
                sent: call.sent,
            },
        });
    }

    /// The step of `short`, the `index`-th in answer order.
    pub fn of_short(index: u64, short: ShortCircuit) -> Step {
        Step {
            at: short.answered,
            index,
            event: Event::Short { sent: short.sent },
        }
    }
}
