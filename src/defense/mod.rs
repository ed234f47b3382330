//! The defense line: the protections a call passes through before it
//! reaches the dependency — rate limit, workers, bulkhead, retry, circuit
//! breaker, timeout — and the fallbacks that answer when they turn it away.
//!
//! * [`config`] — the `defense:` YAML section, validated.
//! * [`breaker`] — the circuit breaker, a pure state machine.
//! * [`bulkhead`], [`rate_limit`], [`retry`], [`fallback`] — one concept each.
//! * [`import`] — resilience4j, Sentinel, NGINX, Envoy and opossum settings read into the line.
//! * [`pool`] — upstream pools: balancing, health checks, slow start, backups.
//! * [`line`] — the pipeline for one request.
//! * [`report`] — what observers (experiments, the journal) are told.
//! * [`serve`] — the line as a standalone reverse proxy (`firedrill defend`).

pub mod breaker;
pub mod bulkhead;
pub mod config;
pub mod fallback;
pub mod import;
pub mod line;
pub mod metrics;
pub mod pool;
pub mod rate_limit;
pub mod report;
pub mod retry;
pub mod serve;

pub use config::DefenseConfig;
pub use line::DefenseLine;
pub use report::{CallReport, Observer};
