//! What firedrill learns of a user's own service from outside: its
//! breakers inferred from what reached the dependency, what the service
//! reports of them, and which of its answers were its own fallback.
//!
//! * [`inferred`] — each declared breaker's transitions from one run: from
//!   both sides ([`caller`], walking the [`step`]s of the [`evidence`] of
//!   calls and short-circuits, [`gathered`] from lists on disk) with
//!   firedrill's own load, from arrivals alone ([`infer`]) with outside
//!   traffic; the lists are read in passes and sorted on disk ([`stream`]),
//!   so memory stays flat however long the run.
//! * [`reported`], [`events`], [`reporters`] — what the service says of its
//!   breakers: its events file (as written, or a library's log read through
//!   a mapping) and its Prometheus endpoint.
//! * [`classify`] — which of its answers were its own fallback.
//! * [`gate`] — whether the evidence of each breaker can carry a verdict.

pub mod caller;
pub mod classify;
pub mod events;
pub mod evidence;
pub mod gate;
pub mod gathered;
pub mod infer;
pub mod inferred;
pub mod reported;
pub mod reporters;
pub mod step;
pub mod stream;
