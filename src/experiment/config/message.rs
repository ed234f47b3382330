//! A gRPC load route's request message (`load[].message`): its protobuf
//! bytes in hex or base64, or JSON encoded against the user's descriptor
//! set (`protoc --descriptor_set_out=FILE --include_imports`) as the
//! method's input type, by the protobuf JSON mapping.

use std::path::Path;

use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage};
use serde::Deserialize;

/// `message:` as written.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping with hex, base64, or json and descriptors, e.g. `{ hex: 0a05736b752d31 }`"
)]
#[schemars(extend("oneOf" = [
    { "required": ["hex"] },
    { "required": ["base64"] },
    { "required": ["json", "descriptors"] },
]))]
pub(super) struct GrpcMessage {
    /// The bytes in hex, e.g. `0a05736b752d31`.
    #[serde(default)]
    hex: Option<String>,
    /// The bytes in base64 (standard alphabet, padded).
    #[serde(default)]
    base64: Option<String>,
    /// The message as the protobuf JSON mapping writes it (a YAML mapping
    /// or a JSON string), e.g. `{ sku: sku-1, count: 3 }`; needs
    /// `descriptors`.
    #[serde(default)]
    json: Option<serde_json::Value>,
    /// With `json`: the descriptor set that defines the method's input
    /// type (`protoc --descriptor_set_out=FILE --include_imports`),
    /// relative to the experiment file.
    #[serde(default)]
    descriptors: Option<String>,
}

/// A message once checked: its bytes, or JSON still to encode once the
/// descriptor set is read (relative to the experiment file).
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// The protobuf bytes.
    Bytes(Vec<u8>),
    /// JSON, and the descriptor set's path as written.
    Json {
        /// The message in the protobuf JSON mapping.
        json: serde_json::Value,
        /// The descriptor set, relative to the experiment file.
        descriptors: String,
    },
}

impl GrpcMessage {
    /// Checks which form was given.
    pub(super) fn checked(&self) -> Result<Message, String> {
        match (&self.hex, &self.base64, &self.json, &self.descriptors) {
            (Some(text), None, None, None) => hex(text).map(Message::Bytes),
            (None, Some(text), None, None) => {
                use base64::Engine as _;
                base64::engine::general_purpose::STANDARD
                    .decode(text.trim())
                    .map(Message::Bytes)
                    .map_err(|e| format!("message.base64: `{text}`: expected standard base64 (A-Z a-z 0-9 + /, padded with =): {e}"))
            }
            (None, None, Some(json), Some(descriptors)) => {
                // A JSON string is read as the JSON it holds.
                let json = match json {
                    serde_json::Value::String(text) => serde_json::from_str(text)
                        .map_err(|e| format!("message.json: not JSON: {e}"))?,
                    other => other.clone(),
                };
                Ok(Message::Json {
                    json,
                    descriptors: descriptors.clone(),
                })
            }
            (None, None, Some(_), None) => Err(
                "message.json: needs `descriptors`, the descriptor set that defines the method's input type (`protoc --descriptor_set_out=FILE --include_imports`)"
                    .to_string(),
            ),
            (None, None, None, Some(_)) => Err(
                "message.descriptors: goes with `json`, the message to encode with them".to_string(),
            ),
            _ => Err(
                "message: give one of `hex`, `base64`, or `json` with `descriptors`, e.g. `{ hex: 0a05736b752d31 }`"
                    .to_string(),
            ),
        }
    }
}

/// Bytes written as pairs of hex digits (whitespace between them allowed).
fn hex(text: &str) -> Result<Vec<u8>, String> {
    let text: String = text.split_whitespace().collect();
    if !text.len().is_multiple_of(2) {
        return Err(format!(
            "message.hex: `{text}`: expected pairs of hex digits, an even count"
        ));
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or_else(|| format!("message.hex: `{text}`: expected hex digits 0-9, a-f"))
        })
        .collect()
}

/// Where an encoding problem is: the key under `load[i]` it belongs to
/// (the message that goes with it does not name it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// `request`: the method is not in the descriptor set.
    Request,
    /// `message.descriptors`: the file cannot be read or is no descriptor
    /// set.
    Descriptors,
    /// `message.json`: the JSON does not fit the input type.
    Json,
}

