//! Checking that a text is one well-formed YAML document before any
//! firedrill type reads it: syntax errors (a tab, an unclosed quote), a
//! second document, a key twice in one mapping and an integer beyond 64
//! bits are reported where they are, whatever kind of file it is.
//!
//! The document is walked with the deserializer, accepting every value; a
//! problem found at a node is raised from inside the deserializer's visit of
//! that node, so `serde_yaml_ng` stamps it with the node's line and column.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, Visitor};

/// The start of the message for a key seen twice; `diagnose` finishes it.
pub(super) const DUPLICATE_KEY: &str = "duplicate key `";

/// The end of the message for a document whose aliases expand it past
/// [`MAX_EXPANDED_BYTES`]; `diagnose` names the alias in front.
pub(super) const EXPANDS_PAST: &str = "expands the document past ";

/// How many bytes a document may hold once every alias (`*name`) is
/// replaced by its anchor's content: each scalar spends its length and one
/// byte more, each mapping and list one byte. A file within
/// [`MAX_FILE_BYTES`](super::limits::MAX_FILE_BYTES) without aliases never
/// comes near; one big string aliased many times does, however few events
/// the parser replays (its own limit counts events, not bytes).
pub const MAX_EXPANDED_BYTES: u64 = 8 * 1024 * 1024;

/// Walks one node and everything under it, spending the bytes it holds
/// from a budget shared by the whole document.
#[derive(Clone, Copy)]
pub(super) struct Node<'b> {
    /// The bytes spent so far.
    spent: &'b Cell<u64>,
}

impl<'b> Node<'b> {
    /// A walk that spends from `spent`.
    pub(super) fn new(spent: &'b Cell<u64>) -> Self {
        Node { spent }
    }

    /// Spends `bytes`; fails once the document has spent more than
    /// [`MAX_EXPANDED_BYTES`].
    fn spend<E: de::Error>(self, bytes: usize) -> Result<(), E> {
        let spent = self.spent.get().saturating_add(bytes as u64 + 1);
        self.spent.set(spent);
        if spent > MAX_EXPANDED_BYTES {
            return Err(E::custom(format!(
                "{EXPANDS_PAST}{MAX_EXPANDED_BYTES} bytes: expected aliases to expand it to at most {MAX_EXPANDED_BYTES} bytes (8 MiB) in all"
            )));
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

/// A scalar is accepted unless it is an integer no 64-bit field can hold
/// (or the document is over its budget: a number spends 8 bytes).
macro_rules! accept {
    ($($method:ident: $ty:ty),*) => {
        $(fn $method<E: de::Error>(self, _: $ty) -> Result<(), E> {
            self.spend(8)
        })*
    };
}

fn out_of_range<E: de::Error>(value: impl fmt::Display) -> E {
    E::custom(format!(
        "the integer {value} is out of range: expected at most {} and at least {}",
        u64::MAX,
        i64::MIN
    ))
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    accept!(visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64);

    fn visit_str<E: de::Error>(self, value: &str) -> Result<(), E> {
        self.spend(value.len())
    }

    fn visit_u128<E: de::Error>(self, value: u128) -> Result<(), E> {
        Err(out_of_range(value))
    }

    fn visit_i128<E: de::Error>(self, value: i128) -> Result<(), E> {
        Err(out_of_range(value))
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.spend(0)
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.spend(0)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.spend(0)?;
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.spend(0)?;
        let mut seen = BTreeSet::new();
        while map
            .next_key_seed(Key {
                seen: &mut seen,
                node: self,
            })?
            .is_some()
        {
            map.next_value_seed(self)?;
        }
        Ok(())
    }

    /// A tagged value (`!progressive { ... }`): its content.
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        let ((), variant) = data.variant_seed(self)?;
        de::VariantAccess::newtype_variant_seed(variant, self)
    }
}

/// A mapping key: fails at the key when the mapping already had it.
struct Key<'a, 'b> {
    seen: &'a mut BTreeSet<String>,
    /// The walk whose budget the key spends.
    node: Node<'b>,
}

impl Key<'_, '_> {
    fn record<E: de::Error>(self, key: String) -> Result<(), E> {
        self.node.spend(key.len())?;
        if self.seen.insert(key.clone()) {
            Ok(())
        } else {
            Err(E::custom(format!("{DUPLICATE_KEY}{key}`")))
        }
    }
}

impl<'de> DeserializeSeed<'de> for Key<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Key<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<(), E> {
        self.record(key.to_string())
    }

    fn visit_bool<E: de::Error>(self, key: bool) -> Result<(), E> {
        self.record(key.to_string())
    }

    fn visit_i64<E: de::Error>(self, key: i64) -> Result<(), E> {
        self.record(key.to_string())
    }

    fn visit_u64<E: de::Error>(self, key: u64) -> Result<(), E> {
        self.record(key.to_string())
    }

    fn visit_f64<E: de::Error>(self, key: f64) -> Result<(), E> {
        self.record(key.to_string())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.record("~".to_string())
    }

    fn visit_u128<E: de::Error>(self, value: u128) -> Result<(), E> {
        Err(out_of_range(value))
    }

    fn visit_i128<E: de::Error>(self, value: i128) -> Result<(), E> {
        Err(out_of_range(value))
    }

    // A mapping or list as a key (`? [a, b]`) is walked, not compared.
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        self.node.visit_seq(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        self.node.visit_map(map)
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        self.node.visit_enum(data)
    }
}
