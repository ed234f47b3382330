//! The second stage: drive the load, watch the halts and the steady
//! state, serve live control and the live view.

pub mod control;
pub mod halt;
pub mod load;
pub mod progress;
