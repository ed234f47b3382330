//! The published JSON Schemas (`schema/*.schema.json`): the committed files
//! are what `firedrill schema` prints, they are valid draft-07 schemas, every
//! experiment and good fixture passes a real validator (the `jsonschema`
//! crate), and files with an unknown key or a wrong type are rejected.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use firedrill::json_schema::Format;
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn format_arg(format: Format) -> &'static str {
    match format {
        Format::Experiment => "experiment",
        Format::Faults => "faults",
        Format::Defense => "defense",
    }
}

fn validator(format: Format) -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(&format.render()).unwrap();
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{format:?}: {e}"))
}

/// YAML text as the JSON value an editor's schema check sees.
fn yaml_to_json(text: &str) -> Value {
    let yaml: serde_yaml_ng::Value = serde_yaml_ng::from_str(text).unwrap();
    serde_json::to_value(yaml).unwrap()
}

/// Every schema error of `text`, one per line; empty when it is valid.
fn schema_errors(validator: &jsonschema::Validator, text: &str) -> String {
    let instance = yaml_to_json(text);
    validator
        .iter_errors(&instance)
        .map(|e| format!("  {}: {e}", e.instance_path()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
}

#[test]
fn committed_schemas_are_exactly_what_firedrill_schema_prints() {
    for format in Format::ALL {
        let arg = format_arg(format);
        let output = Command::cargo_bin("firedrill")
            .unwrap()
            .args(["schema", arg])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0));
        let printed = String::from_utf8(output.stdout).unwrap();
        let path = root().join("schema").join(format.file_name());
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == printed,
            "schema/{} is out of date with the Rust types; regenerate it with\n  \
             cargo run -- schema {arg} > schema/{}",
            format.file_name(),
            format.file_name()
        );
    }
}

#[test]
fn firedrill_schema_without_an_argument_prints_the_experiment_schema() {
    let output = Command::cargo_bin("firedrill")
        .unwrap()
        .arg("schema")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        Format::Experiment.render()
    );
}

#[test]
fn every_schema_is_a_valid_draft_07_schema() {
    for format in Format::ALL {
        let schema: Value = serde_json::from_str(&format.render()).unwrap();
        assert_eq!(schema["$schema"], "http://json-schema.org/draft-07/schema#");
        if let Err(e) = jsonschema::meta::validate(&schema) {
            panic!("{format:?}: {e}");
        }
    }
}

