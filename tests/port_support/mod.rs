//! A free loopback port for a test's own server or process.
//!
//! The ports come from below the kernel's ephemeral range (32768 and up on
//! Linux), taken in turn from a counter: a port handed out here and not yet
//! bound by its owner cannot be taken meanwhile by another test thread's
//! process that binds port 0 (the services under test do), nor handed out
//! twice.
//!
//! `ci/test.sh` runs several test binaries at once and gives each runner
//! a slot (`FIREDRILL_TEST_PORT_SLOT` of `FIREDRILL_TEST_PORT_SLOTS`): a
//! binary walks only its slot's share of the range, so two binaries
//! running side by side never hand out the same port.

use std::sync::atomic::{AtomicU32, Ordering};

/// The first port handed out.
const FIRST: u32 = 20_000;
/// How many ports the counter walks through before wrapping.
const SPAN: u32 = 12_000;

/// The first port and the span of this binary's share of the range: the
/// whole range unless `ci/test.sh` gave it a slot.
fn share() -> (u32, u32) {
    let number = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u32>().ok());
    match (
        number("FIREDRILL_TEST_PORT_SLOT"),
        number("FIREDRILL_TEST_PORT_SLOTS"),
    ) {
        (Some(slot), Some(slots)) if slot < slots => {
            let span = SPAN / slots;
            (FIRST + slot * span, span)
        }
        _ => (FIRST, SPAN),
    }
}

/// A free port on 127.0.0.1 (bound, then released: nothing listens on it).
pub(crate) fn free_port() -> u16 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let (first, span) = share();
    // Binaries run one after another in the same slot; a start that
    // depends on the process keeps them (and two runs of `cargo test`
    // at once) apart too.
    let start = std::process::id() % span;
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = first + (start + n) % span;
        let port = u16::try_from(port).expect("below 32768");
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}
