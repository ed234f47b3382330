//! The fault-injecting proxy, in TCP and HTTP mode, generic over the
//! transport.

pub mod gate;
pub mod http;
pub mod mode;
pub mod run;
pub mod tcp;
pub mod traffic;

pub use mode::{Misfit, ProxyMode};
pub use run::{BoundProxy, serve_mode, serve_mode_counted};
pub use traffic::Traffic;
