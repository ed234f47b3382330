//! A free loopback port for a test's own server or process.
//!
//! The ports come from below the kernel's ephemeral range (32768 and up on
//! Linux), taken in turn from a counter: a port handed out here and not yet
//! bound by its owner cannot be taken meanwhile by another test thread's
//! process that binds port 0 (the services under test do), nor handed out
//! twice.

use std::sync::atomic::{AtomicU32, Ordering};

/// The first port handed out.
const FIRST: u32 = 20_000;
/// How many ports the counter walks through before wrapping.
const SPAN: u32 = 12_000;

/// A free port on 127.0.0.1 (bound, then released: nothing listens on it).
pub(crate) fn free_port() -> u16 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    // Test binaries of one `cargo test` run one after another; a start
    // that depends on the process keeps two concurrent runs apart too.
    let start = std::process::id() % SPAN;
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = FIRST + (start + n) % SPAN;
        let port = u16::try_from(port).expect("below 32768");
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}
