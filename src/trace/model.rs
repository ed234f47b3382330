//! A trace as a per-bucket empirical model: what the dependency answered in
//! each time bucket, drawn from with the run's seeded randomness.
//!
//! With `cold_after`, each bucket keeps two strata: requests that came after
//! at least that long without one in the trace (cold: an idle pool, a cache
//! gone cold), and the rest (warm). A request replayed after the same
//! silence draws from the cold stratum, so a recording where the first
//! call after a pause failed keeps failing first calls.
//!
//! A bucket with no recorded request of a stratum (a gap in the recording,
//! or no cold call that second) repeats the last bucket that had one: the
//! dependency is taken to behave as it last did. A stratum never seen so
//! far uses the other one. Buckets with no request at all are reported as
//! gaps.

use super::{Answer, Outcome, Trace};
use crate::clock::Duration;

/// A span of the recording with no request in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gap {
    /// Start, from the trace's first arrival.
    pub from: Duration,
    /// End (exclusive).
    pub to: Duration,
}

const WARM: usize = 0;
const COLD: usize = 1;

/// The per-bucket answers of a trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    /// Bucket width.
    width: Duration,
    /// Per bucket: the recorded answers, warm and cold.
    recorded: Vec<[Vec<Outcome>; 2]>,
    /// Per bucket and stratum: where to draw from (bucket, stratum).
    source: Vec<[(usize, usize); 2]>,
    /// Runs of buckets with no request.
    gaps: Vec<Gap>,
}

impl Model {
    /// Buckets the answered requests of `trace` into `width`-long buckets,
    /// splitting each into cold and warm when `cold_after` is given; `None`
    /// when no request reached the dependency. `width` must not be zero.
    pub fn new(trace: &Trace, width: Duration, cold_after: Option<Duration>) -> Option<Model> {
        let bucket = |at: Duration| (at.as_nanos() / width.as_nanos().max(1)) as usize;
        let (last, _) = trace.answered().last()?;
        let mut recorded = vec![[Vec::new(), Vec::new()]; bucket(last) + 1];
        let mut previous: Option<Duration> = None;
        for (at, outcome) in trace.answered() {
            let cold = cold_after.is_some_and(|idle| previous.is_none_or(|p| at - p >= idle));
            previous = Some(at);
            recorded[bucket(at)][usize::from(cold)].push(outcome);
        }
        let count = recorded.len();
        let mut last: [Option<usize>; 2] = [None, None];
        let mut held = Vec::with_capacity(count);
        for (i, buckets) in recorded.iter().enumerate() {
            for stratum in [WARM, COLD] {
                if !buckets[stratum].is_empty() {
                    last[stratum] = Some(i);
                }
            }
            held.push(last);
        }
        // The first bucket holds the first line, so one stratum is known
        // from there on.
        let source = held
            .into_iter()
            .map(|last| {
                let pick = |s: usize| match (last[s], last[1 - s]) {
                    (Some(b), _) => (b, s),
                    (None, Some(b)) => (b, 1 - s),
                    (None, None) => (0, s),
                };
                [pick(WARM), pick(COLD)]
            })
            .collect();
        let mut gaps: Vec<Gap> = Vec::new();
        for (i, b) in recorded.iter().enumerate() {
            if !b[WARM].is_empty() || !b[COLD].is_empty() {
                continue;
            }
            let (from, to) = (width * i as u32, width * (i as u32 + 1));
            match gaps.last_mut() {
                Some(gap) if gap.to == from => gap.to = to,
                _ => gaps.push(Gap { from, to }),
            }
        }
        Some(Model {
            width,
            recorded,
            source,
            gaps,
        })
    }

    /// How long the model covers: whole buckets up to the last arrival.
    pub fn span(&self) -> Duration {
        self.width * self.recorded.len() as u32
    }

    /// Runs of buckets with no recorded request.
    pub fn gaps(&self) -> &[Gap] {
        &self.gaps
    }

    /// What the recording does over time, in at most `max` buckets (whole
    /// buckets of the model merged when it has more): the merged width and,
    /// per bucket, the share of its recorded answers that failed (not a
    /// 2xx or 3xx) in percent; `None` for a bucket without any.
    pub fn failing_shares(&self, max: usize) -> (Duration, Vec<Option<f64>>) {
        let merge = self.recorded.len().div_ceil(max.max(1)).max(1);
        let shares = self
            .recorded
            .chunks(merge)
            .map(|chunk| {
                let answers = chunk.iter().flat_map(|strata| strata.iter().flatten());
                let (failed, all) = answers.fold((0u32, 0u32), |(f, n), o| {
                    let ok = matches!(o.answer, Answer::Status(200..=399));
                    (f + u32::from(!ok), n + 1)
                });
                (all > 0).then(|| f64::from(failed) / f64::from(all) * 100.0)
            })
            .collect();
        (self.width * merge as u32, shares)
    }

    /// The answer for a request `at` into the replay, cold or not, with a
    /// uniform draw `u` in `[0, 1)`; `None` past the end of the recording.
    pub fn draw(&self, at: Duration, cold: bool, u: f64) -> Option<Outcome> {
        let index = (at.as_nanos() / self.width.as_nanos().max(1)) as usize;
        let (bucket, stratum) = self.source.get(index)?[usize::from(cold)];
        let answers = &self.recorded[bucket][stratum];
        let pick = ((u * answers.len() as f64) as usize).min(answers.len().saturating_sub(1));
        answers.get(pick).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Answer, TraceLine};

