//! Experiments: a YAML drill (target, defense, load, fault timeline,
//! expectations), run in virtual or real time, recorded as a timeline, and
//! judged.
//!
//! * [`classify`] — recognising a foreign service's fallback.
//! * [`config`] — the experiment file, validated.
//! * [`file`] — reading an experiment file and checking it against its names.
//! * [`instances`] — the built-in target's instances, and the faults that
//!   name one.
//! * [`network`] — in-memory (virtual clock) or loopback (real clock).
//! * [`load`] — the open-loop load generator.
//! * [`run`] — stands everything up, drives the load, collects the timeline.
//! * [`halt`] — halt conditions, watched during the run.
//! * [`progress`] — the live progress bar of a real-time drill.
//! * [`error`] — why a run could not start or go on.
//! * [`external`] — dependency proxies around the user's service; its
//!   breakers inferred.
//! * [`topology`] — the user's own service, its inferred breakers and its
//!   dependencies.
//! * [`reported`] — what a service says of its own breaker (events, metrics).
//! * [`timeline`] — what a run recorded; everything after the run reads it.
//! * [`expect`] — the expectation sentences, parsed, checked and judged.
//! * [`infer`] — a black-box breaker's state timeline, inferred from the
//!   requests sent and the requests that reached the dependency.
//! * [`stream`] — the requests counted as they finish, and handed to the
//!   report files in id order; a run keeps none of them.
//! * [`judge`] — joins the expectations to an experiment and its run.

pub mod classify;
pub mod config;
pub mod control;
pub mod error;
pub mod expect;
pub mod external;
pub mod file;
pub mod halt;
pub mod infer;
pub mod instances;
pub mod judge;
pub mod load;
pub mod network;
pub mod progress;
pub mod reported;
pub mod run;
pub mod steady;
pub mod stream;
pub mod timeline;
pub mod topology;

pub use expect::Verdict;
