//! The fault-injecting proxy, in TCP and HTTP mode, generic over the
//! transport.

pub mod http;
pub mod run;
pub mod server;
pub mod tcp;

pub use run::{BoundProxy, ProxyMode, serve_mode};
pub use server::{ShutdownSignal, serve};
