//! The fault-injecting proxy, in TCP and HTTP mode, generic over the
//! transport.

pub mod gate;
pub mod http;
pub mod run;
pub mod tcp;
pub mod traffic;

pub use run::{BoundProxy, ProxyMode, serve_mode, serve_mode_counted};
pub use traffic::Traffic;
