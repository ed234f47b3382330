//! A free loopback port for a test's own server or process.

/// A free port on 127.0.0.1 (bound, then released: nothing listens on it).
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
