//! Items spilled to an unnamed temporary file as they come, one JSON line
//! each, and read back when asked: what a run must keep whole until its
//! end (the requests, arrivals and dependency calls of a user's service,
//! whose breakers are inferred after the run) takes disk instead of
//! memory while the run goes.
//!
//! The file is removed from its folder as soon as it is created, so it
//! goes away with the process whatever happens. When no temporary file
//! can be created the items stay in memory (as they did before spilling).
//! A write or read that fails is kept (the first one) for the owner to
//! report: [`Spill::error`].

use std::cmp::Ordering as CmpOrdering;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Seek, SeekFrom, Write};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// Bytes buffered before they go to the file.
const BUFFER: usize = 64 * 1024;

/// An append-only list of `T` on disk.
pub struct Spill<T> {
    /// Where the items go.
    store: Store<T>,
    /// Items pushed.
    len: usize,
    /// The first write that failed: the file misses items from then on.
    error: Option<std::io::Error>,
    /// Holds `T`s, read back as values.
    _items: PhantomData<fn() -> T>,
}

/// The file, or memory when no file could be created.
enum Store<T> {
    File(BufWriter<File>),
    Memory(Vec<T>),
}

impl<T> std::fmt::Debug for Spill<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spill")
            .field("len", &self.len)
            .field("on_disk", &matches!(self.store, Store::File(_)))
            .finish()
    }
}

impl<T: Serialize + DeserializeOwned + Clone> Default for Spill<T> {
    fn default() -> Self {
        Spill::new()
    }
}

impl<T: Serialize + DeserializeOwned + Clone> Spill<T> {
    /// An empty spill, on disk if a temporary file can be made.
    pub fn new() -> Spill<T> {
        Spill::buffered(BUFFER)
    }

    /// An empty spill writing through a buffer of `capacity` bytes (a
    /// sort's runs wait many at once: a small one each).
    fn buffered(capacity: usize) -> Spill<T> {
        let store = match unnamed_file() {
            Ok(file) => Store::File(BufWriter::with_capacity(capacity, file)),
            Err(err) => {
                tracing::warn!(%err, "no temporary file: keeping a run's records in memory");
                Store::Memory(Vec::new())
            }
        };
        Spill {
            store,
            len: 0,
            error: None,
            _items: PhantomData,
        }
    }

    /// Appends one item.
    pub fn push(&mut self, item: &T) {
        self.len += 1;
        match &mut self.store {
            Store::Memory(items) => items.push(item.clone()),
            Store::File(out) => {
                if self.error.is_some() {
                    return;
                }
                let written = serde_json::to_writer(&mut *out, item)
                    .map_err(std::io::Error::from)
                    .and_then(|()| out.write_all(b"\n"));
                if let Err(err) = written {
                    self.error = Some(err);
                }
            }
        }
    }

    /// Items pushed so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether none was pushed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Items held in memory (none while the file takes them).
    pub fn in_memory(&self) -> usize {
        match &self.store {
            Store::Memory(items) => items.len(),
            Store::File(_) => 0,
        }
    }

    /// The first write or read that failed: the items read back miss
    /// some from then on.
    pub fn error(&self) -> Option<std::io::Error> {
        self.error
            .as_ref()
            .map(|e| std::io::Error::new(e.kind(), e.to_string()))
    }

    /// Marks the spill as missing items from here on, for `err` (unless
    /// an earlier failure is already kept).
    pub fn fail(&mut self, err: std::io::Error) {
        self.error.get_or_insert(err);
    }

    /// Every item pushed so far, in order (those that could be read back,
    /// see [`Spill::error`]); more may be pushed after.
    pub fn read(&mut self) -> Vec<T> {
        let mut items = Vec::with_capacity(self.len);
        self.read_each(|item| items.push(item));
        items
    }

    /// Every item pushed so far, in order, handed to `take` one at a time
    /// (the reader turns them into what it keeps, without a list of them
    /// beside it); as [`Spill::read`] otherwise.
    pub fn read_each(&mut self, mut take: impl FnMut(T)) {
        if let Err(err) = self.read_into(&mut take)
            && self.error.is_none()
        {
            self.error = Some(err);
        }
    }

    fn read_into(&mut self, take: &mut impl FnMut(T)) -> std::io::Result<()> {
        let out = match &mut self.store {
            Store::Memory(kept) => {
                kept.iter().cloned().for_each(take);
                return Ok(());
            }
            Store::File(out) => out,
        };
        out.flush()?;
        let file = out.get_mut();
        file.seek(SeekFrom::Start(0))?;
        let mut reader = BufReader::with_capacity(BUFFER, &*file);
        let mut line = String::new();
        while reader.read_line(&mut line)? > 0 {
            take(serde_json::from_str(&line)?);
            line.clear();
        }
        drop(reader);
        file.seek(SeekFrom::End(0))?;
        Ok(())
    }
}

