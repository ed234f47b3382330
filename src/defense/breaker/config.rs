//! A breaker's validated configuration: the model it runs, its parameters
//! and what counts as a failure. Defaults live here and nowhere else.

use super::outcome::Classifier;
use crate::clock::Duration;
use crate::schema::units::Percent;
use crate::schema::{SchemaError, from_yaml_str};

/// The starting values practitioners use (spec 4.1); resilience4j's own
/// library defaults (100 / 100 / 50 % / 60 s / 60 s / 10) are larger.
pub mod defaults {
    use crate::clock::Duration;

    /// `sliding_window_size`: the last 10 calls (or seconds).
    pub const SLIDING_WINDOW_SIZE: u32 = 10;
    /// `minimum_calls` before the window model decides anything.
    pub const MINIMUM_CALLS: u32 = 5;
    /// `failure_rate_threshold` and the ratio model's `threshold`, percent.
    pub const FAILURE_RATE_THRESHOLD: f64 = 50.0;
    /// `slow_call_rate_threshold`, percent: only an all-slow window opens.
    pub const SLOW_CALL_RATE_THRESHOLD: f64 = 100.0;
    /// `slow_call_duration` (and the ratio model's `max_rt`).
    pub const SLOW_CALL_DURATION: Duration = Duration::from_secs(3);
    /// `wait_in_open` (and the ratio model's `breaker_duration`).
    pub const WAIT_IN_OPEN: Duration = Duration::from_secs(30);
    /// `permitted_calls_in_half_open`: 3 is the minimum that avoids flapping.
    pub const PERMITTED_CALLS_IN_HALF_OPEN: u32 = 3;
    /// `failure_threshold` of the consecutive model.
    pub const FAILURE_THRESHOLD: u32 = 5;
    /// `success_threshold` of the consecutive model.
    pub const SUCCESS_THRESHOLD: u32 = 3;
    /// `stat_window` of the ratio model.
    pub const STAT_WINDOW: Duration = Duration::from_secs(10);
    /// `minimum_requests` of the ratio model.
    pub const MINIMUM_REQUESTS: u32 = 5;
    /// `phases` of progressive recovery.
    pub const PHASES: u32 = 3;
    /// `min_passes_per_phase` of progressive recovery.
    pub const MIN_PASSES_PER_PHASE: u32 = 5;
}

/// One circuit breaker as configured.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakerConfig {
    /// Name in the journal, the logs and the metrics.
    pub name: String,
    /// The decision model and its parameters.
    pub model: ModelConfig,
    /// Which results count as failures.
    pub classifier: Classifier,
    /// What happens to a call admitted in an earlier state that finishes
    /// now.
    pub stragglers: Stragglers,
}

/// A call admitted in one state that finishes in another (a straggler).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stragglers {
    /// Recorded in the state current when it finishes, as resilience4j and
    /// Sentinel do: in half-open it can decide, in closed it counts (the
    /// default of `window` and `ratio`).
    Count,
    /// Kept out of the current state's statistics: each state judges only
    /// the calls it admitted (the default of `consecutive`).
    Drop,
}

impl Stragglers {
    /// The library's behaviour for `model`.
    pub fn default_for(model: &ModelConfig) -> Stragglers {
        match model {
            ModelConfig::Consecutive(_) => Stragglers::Drop,
            ModelConfig::Window(_) | ModelConfig::Ratio(_) | ModelConfig::Opossum(_) => {
                Stragglers::Count
            }
        }
    }
}

/// The decision model of a breaker (YAML `model:`).
#[derive(Debug, Clone, PartialEq)]
pub enum ModelConfig {
    /// `window`: failure and slow-call rates over a sliding window
    /// (resilience4j semantics).
    Window(WindowConfig),
    /// `consecutive`: N failures in a row.
    Consecutive(ConsecutiveConfig),
    /// `ratio`: Sentinel / MSE error or slow ratio over a time window.
    Ratio(RatioConfig),
    /// `opossum`: opossum's error rate over fires in rotating buckets.
    Opossum(OpossumConfig),
}

impl ModelConfig {
    /// How long the breaker waits in open before it probes (before any
    /// backoff): `wait_in_open`, or the ratio model's `breaker_duration`.
    pub fn wait_in_open(&self) -> Duration {
        match self {
            ModelConfig::Window(w) => w.wait_in_open,
            ModelConfig::Consecutive(c) => c.wait_in_open,
            ModelConfig::Ratio(r) => r.breaker_duration,
            ModelConfig::Opossum(o) => o.wait_in_open,
        }
    }
}

