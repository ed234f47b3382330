//! The `opossum` model through the machine: the journal's reasons, the
//! failures counted while open, a cancelled probe, and the YAML keys.

use super::*;
use crate::schema::units::Percent;

fn opossum(edit: impl FnOnce(&mut OpossumConfig)) -> BreakerConfig {
    let mut c = OpossumConfig {
        wait_in_open: Duration::from_secs(1),
        ..OpossumConfig::default()
    };
    edit(&mut c);
    BreakerConfig::new("dep", ModelConfig::Opossum(c))
}

#[test]
fn the_journal_says_strictly_above_over_fires_and_one_probe() {
    let b = replay(
        &opossum(|_| {}),
        &[
            (0, Op::Ok(0)),
            (10, Op::Fail(0)), // 1 of 2: 50 %, not above
            (20, Op::Fail(0)), // 2 of 3: opens
            (500, Op::Reject),
            (1_020, Op::Fail(0)), // the probe fails
            (2_020, Op::Ok(0)),   // the next probe closes
        ],
    );
    assert_journal(
        &b,
        &[
            (
                20,
                "closed",
                "open",
                "error_rate 66.7% > 50% over 3 requests",
            ),
            (1_020, "open", "half_open", "wait_in_open 1s elapsed"),
            (1_020, "half_open", "open", "probe failed after 0/1 ok"),
            (2_020, "open", "half_open", "wait_in_open 1s elapsed"),
            (2_020, "half_open", "closed", "probes 1/1 ok"),
        ],
    );
}

#[test]
fn a_failure_that_ends_while_open_still_counts_in_the_window() {
    // 60 %: three calls start at 0; two fail (2 of 3 fires) and open it;
    // the third fails while open. The probe closes it at 1.003 s; the next
    // failure is 4 of 5 fires (80 %) and opens, where without the failure
    // counted while open it would be 3 of 5 (60 %, not above).
    let start = base();
    let config = opossum(|c| c.failure_rate_threshold = Percent::new(60.0).unwrap());
    let mut b = Breaker::new(&config, start);
    let calls: Vec<Permit> = (0..3).map(|_| b.try_acquire(start).unwrap()).collect();
    let fail = Outcome::Failure(FailureKind::Status(503));
    for (i, p) in calls.into_iter().enumerate() {
        b.record(p, fail, Duration::ZERO, ms(start, 1 + i as u64));
    }
    let probe = b.try_acquire(ms(start, 1_003)).unwrap();
    b.record(probe, Outcome::Success, Duration::ZERO, ms(start, 1_003));
    assert_eq!(b.state(), State::Closed);
    let d = b.try_acquire(ms(start, 1_100)).unwrap();
    b.record(d, fail, Duration::ZERO, ms(start, 1_100));
    assert_eq!(b.state(), State::Open, "4 failures over 5 fires");
}

#[test]
fn a_cancelled_probe_gives_the_probe_back() {
    let start = base();
    let mut b = Breaker::new(&opossum(|_| {}), start);
    let p = b.try_acquire(start).unwrap();
    b.record(
        p,
        Outcome::Failure(FailureKind::Timeout),
        Duration::ZERO,
        start,
    );
    let probe = b.try_acquire(ms(start, 1_000)).unwrap();
    assert!(
        b.try_acquire(ms(start, 1_000)).is_err(),
        "one probe at a time"
    );
    b.release_without_outcome(probe, ms(start, 1_001));
    assert_eq!(b.state(), State::HalfOpen);
    assert!(
        b.try_acquire(ms(start, 1_002)).is_ok(),
        "the next call probes"
    );
}

#[test]
fn yaml_keys_configure_the_model_and_bad_ones_are_named() {
    let c = BreakerConfig::from_yaml(
        "b.yaml",
        "model: opossum\nfailure_rate_threshold: 0%\nwait_in_open: 2s\nrolling_window: 1s\nbuckets: 3\nvolume_threshold: 4\nwarm_up: true\n",
    )
    .unwrap();
    let ModelConfig::Opossum(o) = &c.model else {
        panic!("{c:?}")
    };
    assert_eq!(o.bucket(), Duration::from_millis(333));
    assert_eq!(
        (
            o.failure_rate_threshold.percent(),
            o.wait_in_open,
            o.volume_threshold,
            o.warm_up
        ),
        (0.0, Duration::from_secs(2), 4, true)
    );
    assert_eq!(c.stragglers, Stragglers::Count);
    for (text, says) in [
        (
            "model: opossum\nrolling_window: 5ms\nbuckets: 10\n",
            "rolling_window: must be whole milliseconds, at least 1ms per bucket (10 buckets), got 5ms",
        ),
        (
            "model: opossum\nrolling_window: 1500us\n",
            "rolling_window: must be whole milliseconds",
        ),
        (
            "model: opossum\nbuckets: 0\n",
            "buckets: must be at least 1",
        ),
        (
            "model: opossum\nsliding_window_size: 3\n",
            "sliding_window_size: is not a key of model opossum",
        ),
        ("warm_up: true\n", "warm_up: is not a key of model window"),
    ] {
        let err = BreakerConfig::from_yaml("b.yaml", text)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(says) && err.starts_with("b.yaml:"),
            "{text}: {err}"
        );
    }
}
