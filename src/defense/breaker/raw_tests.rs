//! Tests of the raw breaker keys.

use super::*;

#[test]
fn every_model_key_is_a_breaker_field_and_counts_as_set_when_given() {
    let schema = schemars::schema_for!(RawBreaker);
    let properties = schema.get("properties").and_then(|p| p.as_object());
    for (key, models) in MODEL_KEYS {
        assert!(
            properties.is_some_and(|p| p.contains_key(key)),
            "{key} is not a breaker key"
        );
        // Set it under a model it does not belong to: it must be named.
        let other = [
            ModelName::Window,
            ModelName::Consecutive,
            ModelName::Ratio,
            ModelName::Opossum,
        ]
        .into_iter()
        .find(|m| !models.contains(m))
        .unwrap();
        let value = match key {
            "sliding_window_type" => "count",
            "threshold_type" => "error_ratio",
            "automatic_half_open" | "warm_up" => "true",
            "recovery" => "single_probe",
            "stat_window_shape" => "sliding",
            "wait_in_open_backoff" => "{ multiplier: 2, max: 1m }",
            "failure_rate_threshold" | "slow_call_rate_threshold" | "threshold" => "50%",
            k if k.ends_with("duration")
                || k.starts_with("wait")
                || k.starts_with("max_")
                || k == "stat_window"
                || k == "window_offset"
                || k == "rolling_window" =>
            {
                "1s"
            }
            _ => "3",
        };
        let text = format!("model: {}\n{key}: {value}\n", other.key());
        let raw: RawBreaker =
            serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(raw.foreign_keys(), vec![key], "{text}");
    }
}