impl<T: Serialize + DeserializeOwned + Clone> Spill<T> {
    /// A new spill with every item of this one, ordered by `cmp` (stably:
    /// equal items keep the order they were pushed in), made in bounded
    /// memory: sorted runs of [`RUN`] items on disk, merged 32 at a time
    /// (so few files are open at once, however many items), then into one. The
    /// first read or write that failed is the new spill's
    /// [`Spill::error`].
    pub fn sorted_by(&mut self, cmp: impl Fn(&T, &T) -> CmpOrdering) -> Spill<T> {
        self.sorted_in_runs(run_size(), &cmp)
    }

    /// Reads the items back one at a time, in order, as the reader asks
    /// for them (a merge of two sorted lists, a cursor): the spill is used
    /// up. The first read that failed ends the items and is kept
    /// ([`Reader::error`]).
    pub fn into_reader(self) -> Reader<T> {
        Reader(self.into_items())
    }

    fn sorted_in_runs(&mut self, run: usize, cmp: &impl Fn(&T, &T) -> CmpOrdering) -> Spill<T> {
        let mut runs: Vec<(u32, Spill<T>)> = Vec::new();
        let mut chunk: Vec<T> = Vec::with_capacity(run.min(self.len));
        let close = |chunk: &mut Vec<T>, runs: &mut Vec<(u32, Spill<T>)>| {
            chunk.sort_by(cmp);
            let mut sorted = Spill::buffered(MERGE_BUFFER);
            chunk.drain(..).for_each(|item| sorted.push_owned(item));
            cascade(runs, sorted, |group| merge(group, cmp));
        };
        self.read_each(|item| {
            chunk.push(item);
            if chunk.len() == run {
                close(&mut chunk, &mut runs);
            }
        });
        if !chunk.is_empty() || runs.is_empty() {
            close(&mut chunk, &mut runs);
        }
        let mut runs: Vec<Spill<T>> = runs.into_iter().map(|(_, r)| r).collect();
        let mut out = if runs.len() == 1 {
            runs.pop().unwrap_or_default()
        } else {
            merge(runs, cmp)
        };
        if out.error.is_none() {
            out.error = self.error();
        }
        out
    }

    /// Appends one item it owns (memory keeps it without a copy).
    fn push_owned(&mut self, item: T) {
        match &mut self.store {
            Store::Memory(items) => {
                self.len += 1;
                items.push(item);
            }
            Store::File(_) => self.push(&item),
        }
    }

    fn into_items(self) -> Items<T> {
        let error = self.error;
        match self.store {
            Store::Memory(items) => Items::Memory(items.into_iter(), error),
            Store::File(out) => {
                let file = out
                    .into_inner()
                    .map_err(|e| e.into_error())
                    .and_then(|mut file| file.seek(SeekFrom::Start(0)).map(|_| file));
                match file {
                    Ok(file) => Items::File(
                        BufReader::with_capacity(MERGE_BUFFER, file),
                        String::new(),
                        error,
                    ),
                    Err(err) => Items::Memory(Vec::new().into_iter(), Some(err)),
                }
            }
        }
    }
}

/// A list read in full, in order, as many times as its reader needs: in
/// memory, or a spill on disk (a run's requests, a dependency's calls).
pub trait Replay<T> {
    /// Hands every item to `take`, in order.
    fn replay(&self, take: &mut dyn FnMut(T));
}

impl<T: Clone> Replay<T> for Vec<T> {
    fn replay(&self, take: &mut dyn FnMut(T)) {
        self.iter().cloned().for_each(take);
    }
}

impl<T: Clone> Replay<T> for &[T] {
    fn replay(&self, take: &mut dyn FnMut(T)) {
        self.iter().cloned().for_each(take);
    }
}

impl<T: Serialize + DeserializeOwned + Clone> Replay<T> for std::sync::Mutex<Spill<T>> {
    fn replay(&self, take: &mut dyn FnMut(T)) {
        self.lock()
            .unwrap_or_else(|e| e.into_inner())
            .read_each(take);
    }
}

/// Items sorted in memory at once by [`Spill::sorted_by`].
pub const RUN: usize = 16 * 1024;

/// [`RUN`]; a test may make it smaller for its thread, to sort in many
/// runs with few items.
fn run_size() -> usize {
    #[cfg(test)]
    if let Some(run) = TEST_RUN.with(std::cell::Cell::get) {
        return run;
    }
    RUN
}

