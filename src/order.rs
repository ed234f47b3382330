//! A stable sort that needs little memory beside the list: the standard
//! stable sort borrows a buffer of up to the whole list's size (a run's
//! per-request records, hundreds of bytes each, sorted after the run),
//! this one a key and an index per item. Same order as
//! `slice::sort_by`: items with equal keys keep their order. And lookups by
//! request id in a sorted list ([`ById`]): a B-tree of a run's ids costs
//! two to three times the ids themselves.

use std::cmp::Ordering;
use std::collections::BTreeSet;

/// Values by request id, sorted: the last value given for an id wins, as
/// in a map filled in order.
#[derive(Debug, Clone, Default)]
pub struct ById<V>(Vec<(u64, V)>);

/// A set of request ids.
pub type SortedIds = ById<()>;

impl<V> FromIterator<(u64, V)> for ById<V> {
    fn from_iter<I: IntoIterator<Item = (u64, V)>>(entries: I) -> Self {
        let mut all: Vec<(u64, V)> = entries.into_iter().collect();
        all.sort_by_key(|e| e.0);
        // Of equal ids (adjacent now, in the order given) the last stays.
        all.dedup_by(|later, earlier| {
            let same = later.0 == earlier.0;
            if same {
                std::mem::swap(later, earlier);
            }
            same
        });
        all.shrink_to_fit();
        ById(all)
    }
}

impl FromIterator<u64> for ById<()> {
    fn from_iter<I: IntoIterator<Item = u64>>(ids: I) -> Self {
        ids.into_iter().map(|id| (id, ())).collect()
    }
}

impl<V> ById<V> {
    /// The value of `id`, if it has one.
    pub fn get(&self, id: u64) -> Option<&V> {
        let i = self.0.binary_search_by_key(&id, |e| e.0).ok()?;
        Some(&self.0[i].1)
    }
}

/// Request ids to ask for membership: a B-tree set or a sorted list.
pub trait IdSet {
    /// Whether `id` is one of them.
    fn holds(&self, id: u64) -> bool;
}

impl IdSet for BTreeSet<u64> {
    fn holds(&self, id: u64) -> bool {
        self.contains(&id)
    }
}

impl<V> IdSet for ById<V> {
    fn holds(&self, id: u64) -> bool {
        self.get(id).is_some()
    }
}

/// Sorts `items` by `key` (compared with `cmp`), stably, with a buffer of
/// one key and one index per item (none when already sorted).
pub fn sort_by_key_lean<T, K>(
    items: &mut [T],
    key: impl Fn(&T) -> K,
    cmp: impl Fn(&K, &K) -> Ordering,
) {
    if items.is_sorted_by(|a, b| cmp(&key(a), &key(b)) != Ordering::Greater) {
        return;
    }
    let mut keyed: Vec<(K, usize)> = items.iter().map(&key).zip(0..).collect();
    // The index breaks ties: as stable as the standard sort.
    keyed.sort_unstable_by(|a, b| cmp(&a.0, &b.0).then(a.1.cmp(&b.1)));
    let mut from: Vec<usize> = keyed.into_iter().map(|(_, i)| i).collect();
    // Each place takes the item `from` names, cycle by cycle.
    const PLACED: usize = usize::MAX;
    for start in 0..from.len() {
        let mut at = start;
        while from[at] != PLACED {
            let source = from[at];
            from[at] = PLACED;
            if source == start {
                break;
            }
            items.swap(at, source);
            at = source;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A seeded shuffle of items with many equal keys, so that stability
    /// shows: the lean sort gives the standard stable sort's order.
    #[test]
    fn lean_sort_orders_as_the_standard_stable_sort_with_ties_kept_in_order() {
        let mut state: u64 = 0x5eed;
        for len in [0usize, 1, 2, 3, 10, 100, 1_000, 5_000] {
            let items: Vec<(u64, usize)> = (0..len)
                .map(|i| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    ((state >> 33) % (len as u64 / 4 + 1), i)
                })
                .collect();
            let mut standard = items.clone();
            standard.sort_by_key(|x| x.0);
            let mut lean = items.clone();
            sort_by_key_lean(&mut lean, |x| x.0, Ord::cmp);
            assert_eq!(lean, standard, "{len} items");
        }
    }

    #[test]
    fn by_id_keeps_the_last_value_of_an_id_as_a_map_filled_in_order_does() {
        let entries = [(7, 'a'), (3, 'b'), (7, 'c'), (1, 'd'), (3, 'e'), (7, 'f')];
        let map: std::collections::BTreeMap<u64, char> = entries.into_iter().collect();
        let by_id: ById<char> = entries.into_iter().collect();
        for id in 0..9 {
            assert_eq!(by_id.get(id), map.get(&id), "id {id}");
        }
        let set: BTreeSet<u64> = [5, 2, 5, 9].into_iter().collect();
        let sorted: SortedIds = [5, 2, 5, 9].into_iter().collect();
        for id in 0..11 {
            assert_eq!(sorted.holds(id), set.holds(id), "id {id}");
        }
    }

    #[test]
    fn lean_sort_by_float_keys_matches_total_cmp_stable_sort() {
        let items: Vec<(f64, u8)> =
            vec![(3.5, 0), (1.0, 1), (3.5, 2), (-0.0, 3), (0.0, 4), (1.0, 5)];
        let mut standard = items.clone();
        standard.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut lean = items;
        sort_by_key_lean(&mut lean, |x| x.0, f64::total_cmp);
        assert_eq!(lean, standard);
    }
}
