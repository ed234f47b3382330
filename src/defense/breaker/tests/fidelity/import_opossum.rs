//! The opossum import against the reference model: a random options
//! object (each circuit option set or left out), read by `firedrill
//! import`, decides call by call as the opossum model built from the same
//! options does, with opossum's defaults for the options left out written
//! here from the `CircuitBreaker` constructor (50 %, 30000 ms reset, a
//! 10000 ms window of 10 buckets, volume 0, no warm-up).

use proptest::prelude::*;

use super::import::imported_breaker;
use super::opossum::{Opossum, OpossumOptions};
use super::opossum_tests::bucket_us;
use super::{assert_agree, drive, steps};
use crate::defense::import::Format;

/// One options object as the file writes it; `None` is left out.
#[derive(Debug, Clone)]
struct Options {
    threshold: Option<u32>,
    reset_ms: Option<u64>,
    window_ms: Option<u64>,
    buckets: Option<u64>,
    volume: Option<u64>,
    warm_up: Option<bool>,
}

impl Options {
    fn json(&self) -> String {
        let mut keys = vec![r#""timeout": false"#.to_string()];
        let mut set = |key: &str, value: Option<String>| {
            if let Some(v) = value {
                keys.push(format!(r#""{key}": {v}"#));
            }
        };
        set(
            "errorThresholdPercentage",
            self.threshold.map(|n| n.to_string()),
        );
        set("resetTimeout", self.reset_ms.map(|n| n.to_string()));
        set("rollingCountTimeout", self.window_ms.map(|n| n.to_string()));
        set("rollingCountBuckets", self.buckets.map(|n| n.to_string()));
        set("volumeThreshold", self.volume.map(|n| n.to_string()));
        set("allowWarmUp", self.warm_up.map(|b| b.to_string()));
        format!(r#"{{"inventory": {{{}}}}}"#, keys.join(", "))
    }

    /// What opossum's constructor makes of them.
    fn model(&self) -> OpossumOptions {
        OpossumOptions {
            error_threshold_percentage: self.threshold.unwrap_or(50),
            reset_timeout_ms: self.reset_ms.unwrap_or(30_000),
            rolling_count_timeout_ms: self.window_ms.unwrap_or(10_000),
            rolling_count_buckets: self.buckets.unwrap_or(10),
            volume_threshold: self.volume.unwrap_or(0),
            allow_warm_up: self.warm_up.unwrap_or(false),
        }
    }
}

fn options() -> impl Strategy<Value = Options> {
    (
        prop::option::of(prop::sample::select(vec![0u32, 10, 50, 75, 100])),
        prop::option::weighted(0.8, prop::sample::select(vec![1u64, 500, 1_000, 2_500])),
        prop::option::weighted(0.8, prop::sample::select(vec![1_000u64, 999, 3_000, 250])),
        prop::option::weighted(0.8, 1u64..=10),
        prop::option::of(0u64..=5),
        prop::option::of(any::<bool>()),
    )
        .prop_map(
            |(threshold, reset_ms, window_ms, buckets, volume, warm_up)| Options {
                threshold,
                reset_ms,
                window_ms,
                buckets,
                volume,
                warm_up,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1000,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x0905_5127),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn an_imported_opossum_circuit_matches_opossum_after_every_event(
        options in options(),
        steps in steps(false),
    ) {
        let config = imported_breaker(Format::Opossum, "o.json", &options.json());
        let o = options.model();
        let seen = drive(&config, &mut Opossum::new(o.clone()), bucket_us(&o), &steps);
        assert_agree(&seen)?;
    }
}
