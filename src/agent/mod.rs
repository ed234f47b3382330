//! Driving a fault proxy on another host through its Toxiproxy API: a
//! `firedrill server` (every HTTP fault, request records, leases) or a real
//! Toxiproxy. [`client`] makes the calls and times each against the
//! agent's clock; [`clock`] turns those timings into the agent's offset and
//! a mapping of its times onto the drill's.

pub mod client;
pub mod clock;
pub mod report;
pub mod toxic;

pub use client::{AgentClient, AgentError, Answer};
pub use clock::{ClockSample, Clocks};
pub use report::AgentReport;

/// What runs on an agent's host.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    serde::Deserialize,
    serde::Serialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum AgentKind {
    /// `firedrill server`: every HTTP fault, request records, leases.
    #[default]
    Firedrill,
    /// A real Toxiproxy: byte-stream toxics only, no records, no leases.
    Toxiproxy,
}

impl AgentKind {
    /// As written in the file.
    pub fn name(self) -> &'static str {
        match self {
            AgentKind::Firedrill => "firedrill",
            AgentKind::Toxiproxy => "toxiproxy",
        }
    }
}
