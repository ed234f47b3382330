//! The resilience4j import against the reference model: a random Spring
//! Boot circuit breaker configuration (each key set or left out, camelCase
//! or kebab-case), read by `firedrill import`, decides call by call as the
//! resilience4j model configured from the same keys does, the library's
//! defaults for the keys left out written here from `CircuitBreakerConfig`
//! (100 calls, 100 minimum, 50 %, 100 %, 60 s slow call, 60 s wait, 10
//! permitted). A 4xx is a failure unless the configuration ignores
//! `HttpClientErrorException`, as resilience4j sees the exception a Spring
//! client raises for it; with `recordExceptions` naming only
//! `HttpServerErrorException`, `TimeoutException` and `IOException` (the
//! resilience4j demo's list), a 4xx is a success.

use proptest::prelude::*;

use super::resilience4j::{Kind, R4jConfig, Resilience4j};
use super::{End, Reference, SECOND, St, assert_agree, drive, steps};
use crate::defense::DefenseConfig;
use crate::defense::breaker::BreakerConfig;
use crate::defense::import::{Format, Options, test_support};

/// One circuit breaker's keys as the file writes them; `None` is left
/// out.
#[derive(Debug, Clone)]
struct Keys {
    time_based: Option<bool>,
    size: Option<u32>,
    minimum: Option<u32>,
    permitted: Option<u32>,
    failure: Option<u32>,
    slow: Option<u32>,
    /// Milliseconds.
    slow_ms: Option<u64>,
    /// Microseconds, written as `{n}us`: resilience4j keeps whole
    /// milliseconds (a wait under 1 ms it refuses, as the import does:
    /// `src/defense/import/resilience4j/tests.rs`).
    wait_us: Option<u64>,
    automatic: Option<bool>,
    /// Seconds.
    max_wait_half_open: Option<u64>,
    /// Multiplier and maximum (ms), with `enableExponentialBackoff`.
    backoff: Option<(f64, u64)>,
    ignore_4xx: bool,
    /// `recordExceptions` without `HttpClientErrorException`: a 4xx is a
    /// success (unless ignored).
    record_5xx_only: bool,
    kebab: bool,
}

impl Keys {
    fn properties(&self) -> String {
        let name = |camel: &str| -> String {
            if !self.kebab {
                return camel.to_string();
            }
            camel
                .chars()
                .flat_map(|c| {
                    if c.is_ascii_uppercase() {
                        vec!['-', c.to_ascii_lowercase()]
                    } else {
                        vec![c]
                    }
                })
                .collect()
        };
        let mut lines = Vec::new();
        let mut set = |key: &str, value: String| {
            lines.push(format!(
                "resilience4j.circuitbreaker.instances.inventory.{}={value}",
                name(key)
            ));
        };
        if let Some(t) = self.time_based {
            set(
                "slidingWindowType",
                if t { "TIME_BASED" } else { "COUNT_BASED" }.into(),
            );
        }
        if let Some(n) = self.size {
            set("slidingWindowSize", n.to_string());
        }
        if let Some(n) = self.minimum {
            set("minimumNumberOfCalls", n.to_string());
        }
        if let Some(n) = self.permitted {
            set("permittedNumberOfCallsInHalfOpenState", n.to_string());
        }
        if let Some(n) = self.failure {
            set("failureRateThreshold", n.to_string());
        }
        if let Some(n) = self.slow {
            set("slowCallRateThreshold", n.to_string());
        }
        if let Some(ms) = self.slow_ms {
            set("slowCallDurationThreshold", format!("{ms}ms"));
        }
        if let Some(us) = self.wait_us {
            set("waitDurationInOpenState", format!("{us}us"));
        }
        if let Some(a) = self.automatic {
            set(
                "automaticTransitionFromOpenToHalfOpenEnabled",
                a.to_string(),
            );
        }
        if let Some(s) = self.max_wait_half_open {
            set("maxWaitDurationInHalfOpenState", format!("{s}s"));
        }
        if let Some((m, max)) = self.backoff {
            set("enableExponentialBackoff", "true".into());
            set("exponentialBackoffMultiplier", m.to_string());
            set("exponentialMaxWaitDurationInOpenState", format!("{max}ms"));
        }
        if self.ignore_4xx {
            set(
                "ignoreExceptions",
                "org.springframework.web.client.HttpClientErrorException".into(),
            );
        }
        if self.record_5xx_only {
            set(
                "recordExceptions",
                "org.springframework.web.client.HttpServerErrorException,java.util.concurrent.TimeoutException,java.io.IOException".into(),
            );
        }
        lines.join("\n")
    }

