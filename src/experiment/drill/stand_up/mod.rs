//! The first stage: stand up what the load will reach.

pub mod service;