#[cfg(test)]
thread_local! {
    /// The run size of this test thread's sorts, if not [`RUN`].
    pub static TEST_RUN: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// A spill read back item by item ([`Spill::into_reader`]).
pub struct Reader<T>(Items<T>);

impl<T> std::fmt::Debug for Reader<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader").finish_non_exhaustive()
    }
}

impl<T: DeserializeOwned> Iterator for Reader<T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        self.0.next_item()
    }
}

impl<T> Reader<T> {
    /// The first write or read that failed, if any: the items read miss
    /// some from then on. Taken: asked again, `None`.
    pub fn error(&mut self) -> Option<std::io::Error> {
        self.0.take_error()
    }
}

/// Bytes each sorted run reads ahead while runs are merged.
const MERGE_BUFFER: usize = 8 * 1024;

/// A spill read back in order, item by item.
enum Items<T> {
    Memory(std::vec::IntoIter<T>, Option<std::io::Error>),
    File(BufReader<File>, String, Option<std::io::Error>),
}

impl<T> Items<T> {
    fn take_error(&mut self) -> Option<std::io::Error> {
        match self {
            Items::Memory(_, error) | Items::File(_, _, error) => error.take(),
        }
    }
}

impl<T: DeserializeOwned> Items<T> {
    /// The next item; `None` at the end or at the first failure (kept).
    fn next_item(&mut self) -> Option<T> {
        match self {
            Items::Memory(items, _) => items.next(),
            Items::File(reader, line, error) => {
                if error.is_some() {
                    return None;
                }
                line.clear();
                let read = reader
                    .read_line(line)
                    .and_then(|n| match n {
                        0 => Ok(None),
                        _ => serde_json::from_str(line).map(Some).map_err(Into::into),
                    })
                    .map_err(|err| *error = Some(err));
                read.ok().flatten()
            }
        }
    }
}

/// Sorted runs merged at once: a sort holds at most this many run files
/// open per level (a run of level L+1 is FAN_IN runs of level L merged),
/// so a day's run stays far below a process's file limit.
const FAN_IN: usize = 32;

/// Puts `run` (level 0) last on `runs` (in the order they were made, each
/// with its level), and merges the last FAN_IN runs into one of the next
/// level whenever they are all of one level, as often as that holds. Only
/// runs next to each other are merged, in order: a sort stays stable.
fn cascade<R>(runs: &mut Vec<(u32, R)>, run: R, mut merge: impl FnMut(Vec<R>) -> R) {
    runs.push((0, run));
    while let Some(&(level, _)) = runs.last()
        && runs.len() >= FAN_IN
        && runs[runs.len() - FAN_IN..].iter().all(|(l, _)| *l == level)
    {
        let group = runs.drain(runs.len() - FAN_IN..).map(|(_, r)| r).collect();
        runs.push((level + 1, merge(group)));
    }
}

/// The sorted `runs` as one sorted spill; of equal items, an earlier
/// run's comes first.
fn merge<T: Serialize + DeserializeOwned + Clone>(
    runs: Vec<Spill<T>>,
    cmp: &impl Fn(&T, &T) -> CmpOrdering,
) -> Spill<T> {
    let mut readers: Vec<Items<T>> = runs.into_iter().map(Spill::into_items).collect();
    // The head of each run not yet taken, by run.
    let mut heads: Vec<Option<T>> = readers.iter_mut().map(Items::next_item).collect();
    let mut out = Spill::new();
    // Few runs (one per RUN items): the smallest head is found by a scan.
    while let Some(first) = smallest(&heads, cmp) {
        if let Some(item) = heads[first].take() {
            out.push_owned(item);
        }
        heads[first] = readers[first].next_item();
    }
    if out.error.is_none() {
        out.error = readers.iter_mut().find_map(Items::take_error);
    }
    out
}

/// The run whose head comes first (the earliest run of equal heads).
fn smallest<T>(heads: &[Option<T>], cmp: &impl Fn(&T, &T) -> CmpOrdering) -> Option<usize> {
    let mut best: Option<(usize, &T)> = None;
    for (i, head) in heads.iter().enumerate() {
        if let Some(item) = head
            && best.is_none_or(|(_, b)| cmp(item, b) == CmpOrdering::Less)
        {
            best = Some((i, item));
        }
    }
    best.map(|(i, _)| i)
}

