//! Time and seeded randomness in one place.
//!
//! Every timer in firedrill goes through `tokio::time`, so a paused runtime
//! (`start_paused = true`, or the virtual clock of an experiment) governs all
//! of them. Every random decision draws from a [`RunRng`] seeded by the run,
//! so the same seed gives the same sequence of injected faults.

use rand::SeedableRng;

pub mod precise;

pub use precise::coarse_only;

pub use tokio::time::{Duration, Instant, sleep, sleep_until};

/// The random number generator a run owns: ChaCha8, small, fast and portable,
/// so a seed gives the same sequence on every machine.
pub type RunRng = rand_chacha::ChaCha8Rng;

/// About thirty years: where a deadline beyond the clock's range goes (as
/// tokio's own far future).
pub const FAR: Duration = Duration::from_secs(86_400 * 365 * 30);

/// `at + delay`, or about thirty years after `at` when that is beyond the
/// clock: a toxic's time of up to 2^63 ms must not panic a connection.
pub fn later(at: Instant, delay: Duration) -> Instant {
    at.checked_add(delay.min(FAR)).unwrap_or(at)
}

/// The current instant on the tokio clock (virtual when time is paused).
pub fn now() -> Instant {
    Instant::now()
}

/// Milliseconds since the Unix epoch on the wall clock: only for the start
/// stamp of a real-time run, so its times can be lined up with other
/// programs' logs. It never reaches a decision, nor a virtual-time report.
#[allow(clippy::disallowed_methods)]
pub fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Microseconds since the Unix epoch on the wall clock: what a control
/// plane tells a drill on another host ([`crate::api`]'s time header, a
/// proxy's record zero), so the drill can line the two clocks up. Real
/// time only, never in a virtual run.
#[allow(clippy::disallowed_methods)]
pub fn unix_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// Wall time since a start, for one purpose: pacing progress lines on
/// stderr (a virtual run's heartbeat, whose paused clock says nothing of
/// how long a person has waited; a sweep's points done). It decides which
/// lines are printed and a speed figure on them; it never reaches a
/// decision, a verdict or a report.
#[derive(Debug, Clone, Copy)]
#[allow(clippy::disallowed_types)] // Wall time for stderr pacing only.
pub struct Stopwatch {
    started: std::time::Instant,
}

#[allow(clippy::disallowed_types, clippy::disallowed_methods)] // Wall time for stderr pacing only.
impl Stopwatch {
    /// Starts now.
    pub fn start() -> Stopwatch {
        Stopwatch {
            started: std::time::Instant::now(),
        }
    }

    /// Wall time since the start.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

/// A Unix time in milliseconds as RFC 3339 in UTC, e.g.
/// `2026-12-01T03:55:12.345Z`.
pub fn rfc3339(unix_ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(unix_ms as i64)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

/// Sleeps until `deadline`, to well under a millisecond in real time.
///
/// tokio's timer wheel works in whole milliseconds and wakes up to about
/// 2 ms late; a latency fault must be honest to the millisecond. Each event
/// loop arms one timerfd, in its own reactor, for the earliest of its
/// pending precise deadlines and wakes each task a fraction of a
/// millisecond after its deadline, never before and without spinning;
/// under a paused clock the tokio timer, exact in virtual time, ends the
/// wait ([`precise`]).
pub fn sleep_until_precise(deadline: Instant) -> precise::PreciseSleep {
    precise::PreciseSleep::new(deadline)
}

/// Waits until `deadline` (forever when there is none) or until `wake` is
/// notified, whichever comes first: true when the deadline came. The timer
/// tasks of breakers and pools wait so, on the next deadline of a state
/// that may change under them.
pub async fn deadline_or_wake(deadline: Option<Instant>, wake: &tokio::sync::Notify) -> bool {
    let timer = async {
        match deadline {
            Some(at) => sleep_until(at).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        biased;
        _ = wake.notified() => false,
        _ = timer => true,
    }
}

/// A generator for one independent stream of decisions of a run.
///
/// `stream` separates consumers (one per fault, say) so that adding a
/// consumer does not shift the sequence another one sees.
pub fn seeded_rng(seed: u64, stream: u64) -> RunRng {
    let mut rng = RunRng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn same_seed_and_stream_give_the_same_sequence() {
        let a: Vec<u32> = (0..8)
            .map(|_| 0)
            .scan(seeded_rng(7, 1), |r, _: u32| Some(r.random()))
            .collect();
        let b: Vec<u32> = (0..8)
            .map(|_| 0)
            .scan(seeded_rng(7, 1), |r, _: u32| Some(r.random()))
            .collect();
        assert_eq!(a, b);
    }

    #[test]
    fn different_streams_give_different_sequences() {
        let mut a = seeded_rng(7, 1);
        let mut b = seeded_rng(7, 2);
        let xa: [u64; 4] = std::array::from_fn(|_| a.random());
        let xb: [u64; 4] = std::array::from_fn(|_| b.random());
        assert_ne!(xa, xb);
    }
}

/// A [`Duration`] in JSON as milliseconds, exact to the nanosecond: the
/// figure written is `nanoseconds / 1e6`, and reading rounds it back to
/// whole nanoseconds, which an `f64` holds exactly for runs of up to ten
/// days (and within a nanosecond for a hundred).
pub mod exact_ms {
    use super::Duration;
    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes `d` as milliseconds.
    pub fn serialize<S: Serializer>(d: &Duration, out: S) -> Result<S::Ok, S::Error> {
        out.serialize_f64(d.as_nanos() as f64 / 1e6)
    }

    /// Reads milliseconds back to the nanosecond.
    pub fn deserialize<'de, D: Deserializer<'de>>(input: D) -> Result<Duration, D::Error> {
        let ms = f64::deserialize(input)?;
        if !(ms.is_finite() && ms >= 0.0) {
            return Err(serde::de::Error::custom(format!(
                "expected a duration in milliseconds, not {ms}"
            )));
        }
        Ok(Duration::from_nanos((ms * 1e6).round() as u64))
    }

    #[cfg(test)]
    mod tests {
        use super::Duration;

        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct At(#[serde(with = "super")] Duration);

        #[test]
        fn a_duration_written_as_milliseconds_reads_back_to_the_nanosecond() {
            for ns in [
                0,
                1,
                999,
                12_004_123_457,
                86_400_000_000_007,
                864_000_000_000_003,
            ] {
                let at = At(Duration::from_nanos(ns));
                let text = serde_json::to_string(&at).unwrap();
                assert_eq!(serde_json::from_str::<At>(&text).unwrap(), at, "{text}");
            }
        }

        #[test]
        fn a_negative_or_missing_figure_is_refused_with_what_was_expected() {
            let e = serde_json::from_str::<At>("-1.5").unwrap_err().to_string();
            assert!(
                e.contains("expected a duration in milliseconds, not -1.5"),
                "{e}"
            );
            assert!(serde_json::from_str::<At>("\"soon\"").is_err());
        }
    }
}
