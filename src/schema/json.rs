//! The JSON Schema pieces the YAML types are described with: the value
//! types that parse by hand (durations, percentages, sizes, rates,
//! statuses) describe themselves here, and strings with a grammar get a
//! pattern. The documents themselves are put together above the types, in
//! [`crate::json_schema`].

use schemars::{Schema, SchemaGenerator, json_schema};

use super::units::{ByteSize, Dur, ErrorStatus, GrpcError, H2Error, Percent, Rate};

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
pub fn string_or_number(
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

/// Implements [`JsonSchema`] for a value type that parses by hand, with
/// the schema `$body` under `$name`.
#[macro_export]
#[doc(hidden)]
macro_rules! value_schema {
    ($ty:ty, $name:literal, $body:expr) => {
        impl ::schemars::JsonSchema for $ty {
            fn inline_schema() -> bool {
                false
            }
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                $name.into()
            }
            fn json_schema(_: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
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
    super::units::Start,
    "Start",
    json_schema!({
        "description": "When the window opens: a duration from the start (`10s`), or `manual`: started and stopped during the run through `firedrill run --control`.",
        "anyOf": [
            { "type": "string", "pattern": DURATION_PATTERN },
            { "const": 0 },
            { "const": "manual" },
        ],
        "examples": ["10s", "manual"],
    })
);

value_schema!(
    Percent,
    "Percentage",
    json_schema!({
        "description": "A percentage from 0% to 100%, with its `%`: `30%`, `99.5%` (a bare number is refused: is `0.5` 50% or 0.5%?).",
        "type": "string",
        "pattern": r"^\s*(100(\.0*)?|\d{1,2}(\.\d*)?)\s*%\s*$",
        "examples": ["30%", "99.5%"],
    })
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
    GrpcError,
    "GrpcError",
    string_or_number(
        "A gRPC error status: its name (`UNAVAILABLE`, `DEADLINE_EXCEEDED`, ...; any case) or its number from 1 to 16.",
        r"^\s*([A-Za-z_]+|[1-9]|1[0-6])\s*$",
        serde_json::json!({ "type": "integer", "minimum": 1, "maximum": 16 }),
        &["UNAVAILABLE".into(), 14.into()],
    )
);

value_schema!(
    H2Error,
    "H2Error",
    string_or_number(
        "An HTTP/2 error code: its name (`REFUSED_STREAM`, `CANCEL`, ...; any case) or its number from 0 to 13.",
        r"^\s*([A-Za-z_0-9]+|[0-9]|1[0-3])\s*$",
        serde_json::json!({ "type": "integer", "minimum": 0, "maximum": 13 }),
        &["REFUSED_STREAM".into(), 7.into()],
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

/// Halt conditions: `route NAME success|errors <|> PERCENT for DURATION`.
pub fn halt_conditions(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "items": {
            "type": "string",
            "description": "`route NAME success|errors <|> PERCENT for DURATION`, or read from Prometheus: `alert NAME firing [on SOURCE]`, `query Q OP VALUE`",
            "pattern": r"^\s*(route\s+\S+\s+(success|errors)\s+[<>]\s+\S+\s+for\s+\S+|alert\s+\S+\s+firing(\s+on\s+\S+)?|query\s+.+)\s*$",
            "examples": ["route B success < 50% for 5s", "alert CheckoutHighErrorRate firing"],
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

/// A recording's path on its own (`replay: incident.log`, its format told
/// from its first line), or the mapping `T`.
pub fn file_or<T: schemars::JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    path_or::<T>(
        generator,
        "The recording's path, relative to this file; its format is told from its first line.",
    )
}

/// An events file's path on its own (`events: /tmp/events.jsonl`, lines
/// `{"at_ms", "from", "to"}`), or the mapping `T` that says how its lines
/// read.
pub fn events_or<T: schemars::JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    path_or::<T>(
        generator,
        "The events file's path: JSON lines {\"at_ms\": <Unix epoch ms>, \"from\", \"to\"}.",
    )
}

/// A path described by `description`, or the mapping `T`.
fn path_or<T: schemars::JsonSchema>(generator: &mut SchemaGenerator, description: &str) -> Schema {
    let mapping = generator.subschema_for::<T>();
    json_schema!({
        "anyOf": [
            { "type": "string", "minLength": 1, "description": description },
            mapping,
        ],
    })
}
