//! Experiments: a YAML drill (target, defense, load, fault timeline,
//! expectations), run in virtual or real time, recorded as a timeline, and
//! judged.
//!
//! * [`config`] — the experiment file, validated: the built-in target and
//!   its instances, or the user's own service and its dependencies.
//! * [`file`] — reading an experiment file and checking it against its
//!   names (expectations, halt conditions, steady state).
//! * [`drill`] — a run as a pipeline of stages: stand up, drive, collect,
//!   judge, report.
//! * [`timeline`] — what a run recorded; everything after the run reads it.
//! * [`expect`] — the expectation sentences, parsed, checked and judged.
//! * [`blackbox`] — what is inferred or reported of a user's own service:
//!   its breakers, its fallbacks.
//! * [`error`] — why a run could not start or go on.
//! * [`vocabulary`] — the words every view counts requests with, each
//!   defined once.

pub mod blackbox;
pub mod config;
pub mod drill;
pub mod error;
pub mod expect;
pub mod file;
pub mod kept;
pub mod prometheus;
pub mod timeline;
pub mod vocabulary;

pub use expect::Verdict;
