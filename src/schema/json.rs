//! JSON Schemas of the YAML formats (experiment, fault file, defense
//! config), generated from the Rust types with `schemars`, for editors to
//! complete and check files with.
//!
//! Structs read by serde derive their schema from the same `Raw*` types
//! that deserialize them (so `deny_unknown_fields`, renames and defaults
//! cannot drift apart); the value types that parse by hand (durations,
//! percentages, sizes, rates, statuses, matchers) describe themselves here.
//! The schema accepts a superset of what loads: cross-field rules (one
//! fault kind, phase order, names that expectations refer to) are checked by
//! `firedrill validate`, which also says where.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, generate::SchemaSettings, json_schema};

use super::units::{ByteSize, Dur, ErrorStatus, Percent, Rate};

/// The formats with a published schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `firedrill run` / `validate` experiment files.
    Experiment,
    /// `firedrill proxy --faults` fault files.
    Faults,
    /// `firedrill defend --config` defense configs.
    Defense,
}

impl Format {
    /// Every format, in the order they are documented.
    pub const ALL: [Format; 3] = [Format::Experiment, Format::Faults, Format::Defense];

    /// The file the schema is published as under `schema/`.
    pub fn file_name(self) -> &'static str {
        match self {
            Format::Experiment => "experiment.schema.json",
            Format::Faults => "faults.schema.json",
            Format::Defense => "defense.schema.json",
        }
    }

    /// The schema document (draft-07, what yaml-language-server reads best).
    pub fn schema(self) -> Schema {
        let generator = SchemaSettings::draft07().for_deserialize().into_generator();
        match self {
            Format::Experiment => {
                generator.into_root_schema_for::<crate::experiment::config::Experiment>()
            }
            Format::Faults => generator.into_root_schema_for::<crate::fault::FaultFile>(),
            Format::Defense => generator.into_root_schema_for::<crate::defense::DefenseConfig>(),
        }
    }

    /// The schema as pretty JSON with a trailing newline, as committed.
    pub fn render(self) -> String {
        let mut text = serde_json::to_string_pretty(&self.schema()).expect("a schema is JSON");
        text.push('\n');
        text
    }
}

/// Implements [`JsonSchema`] for a type that deserializes through another
/// (`deserialize_checked::<_, Raw, Public>`) with the other's schema under
/// the public type's name.
#[macro_export]
#[doc(hidden)]
macro_rules! schema_via {
    ($public:ty, $raw:ty, $name:literal) => {
        impl ::schemars::JsonSchema for $public {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                $name.into()
            }
            fn json_schema(generator: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                <$raw as ::schemars::JsonSchema>::json_schema(generator)
            }
        }
    };
}

/// A string matching `pattern`, or a number in `[minimum, maximum]`
/// (`exclusive_minimum` when the bound itself is refused).
fn string_or_number(
    description: &str,
    pattern: &str,
    number: serde_json::Value,
    examples: &[serde_json::Value],
) -> Schema {
    json_schema!({
        "description": description,
        "anyOf": [
            { "type": "string", "pattern": pattern },
            number,
        ],
        "examples": examples,
    })
}

macro_rules! value_schema {
    ($ty:ty, $name:literal, $body:expr) => {
        impl JsonSchema for $ty {
            fn inline_schema() -> bool {
                false
            }
            fn schema_name() -> Cow<'static, str> {
                $name.into()
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                $body
            }
        }
    };
}

/// A duration: `250us`, `150ms`, `3s`, `1m`, `1h`, `1m30s`, or `0`.
pub const DURATION_PATTERN: &str = r"^\s*(0|((\d+\.?\d*|\.\d+)(us|µs|ms|s|m|h))+)\s*$";

value_schema!(
    Dur,
    "Duration",
    string_or_number(
        "A duration: a number with a unit (us, ms, s, m, h), combinable: `150ms`, `3s`, `1m30s`; `0` alone needs no unit.",
        DURATION_PATTERN,
        serde_json::json!({ "const": 0 }),
        &["150ms".into(), "3s".into(), "1m30s".into()],
    )
);