    /// The resilience4j configuration these keys build, defaults from
    /// `CircuitBreakerConfig`.
    fn model(&self) -> R4jConfig {
        // resilience4j keeps the wait in whole milliseconds (`toMillis`).
        let wait_us = self.wait_us.map(|us| us / 1000 * 1000);
        R4jConfig {
            kind: if self.time_based == Some(true) {
                Kind::Time
            } else {
                Kind::Count
            },
            size: self.size.unwrap_or(100),
            minimum_calls: self.minimum.unwrap_or(100),
            permitted: self.permitted.unwrap_or(10),
            failure_threshold: self.failure.unwrap_or(50),
            slow_threshold: self.slow.unwrap_or(100),
            slow_us: self.slow_ms.unwrap_or(60_000) * 1000,
            wait_us: wait_us.unwrap_or(60 * SECOND),
            backoff: self.backoff.filter(|_| wait_us.is_some()),
            automatic: self.automatic.unwrap_or(false),
            max_wait_half_open_us: self.max_wait_half_open.map(|s| s * SECOND),
        }
    }
}

/// The breaker of route `inventory` that `firedrill import` makes of
/// `text` (the contents of `file`), read back as an experiment's defense
/// reads it.
pub(super) fn imported_breaker(format: Format, file: &str, text: &str) -> BreakerConfig {
    let imported = test_support::import(format, file, text, &Options::strict(true));
    let yaml = imported.render(format, file);
    let defense: DefenseConfig =
        crate::schema::from_yaml_str("out.yaml", &yaml).unwrap_or_else(|e| panic!("{yaml}\n{e}"));
    defense.routes["inventory"]
        .breaker
        .clone()
        .expect("a breaker")
}

/// The model, with a 4xx read as the exception resilience4j records, or
/// as a success outside its `recordExceptions`.
#[derive(Debug)]
struct Client4xx {
    inner: Resilience4j,
    counted: bool,
    success: bool,
}

impl Reference for Client4xx {
    fn acquire(&mut self, t: u64) -> bool {
        self.inner.acquire(t)
    }
    fn finish(&mut self, end: End, start: u64, t: u64) {
        let end = match end {
            End::Ignored if self.success => End::Success,
            End::Ignored if self.counted => End::Failure,
            other => other,
        };
        self.inner.finish(end, start, t);
    }
    fn cancel(&mut self, t: u64) {
        self.inner.cancel(t);
    }
    fn timer(&mut self, t: u64) {
        self.inner.timer(t);
    }
    fn state(&self) -> St {
        self.inner.state()
    }
    fn deadline(&self) -> Option<u64> {
        self.inner.deadline()
    }
}

fn keys() -> impl Strategy<Value = Keys> {
    (
        (
            prop::option::of(any::<bool>()),
            prop::option::weighted(0.8, 1u32..=6),
            prop::option::weighted(0.8, 1u32..=6),
            prop::option::weighted(0.8, 1u32..=5),
        ),
        (
            prop::option::of(prop::sample::select(vec![25u32, 50, 60, 100])),
            prop::option::of(prop::sample::select(vec![50u32, 100])),
            prop::option::of(prop::sample::select(vec![1u64, 200, 500, 1000])),
        ),
        (
            prop::option::weighted(
                0.8,
                prop::sample::select(vec![1_000u64, 333_500, 1_000_000, 1_500_000, 4_000_000]),
            ),
            prop::option::of(any::<bool>()),
            prop::option::of(1u64..=4),
            prop::option::of((
                prop::sample::select(vec![1.0f64, 1.5, 2.0]),
                prop::sample::select(vec![5_000u64, 30_000]),
            )),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
        ),
    )
        .prop_map(
            |((time_based, size, minimum, permitted), (failure, slow, slow_ms), rest)| {
                let (
                    wait_us,
                    automatic,
                    max_wait_half_open,
                    backoff,
                    ignore_4xx,
                    record_5xx_only,
                    kebab,
                ) = rest;
                Keys {
                    time_based,
                    size,
                    minimum,
                    permitted,
                    failure,
                    slow,
                    slow_ms,
                    wait_us,
                    automatic,
                    max_wait_half_open,
                    backoff,
                    ignore_4xx,
                    record_5xx_only,
                    kebab,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1000,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x1a20_0127),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn an_imported_resilience4j_breaker_matches_resilience4j_after_every_event(
        keys in keys(),
        steps in steps(true),
    ) {
        let config = imported_breaker(Format::Resilience4j, "a.properties", &keys.properties());
        let mut model = Client4xx {
            inner: Resilience4j::new(keys.model()),
            counted: !keys.ignore_4xx,
            success: keys.record_5xx_only && !keys.ignore_4xx,
        };
        let seen = drive(&config, &mut model, SECOND, &steps);
        assert_agree(&seen)?;
    }
}
