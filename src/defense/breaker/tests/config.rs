//! Reading breaker configurations from YAML: defaults, every key, and the
//! rejections, each naming its key.

use super::*;
use crate::schema::units::Percent;

fn parse(yaml: &str) -> Result<BreakerConfig, String> {
    BreakerConfig::from_yaml("breaker.yaml", yaml).map_err(|e| e.to_string())
}

#[test]
fn a_bare_name_gives_the_window_model_with_the_practitioner_defaults() {
    let c = parse("name: payments").unwrap();
    assert_eq!(c.name, "payments");
    assert_eq!(c.model, ModelConfig::Window(WindowConfig::default()));
    let ModelConfig::Window(w) = c.model else {
        unreachable!()
    };
    assert_eq!(w.sliding_window, SlidingWindow::Count(10));
    assert_eq!(w.minimum_calls, 5);
    assert_eq!(w.failure_rate_threshold.percent(), 50.0);
    assert_eq!(w.slow_call_duration, Duration::from_secs(3));
    assert_eq!(w.wait_in_open, Duration::from_secs(30));
    assert_eq!(w.permitted_calls_in_half_open, 3);
    assert_eq!(c.classifier, Classifier::default());
}

#[test]
fn every_window_key_is_read() {
    let c = parse(
        "name: inventory
model: window
sliding_window_type: time
sliding_window_size: 20
minimum_calls: 8
failure_rate_threshold: 40%
slow_call_rate_threshold: 80%
slow_call_duration: 2s
wait_in_open: 5s
wait_in_open_backoff: { multiplier: 2, max: 1m }
automatic_half_open: true
permitted_calls_in_half_open: 4
max_wait_in_half_open: 10s
window_offset: 250ms
stragglers: drop
failure_statuses: [\"5xx\", 429]
ignore_statuses: [503]
count_4xx: true
",
    )
    .unwrap();
    let want = WindowConfig {
        sliding_window: SlidingWindow::Time(20),
        minimum_calls: 8,
        failure_rate_threshold: Percent::new(40.0).unwrap(),
        slow_call_rate_threshold: Percent::new(80.0).unwrap(),
        slow_call_duration: Duration::from_secs(2),
        wait_in_open: Duration::from_secs(5),
        wait_in_open_backoff: Some(Backoff {
            multiplier: 2.0,
            max: Duration::from_secs(60),
        }),
        automatic_half_open: true,
        permitted_calls_in_half_open: 4,
        max_wait_in_half_open: Some(Duration::from_secs(10)),
        window_offset: Duration::from_millis(250),
    };
    assert_eq!(c.model, ModelConfig::Window(want));
    assert_eq!(c.stragglers, Stragglers::Drop);
    assert_eq!(
        c.classifier,
        Classifier {
            failure_statuses: vec![StatusPattern::Class(5), StatusPattern::Exact(429)],
            ignore_statuses: vec![StatusPattern::Exact(503)],
            count_4xx: true,
            count_cancelled: false,
            ..Classifier::default()
        }
    );
}

#[test]
fn consecutive_and_ratio_keys_are_read() {
    let c = parse(
        "name: a\nmodel: consecutive\nfailure_threshold: 4\nsuccess_threshold: 2\nwait_in_open: 7s",
    )
    .unwrap();
    assert_eq!(
        c.model,
        ModelConfig::Consecutive(ConsecutiveConfig {
            failure_threshold: 4,
            success_threshold: 2,
            wait_in_open: Duration::from_secs(7),
        })
    );
    assert_eq!(
        c.stragglers,
        Stragglers::Drop,
        "consecutive drops stragglers"
    );
    let c = parse(
        "name: b
model: ratio
threshold_type: slow_ratio
max_rt: 800ms
threshold: 30%
stat_window: 1m
stat_window_shape: sliding
window_offset: 1500ms
minimum_requests: 20
breaker_duration: 15s
recovery: { progressive: { phases: 4, min_passes_per_phase: 10, phase_duration: 20s } }
",
    )
    .unwrap();
    assert_eq!(
        c.model,
        ModelConfig::Ratio(RatioConfig {
            threshold_type: ThresholdType::SlowRatio {
                max_rt: Duration::from_millis(800)
            },
            threshold: Percent::new(30.0).unwrap(),
            stat_window: Duration::from_secs(60),
            stat_window_shape: WindowShape::Sliding,
            window_offset: Duration::from_millis(1500),
            minimum_requests: 20,
            breaker_duration: Duration::from_secs(15),
            recovery: Recovery::Progressive {
                phases: 4,
                min_passes_per_phase: 10,
                phase_duration: Duration::from_secs(20),
            },
        })
    );
    assert_eq!(c.stragglers, Stragglers::Count, "ratio counts stragglers");
    let c = parse("name: c\nmodel: ratio\nrecovery: single_probe").unwrap();
    assert_eq!(c.model, ModelConfig::Ratio(RatioConfig::default()));
}

/// Sentinel's DegradeRule takes a count of 0 (ExceptionCircuitBreaker opens
/// when the ratio is above it: on the first bad call once the minimum came);
/// resilience4j refuses a failure rate threshold of 0, and so does `window`.
#[test]
fn a_ratio_threshold_of_0_is_taken_as_sentinel_takes_it() {
    let c = parse("name: c\nmodel: ratio\nthreshold: 0%").unwrap();
    let ModelConfig::Ratio(r) = c.model else {
        unreachable!("model: ratio")
    };
    assert_eq!(r.threshold.percent(), 0.0);
    assert!(parse("name: w\nfailure_rate_threshold: 0%").is_err());
}

#[test]
fn each_invalid_value_is_rejected_with_its_key_named() {
    let cases = [
        ("failure_rate_threshold: 0%", "failure_rate_threshold"),
        ("failure_rate_threshold: 140%", "failure_rate_threshold"),
        ("slow_call_rate_threshold: 0", "slow_call_rate_threshold"),
        ("sliding_window_size: 0", "sliding_window_size"),
        ("minimum_calls: 0", "minimum_calls"),
        (
            "permitted_calls_in_half_open: 0",
            "permitted_calls_in_half_open",
        ),
        ("max_wait_in_half_open: 0", "max_wait_in_half_open"),
        (
            "wait_in_open_backoff: { multiplier: 0.5, max: 1m }",
            "wait_in_open_backoff.multiplier",
        ),
        (
            "wait_in_open_backoff: { multiplier: 2, max: 1s }",
            "wait_in_open_backoff.max",
        ),
        ("model: bucket", "model"),
        (
            "model: consecutive\nsuccess_threshold: 0",
            "success_threshold",
        ),
        (
            "model: consecutive\nfailure_threshold: 0",
            "failure_threshold",
        ),
        ("model: consecutive\nminimum_calls: 3", "minimum_calls"),
        (
            "model: ratio\nstat_window_shape: sliding\nstat_window: 500ms",
            "stat_window",
        ),
        ("model: ratio\nstat_window: 1500us", "stat_window"),
        ("model: ratio\nstat_window: 121m", "stat_window"),
        ("model: ratio\nmax_rt: 1s", "max_rt"),
        (
            "model: ratio\nrecovery: { progressive: { phases: 0 } }",
            "recovery.progressive.phases",
        ),
        ("model: ratio\nrecovery: bounce", "recovery"),
        ("failure_statuses: [\"7xx\"]", "failure_statuses"),
        ("wait_in_opne: 3s", "wait_in_opne"),
        ("name: \" \"", "name"),
    ];
    for (extra, key) in cases {
        let yaml = if extra.starts_with("name:") {
            extra.to_string()
        } else {
            format!("name: dep\n{extra}")
        };
        let err = parse(&yaml).expect_err(extra);
        assert!(
            err.contains(key),
            "`{extra}` → `{err}` does not name `{key}`"
        );
    }
}

#[test]
fn every_problem_is_reported_at_once() {
    let err = parse(
        "name: dep\nsliding_window_size: 0\npermitted_calls_in_half_open: 0\nsuccess_threshold: 2",
    )
    .unwrap_err();
    for key in [
        "sliding_window_size",
        "permitted_calls_in_half_open",
        "success_threshold: is not a key of model window",
    ] {
        assert!(err.contains(key), "{err} lacks {key}");
    }
}

#[test]
fn wait_in_open_is_each_models_own_key() {
    let wait = |yaml: &str| parse(yaml).unwrap().wait_in_open();
    assert_eq!(
        wait("name: w\nmodel: window\nwait_in_open: 4s\n"),
        Duration::from_secs(4)
    );
    assert_eq!(
        wait("name: c\nmodel: consecutive\nwait_in_open: 6s\n"),
        Duration::from_secs(6)
    );
    assert_eq!(
        wait("name: r\nmodel: ratio\nbreaker_duration: 9s\n"),
        Duration::from_secs(9)
    );
}
