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
        let store = match unnamed_file() {
            Ok(file) => Store::File(BufWriter::with_capacity(BUFFER, file)),
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
}
