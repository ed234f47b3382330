//! The Sentinel import against the reference model: a random degrade rule
//! (slow ratio or exception ratio, each optional field set or left out),
//! read by `firedrill import sentinel`, decides call by call as the
//! Sentinel model configured from the same fields does, Sentinel's
//! defaults for the fields left out written here from `DegradeRule`
//! (grade 0, count 0, slowRatioThreshold 1.0, minRequestAmount 5,
//! statIntervalMs 1000).

use proptest::prelude::*;

use super::import::imported_breaker;
use super::sentinel::{Sentinel, SentinelConfig};
use super::{assert_agree, drive, steps};
use crate::defense::import::Format;

/// One degrade rule's fields; `None` is left out.
#[derive(Debug, Clone)]
struct Rule {
    /// `Some(1)` exception ratio, `Some(0)` slow ratio, `None` left out
    /// (slow ratio).
    grade: Option<u8>,
    /// Slow ratio: the max RT in ms (a double); exception ratio: the
    /// ratio in hundredths.
    count: Option<f64>,
    /// Hundredths.
    slow_ratio: Option<u32>,
    time_window: u64,
    min_requests: Option<u64>,
    interval_ms: Option<u64>,
}

impl Rule {
    fn json(&self) -> String {
        let mut fields = vec![
            "\"resource\": \"inventory\"".to_string(),
            format!("\"timeWindow\": {}", self.time_window),
        ];
        if let Some(g) = self.grade {
            fields.push(format!("\"grade\": {g}"));
        }
        let slow = self.grade != Some(1);
        if let Some(c) = self.count {
            let count = if slow {
                c.to_string()
            } else {
                format!("{}", c / 100.0)
            };
            fields.push(format!("\"count\": {count}"));
        }
        if let Some(r) = self.slow_ratio {
            fields.push(format!("\"slowRatioThreshold\": {}", f64::from(r) / 100.0));
        }
        if let Some(m) = self.min_requests {
            fields.push(format!("\"minRequestAmount\": {m}"));
        }
        if let Some(i) = self.interval_ms {
            fields.push(format!("\"statIntervalMs\": {i}"));
        }
        format!("[{{{}}}]", fields.join(", "))
    }

    /// The Sentinel breaker these fields build.
    fn model(&self) -> SentinelConfig {
        let slow = self.grade != Some(1);
        SentinelConfig {
            max_rt_us: slow.then(|| (self.count.unwrap_or(0.0) * 1000.0) as u64),
            threshold: if slow {
                self.slow_ratio.unwrap_or(100)
            } else {
                self.count.unwrap_or(0.0) as u32
            },
            interval_ms: self.interval_ms.unwrap_or(1000),
            min_requests: self.min_requests.unwrap_or(5),
            wait_ms: self.time_window * 1000,
        }
    }
}

fn rule() -> impl Strategy<Value = Rule> {
    (
        prop::option::of(0u8..=1),
        // Half milliseconds, where Math.round decides: 1.5 ms is 2.
        prop::option::weighted(
            0.9,
            prop::sample::select(vec![
                0.0f64, 0.5, 1.0, 1.5, 2.5, 3.5, 25.0, 50.0, 60.0, 100.0, 500.5,
            ]),
        ),
        prop::option::of(prop::sample::select(vec![0u32, 25, 50, 100])),
        1u64..=5,
        prop::option::weighted(0.8, 1u64..=6),
        prop::option::weighted(0.8, 500u64..=3000),
    )
        .prop_map(
            |(grade, count, slow_ratio, time_window, min_requests, interval_ms)| {
                // An exception ratio's count is at most 1 (hundredths here).
                let count = match grade {
                    Some(1) => count.map(|c| c.min(100.0).trunc()),
                    _ => count,
                };
                Rule {
                    grade,
                    count,
                    slow_ratio,
                    time_window,
                    min_requests,
                    interval_ms,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1000,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x5e27_1e01),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn an_imported_sentinel_degrade_rule_matches_sentinel_after_every_event(
        rule in rule(),
        steps in steps(false),
    ) {
        let config = imported_breaker(Format::Sentinel, "rules.json", &rule.json());
        let c = rule.model();
        let edge = c.interval_ms * 1000;
        let seen = drive(&config, &mut Sentinel::new(c), edge, &steps);
        assert_agree(&seen)?;
    }
}
