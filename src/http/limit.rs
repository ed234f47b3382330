//! How many client connections a server holds at once: past the limit a
//! new connection is answered `503` and closed at once, with one warning
//! per interval, so that a flood of connections (slowloris, a stuck client
//! pool) is refused at the door instead of taking the descriptors the
//! connections in flight need for their upstream calls.
//!
//! `firedrill proxy --mode http` and `firedrill defend` set it with
//! `--max-connections`; by default three quarters of the process's
//! open-file limit (`ulimit -n`), the rest being left for upstream
//! connections, the listener and files.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::net::Transport;
use crate::throttle::Throttle;

/// What a refused HTTP client is told.
const REFUSED: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\ncontent-length: 0\r\nretry-after: 1\r\n\r\n";

/// A limit on the connections held at once, shared by every event loop of
/// one server.
#[derive(Debug, Clone)]
pub struct Limit {
    /// The most connections held at once.
    max: usize,
    /// Connections held now.
    live: Arc<AtomicUsize>,
    /// The refusal's warning, once per interval for all loops.
    refused: Arc<Throttle>,
}

/// One held connection; its drop frees its place.
#[derive(Debug)]
pub struct Held(Arc<AtomicUsize>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Limit {
    /// At most `max` connections at once.
    pub fn new(max: usize) -> Limit {
        Limit {
            max,
            live: Arc::new(AtomicUsize::new(0)),
            refused: Arc::new(Throttle::new()),
        }
    }

    /// The default: three quarters of the soft open-file limit.
    pub fn default_max() -> usize {
        let files = rustix::process::getrlimit(rustix::process::Resource::Nofile)
            .current
            .unwrap_or(u64::MAX);
        usize::try_from(files / 4 * 3).unwrap_or(usize::MAX).max(1)
    }

    /// The most connections held at once.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Takes a place for `stream`, or refuses it (a `503` written where
    /// the socket takes it at once, then the close when it is dropped).
    pub fn admit<T: Transport>(&self, stream: &T) -> Option<Held> {
        let taken = self
            .live
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |live| {
                (live < self.max).then_some(live + 1)
            });
        if taken.is_ok() {
            return Some(Held(self.live.clone()));
        }
        if let Some(socket) = stream.shared_tcp() {
            let _ = socket2::SockRef::from(&*socket).send(REFUSED);
        }
        crate::warn_throttled!(
            self.refused,
            max = self.max,
            "connection limit reached: new connections are refused (503) until some close (--max-connections)"
        );
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_of_two_refuses_the_third_connection_and_admits_again_when_one_closes() {
        let limit = Limit::new(2);
        let stream = tokio::io::duplex(1).0;
        let first = limit.admit(&stream).expect("first");
        let _second = limit.admit(&stream).expect("second");
        assert!(limit.admit(&stream).is_none());
        drop(first);
        assert!(limit.admit(&stream).is_some());
    }
}
