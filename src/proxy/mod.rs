//! The fault-injecting proxy, in TCP and HTTP mode, generic over the
//! transport.

pub mod gate;
pub mod http;
pub mod mode;
pub mod pace;
pub mod record;
mod record_id;
pub mod requests;
pub mod run;
pub mod tcp;
pub mod telemetry;
pub mod traffic;

pub use mode::{Misfit, ProxyMode};
pub use record::{Record, RecordSink, Recorder};
pub use requests::RequestCounters;
pub use run::{BoundProxy, Forward, serve_forward, serve_mode, serve_mode_with};
pub use telemetry::{ProxyMetrics, Telemetry};
pub use traffic::Traffic;
