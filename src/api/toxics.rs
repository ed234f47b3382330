//! A proxy's toxics: in the order they were added (how Toxiproxy lists
//! them and chains them), and found by name without a scan, so adding one
//! to a proxy that holds thousands costs the same as adding the first.

use std::collections::BTreeMap;

use super::toxic::Toxic;

/// A proxy's toxics, each name once.
#[derive(Debug, Default)]
pub struct ToxicList {
    /// In the order they were added.
    toxics: Vec<Toxic>,
    /// Where each name is in `toxics`.
    places: BTreeMap<String, usize>,
}

impl ToxicList {
    /// The toxics, in the order they were added.
    pub fn as_slice(&self) -> &[Toxic] {
        &self.toxics
    }

    /// The toxic named `name`.
    pub fn get(&self, name: &str) -> Option<&Toxic> {
        self.places.get(name).map(|&at| &self.toxics[at])
    }

    /// Puts `toxic` in the place of the one of its name; `false` when
    /// there is none.
    pub fn set(&mut self, toxic: Toxic) -> bool {
        match self.places.get(&toxic.name) {
            Some(&at) => {
                self.toxics[at] = toxic;
                true
            }
            None => false,
        }
    }

    /// Adds `toxic` after the others; `false` (and nothing added) when one
    /// of its name is there.
    pub fn push(&mut self, toxic: Toxic) -> bool {
        if self.places.contains_key(&toxic.name) {
            return false;
        }
        self.places.insert(toxic.name.clone(), self.toxics.len());
        self.toxics.push(toxic);
        true
    }

    /// Removes the toxic named `name`; `false` when there is none. The
    /// later ones move up a place (a scan: removing is rare).
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(at) = self.places.remove(name) else {
            return false;
        };
        self.toxics.remove(at);
        for place in self.places.values_mut().filter(|p| **p > at) {
            *place -= 1;
        }
        true
    }

    /// Removes every toxic.
    pub fn clear(&mut self) {
        self.toxics.clear();
        self.places.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::toxic::ToxicInput;
    use crate::proxy::ProxyMode;

    fn toxic(name: &str) -> Toxic {
        let input: ToxicInput =
            serde_json::from_str(&format!(r#"{{"name":"{name}","type":"latency"}}"#)).unwrap();
        Toxic::create(input, ProxyMode::Tcp).unwrap()
    }

    fn names(list: &ToxicList) -> Vec<&str> {
        list.as_slice().iter().map(|t| t.name.as_str()).collect()
    }

    #[test]
    fn toxics_keep_their_order_and_each_name_is_found_once() {
        let mut list = ToxicList::default();
        for name in ["a", "b", "c", "d"] {
            assert!(list.push(toxic(name)));
        }
        assert!(!list.push(toxic("b")));
        assert!(list.remove("b"));
        assert!(!list.remove("b"));
        assert_eq!(names(&list), ["a", "c", "d"]);
        assert_eq!(list.get("d").map(|t| t.name.as_str()), Some("d"));
        assert!(list.set(toxic("c")) && !list.set(toxic("b")));
        assert!(list.push(toxic("b")));
        assert_eq!(names(&list), ["a", "c", "d", "b"]);
        assert_eq!(list.get("b").map(|t| t.name.as_str()), Some("b"));
        list.clear();
        assert!(list.get("a").is_none() && list.as_slice().is_empty());
    }
}
