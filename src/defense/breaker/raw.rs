//! The breaker mapping as written in YAML (one flat mapping, resilience4j
//! style), and its validation into [`BreakerConfig`]: every problem is
//! reported, each naming its key.

use serde::{Deserialize, Deserializer};

use super::config::{
    Backoff, BreakerConfig, ConsecutiveConfig, ModelConfig, OpossumConfig, RatioConfig, Recovery,
    SlidingWindow, Stragglers, ThresholdType, WindowConfig, WindowShape, defaults,
};
use super::outcome::{Classifier, StatusPattern};
use crate::clock::Duration;
use crate::schema::deserialize_checked;
use crate::schema::units::{Dur, Percent};

mod recovery;

pub(crate) use recovery::RawRecovery;

/// `model:` — which decision model the breaker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ModelName {
    /// The reference: resilience4j sliding window.
    #[default]
    Window,
    /// N failures in a row.
    Consecutive,
    /// Sentinel / MSE ratio.
    Ratio,
    /// opossum's circuit.
    Opossum,
}

impl ModelName {
    fn key(self) -> &'static str {
        match self {
            ModelName::Window => "window",
            ModelName::Consecutive => "consecutive",
            ModelName::Ratio => "ratio",
            ModelName::Opossum => "opossum",
        }
    }
}

/// What the sliding window counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WindowType {
    /// The last `sliding_window_size` calls.
    Count,
    /// The calls of the last `sliding_window_size` seconds.
    Time,
}

/// What happens to a call admitted in one state that finishes in another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StragglersName {
    /// Recorded in the state current when it finishes (resilience4j,
    /// Sentinel; the default of `window` and `ratio`).
    Count,
    /// Kept out: each state judges only the calls it admitted (the default
    /// of `consecutive`).
    Drop,
}

/// The shape of the ratio model's statistics window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ShapeName {
    /// One window of `stat_window`, started afresh at each edge (Sentinel).
    Tumbling,
    /// The last `stat_window` seconds, in one-second buckets.
    Sliding,
}

/// What the ratio model's `threshold` is a share of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ThresholdName {
    /// Failed calls.
    ErrorRatio,
    /// Calls slower than `max_rt`.
    SlowRatio,
}

/// `wait_in_open_backoff:` — each reopening waits longer.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawBackoff {
    /// Factor applied to the wait at each reopening.
    multiplier: f64,
    /// Ceiling of the wait.
    max: Dur,
}

