//! The control plane: a REST API compatible with Toxiproxy 2.12 that
//! manages named proxies and their toxics at runtime, plus Prometheus
//! `/metrics`.
//!
//! # Layout
//!
//! * [`server`] — hyper accept loop, request handling, shutdown.
//! * [`guard`] — browser refusal, bearer token, body limit.
//! * [`routes`] — method and path to an operation; status codes.
//! * [`state`] — what every request shares: registry, metrics, guard.
//! * [`registry`] — the named proxies and their operations.
//! * [`proxy`] — one proxy: settings, toxics, listener on/off.
//! * [`toxic`] — Toxiproxy's toxic JSON, checked, mapped onto faults.
//! * [`toxics`] — a proxy's toxics in order, found by name without a scan.
//! * [`journal`] — an HTTP-mode proxy's request records, served a page at a time.
//! * [`json`] — bodies read as Go reads them: keys case-insensitive, last duplicate wins.
//! * [`error`] — `{"error": ..., "status": ...}`.

pub mod error;
pub mod guard;
pub mod journal;
pub mod json;
pub mod proxy;
pub mod registry;
pub mod routes;
pub mod server;
pub mod state;
pub mod toxic;
pub mod toxics;

pub use error::ApiError;
pub use server::{Api, serve};