#[test]
fn every_experiment_and_good_fixture_passes_its_schema() {
    let sets = [
        (Format::Experiment, root().join("experiments")),
        (Format::Experiment, root().join("fixtures/experiments")),
        (Format::Faults, root().join("fixtures/faults/good")),
        (Format::Faults, root().join("fixtures/faults/mixed_modes")),
        (Format::Defense, root().join("fixtures/defense/good")),
    ];
    let mut failures = Vec::new();
    let mut checked = 0;
    for (format, dir) in sets {
        let validator = validator(format);
        for file in yaml_files(&dir) {
            let errors = schema_errors(&validator, &std::fs::read_to_string(&file).unwrap());
            if !errors.is_empty() {
                failures.push(format!("{}:\n{errors}", file.display()));
            }
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} files checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Bad experiments the schema alone must reject (the rest need
/// `firedrill validate`: cross-field rules and names).
const REJECTED_BAD_EXPERIMENTS: [&str; 15] = [
    "unknown_top_level_key",
    "missing_name",
    "missing_duration",
    "bad_clock",
    "target_builtin_and_url",
    "target_instances_empty",
    "target_instance_bad_name",
    "url_with_query",
    "empty_load",
    "load_without_rate",
    "bad_rate",
    "bad_request_line",
    "bad_arrivals",
    "fault_error",
    "defense_error",
];

#[test]
fn bad_experiments_that_a_schema_can_see_are_rejected_by_it() {
    let validator = validator(Format::Experiment);
    let dir = root().join("fixtures/experiments/bad");
    for name in REJECTED_BAD_EXPERIMENTS {
        let text = std::fs::read_to_string(dir.join(format!("{name}.yaml"))).unwrap();
        assert!(
            !schema_errors(&validator, &text).is_empty(),
            "{name}.yaml passed the schema"
        );
    }
}

/// A minimal valid experiment with `extra` appended (at the top level).
fn experiment_with(extra: &str) -> String {
    format!(
        "name: x\nduration: 10s\nload:\n  - {{ name: A, request: GET /a, rate: 10/s }}\n{extra}"
    )
}

#[test]
fn unknown_keys_and_wrong_types_are_rejected_where_they_are() {
    let validator = validator(Format::Experiment);
    assert_eq!(schema_errors(&validator, &experiment_with("")), "");
    let cases = [
        ("colour: red\n", ""),
        ("max_in_flight: many\n", "/max_in_flight"),
        ("clock: 1\n", "/clock"),
        ("seed: seven\n", "/seed"),
        ("expect: [{ breaker: x }]\n", "/expect/0"),
        ("halt: [route A success below 50% for 5s]\n", "/halt/0"),
        (
            "faults: [{ latency: { delay: 1s, jiter: 1ms } }]\n",
            "/faults/0/latency",
        ),
        (
            "faults: [{ latency: { delay: 1s }, status: { code: 503 } }]\n",
            "/faults/0",
        ),
        (
            "faults: [{ status: { code: 200 } }]\n",
            "/faults/0/status/code",
        ),
        ("faults: [{ at: 1s }]\n", "/faults/0"),
        (
            "faults: [{ match: inventory, blackhole: {} }]\n",
            "/faults/0/match",
        ),
        ("phases: [{ name: p, from: 1s }]\n", "/phases/0"),
        (
            "defense: { routes: { r: { breaker: { model: consecutive, minimum_calls: 5 } } } }\n",
            "/defense/routes/r/breaker",
        ),
        (
            "defense: { routes: { r: { breaker: { failure_threshold: 5 } } } }\n",
            "/defense/routes/r/breaker",
        ),
        (
            "defense: { routes: { r: { fallback: {} } } }\n",
            "/defense/routes/r/fallback",
        ),
    ];
    for (extra, path) in cases {
        let errors = schema_errors(&validator, &experiment_with(extra));
        // A value that may also be null (`defense:` alone) is an `anyOf`,
        // whose failure is reported at that value, above the key at fault.
        let at_or_above = errors.lines().any(|line| {
            let at = line.trim_start().split(": ").next().unwrap_or_default();
            at == path || (!at.is_empty() && path.starts_with(&format!("{at}/")))
        });
        assert!(
            at_or_above,
            "{extra:?}: expected an error at `{path}` or above it, got:\n{errors}"
        );
    }
}

#[test]
fn value_types_accept_what_the_loader_accepts() {
    let validator = validator(Format::Experiment);
    let good = [
        "faults: [{ latency: { delay: 1m30s, jitter: 250us }, probability: 30%, at: 0 }]\n",
        "faults: [{ bandwidth: { rate: 100KB/s, direction: request } }]\n",
        "faults: [{ bandwidth: { rate: 50 } }]\n",
        "faults: [{ limit_data: { bytes: 64KiB } }]\n",
        "faults: [{ reset: { after_bytes: 512 } }, { name: b, blackhole: }]\n",
        "faults: [{ match: { method: [GET, HEAD], headers: { x: { regex: '^a' } } }, refuse: {} }]\n",
        "defense: { routes: { r: { breaker: { model: ratio, recovery: { progressive: { phases: 2 } } } } } }\n",
        "defense: { routes: { r: { breaker: { failure_statuses: [5xx, 429], wait_in_open: 5s } } } }\n",
    ];
    for extra in good {
        let text = experiment_with(extra);
        firedrill::schema::from_yaml_str::<firedrill::experiment::config::Experiment>("x", &text)
            .unwrap_or_else(|e| panic!("{extra:?} does not load: {e}"));
        assert_eq!(schema_errors(&validator, &text), "", "{extra:?}");
    }
}
