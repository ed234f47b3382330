//! The third stage: collect what the run recorded.

pub mod stream;
