//! The circuit breaker: a pure state machine (`closed`, `open`,
//! `half_open`, plus the `forced_open` and `disabled` overrides) with four
//! decision models, a failure classifier and a transition journal.
//!
//! * [`config`] — validated configuration and defaults; `raw` reads YAML.
//! * [`outcome`] — what a call produced and what counts as failure.
//! * [`state`] — states, permits, rejections.
//! * [`machine`] — the state machine common to all models.
//! * `window`, `consecutive`, `ratio`, `opossum` — the decision models;
//!   `rolling` holds the sliding-window statistics they share.
//! * [`journal`] — transitions with their reasons, and counters.
//! * [`shared`] — the thread-safe wrapper and the outcome guard.

mod build;
pub mod config;
mod consecutive;
pub mod journal;
pub mod machine;
mod model;
mod opossum;
pub mod outcome;
mod ratio;
mod raw;
mod rolling;
pub mod shared;
pub mod state;
mod window;

#[cfg(test)]
mod tests;

pub use config::{
    Backoff, BreakerConfig, ConsecutiveConfig, ModelConfig, OpossumConfig, RatioConfig, Recovery,
    SlidingWindow, Stragglers, ThresholdType, WindowConfig, WindowShape,
};
pub use journal::{Counters, PerState, Reason, Transition, is_legal, millis};
pub use machine::Breaker;
pub use outcome::{Classifier, FailureKind, Outcome, StatusPattern};
pub use shared::{CallGuard, SharedBreaker};
pub use state::{Permit, Rejected, State};
