//! What firedrill learns of a user's own service from outside: its
//! breakers inferred from what reached the dependency, what the service
//! reports of them, and which of its answers were its own fallback.

pub mod caller;
pub mod classify;
pub mod events;
pub mod evidence;
pub mod infer;
pub mod inferred;
pub mod reported;
pub mod reporters;