value_schema!(
    Percent,
    "Percentage",
    string_or_number(
        "A percentage from 0% to 100%: `30%`, `99.5%` (a bare number is read as percent).",
        r"^\s*(100(\.0*)?|\d{1,2}(\.\d*)?)\s*%?\s*$",
        serde_json::json!({ "type": "number", "minimum": 0, "maximum": 100 }),
        &["30%".into(), "99.5%".into()],
    )
);

value_schema!(
    ByteSize,
    "ByteSize",
    string_or_number(
        "A size in bytes: `512`, `64KB` (1 KB = 1000 B), `64KiB`, `1MB`, `1MiB`, `1GB`.",
        r"^\s*\d+(\.\d+)?\s*(B|KB|kB|KiB|MB|MiB|GB|GiB)?\s*$",
        serde_json::json!({ "type": "integer", "minimum": 0 }),
        &["64KB".into(), 512.into()],
    )
);

value_schema!(
    Rate,
    "ByteRate",
    string_or_number(
        "A bandwidth above zero: `100KB/s`, `1MiB/s`, or a number of KB/s.",
        r"^\s*(\d+(\.\d+)?\s*(B|KB|kB|KiB|MB|MiB|GB|GiB)?/s|\d+(\.\d+)?)\s*$",
        serde_json::json!({ "type": "number", "exclusiveMinimum": 0 }),
        &["100KB/s".into()],
    )
);

value_schema!(
    ErrorStatus,
    "ErrorStatus",
    string_or_number(
        "An HTTP error status from 400 to 599.",
        r"^\s*[45]\d\d\s*$",
        serde_json::json!({ "type": "integer", "minimum": 400, "maximum": 599 }),
        &[503.into()],
    )
);

value_schema!(
    crate::defense::breaker::StatusPattern,
    "StatusPattern",
    string_or_number(
        "An HTTP status (100 to 599) or a class such as `5xx`.",
        r"^\s*([1-5]\d\d|[1-5](xx|XX))\s*$",
        serde_json::json!({ "type": "integer", "minimum": 100, "maximum": 599 }),
        &["5xx".into(), 429.into()],
    )
);

/// A load route's rate, requests per second: `50/s` or `50`.
pub fn request_rate(_: &mut SchemaGenerator) -> Schema {
    string_or_number(
        "Requests per second, above 0 and at most 100000: `50/s` (or `50`).",
        r"^\s*(\d+(\.\d*)?|\.\d+)\s*(/s)?\s*$",
        serde_json::json!({ "type": "number", "exclusiveMinimum": 0, "maximum": 100000 }),
        &["50/s".into()],
    )
}

/// A load route's request line: `METHOD /path[?query]`.
pub fn request_line(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "description": "The request: `METHOD /path[?query]`.",
        "pattern": r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+ +/\S*\s*$",
        "examples": ["GET /inventory/sku-1"],
    })
}

/// The expectation sentences, one string each (the field's own doc comment
/// describes the list; each item carries the grammar).
pub fn expectations(_: &mut SchemaGenerator) -> Schema {
    let grammar = crate::experiment::expect::GRAMMAR;
    json_schema!({
        "type": "array",
        "items": {
            "type": "string",
            "minLength": 1,
            "description": format!("An expectation sentence:\n{grammar}"),
            "examples": [
                "breaker inventory opens within 3s of inventory-down.start",
                "calls to /inventory/* while inventory is open == 0",
                "route A success during inventory-down >= 99%",
            ],
        },
    })
}

/// Halt conditions: `route NAME success|errors <|> PERCENT for DURATION`.
pub fn halt_conditions(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "items": {
            "type": "string",
            "description": "`route NAME success|errors <|> PERCENT for DURATION`",
            "pattern": r"^\s*route\s+\S+\s+(success|errors)\s+[<>]\s+\S+\s+for\s+\S+\s*$",
            "examples": ["route B success < 50% for 5s"],
        },
    })
}

/// A kind that takes no parameters: nothing, or `{}`.
pub fn no_parameters(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "This kind takes no parameters: write `{}` or nothing.",
        "anyOf": [
            { "type": "null" },
            { "type": "object", "additionalProperties": false },
        ],
    })
}
