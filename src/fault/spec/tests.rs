//! The fault catalogue read from YAML: the kind table, RawFault and
//! FaultKind agree, and every rejection names its key.

use super::*;
use crate::schema::from_yaml_str;

/// Every kind once, with valid parameters (`validate_cli` checks that it
/// covers [`KINDS`]).
const EVERY_KIND: &str = include_str!("../../../fixtures/faults/mixed_modes/every_kind_block.yaml");

/// Loads a fault file; an error as `key: message`.
fn load(text: &str) -> Result<FaultFile, String> {
    from_yaml_str::<FaultFile>("t.yaml", text).map_err(|e| format!("{}: {}", e.key, e.message))
}

#[test]
fn every_kind_key_loads_as_the_kind_whose_key_and_row_it_is() {
    let file = load(EVERY_KIND).unwrap();
    let written: serde_yaml_ng::Value = serde_yaml_ng::from_str(EVERY_KIND).unwrap();
    let entries = written["faults"].as_sequence().unwrap();
    assert_eq!(entries.len(), file.faults.len());
    let mut loaded = Vec::new();
    for (entry, fault) in entries.iter().zip(&file.faults) {
        let keys: Vec<&str> = entry
            .as_mapping()
            .unwrap()
            .keys()
            .filter_map(|k| k.as_str())
            .filter(|k| kind_keys().any(|kind| kind == *k))
            .collect();
        assert_eq!(keys, [fault.kind.key()], "fault {}", fault.name);
        let rows: Vec<&str> = KINDS
            .iter()
            .filter(|row| (row.is)(&fault.kind))
            .map(|row| row.key)
            .collect();
        assert_eq!(rows, [fault.kind.key()], "one row per kind");
        loaded.push(fault.kind.key());
    }
    loaded.sort_unstable();
    let mut all: Vec<&str> = kind_keys().collect();
    all.sort_unstable();
    assert_eq!(loaded, all, "the fixture loads every kind once");
}

/// serde lists `RawFault`'s fields in an unknown-field error: its kind
/// fields come last, in the table's order, so the table and the struct
/// name the same kinds.
#[test]
fn an_unknown_kind_key_is_refused_listing_raw_fault_kind_fields_in_table_order() {
    let e = load("faults:\n  - latnecy: { delay: 1s }\n").unwrap_err();
    let (head, expected) = e.split_once(", expected one of ").unwrap();
    assert_eq!(
        head,
        "faults[0].latnecy: unknown field `latnecy` (did you mean `latency`?)"
    );
    let fields: Vec<&str> = expected.split(", ").map(|f| f.trim_matches('`')).collect();
    let kinds: Vec<&str> = kind_keys().collect();
    assert!(fields.len() > kinds.len(), "{fields:?}");
    assert_eq!(fields[fields.len() - kinds.len()..], kinds[..]);
    assert!(
        !fields[..fields.len() - kinds.len()]
            .iter()
            .any(|f| kinds.contains(f)),
        "{fields:?}"
    );
}

#[test]
fn no_kind_is_refused_naming_every_kind_and_two_kinds_name_both_in_table_order() {
    let e = load("faults:\n  - name: nothing\n").unwrap_err();
    let all = kind_keys().collect::<Vec<_>>().join(", ");
    assert_eq!(
        e,
        format!("faults[0]: a fault needs exactly one kind: one of {all}")
    );
    assert!(all.starts_with("latency, status, reset, close, blackhole, refuse"));
    let e = load("faults:\n  - { status: { code: 503 }, latency: { delay: 1s } }\n").unwrap_err();
    assert_eq!(
        e,
        "faults[0].status: a fault has exactly one kind, found latency and status: \
         split it into one fault per kind"
    );
}

#[test]
fn works_in_tcp_and_http_answer_from_the_kinds_row() {
    assert_eq!((Modes::Both.tcp(), Modes::Both.http()), (true, true));
    assert_eq!((Modes::TcpOnly.tcp(), Modes::TcpOnly.http()), (true, false));
    assert_eq!(
        (Modes::HttpOnly.tcp(), Modes::HttpOnly.http()),
        (false, true)
    );
    let file = load(EVERY_KIND).unwrap();
    for fault in &file.faults {
        let modes = fault.kind.info().modes;
        assert_eq!(fault.kind.works_in_tcp(), modes.tcp(), "{}", fault.name);
        assert_eq!(fault.kind.works_in_http(), modes.http(), "{}", fault.name);
    }
}

/// The schema is generated from `RawFault`, whose kind fields are the
/// ones documented "Kind…": they must be exactly the table's, each
/// required alone by `oneOf`, named in the entry's description, and
/// documented "(TCP only)"/"(HTTP only)" as the table says.
#[test]
fn raw_fault_fields_schema_and_descriptions_agree_with_the_table() {
    let schema = serde_json::to_value(crate::json_schema::Format::Faults.schema()).unwrap();
    let fault = &schema["definitions"]["Fault"];
    let properties = fault["properties"].as_object().unwrap();
    let described = |key: &str| properties[key]["description"].as_str().unwrap().to_owned();
    let mut fields: Vec<&str> = properties
        .keys()
        .map(String::as_str)
        .filter(|key| described(key).starts_with("Kind"))
        .collect();
    fields.sort_unstable();
    let mut all: Vec<&str> = kind_keys().collect();
    all.sort_unstable();
    assert_eq!(fields, all, "RawFault's kind fields are the table's");
    let one_of: Vec<serde_json::Value> = kind_keys()
        .map(|key| serde_json::json!({ "required": [key] }))
        .collect();
    assert_eq!(fault["oneOf"], serde_json::Value::Array(one_of));
    let entry = fault["description"].as_str().unwrap();
    for row in KINDS {
        assert!(entry.contains(&format!("`{}`", row.key)), "{entry}");
        let doc = described(row.key);
        let expected = match row.modes {
            Modes::Both => "Kind:",
            Modes::TcpOnly => "Kind (TCP only):",
            Modes::HttpOnly => "Kind (HTTP only):",
        };
        assert!(doc.starts_with(expected), "{}: {doc}", row.key);
    }
}
