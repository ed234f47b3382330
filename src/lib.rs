//! firedrill: a chaos-testing fault-injection proxy with a built-in defense
//! line.
//!
//! # Layout
//!
//! * [`clock`] — time (only through `tokio::time`) and seeded randomness.
//! * [`schema`] — reading YAML with errors that name file, line, column, key;
//!   the value types (durations, percentages, sizes, rates).
//! * [`fault`] — the fault catalogue as data and the plan that picks faults.
//! * [`net`] — transports: TCP sockets and in-memory pipes behind one trait.
//! * [`proxy`] — the fault-injecting proxy, TCP and HTTP, generic over the
//!   transport.
//! * [`target`] — the embedded fixture server (a built-in dependency).
//! * [`defense`] — the defense line: circuit breaker (a pure state machine
//!   with its journal), bulkhead, timeout, retry, rate limit, fallback.
//! * [`api`] — the control plane: a Toxiproxy-compatible REST API over
//!   named proxies, and Prometheus `/metrics`.
//! * [`cli`] — the command line; `main.rs` only parses, runs and exits.

pub mod api;
pub mod cli;
pub mod clock;
pub mod defense;
pub mod experiment;
pub mod fault;
pub mod http;
pub mod json_schema;
pub mod metrics;
pub mod net;
pub mod proxy;
pub mod report;
pub mod schema;
pub mod target;
