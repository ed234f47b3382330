//! Bandwidth pacing, the same in both modes and as Toxiproxy's `bandwidth`
//! toxic paces (toxics/bandwidth.go): a piece of `n` bytes leaves `n / rate`
//! after the previous one left (after its own arrival when the stream was
//! idle: no credit is saved up), so N bytes take N / rate; pieces hold at
//! most 1/10 s of the rate, as Toxiproxy sends `rate * 100` bytes every
//! 100 ms.

use crate::clock::{self, Duration, Instant};

/// When the next piece of one paced stream may leave.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    /// When the last piece given a time leaves.
    next_free: Instant,
}

impl Default for Pace {
    fn default() -> Pace {
        Pace {
            next_free: clock::now(),
        }
    }
}

impl Pace {
    /// The largest piece at `bytes_per_second`: 1/10 s of it, at least a
    /// byte.
    pub fn piece_len(bytes_per_second: f64) -> usize {
        ((bytes_per_second / 10.0) as usize).max(1)
    }

    /// When a piece of `len` bytes, ready now, leaves at `bytes_per_second`.
    pub fn release(&mut self, len: usize, bytes_per_second: f64) -> Instant {
        // Saturating: no rate makes a piece's time beyond the clock.
        let time = Duration::try_from_secs_f64(len as f64 / bytes_per_second).unwrap_or(clock::FAR);
        self.next_free = clock::later(self.next_free.max(clock::now()), time);
        self.next_free
    }
}

#[cfg(test)]
mod tests {
    use super::Pace;
    use crate::clock::{self, Duration};

    #[tokio::test(start_paused = true)]
    async fn a_piece_leaves_its_own_time_after_the_previous_one_and_idle_time_is_no_credit() {
        let start = clock::now();
        let mut pace = Pace::default();
        // 1000 bytes at 10 KB/s: 100 ms each, the first one included.
        assert_eq!(Pace::piece_len(10_000.0), 1000);
        assert_eq!(
            pace.release(1000, 10_000.0),
            start + Duration::from_millis(100)
        );
        assert_eq!(
            pace.release(500, 10_000.0),
            start + Duration::from_millis(150)
        );
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(
            pace.release(1000, 10_000.0),
            start + Duration::from_millis(1100)
        );
        assert_eq!(Pace::piece_len(3.0), 1);
    }
}