/// A circuit breaker: one flat mapping (resilience4j style); `model`
/// picks the decision model and which keys apply (`window`: the
/// `sliding_window_*`, `minimum_calls`, `*_rate_threshold`, `slow_call_*`,
/// half-open keys; `consecutive`: `failure_threshold`, `success_threshold`;
/// `ratio`: `threshold*`, `max_rt`, `stat_window`, `minimum_requests`,
/// `breaker_duration`, `recovery`; `opossum`: `failure_rate_threshold`,
/// `wait_in_open`, `rolling_window`, `buckets`, `volume_threshold`,
/// `warm_up`).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("allOf" = model_rules()))]
pub(crate) struct RawBreaker {
    /// Optional where the breaker is nested under a named route, which
    /// gives it its name.
    #[serde(default)]
    name: String,
    /// `window` (sliding window, the default), `consecutive` (N failures in
    /// a row), `ratio` (Sentinel-style ratio with recovery) or `opossum`
    /// (opossum's error rate over fires in rotating buckets).
    #[serde(default)]
    model: ModelName,
    /// Statuses that count as failures (default `["5xx"]`).
    failure_statuses: Option<Vec<StatusPattern>>,
    /// Statuses that count as neither success nor failure.
    #[serde(default)]
    ignore_statuses: Vec<StatusPattern>,
    /// Count 4xx not listed elsewhere as failures (default false).
    #[serde(default)]
    count_4xx: bool,
    /// Statuses that count as successes, 4xx included (after the two lists
    /// above; default none: a 4xx is neither).
    #[serde(default)]
    success_statuses: Vec<StatusPattern>,
    /// `timeout`, `connection`: calls without an answer that count as
    /// neither success nor failure (default none: failures).
    #[serde(default)]
    ignore_errors: Vec<super::outcome::ErrorClass>,
    /// `timeout`, `connection`: calls without an answer that count as
    /// successes (default none: failures).
    #[serde(default)]
    success_errors: Vec<super::outcome::ErrorClass>,
    /// gRPC statuses that count as failures (names or numbers; default
    /// UNKNOWN, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, INTERNAL,
    /// UNAVAILABLE, DATA_LOSS); OK is a success, any other status the
    /// caller's error (neither).
    grpc_failure_statuses: Option<Vec<crate::schema::units::GrpcError>>,
    /// Count a call the caller abandoned before an answer (its own timeout
    /// shorter than the defense line's) as a failure (default false:
    /// neither success nor failure).
    #[serde(default)]
    count_cancelled: bool,
    /// A call admitted in an earlier state that finishes now: `count` (in
    /// the current state, as resilience4j and Sentinel do; the default of
    /// `window` and `ratio`) or `drop` (the default of `consecutive`).
    stragglers: Option<StragglersName>,
    /// window (time), ratio: how far into a window the run starts, so
    /// windows line up with a library's wall-clock windows (default `0s`:
    /// windows start at the run's start).
    window_offset: Option<Dur>,
    /// window: `count` (default) or `time`.
    sliding_window_type: Option<WindowType>,
    /// window: calls (count) or seconds (time) in the window (default 10).
    #[schemars(range(min = 1))]
    sliding_window_size: Option<u32>,
    /// window: calls needed before the rates are judged (default 5).
    #[schemars(range(min = 1))]
    minimum_calls: Option<u32>,
    /// window: failure share that opens the breaker (default 50%; reached
    /// or above); opossum: strictly above (default 50%, 0% allowed).
    failure_rate_threshold: Option<Percent>,
    /// window: slow-call share that opens the breaker (default 100%).
    slow_call_rate_threshold: Option<Percent>,
    /// window: a call slower than this is slow (default `3s`).
    slow_call_duration: Option<Dur>,
    /// window, consecutive, opossum: how long the breaker stays open
    /// (default `30s`).
    wait_in_open: Option<Dur>,
    /// window: each reopening waits longer.
    wait_in_open_backoff: Option<RawBackoff>,
    /// window: go half-open when the wait ends, without waiting for a call.
    automatic_half_open: Option<bool>,
    /// window: trial calls let through in half-open (default 3).
    #[schemars(range(min = 1))]
    permitted_calls_in_half_open: Option<u32>,
    /// window: reopen if the trial calls take longer than this.
    max_wait_in_half_open: Option<Dur>,
    /// consecutive: failures in a row that open the breaker (default 5).
    #[schemars(range(min = 1))]
    failure_threshold: Option<u32>,
    /// consecutive: successes in a row in half-open that close it (default
    /// 3).
    #[schemars(range(min = 1))]
    success_threshold: Option<u32>,
    /// ratio: `error_ratio` or `slow_ratio`.
    threshold_type: Option<ThresholdName>,
    /// ratio: the share that opens the breaker.
    threshold: Option<Percent>,
    /// ratio: a call slower than this is slow.
    max_rt: Option<Dur>,
    /// ratio: the statistics window, any whole number of milliseconds up
    /// to `120m` (default `10s`).
    stat_window: Option<Dur>,
    /// ratio: `tumbling` (one window, as Sentinel; the default) or
    /// `sliding` (one-second buckets; whole seconds).
    stat_window_shape: Option<ShapeName>,
    /// ratio: calls needed before the ratio is judged (default 5).
    #[schemars(range(min = 1))]
    minimum_requests: Option<u32>,
    /// ratio: how long the breaker stays open.
    breaker_duration: Option<Dur>,
    /// ratio: `single_probe` or `progressive` recovery.
    recovery: Option<RawRecovery>,
    /// opossum: the rolling window, whole milliseconds of at least one per
    /// bucket (default `10s`); also the length of the warm-up.
    rolling_window: Option<Dur>,
    /// opossum: buckets in the rolling window, each `rolling_window /
    /// buckets` truncated to whole milliseconds (default 10).
    #[schemars(range(min = 1))]
    buckets: Option<u32>,
    /// opossum: fires the window must hold before a failure can open the
    /// breaker (default 0).
    volume_threshold: Option<u32>,
    /// opossum: no failure opens the breaker during the first
    /// `rolling_window` (default false).
    warm_up: Option<bool>,
}