/// A new file in the temporary folder, already removed from it.
fn unnamed_file() -> std::io::Result<File> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let path = std::env::temp_dir().join(format!(
        "firedrill-spill-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let file = File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)?;
    // Open, it lives on until closed; a system that cannot remove an open
    // file leaves it in the temporary folder.
    let _ = std::fs::remove_file(&path);
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_come_back_in_order_from_disk_and_more_can_follow() {
        let mut spill = Spill::<(u64, String)>::new();
        for i in 0..10_000 {
            spill.push(&(i, format!("/inventory/{i}")));
        }
        assert_eq!(spill.in_memory(), 0, "the file holds them");
        let first = spill.read();
        assert_eq!(first.len(), 10_000);
        assert_eq!(first[9_999], (9_999, "/inventory/9999".to_string()));
        spill.push(&(10_000, "/last".to_string()));
        let all = spill.read();
        assert_eq!(all.len(), 10_001);
        assert_eq!(all[..10_000], first[..]);
        assert_eq!(all[10_000], (10_000, "/last".to_string()));
        assert!(spill.error().is_none());
    }

    /// Items whose order by key alone leaves ties: (key, when pushed).
    fn shuffled(n: u64) -> Spill<(u64, u64)> {
        let mut spill = Spill::new();
        for i in 0..n {
            spill.push(&((i * 7_919) % 97, i));
        }
        spill
    }

    fn by_key(a: &(u64, u64), b: &(u64, u64)) -> CmpOrdering {
        a.0.cmp(&b.0)
    }

    #[test]
    fn a_sort_in_many_runs_gives_what_a_stable_sort_in_memory_gives() {
        let mut spill = shuffled(10_000);
        let mut expected = spill.read();
        expected.sort_by(by_key);
        for run in [1, 2, 7, 100, 9_999, 10_000, 20_000] {
            let mut sorted = spill.sorted_in_runs(run, &by_key);
            assert_eq!(sorted.len(), 10_000, "runs of {run}");
            assert_eq!(sorted.read(), expected, "runs of {run}");
            assert!(sorted.error().is_none());
        }
        assert_eq!(spill.len(), 10_000, "the source is left whole");
    }

    #[test]
    fn runs_merge_level_by_level_in_order_and_few_are_ever_open() {
        // Each run a list of the numbers it holds; a merge concatenates
        // (the runs' order is what a stable merge keeps).
        let mut runs: Vec<(u32, Vec<u64>)> = Vec::new();
        let (mut most_open, mut merged) = (0, 0);
        let total = 40_000u64;
        for i in 0..total {
            cascade(&mut runs, vec![i], |group| {
                merged += 1;
                assert_eq!(group.len(), FAN_IN);
                group.concat()
            });
            most_open = most_open.max(runs.len());
        }
        // 40,000 runs: 3 levels above the first, at most FAN_IN - 1 runs
        // of each waiting, and the one just made.
        assert!(
            most_open <= 4 * (FAN_IN - 1) + 1,
            "{most_open} open at once"
        );
        assert!(merged >= 1_250, "{merged} merges");
        let all: Vec<u64> = runs.into_iter().flat_map(|(_, r)| r).collect();
        assert_eq!(all, (0..total).collect::<Vec<_>>(), "no run out of order");
    }

    #[test]
    fn an_empty_spill_sorts_to_an_empty_one_and_a_sorted_one_can_grow() {
        let mut empty = Spill::<(u64, u64)>::new();
        let mut sorted = empty.sorted_by(by_key);
        assert!(sorted.is_empty());
        assert!(sorted.read().is_empty());
        sorted.push(&(1, 1));
        assert_eq!(sorted.read(), [(1, 1)]);
    }

    #[test]
    fn a_sort_in_memory_when_no_file_can_be_made_gives_the_same_order() {
        let mut spill = Spill {
            store: Store::Memory(Vec::new()),
            len: 0,
            error: None,
            _items: PhantomData,
        };
        for i in 0..1_000u64 {
            spill.push(&((i * 31) % 13, i));
        }
        let mut expected = spill.read();
        expected.sort_by(by_key);
        assert_eq!(spill.sorted_in_runs(64, &by_key).read(), expected);
    }

    #[test]
    fn a_reader_gives_the_items_in_order_once_and_a_test_thread_may_sort_in_small_runs() {
        let mut spill = shuffled(1_000);
        let mut expected = spill.read();
        expected.sort_by(by_key);
        TEST_RUN.with(|r| r.set(Some(3)));
        let sorted = spill.sorted_by(by_key);
        TEST_RUN.with(|r| r.set(None));
        let mut reader = sorted.into_reader();
        assert_eq!((&mut reader).collect::<Vec<_>>(), expected);
        assert!(reader.next().is_none());
        assert!(reader.error().is_none());
    }
}