/// `json` encoded as the input type of `path`'s method
/// (`/package.Service/Method`), from the descriptor set at `descriptors`
/// (`shown` in messages).
pub fn encode(
    json: &serde_json::Value,
    descriptors: &Path,
    shown: &str,
    path: &str,
) -> Result<Vec<u8>, (Place, String)> {
    let bytes = std::fs::read(descriptors)
        .map_err(|e| (Place::Descriptors, format!("cannot read {shown}: {e}")))?;
    let pool = DescriptorPool::decode(bytes.as_slice()).map_err(|e| {
        (
            Place::Descriptors,
            format!("{shown}: not a protobuf descriptor set (make one with `protoc --descriptor_set_out=FILE.desc --include_imports FILE.proto`): {e}"),
        )
    })?;
    let (service, method) = path
        .trim_start_matches('/')
        .split_once('/')
        .unwrap_or_default();
    let Some(found) = pool.get_service_by_name(service) else {
        let known: Vec<String> = pool.services().map(|s| s.full_name().to_string()).collect();
        return Err((
            Place::Request,
            format!(
                "`grpc {path}`: {shown} defines no service `{service}` (it defines: {})",
                listed(&known)
            ),
        ));
    };
    let Some(method) = found.methods().find(|m| m.name() == method) else {
        let known: Vec<String> = found.methods().map(|m| m.name().to_string()).collect();
        return Err((
            Place::Request,
            format!(
                "`grpc {path}`: service `{service}` in {shown} has no method `{method}` (it has: {})",
                listed(&known)
            ),
        ));
    };
    let input = method.input();
    let mut track = serde_path_to_error::Track::new();
    let tracked = serde_path_to_error::Deserializer::new(json, &mut track);
    let message = DynamicMessage::deserialize(input.clone(), tracked).map_err(|e| {
        let path = track.path();
        let at = field_at(&input, &path)
            .map(|(shown, kind)| format!(" at `{shown}` (type {kind})"))
            .unwrap_or_default();
        (
            Place::Json,
            format!("does not fit `{}`{at}: {e}", input.full_name()),
        )
    })?;
    Ok(message.encode_to_vec())
}

/// The field `path` leads to in `message`, as `a.b[2].c`, and its type as
/// protobuf names it (`uint32`, `repeated string`, `message
/// inventory.Window`): what the value there should have been.
fn field_at(
    message: &prost_reflect::MessageDescriptor,
    path: &serde_path_to_error::Path,
) -> Option<(String, String)> {
    use prost_reflect::Kind;
    use serde_path_to_error::Segment;
    let mut current = message.clone();
    let mut shown = String::new();
    let mut field = None;
    for segment in path.iter() {
        match segment {
            Segment::Map { key } => {
                let found = current
                    .get_field_by_json_name(key)
                    .or_else(|| current.get_field_by_name(key))?;
                if !shown.is_empty() {
                    shown.push('.');
                }
                shown.push_str(key);
                if let Kind::Message(inner) = found.kind() {
                    current = inner;
                }
                field = Some(found);
            }
            Segment::Seq { index } => shown.push_str(&format!("[{index}]")),
            _ => return None,
        }
    }
    let field = field?;
    let kind = match field.kind() {
        Kind::Message(m) => format!("message {}", m.full_name()),
        Kind::Enum(e) => format!("enum {}", e.full_name()),
        other => format!("{other:?}").to_lowercase(),
    };
    let kind = if field.is_list() && !shown.ends_with(']') {
        format!("repeated {kind}")
    } else {
        kind
    };
    Some((shown, kind))
}