    fn trace(lines: &[(u64, u16)]) -> Trace {
        Trace {
            file: "t".into(),
            lines: lines
                .iter()
                .map(|&(ms, code)| TraceLine {
                    at: Duration::from_millis(ms),
                    outcome: Some(Outcome {
                        answer: Answer::Status(code),
                        latency: Duration::from_millis(code.into()),
                    }),
                    source_line: 1,
                })
                .collect(),
        }
    }

    fn status(o: Option<Outcome>) -> Option<u16> {
        o.map(|o| match o.answer {
            Answer::Status(s) => s,
            _ => 0,
        })
    }

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn each_bucket_draws_from_its_own_recorded_answers_in_proportion() {
        let m = Model::new(
            &trace(&[(0, 200), (100, 200), (200, 503), (300, 200), (1_100, 503)]),
            SECOND,
            None,
        )
        .unwrap();
        let at = Duration::from_millis(500);
        let drawn: Vec<_> = [0.0, 0.3, 0.5, 0.75, 0.999]
            .iter()
            .map(|&u| status(m.draw(at, false, u)))
            .collect();
        assert_eq!(
            drawn,
            [Some(200), Some(200), Some(503), Some(200), Some(200)],
            "a quarter 503, as recorded"
        );
        assert_eq!(
            status(m.draw(Duration::from_millis(1_500), false, 0.0)),
            Some(503)
        );
        assert_eq!(m.span(), 2 * SECOND);
        assert_eq!(m.draw(2 * SECOND, false, 0.0), None, "past the recording");
    }

    #[test]
    fn failing_shares_say_per_bucket_how_much_of_the_recording_failed() {
        // 0 s: one 503 of four; 1 s: all 503; 2 s: nothing; 3 s: a 200.
        let m = Model::new(
            &trace(&[
                (0, 200),
                (100, 302),
                (200, 503),
                (300, 200),
                (1_100, 503),
                (3_100, 200),
            ]),
            SECOND,
            None,
        )
        .unwrap();
        assert_eq!(
            m.failing_shares(600),
            (SECOND, vec![Some(25.0), Some(100.0), None, Some(0.0)])
        );
        // At most two buckets: two seconds each, merged.
        assert_eq!(
            m.failing_shares(2),
            (2 * SECOND, vec![Some(40.0), Some(0.0)])
        );
    }

    #[test]
    fn a_gap_repeats_the_last_recorded_bucket_and_is_reported() {
        let m = Model::new(&trace(&[(0, 500), (3_500, 200)]), SECOND, None).unwrap();
        assert_eq!(
            status(m.draw(Duration::from_millis(1_200), false, 0.5)),
            Some(500)
        );
        assert_eq!(
            status(m.draw(Duration::from_millis(2_900), false, 0.5)),
            Some(500)
        );
        assert_eq!(
            status(m.draw(Duration::from_millis(3_100), false, 0.5)),
            Some(200)
        );
        assert_eq!(
            m.gaps(),
            [Gap {
                from: SECOND,
                to: 3 * SECOND
            }]
        );
    }

    #[test]
    fn cold_requests_draw_from_the_calls_that_came_after_silence() {
        // Warm traffic answers 200; the calls after 2 s of silence got 503.
        let m = Model::new(
            &trace(&[
                (0, 503),
                (50, 200),
                (100, 200),
                (3_000, 503),
                (3_050, 200),
                (4_000, 200),
            ]),
            SECOND,
            Some(SECOND),
        )
        .unwrap();
        assert_eq!(
            status(m.draw(Duration::from_millis(3_500), true, 0.9)),
            Some(503)
        );
        assert_eq!(
            status(m.draw(Duration::from_millis(3_500), false, 0.0)),
            Some(200)
        );
        // Second 4 has no cold call: the last cold answer holds.
        assert_eq!(
            status(m.draw(Duration::from_millis(4_500), true, 0.0)),
            Some(503)
        );
        // Second 1 has nothing: both strata repeat second 0.
        assert_eq!(
            status(m.draw(Duration::from_millis(1_500), false, 0.0)),
            Some(200)
        );
        assert_eq!(
            status(m.draw(Duration::from_millis(1_500), true, 0.0)),
            Some(503)
        );
    }

    #[test]
    fn without_cold_after_every_request_draws_from_one_stratum() {
        let m = Model::new(&trace(&[(0, 503), (3_000, 200)]), SECOND, None).unwrap();
        assert_eq!(
            status(m.draw(Duration::from_millis(3_100), true, 0.0)),
            Some(200)
        );
    }

    #[test]
    fn a_stratum_not_seen_yet_uses_the_other_one() {
        let m = Model::new(
            &trace(&[(0, 200), (100, 200), (2_000, 503)]),
            SECOND,
            Some(SECOND),
        )
        .unwrap();
        // The first line is cold (nothing before it); warm exists from 0.
        assert_eq!(status(m.draw(Duration::ZERO, true, 0.0)), Some(200));
        let warm_only = Model::new(&trace(&[(0, 200)]), SECOND, None).unwrap();
        assert_eq!(status(warm_only.draw(Duration::ZERO, true, 0.0)), Some(200));
    }
}
