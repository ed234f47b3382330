//! firedrill: a chaos-testing fault-injection proxy with a built-in defense
//! line.
//!
//! # Layout
//!
//! The crate is a house of floors; a module imports only from floors below
//! it, never from above.
//!
//! * [`clock`] — time (only through `tokio::time`) and seeded randomness.
//! * [`schema`] — reading YAML, within the input limits, with errors that
//!   name file, line, column, key; the value types (durations, percentages,
//!   sizes, rates) and the JSON Schema pieces they are described with.
//! * [`spill`] — what a run must keep whole until its end, on disk (an
//!   unnamed temporary file) instead of in memory.
//! * [`net`] — transports: TCP sockets and in-memory pipes behind one trait.
//! * [`tls`] — TLS towards a user's service (rustls): roots, CA file,
//!   client certificate, and the connector that dials TCP then TLS.
//! * [`http`] — the HTTP floor: the body type, the accept loop with graceful
//!   shutdown, the pooled client, the `x-firedrill-*` headers, the tunnel
//!   of an upgraded (WebSocket) connection.
//! * [`fault`] — the fault catalogue as data and the plan that picks faults.
//! * [`metrics`] — Prometheus text exposition and its /metrics server.
//! * [`proxy`] — the fault-injecting proxy, TCP and HTTP, generic over the
//!   transport.
//! * [`target`] — the embedded fixture server (a built-in dependency).
//! * [`defense`] — the defense line: circuit breaker (a pure state machine
//!   with its journal), bulkhead, timeout, retry, rate limit, fallback.
//! * [`api`] — the control plane: a Toxiproxy-compatible REST API over
//!   named proxies, and Prometheus `/metrics`.
//! * [`experiment`] — experiments: the file, the drill as stages (stand up,
//!   drive, collect, judge, report), the timeline, expectations, a user's
//!   own service seen from outside.
//! * [`report`] — a judged run and its formats (console, JSON, JUnit,
//!   journal, requests).
//! * [`history`] — runs kept in a database (SQLite or PostgreSQL), their
//!   trends, and the baselines of past runs.
//! * [`json_schema`] — the JSON Schemas of the YAML formats, for editors.
//! * [`cli`] — the top floor: the command line, one file per subcommand,
//!   exit codes; `main.rs` only parses, runs and exits. Nothing else
//!   imports it.

pub mod agent;
pub mod api;
pub mod cli;
pub mod clock;
pub mod defense;
pub mod experiment;
pub mod fault;
pub mod history;
pub mod http;
pub mod json_schema;
pub mod loops;
pub mod metrics;
pub mod net;
pub mod order;
pub mod proxy;
pub mod report;
pub mod schema;
pub mod spill;
pub mod target;
pub mod throttle;
pub mod tls;
pub mod trace;