/// Names for a message: comma-separated, or `none`.
fn listed(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The descriptor set of fixtures/grpc/inventory.proto.
    fn descriptors() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/grpc/inventory.desc")
    }

    fn encoded(json: serde_json::Value, path: &str) -> Result<Vec<u8>, (Place, String)> {
        encode(&json, &descriptors(), "inventory.desc", path)
    }

    fn hex_of(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn json_is_encoded_as_the_methods_input_type_byte_for_byte_as_protobuf_does() {
        let get = "/inventory.Inventory/Get";
        // The hex the repository's experiments write by hand.
        let bytes = encoded(serde_json::json!({ "sku": "sku-1" }), get).unwrap();
        assert_eq!(hex_of(&bytes), "0a05736b752d31");
        // Every kind of field, in field order: string, varint, a nested
        // message (its JSON name, an int64 as a string), a repeated string,
        // an enum by name.
        let json = serde_json::json!({
            "sku": "a", "count": 3, "window": { "fromMs": "5" },
            "tags": ["x", "y"], "priority": "PRIORITY_HIGH",
        });
        let bytes = encoded(json, get).unwrap();
        assert_eq!(hex_of(&bytes), "0a016110031a0208052201782201792801");
        // A field at its default is not written at all.
        let bytes = encoded(serde_json::json!({ "sku": "", "count": 0 }), get).unwrap();
        assert!(bytes.is_empty(), "{bytes:?}");
    }

    #[test]
    fn the_streaming_methods_input_type_is_found_as_a_unary_ones() {
        let bytes = encoded(
            serde_json::json!({ "count": 1000 }),
            "/inventory.Inventory/Watch",
        );
        assert_eq!(hex_of(&bytes.unwrap()), "10e807");
    }

    #[test]
    fn json_that_does_not_fit_is_refused_at_the_field_with_its_type() {
        let get = "/inventory.Inventory/Get";
        let (place, message) = encoded(serde_json::json!({ "count": "many" }), get).unwrap_err();
        assert_eq!(place, Place::Json);
        assert!(
            message.starts_with("does not fit `inventory.Query` at `count` (type uint32): "),
            "{message}"
        );
        let (_, message) =
            encoded(serde_json::json!({ "window": { "toMs": [] } }), get).unwrap_err();
        assert!(
            message.contains("at `window.toMs` (type int64)"),
            "{message}"
        );
        let (_, message) = encoded(serde_json::json!({ "tags": ["a", 1] }), get).unwrap_err();
        assert!(message.contains("at `tags[1]` (type string)"), "{message}");
        let (_, message) = encoded(serde_json::json!({ "colour": "red" }), get).unwrap_err();
        assert!(message.contains("'colour'"), "{message}");
    }

    #[test]
    fn a_method_or_service_the_set_lacks_is_refused_at_the_request_naming_what_it_has() {
        let json = serde_json::json!({});
        let (place, message) = encoded(json.clone(), "/inventory.Inventory/Put").unwrap_err();
        assert_eq!(place, Place::Request);
        assert_eq!(
            message,
            "`grpc /inventory.Inventory/Put`: service `inventory.Inventory` in inventory.desc has no method `Put` (it has: Get, Watch)"
        );
        let (place, message) = encoded(json, "/stock.Stock/Get").unwrap_err();
        assert_eq!(place, Place::Request);
        assert!(
            message.ends_with("defines no service `stock.Stock` (it defines: inventory.Inventory)"),
            "{message}"
        );
    }

    #[test]
    fn a_file_that_is_no_descriptor_set_is_refused_at_descriptors_saying_how_to_make_one() {
        let proto = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/grpc/inventory.proto");
        let (place, message) = encode(
            &serde_json::json!({}),
            &proto,
            "inventory.proto",
            "/inventory.Inventory/Get",
        )
        .unwrap_err();
        assert_eq!(place, Place::Descriptors);
        assert!(
            message.contains("protoc --descriptor_set_out="),
            "{message}"
        );
    }

    #[test]
    fn hex_base64_and_json_are_told_apart_and_json_in_a_string_is_read_as_json() {
        let message = |yaml: &str| -> Result<Message, String> {
            let m: GrpcMessage = serde_yaml_ng::from_str(yaml).unwrap();
            m.checked()
        };
        assert_eq!(message("{ hex: 0a 05 }"), Ok(Message::Bytes(vec![10, 5])));
        assert_eq!(message("{ base64: CgU= }"), Ok(Message::Bytes(vec![10, 5])));
        let from_string = message("{ json: '{\"sku\": \"a\"}', descriptors: d.desc }").unwrap();
        let from_mapping = message("{ json: { sku: a }, descriptors: d.desc }").unwrap();
        assert_eq!(from_string, from_mapping);
        assert!(
            message("{ json: { sku: a } }")
                .unwrap_err()
                .contains("needs `descriptors`")
        );
        assert!(
            message("{ descriptors: d.desc }")
                .unwrap_err()
                .contains("goes with `json`")
        );
        assert!(
            message("{ hex: 0a, json: {} , descriptors: d }")
                .unwrap_err()
                .starts_with("message: give one of")
        );
    }
}