/// The keys that belong to some models only, with those models.
const MODEL_KEYS: [(&str, &[ModelName]); 26] = {
    use ModelName::{Consecutive as C, Opossum as O, Ratio as R, Window as W};
    [
        ("sliding_window_type", &[W]),
        ("sliding_window_size", &[W]),
        ("minimum_calls", &[W]),
        ("failure_rate_threshold", &[W, O]),
        ("slow_call_rate_threshold", &[W]),
        ("slow_call_duration", &[W]),
        ("wait_in_open", &[W, C, O]),
        ("wait_in_open_backoff", &[W]),
        ("automatic_half_open", &[W]),
        ("permitted_calls_in_half_open", &[W]),
        ("max_wait_in_half_open", &[W]),
        ("failure_threshold", &[C]),
        ("success_threshold", &[C]),
        ("threshold_type", &[R]),
        ("threshold", &[R]),
        ("max_rt", &[R]),
        ("stat_window", &[R]),
        ("stat_window_shape", &[R]),
        ("window_offset", &[W, R]),
        ("minimum_requests", &[R]),
        ("breaker_duration", &[R]),
        ("recovery", &[R]),
        ("rolling_window", &[O]),
        ("buckets", &[O]),
        ("volume_threshold", &[O]),
        ("warm_up", &[O]),
    ]
};

