//! Request bodies read as Go's `encoding/json` reads them into Toxiproxy's
//! structs: a key matches a field case-insensitively, and when a field is
//! given twice (in any case) the last value wins. Every field name of the
//! API is lower case, so folding each key to lower case and keeping the
//! last value per folded key is that rule.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// A JSON document with every object key folded to lower case, the last of
/// each folded key kept.
#[derive(Debug)]
pub struct Folded(pub Value);

/// Go's case folding of a key, for the API's ASCII field names: lower case,
/// with the two non-ASCII letters Go folds onto ASCII ones (`ſ` onto `s`,
/// `K` Kelvin onto `k`, which lower-casing already does).
fn fold(key: &str) -> String {
    key.to_lowercase().replace('ſ', "s")
}

impl<'de> Deserialize<'de> for Folded {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Folded, D::Error> {
        d.deserialize_any(FoldedVisitor).map(Folded)
    }
}

/// Builds a [`Value`], folding object keys.
struct FoldedVisitor;

impl<'de> Visitor<'de> for FoldedVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Folded(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some((key, Folded(value))) = map.next_entry::<String, Folded>()? {
            // A later duplicate replaces the earlier value, as in Go.
            object.insert(fold(&key), value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_fold_to_lower_case_and_the_last_of_a_folded_key_wins_at_every_depth() {
        let Folded(v) = serde_json::from_str(
            r#"{"Name":"a","NAME":"b","attributes":{"LATENCY":1,"latency":2,"ſize":3},"list":[{"K":1}]}"#,
        )
        .unwrap();
        assert_eq!(
            v,
            serde_json::json!({"name":"b","attributes":{"latency":2,"size":3},"list":[{"k":1}]})
        );
    }
}
