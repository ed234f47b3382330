//! Experiments: a YAML drill (target, defense, load, fault timeline,
//! expectations), run in virtual or real time, recorded as a timeline, and
//! judged.
//!
//! * [`timeline`] — what a run recorded; everything after the run reads it.
//! * [`expect`] — the expectation sentences, parsed, checked and judged.

pub mod config;
pub mod expect;
pub mod halt;
pub mod load;
pub mod network;
pub mod run;
pub mod timeline;
