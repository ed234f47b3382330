//! The breaker mapping as written in YAML (one flat mapping, resilience4j
//! style), and its validation into [`BreakerConfig`]: every problem is
//! reported, each naming its key.

use serde::Deserialize;

use super::config::{
    Backoff, BreakerConfig, ConsecutiveConfig, ModelConfig, RatioConfig, Recovery, SlidingWindow,
    ThresholdType, WindowConfig, defaults,
};
use super::outcome::{Classifier, StatusPattern};
use crate::clock::Duration;
use crate::schema::units::{Dur, Percent};

/// `model:` — which decision model the breaker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ModelName {
    /// The reference: resilience4j sliding window.
    #[default]
    Window,
    /// N failures in a row.
    Consecutive,
    /// Sentinel / MSE ratio.
    Ratio,
}

impl ModelName {
    fn key(self) -> &'static str {
        match self {
            ModelName::Window => "window",
            ModelName::Consecutive => "consecutive",
            ModelName::Ratio => "ratio",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WindowType {
    Count,
    Time,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ThresholdName {
    ErrorRatio,
    SlowRatio,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawBackoff {
    multiplier: f64,
    max: Dur,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawProgressive {
    phases: Option<u32>,
    min_passes_per_phase: Option<u32>,
    phase_duration: Option<Dur>,
}

/// `recovery:` — `single_probe`, `progressive` (all defaults), or
/// `{ progressive: { phases: 3, ... } }`. Read by hand because
/// serde_yaml_ng wants a `!progressive` tag for an enum variant with data.
#[derive(Debug)]
pub(crate) enum RawRecovery {
    SingleProbe,
    Progressive(RawProgressive),
}

const RECOVERY_EXPECTED: &str = "`single_probe`, `progressive` or a mapping `progressive: { phases, min_passes_per_phase, phase_duration }`";

impl<'de> Deserialize<'de> for RawRecovery {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{Error, MapAccess, Visitor};
        struct RecoveryVisitor;
        impl<'de> Visitor<'de> for RecoveryVisitor {
            type Value = RawRecovery;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(RECOVERY_EXPECTED)
            }
            fn visit_str<E: Error>(self, v: &str) -> Result<RawRecovery, E> {
                match v {
                    "single_probe" => Ok(RawRecovery::SingleProbe),
                    "progressive" => Ok(RawRecovery::Progressive(RawProgressive {
                        phases: None,
                        min_passes_per_phase: None,
                        phase_duration: None,
                    })),
                    other => Err(E::custom(format!(
                        "unknown recovery `{other}`, expected {RECOVERY_EXPECTED}"
                    ))),
                }
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawRecovery, A::Error> {
                let key: String = map
                    .next_key()?
                    .ok_or_else(|| A::Error::custom(format!("expected {RECOVERY_EXPECTED}")))?;
                if key != "progressive" {
                    return Err(A::Error::custom(format!(
                        "unknown recovery `{key}`, expected {RECOVERY_EXPECTED}"
                    )));
                }
                let progressive: RawProgressive = map.next_value()?;
                if map.next_key::<String>()?.is_some() {
                    return Err(A::Error::custom("give exactly one recovery policy"));
                }
                Ok(RawRecovery::Progressive(progressive))
            }
        }
        d.deserialize_any(RecoveryVisitor)
    }
}

/// Every key a breaker mapping accepts; which ones apply depends on `model`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawBreaker {
    /// Optional where the breaker is nested under a named route, which
    /// gives it its name.
    #[serde(default)]
    name: String,
    #[serde(default)]
    model: ModelName,
    failure_statuses: Option<Vec<StatusPattern>>,
    #[serde(default)]
    ignore_statuses: Vec<StatusPattern>,
    #[serde(default)]
    count_4xx: bool,
    sliding_window_type: Option<WindowType>,
    sliding_window_size: Option<u32>,
    minimum_calls: Option<u32>,
    failure_rate_threshold: Option<Percent>,
    slow_call_rate_threshold: Option<Percent>,
    slow_call_duration: Option<Dur>,
    wait_in_open: Option<Dur>,
    wait_in_open_backoff: Option<RawBackoff>,
    automatic_half_open: Option<bool>,
    permitted_calls_in_half_open: Option<u32>,
    max_wait_in_half_open: Option<Dur>,
    failure_threshold: Option<u32>,
    success_threshold: Option<u32>,
    threshold_type: Option<ThresholdName>,
    threshold: Option<Percent>,
    max_rt: Option<Dur>,
    stat_window: Option<Dur>,
    minimum_requests: Option<u32>,
    breaker_duration: Option<Dur>,
    recovery: Option<RawRecovery>,
}

/// Collects every problem, each prefixed with its key.
#[derive(Default)]
struct Problems(Vec<String>);

impl Problems {
    fn add(&mut self, key: &str, message: impl std::fmt::Display) {
        self.0.push(format!("{key}: {message}"));
    }

    /// `value` (or `default`), which must be at least 1.
    fn positive(&mut self, key: &str, value: Option<u32>, default: u32) -> u32 {
        let value = value.unwrap_or(default);
        if value == 0 {
            self.add(key, "must be at least 1");
        }
        value
    }

    /// `value` (or `default`), which must be above 0 %.
    fn threshold(&mut self, key: &str, value: Option<Percent>, default: f64) -> Percent {
        let value = value.unwrap_or(super::config::percent(default));
        if value.percent() <= 0.0 {
            self.add(key, "must be greater than 0% (0% would open on any call)");
        }
        value
    }
}

impl RawBreaker {
    /// The keys that are set but belong to another model.
    fn foreign_keys(&self) -> Vec<&'static str> {
        use ModelName::{Consecutive as C, Ratio as R, Window as W};
        let keys: [(&str, bool, &[ModelName]); 20] = [
            (
                "sliding_window_type",
                self.sliding_window_type.is_some(),
                &[W],
            ),
            (
                "sliding_window_size",
                self.sliding_window_size.is_some(),
                &[W],
            ),
            ("minimum_calls", self.minimum_calls.is_some(), &[W]),
            (
                "failure_rate_threshold",
                self.failure_rate_threshold.is_some(),
                &[W],
            ),
            (
                "slow_call_rate_threshold",
                self.slow_call_rate_threshold.is_some(),
                &[W],
            ),
            (
                "slow_call_duration",
                self.slow_call_duration.is_some(),
                &[W],
            ),
            ("wait_in_open", self.wait_in_open.is_some(), &[W, C]),
            (
                "wait_in_open_backoff",
                self.wait_in_open_backoff.is_some(),
                &[W],
            ),
            (
                "automatic_half_open",
                self.automatic_half_open.is_some(),
                &[W],
            ),
            (
                "permitted_calls_in_half_open",
                self.permitted_calls_in_half_open.is_some(),
                &[W],
            ),
            (
                "max_wait_in_half_open",
                self.max_wait_in_half_open.is_some(),
                &[W],
            ),
            ("failure_threshold", self.failure_threshold.is_some(), &[C]),
            ("success_threshold", self.success_threshold.is_some(), &[C]),
            ("threshold_type", self.threshold_type.is_some(), &[R]),
            ("threshold", self.threshold.is_some(), &[R]),
            ("max_rt", self.max_rt.is_some(), &[R]),
            ("stat_window", self.stat_window.is_some(), &[R]),
            ("minimum_requests", self.minimum_requests.is_some(), &[R]),
            ("breaker_duration", self.breaker_duration.is_some(), &[R]),
            ("recovery", self.recovery.is_some(), &[R]),
        ];
        keys.iter()
            .filter(|(_, set, models)| *set && !models.contains(&self.model))
            .map(|(key, _, _)| *key)
            .collect()
    }

    fn window(&self, p: &mut Problems) -> WindowConfig {
        let size = p.positive(
            "sliding_window_size",
            self.sliding_window_size,
            defaults::SLIDING_WINDOW_SIZE,
        );
        let sliding_window = match self.sliding_window_type.unwrap_or(WindowType::Count) {
            WindowType::Count => SlidingWindow::Count(size),
            WindowType::Time => SlidingWindow::Time(size),
        };
        let wait_in_open = self.wait_in_open.map_or(defaults::WAIT_IN_OPEN, Dur::get);
        let wait_in_open_backoff = self.wait_in_open_backoff.as_ref().map(|b| {
            if !(b.multiplier.is_finite() && b.multiplier >= 1.0) {
                p.add("wait_in_open_backoff.multiplier", "must be a number >= 1");
            }
            if b.max.get() < wait_in_open {
                p.add(
                    "wait_in_open_backoff.max",
                    format!("must be at least wait_in_open ({})", Dur(wait_in_open)),
                );
            }
            Backoff {
                multiplier: b.multiplier,
                max: b.max.get(),
            }
        });
        if self.max_wait_in_half_open == Some(Dur(Duration::ZERO)) {
            p.add("max_wait_in_half_open", "must be greater than 0s");
        }
        WindowConfig {
            sliding_window,
            minimum_calls: p.positive("minimum_calls", self.minimum_calls, defaults::MINIMUM_CALLS),
            failure_rate_threshold: p.threshold(
                "failure_rate_threshold",
                self.failure_rate_threshold,
                defaults::FAILURE_RATE_THRESHOLD,
            ),
            slow_call_rate_threshold: p.threshold(
                "slow_call_rate_threshold",
                self.slow_call_rate_threshold,
                defaults::SLOW_CALL_RATE_THRESHOLD,
            ),
            slow_call_duration: self
                .slow_call_duration
                .map_or(defaults::SLOW_CALL_DURATION, Dur::get),
            wait_in_open,
            wait_in_open_backoff,
            automatic_half_open: self.automatic_half_open.unwrap_or(false),
            permitted_calls_in_half_open: p.positive(
                "permitted_calls_in_half_open",
                self.permitted_calls_in_half_open,
                defaults::PERMITTED_CALLS_IN_HALF_OPEN,
            ),
            max_wait_in_half_open: self.max_wait_in_half_open.map(Dur::get),
        }
    }

    fn consecutive(&self, p: &mut Problems) -> ConsecutiveConfig {
        ConsecutiveConfig {
            failure_threshold: p.positive(
                "failure_threshold",
                self.failure_threshold,
                defaults::FAILURE_THRESHOLD,
            ),
            success_threshold: p.positive(
                "success_threshold",
                self.success_threshold,
                defaults::SUCCESS_THRESHOLD,
            ),
            wait_in_open: self.wait_in_open.map_or(defaults::WAIT_IN_OPEN, Dur::get),
        }
    }

    fn ratio(&self, p: &mut Problems) -> RatioConfig {
        let threshold_type = match (self.threshold_type, self.max_rt) {
            (None | Some(ThresholdName::ErrorRatio), None) => ThresholdType::ErrorRatio,
            (None | Some(ThresholdName::ErrorRatio), Some(_)) => {
                p.add("max_rt", "applies only to threshold_type: slow_ratio");
                ThresholdType::ErrorRatio
            }
            (Some(ThresholdName::SlowRatio), max_rt) => ThresholdType::SlowRatio {
                max_rt: max_rt.map_or(defaults::SLOW_CALL_DURATION, Dur::get),
            },
        };
        let stat_window = self.stat_window.map_or(defaults::STAT_WINDOW, Dur::get);
        if stat_window < Duration::from_secs(1)
            || stat_window > Duration::from_secs(120 * 60)
            || stat_window.subsec_nanos() != 0
        {
            p.add(
                "stat_window",
                format!(
                    "must be whole seconds from 1s to 120m, got {}",
                    Dur(stat_window)
                ),
            );
        }
        let breaker_duration = self
            .breaker_duration
            .map_or(defaults::WAIT_IN_OPEN, Dur::get);
        let recovery = match &self.recovery {
            None | Some(RawRecovery::SingleProbe) => Recovery::SingleProbe,
            Some(RawRecovery::Progressive(prog)) => Recovery::Progressive {
                phases: p.positive("recovery.progressive.phases", prog.phases, defaults::PHASES),
                min_passes_per_phase: p.positive(
                    "recovery.progressive.min_passes_per_phase",
                    prog.min_passes_per_phase,
                    defaults::MIN_PASSES_PER_PHASE,
                ),
                phase_duration: prog.phase_duration.map_or(stat_window, Dur::get),
            },
        };
        if let Recovery::Progressive { phase_duration, .. } = recovery
            && phase_duration.is_zero()
        {
            p.add(
                "recovery.progressive.phase_duration",
                "must be greater than 0s",
            );
        }
        RatioConfig {
            threshold_type,
            threshold: p.threshold(
                "threshold",
                self.threshold,
                defaults::FAILURE_RATE_THRESHOLD,
            ),
            stat_window,
            minimum_requests: p.positive(
                "minimum_requests",
                self.minimum_requests,
                defaults::MINIMUM_REQUESTS,
            ),
            breaker_duration,
            recovery,
        }
    }
}

impl TryFrom<RawBreaker> for BreakerConfig {
    type Error = String;

    fn try_from(raw: RawBreaker) -> Result<Self, String> {
        let mut p = Problems::default();
        if !raw.name.is_empty() && raw.name.trim().is_empty() {
            p.add("name", "a breaker name cannot be blank");
        }
        for key in raw.foreign_keys() {
            p.add(key, format!("is not a key of model {}", raw.model.key()));
        }
        let model = match raw.model {
            ModelName::Window => ModelConfig::Window(raw.window(&mut p)),
            ModelName::Consecutive => ModelConfig::Consecutive(raw.consecutive(&mut p)),
            ModelName::Ratio => ModelConfig::Ratio(raw.ratio(&mut p)),
        };
        if !p.0.is_empty() {
            return Err(p.0.join("; "));
        }
        let mut classifier = Classifier {
            ignore_statuses: raw.ignore_statuses,
            count_4xx: raw.count_4xx,
            ..Classifier::default()
        };
        if let Some(failure_statuses) = raw.failure_statuses {
            classifier.failure_statuses = failure_statuses;
        }
        Ok(BreakerConfig {
            name: raw.name,
            model,
            classifier,
        })
    }
}
