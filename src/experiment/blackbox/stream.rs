//! What the streaming inference shares: the first spill error it met, and
//! sorted copies of spills (a cursor reads a spill once and uses it up).

use crate::spill::{Reader, Spill};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The first write or read of a spill that failed: what was inferred
/// after it may miss items.
#[derive(Debug, Default)]
pub struct Failed(pub Option<std::io::Error>);

impl Failed {
    /// Keeps `spill`'s error if it is the first.
    pub fn spill<T: Serialize + DeserializeOwned + Clone>(&mut self, spill: &Spill<T>) {
        if self.0.is_none() {
            self.0 = spill.error();
        }
    }

    /// Keeps `reader`'s error if it is the first.
    pub fn reader<T>(&mut self, reader: &mut Reader<T>) {
        if let Some(err) = reader.error()
            && self.0.is_none()
        {
            self.0 = Some(err);
        }
    }
}

/// `spill` sorted by `cmp`, and a copy of it: two cursors' worth.
pub fn sorted_twice<T: Serialize + DeserializeOwned + Clone>(
    mut spill: Spill<T>,
    cmp: impl Fn(&T, &T) -> std::cmp::Ordering,
    failed: &mut Failed,
) -> (Spill<T>, Spill<T>) {
    failed.spill(&spill);
    let mut sorted = spill.sorted_by(cmp);
    let mut copy = Spill::new();
    sorted.read_each(|item| copy.push(&item));
    failed.spill(&sorted);
    (sorted, copy)
}

/// `spill` sorted by `cmp`; the source's error kept.
pub fn sorted<T: Serialize + DeserializeOwned + Clone>(
    mut spill: Spill<T>,
    cmp: impl Fn(&T, &T) -> std::cmp::Ordering,
    failed: &mut Failed,
) -> Spill<T> {
    failed.spill(&spill);
    spill.sorted_by(cmp)
}