/// The schema's form of [`MODEL_KEYS`]: for each model, the keys of the
/// others are not allowed (`window` also when `model` is left out).
fn model_rules() -> serde_json::Value {
    [
        ModelName::Window,
        ModelName::Consecutive,
        ModelName::Ratio,
        ModelName::Opossum,
    ]
    .into_iter()
    .map(|model| {
        let foreign: serde_json::Map<String, serde_json::Value> = MODEL_KEYS
            .iter()
            .filter(|(_, models)| !models.contains(&model))
            .map(|(key, _)| (key.to_string(), serde_json::Value::Bool(false)))
            .collect();
        let chosen = serde_json::json!({ "properties": { "model": { "const": model.key() } } });
        let condition = if model == ModelName::Window {
            serde_json::json!({ "anyOf": [chosen, { "not": { "required": ["model"] } }] })
        } else {
            let mut chosen = chosen;
            chosen["required"] = serde_json::json!(["model"]);
            chosen
        };
        serde_json::json!({ "if": condition, "then": { "properties": foreign } })
    })
    .collect()
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
        MODEL_KEYS
            .iter()
            .filter(|(key, models)| self.is_set(key) && !models.contains(&self.model))
            .map(|(key, _)| *key)
            .collect()
    }

    /// Whether the model-specific `key` (one of [`MODEL_KEYS`]) is set.
    fn is_set(&self, key: &str) -> bool {
        match key {
            "sliding_window_type" => self.sliding_window_type.is_some(),
            "sliding_window_size" => self.sliding_window_size.is_some(),
            "minimum_calls" => self.minimum_calls.is_some(),
            "failure_rate_threshold" => self.failure_rate_threshold.is_some(),
            "slow_call_rate_threshold" => self.slow_call_rate_threshold.is_some(),
            "slow_call_duration" => self.slow_call_duration.is_some(),
            "wait_in_open" => self.wait_in_open.is_some(),
            "wait_in_open_backoff" => self.wait_in_open_backoff.is_some(),
            "automatic_half_open" => self.automatic_half_open.is_some(),
            "permitted_calls_in_half_open" => self.permitted_calls_in_half_open.is_some(),
            "max_wait_in_half_open" => self.max_wait_in_half_open.is_some(),
            "failure_threshold" => self.failure_threshold.is_some(),
            "success_threshold" => self.success_threshold.is_some(),
            "threshold_type" => self.threshold_type.is_some(),
            "threshold" => self.threshold.is_some(),
            "max_rt" => self.max_rt.is_some(),
            "stat_window" => self.stat_window.is_some(),
            "stat_window_shape" => self.stat_window_shape.is_some(),
            "window_offset" => self.window_offset.is_some(),
            "minimum_requests" => self.minimum_requests.is_some(),
            "breaker_duration" => self.breaker_duration.is_some(),
            "recovery" => self.recovery.is_some(),
            "rolling_window" => self.rolling_window.is_some(),
            "buckets" => self.buckets.is_some(),
            "volume_threshold" => self.volume_threshold.is_some(),
            "warm_up" => self.warm_up.is_some(),
            _ => false,
        }
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
            window_offset: self.window_offset.map_or(Duration::ZERO, Dur::get),
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
        let stat_window_shape = match self.stat_window_shape {
            None | Some(ShapeName::Tumbling) => WindowShape::Tumbling,
            Some(ShapeName::Sliding) => WindowShape::Sliding,
        };
        let (unit, least) = match stat_window_shape {
            WindowShape::Tumbling => ("milliseconds from 1ms", Duration::from_millis(1)),
            WindowShape::Sliding => ("seconds from 1s", Duration::from_secs(1)),
        };
        if stat_window < least
            || stat_window > Duration::from_secs(120 * 60)
            || !stat_window.as_nanos().is_multiple_of(least.as_nanos())
        {
            p.add(
                "stat_window",
                format!("must be whole {unit} to 120m, got {}", Dur(stat_window)),
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
            // Sentinel takes a threshold of 0: the first bad call (once
            // `minimum_requests` came) opens the breaker.
            threshold: self
                .threshold
                .unwrap_or(super::config::percent(defaults::FAILURE_RATE_THRESHOLD)),
            stat_window,
            stat_window_shape,
            window_offset: self.window_offset.map_or(Duration::ZERO, Dur::get),
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

impl RawBreaker {
    fn opossum(&self, p: &mut Problems) -> OpossumConfig {
        let d = OpossumConfig::default();
        let buckets = p.positive("buckets", self.buckets, d.buckets);
        let rolling_window = self.rolling_window.map_or(d.rolling_window, Dur::get);
        let ms = Duration::from_millis(1);
        if rolling_window < ms * buckets || !rolling_window.as_nanos().is_multiple_of(ms.as_nanos())
        {
            p.add(
                "rolling_window",
                format!(
                    "must be whole milliseconds, at least 1ms per bucket ({buckets} buckets), got {}",
                    Dur(rolling_window)
                ),
            );
        }
        OpossumConfig {
            failure_rate_threshold: self
                .failure_rate_threshold
                .unwrap_or(d.failure_rate_threshold),
            wait_in_open: self.wait_in_open.map_or(d.wait_in_open, Dur::get),
            rolling_window,
            buckets,
            volume_threshold: self.volume_threshold.unwrap_or(d.volume_threshold),
            warm_up: self.warm_up.unwrap_or(d.warm_up),
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
            ModelName::Opossum => ModelConfig::Opossum(raw.opossum(&mut p)),
        };
        if !p.0.is_empty() {
            return Err(p.0.join("; "));
        }
        let mut classifier = Classifier {
            ignore_statuses: raw.ignore_statuses,
            count_4xx: raw.count_4xx,
            success_statuses: raw.success_statuses,
            ignore_errors: raw.ignore_errors,
            success_errors: raw.success_errors,
            count_cancelled: raw.count_cancelled,
            ..Classifier::default()
        };
        if let Some(failure_statuses) = raw.failure_statuses {
            classifier.failure_statuses = failure_statuses;
        }
        if let Some(grpc) = raw.grpc_failure_statuses {
            classifier.grpc_failure_statuses = grpc;
        }
        let stragglers = match raw.stragglers {
            None => Stragglers::default_for(&model),
            Some(StragglersName::Count) => Stragglers::Count,
            Some(StragglersName::Drop) => Stragglers::Drop,
        };
        Ok(BreakerConfig {
            name: raw.name,
            model,
            classifier,
            stragglers,
        })
    }
}

/// A breaker is read as written ([`RawBreaker`]) and then checked.
impl<'de> Deserialize<'de> for BreakerConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_checked::<D, RawBreaker, BreakerConfig>(d)
    }
}

crate::schema_via!(BreakerConfig, RawBreaker, "Breaker");

#[cfg(test)]
#[path = "raw_tests.rs"]
mod tests;
