//! One published fault list, what each fault carries from one publication
//! to the next (its random stream, its counters), and how a list is built
//! from the one before it.
//!
//! A list is a [`Prefix`] of a shelf that the publications share, so a list
//! one fault longer (a toxic added) shares every earlier fault instead of
//! copying it: publishing it costs the new fault, whatever the list holds.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use super::shelf::Prefix;
use crate::clock::{self, Duration, Instant, RunRng};
use crate::fault::spec::Fault;

/// One published fault list: the faults in order, each with its state.
#[derive(Debug)]
pub struct Snapshot {
    /// Which publication this is (0 for the list the plan started with).
    pub(super) version: u64,
    /// The faults in evaluation order, each with its state.
    entries: Prefix<Entry>,
}

/// A fault of a list and the state it carries.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    /// The fault.
    pub(super) fault: Fault,
    /// Its RNG stream and counters, shared with earlier lists that held a
    /// fault of the same name (and occurrence).
    pub(super) state: Arc<FaultState>,
}

/// What a fault carries across replaces of the list.
#[derive(Debug)]
pub(super) struct FaultState {
    /// This fault's own random stream (probability, jitter, slice sizes).
    pub(super) rng: Mutex<RunRng>,
    /// How many times the fault was injected.
    pub(super) injected: AtomicU64,
    /// When a request matching the fault last arrived (for `after_idle`).
    last_match: Mutex<Option<Instant>>,
}

impl FaultState {
    /// A new state for the `occurrence`-th fault named `name`.
    fn new(seed: u64, name: &str, occurrence: usize) -> Arc<FaultState> {
        Arc::new(FaultState {
            rng: Mutex::new(clock::seeded_rng(seed, stream_of(name, occurrence))),
            injected: AtomicU64::new(0),
            last_match: Mutex::new(None),
        })
    }

    /// Whether a matching request arriving `now` comes after at least
    /// `idle` without one (the first ever does); notes the arrival.
    pub(super) fn idle_for(&self, idle: Duration, now: Instant) -> bool {
        let mut last = self.last_match.lock().unwrap_or_else(|e| e.into_inner());
        let cold = last.is_none_or(|t| now.saturating_duration_since(t) >= idle);
        *last = Some(now);
        cold
    }
}

/// The RNG stream of the `occurrence`-th fault named `name` (FNV-1a), so a
/// fault's sequence depends on its name, not on its position in the list.
pub(super) fn stream_of(name: &str, occurrence: usize) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in name.bytes().chain((occurrence as u64).to_le_bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// How many faults of each name a list holds (two faults may share a
/// name: the default name is the kind): the next one of a name is that
/// occurrence.
pub(super) type Occurrences = BTreeMap<String, usize>;

/// The occurrence of a fault named `name` after those counted in `seen`,
/// counting it.
fn next_occurrence(seen: &mut Occurrences, name: &str) -> usize {
    if let Some(n) = seen.get_mut(name) {
        *n += 1;
        return *n - 1;
    }
    seen.insert(name.to_string(), 1);
    0
}

impl Snapshot {
    /// Publication `version` of `faults`, each keeping the state of the
    /// fault of the same name and occurrence in `old`, if any (by key, so
    /// carrying n states over is n log n); and the occurrences it holds.
    pub(super) fn build(
        faults: Vec<Fault>,
        seed: u64,
        version: u64,
        old: Option<&Snapshot>,
    ) -> (Snapshot, Occurrences) {
        // The old list's states by name, each name's in the order of its
        // occurrences.
        let mut old_states: BTreeMap<&str, Vec<&Arc<FaultState>>> = BTreeMap::new();
        for e in old.into_iter().flat_map(|o| o.entries.iter()) {
            old_states.entry(&e.fault.name).or_default().push(&e.state);
        }
        let mut seen = Occurrences::new();
        let entries = faults.into_iter().map(|fault| {
            let n = next_occurrence(&mut seen, &fault.name);
            let kept = old_states
                .get(fault.name.as_str())
                .and_then(|states| states.get(n));
            let state = match kept {
                Some(state) => Arc::clone(state),
                None => FaultState::new(seed, &fault.name, n),
            };
            Entry { fault, state }
        });
        let entries = Prefix::from_values(entries.collect::<Vec<_>>());
        (Snapshot { version, entries }, seen)
    }

    /// Publication `version`: this list with `faults` after it, sharing
    /// this list's faults (each new one gets a new state: no fault of its
    /// name and occurrence was in this list). `seen` counts this list's
    /// occurrences and is brought up to date.
    pub(super) fn extended(
        &self,
        faults: Vec<Fault>,
        seed: u64,
        version: u64,
        seen: &mut Occurrences,
    ) -> Snapshot {
        let mut entries = self.entries.clone();
        for fault in faults {
            let n = next_occurrence(seen, &fault.name);
            let state = FaultState::new(seed, &fault.name, n);
            entries = entries.push(Entry { fault, state });
        }
        Snapshot { version, entries }
    }

    /// How many faults the list holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the list holds no fault.
    pub fn is_empty(&self) -> bool {
        self.entries.len() == 0
    }

    /// Fault `index`, if the list holds it.
    pub fn get(&self, index: usize) -> Option<&Fault> {
        self.entries.get(index).map(|e| &e.fault)
    }

    /// The faults, in evaluation order.
    pub fn iter(&self) -> impl Iterator<Item = &Fault> {
        self.entries.iter().map(|e| &e.fault)
    }

    /// The faults, copied.
    pub fn to_vec(&self) -> Vec<Fault> {
        self.iter().cloned().collect()
    }

    /// The faults with their states.
    pub(super) fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter()
    }

    /// Entry `index`, which the list holds (a hit's or a roll's index).
    pub(super) fn entry(&self, index: usize) -> &Entry {
        self.entries
            .get(index)
            .expect("an index taken from this snapshot")
    }
}
