//! An append-only list that many published versions share: each version
//! is a prefix of one shelf, so publishing a list one entry longer costs
//! one entry, not a copy of the list (the control plane adds toxics one at
//! a time, thousands to a proxy).
//!
//! The shelf's slots are written once (`OnceLock`), in segments that never
//! move: segment `k` holds `2^k` slots, allocated when the first of them
//! is written. Reading slot `i` of a prefix is two index steps.

use std::sync::{Arc, OnceLock};

/// Segments of a shelf: enough for any length a `usize` counts.
const SEGMENTS: usize = usize::BITS as usize;

/// Slots written once, shared by every [`Prefix`] cut from them.
struct Shelf<T> {
    /// Segment `k` holds slots `2^k - 1 .. 2^(k+1) - 1`.
    segments: [OnceLock<Box<[OnceLock<T>]>>; SEGMENTS],
}

impl<T> Shelf<T> {
    fn new() -> Self {
        Shelf {
            segments: std::array::from_fn(|_| OnceLock::new()),
        }
    }

    /// The segment and the offset in it of slot `index`.
    fn place(index: usize) -> (usize, usize) {
        let position = index + 1;
        let segment = (usize::BITS - 1 - position.leading_zeros()) as usize;
        (segment, position - (1 << segment))
    }

    /// Slot `index`, allocating its segment when it is the first one used.
    fn slot(&self, index: usize) -> &OnceLock<T> {
        let (segment, offset) = Self::place(index);
        let slots = self.segments[segment]
            .get_or_init(|| (0..1usize << segment).map(|_| OnceLock::new()).collect());
        &slots[offset]
    }

    /// The value in slot `index`, when it was written.
    fn get(&self, index: usize) -> Option<&T> {
        let (segment, offset) = Self::place(index);
        self.segments[segment].get()?[offset].get()
    }
}

/// The first `len` slots of a shelf: one published version of the list.
pub(super) struct Prefix<T> {
    /// The slots, shared with longer and shorter versions.
    shelf: Arc<Shelf<T>>,
    /// How many of them this version holds.
    len: usize,
}

impl<T> Clone for Prefix<T> {
    fn clone(&self) -> Self {
        Prefix {
            shelf: Arc::clone(&self.shelf),
            len: self.len,
        }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Prefix<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T> Prefix<T> {
    /// A list of `values`, on a shelf of its own.
    pub(super) fn from_values(values: impl IntoIterator<Item = T>) -> Self {
        let shelf = Arc::new(Shelf::new());
        let mut len = 0;
        for value in values {
            // A fresh shelf: every slot is free.
            let _ = shelf.slot(len).set(value);
            len += 1;
        }
        Prefix { shelf, len }
    }

    /// How many entries the list holds.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Entry `index`, if the list holds it.
    pub(super) fn get(&self, index: usize) -> Option<&T> {
        (index < self.len).then(|| self.shelf.get(index))?
    }

    /// The entries in order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &T> {
        (0..self.len).filter_map(|index| self.shelf.get(index))
    }

    /// This list with `value` after its entries, sharing them: the value
    /// goes into the shelf's next slot. When that slot is already taken
    /// (this list is not the longest cut from its shelf), the entries are
    /// copied to a shelf of their own first.
    pub(super) fn push(&self, value: T) -> Self
    where
        T: Clone,
    {
        match self.shelf.slot(self.len).set(value) {
            Ok(()) => Prefix {
                shelf: Arc::clone(&self.shelf),
                len: self.len + 1,
            },
            Err(value) => Prefix::from_values(self.iter().cloned().chain(std::iter::once(value))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_fill_segments_of_doubling_size_in_order() {
        let places: Vec<_> = (0..8).map(Shelf::<u8>::place).collect();
        assert_eq!(
            places,
            [
                (0, 0),
                (1, 0),
                (1, 1),
                (2, 0),
                (2, 1),
                (2, 2),
                (2, 3),
                (3, 0)
            ]
        );
    }

    #[test]
    fn a_push_shares_the_entries_and_leaves_the_shorter_list_as_it_was() {
        let empty = Prefix::from_values(Vec::<u32>::new());
        let mut list = empty.clone();
        for n in 0..100 {
            list = list.push(n);
        }
        assert!(Arc::ptr_eq(&list.shelf, &empty.shelf));
        assert_eq!(
            list.iter().copied().collect::<Vec<_>>(),
            (0..100).collect::<Vec<_>>()
        );
        assert_eq!((empty.len(), empty.iter().count()), (0, 0));
        assert_eq!((list.get(99), list.get(100)), (Some(&99), None));
    }

    #[test]
    fn a_push_onto_a_list_that_is_not_the_longest_copies_it_first() {
        let short = Prefix::from_values([1, 2]);
        let long = short.push(3);
        let other = short.push(4);
        assert!(!Arc::ptr_eq(&other.shelf, &short.shelf));
        assert_eq!(long.iter().copied().collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(other.iter().copied().collect::<Vec<_>>(), [1, 2, 4]);
        assert_eq!(short.iter().copied().collect::<Vec<_>>(), [1, 2]);
    }

    #[test]
    fn a_list_debugs_as_its_own_entries_only() {
        let short = Prefix::from_values([1, 2]);
        let _longer = short.push(3);
        assert_eq!(format!("{short:?}"), "[1, 2]");
    }
}