/// The sliding window of the `window` model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlidingWindow {
    /// The last N calls (a ring).
    Count(u32),
    /// The calls of the last N seconds (per-second buckets).
    Time(u32),
}

/// Growth of `wait_in_open` when the breaker opens again without having
/// closed in between.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// Factor applied per repeated open (>= 1).
    pub multiplier: f64,
    /// Ceiling of the grown wait.
    pub max: Duration,
}

/// Parameters of the `window` model.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowConfig {
    /// Count or time window and its size.
    pub sliding_window: SlidingWindow,
    /// Calls the window must hold before a verdict (a count window uses
    /// `min(minimum_calls, size)`).
    pub minimum_calls: u32,
    /// Open when the failure rate reaches this (>=).
    pub failure_rate_threshold: Percent,
    /// Open when the slow-call rate reaches this (>=).
    pub slow_call_rate_threshold: Percent,
    /// A call is slow when it takes strictly longer than this.
    pub slow_call_duration: Duration,
    /// How long open rejects before half-open.
    pub wait_in_open: Duration,
    /// Optional exponential growth of `wait_in_open` on repeated opens.
    pub wait_in_open_backoff: Option<Backoff>,
    /// Move to half-open by timer rather than on the next call.
    pub automatic_half_open: bool,
    /// Trial calls per half-open episode; their rates decide.
    pub permitted_calls_in_half_open: u32,
    /// Back to open when the trial calls do not finish within this.
    pub max_wait_in_half_open: Option<Duration>,
    /// How far into a one-second bucket the run starts (time window).
    pub window_offset: Duration,
}

/// Parameters of the `consecutive` model.
#[derive(Debug, Clone, PartialEq)]
pub struct ConsecutiveConfig {
    /// Failures in a row that open the breaker.
    pub failure_threshold: u32,
    /// Successful probes in a row that close it again.
    pub success_threshold: u32,
    /// How long open rejects before half-open.
    pub wait_in_open: Duration,
}

/// What the `ratio` model measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThresholdType {
    /// Share of failed requests.
    ErrorRatio,
    /// Share of requests slower than `max_rt` (strictly).
    SlowRatio {
        /// The response time above which a request is slow.
        max_rt: Duration,
    },
}

/// How the `ratio` model comes back after `breaker_duration`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// One request passes: good closes, bad reopens for a full duration.
    SingleProbe,
    /// Stage k of `phases` admits k/phases of the traffic.
    Progressive {
        /// Number of stages (the last admits everything).
        phases: u32,
        /// Requests a stage must see before it is judged.
        min_passes_per_phase: u32,
        /// How long a stage waits for its minimum before moving on anyway.
        phase_duration: Duration,
    },
}

/// The shape of the `ratio` model's statistics window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowShape {
    /// One window of `stat_window`, started afresh at each edge
    /// (Sentinel's circuit breakers).
    Tumbling,
    /// The last `stat_window` seconds in one-second buckets.
    Sliding,
}

/// Parameters of the `ratio` model.
#[derive(Debug, Clone, PartialEq)]
pub struct RatioConfig {
    /// Error ratio or slow ratio.
    pub threshold_type: ThresholdType,
    /// Open when the ratio exceeds this (Sentinel: strictly greater, or
    /// equal when the threshold is 100 %).
    pub threshold: Percent,
    /// Statistics window: any whole number of milliseconds up to 120 min
    /// (whole seconds when sliding).
    pub stat_window: Duration,
    /// Tumbling (Sentinel) or sliding.
    pub stat_window_shape: WindowShape,
    /// How far into a window the run starts.
    pub window_offset: Duration,
    /// Requests in the window before a verdict.
    pub minimum_requests: u32,
    /// How long open rejects before recovery starts.
    pub breaker_duration: Duration,
    /// Single probe or progressive stages.
    pub recovery: Recovery,
}

