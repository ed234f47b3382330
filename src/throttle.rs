//! Warnings that repeat while a condition lasts (out of file descriptors:
//! every accept and every upstream connect fails) are written once per
//! interval, with how many of the same were left out since the last line,
//! instead of one line per failure (350 lines a second, before).

use std::sync::Mutex;

use crate::clock::{self, Duration, Instant};

/// How often a repeated warning is written at most.
pub const INTERVAL: Duration = Duration::from_secs(10);

/// One kind of warning, written at most once per [`INTERVAL`].
#[derive(Debug)]
pub struct Throttle {
    /// When the last line was written, and how many were left out since.
    state: Mutex<(Option<Instant>, u64)>,
}

impl Throttle {
    /// A warning not written yet.
    pub const fn new() -> Throttle {
        Throttle {
            state: Mutex::new((None, 0)),
        }
    }

    /// Notes one occurrence: `Some(n)` when a line is to be written now,
    /// `n` being how many occurrences were left out since the last line;
    /// `None` when this one is left out (and counted).
    pub fn occurred(&self) -> Option<u64> {
        let now = clock::now();
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (last, left_out) = &mut *state;
        match last {
            Some(at) if now < *at + INTERVAL => {
                *left_out += 1;
                None
            }
            _ => {
                *last = Some(now);
                Some(std::mem::take(left_out))
            }
        }
    }
}

impl Default for Throttle {
    fn default() -> Throttle {
        Throttle::new()
    }
}

/// Writes a warning through `throttle`: `$throttle`, then the arguments of
/// `tracing::warn!`; the line carries `repeated=N` (the occurrences left
/// out since the previous line) and says the interval.
#[macro_export]
macro_rules! warn_throttled {
    ($throttle:expr, $($arg:tt)+) => {
        if let Some(repeated) = $throttle.occurred() {
            tracing::warn!(repeated, every_s = $crate::throttle::INTERVAL.as_secs(), $($arg)+);
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_warning_repeated_350_times_a_second_is_written_once_per_interval_with_its_count() {
        let throttle = Throttle::new();
        let mut written = Vec::new();
        // 35 seconds of 350 failures a second.
        for _ in 0..35 {
            for _ in 0..350 {
                if let Some(left_out) = throttle.occurred() {
                    written.push(left_out);
                }
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        // At 0 s, 10 s, 20 s, 30 s: each after the 3,500 left out between.
        assert_eq!(written, [0, 3499, 3499, 3499]);
    }
}