/// Parameters of the `opossum` model (opossum's `CircuitBreaker` options,
/// in firedrill's names; the defaults are opossum's own).
#[derive(Debug, Clone, PartialEq)]
pub struct OpossumConfig {
    /// Open when a failure finds the error rate strictly above this
    /// (`errorThresholdPercentage`).
    pub failure_rate_threshold: Percent,
    /// How long open rejects before half-open (`resetTimeout`).
    pub wait_in_open: Duration,
    /// The window (`rollingCountTimeout`): with `buckets` it sets the
    /// bucket width, and it is the length of the warm-up.
    pub rolling_window: Duration,
    /// Buckets in the window (`rollingCountBuckets`).
    pub buckets: u32,
    /// Fires the window must hold before a failure can open the breaker
    /// (`volumeThreshold`).
    pub volume_threshold: u32,
    /// No failure opens the breaker during the first `rolling_window`
    /// (`allowWarmUp`).
    pub warm_up: bool,
}

impl OpossumConfig {
    /// One bucket: `rolling_window / buckets` in whole milliseconds,
    /// truncated, as opossum's `Math.floor` in `lib/status.js`.
    pub fn bucket(&self) -> Duration {
        let ms = self.rolling_window.as_millis() / u128::from(self.buckets.max(1));
        Duration::from_millis(u64::try_from(ms).unwrap_or(u64::MAX))
    }
}

impl Default for OpossumConfig {
    fn default() -> Self {
        OpossumConfig {
            failure_rate_threshold: percent(defaults::FAILURE_RATE_THRESHOLD),
            wait_in_open: defaults::WAIT_IN_OPEN,
            rolling_window: Duration::from_secs(10),
            buckets: 10,
            volume_threshold: 0,
            warm_up: false,
        }
    }
}

impl Default for WindowConfig {
    fn default() -> Self {
        WindowConfig {
            sliding_window: SlidingWindow::Count(defaults::SLIDING_WINDOW_SIZE),
            minimum_calls: defaults::MINIMUM_CALLS,
            failure_rate_threshold: percent(defaults::FAILURE_RATE_THRESHOLD),
            slow_call_rate_threshold: percent(defaults::SLOW_CALL_RATE_THRESHOLD),
            slow_call_duration: defaults::SLOW_CALL_DURATION,
            wait_in_open: defaults::WAIT_IN_OPEN,
            wait_in_open_backoff: None,
            automatic_half_open: false,
            permitted_calls_in_half_open: defaults::PERMITTED_CALLS_IN_HALF_OPEN,
            max_wait_in_half_open: None,
            window_offset: Duration::ZERO,
        }
    }
}

impl Default for ConsecutiveConfig {
    fn default() -> Self {
        ConsecutiveConfig {
            failure_threshold: defaults::FAILURE_THRESHOLD,
            success_threshold: defaults::SUCCESS_THRESHOLD,
            wait_in_open: defaults::WAIT_IN_OPEN,
        }
    }
}

impl Default for RatioConfig {
    fn default() -> Self {
        RatioConfig {
            threshold_type: ThresholdType::ErrorRatio,
            threshold: percent(defaults::FAILURE_RATE_THRESHOLD),
            stat_window: defaults::STAT_WINDOW,
            stat_window_shape: WindowShape::Tumbling,
            window_offset: Duration::ZERO,
            minimum_requests: defaults::MINIMUM_REQUESTS,
            breaker_duration: defaults::WAIT_IN_OPEN,
            recovery: Recovery::SingleProbe,
        }
    }
}

/// A percentage known to be in range (the defaults above).
pub(crate) fn percent(value: f64) -> Percent {
    Percent::new(value).unwrap_or(Percent::ALL)
}

impl BreakerConfig {
    /// A breaker called `name` running `model` with the default classifier
    /// and the model's library's handling of stragglers.
    pub fn new(name: impl Into<String>, model: ModelConfig) -> Self {
        BreakerConfig {
            name: name.into(),
            stragglers: Stragglers::default_for(&model),
            model,
            classifier: Classifier::default(),
        }
    }

    /// How long the breaker waits in open before it probes (before any
    /// backoff): `wait_in_open`, or the ratio model's `breaker_duration`.
    pub fn wait_in_open(&self) -> Duration {
        self.model.wait_in_open()
    }

    /// Parses and validates one breaker from YAML (`file` names the source
    /// in errors).
    pub fn from_yaml(file: &str, text: &str) -> Result<Self, SchemaError> {
        from_yaml_str(file, text)
    }
}
