//! What an HTTP-mode proxy of the control plane keeps of its requests, for
//! a drill on another host to judge from: every [`Record`], numbered from
//! 0 in the order they finished, the newest [`KEPT`] of them, served a page
//! at a time by `GET /proxies/NAME/records?since=N` (firedrill's extension
//! of the Toxiproxy API). A journal keeps nothing until it is first read:
//! a proxy no drill reads builds no records at all.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

use crate::proxy::record::{Record, RecordSink};

/// How many records a proxy keeps: a drill reads them every half second,
/// so only a proxy past 100k requests a second between two reads loses
/// any, and the loss is counted ([`Page::dropped`]).
pub const KEPT: usize = 65_536;

/// The most records one answer carries.
pub const PAGE: usize = 10_000;

/// A proxy's records, oldest first.
#[derive(Debug)]
pub struct Journal {
    /// The records kept and the number of the first of them.
    inner: Mutex<Kept>,
    /// When the proxy's time zero was, in milliseconds since the Unix epoch
    /// on this host's wall clock: a record's `at_ms` counts from it.
    started_unix_ms: f64,
    /// The most records kept.
    capacity: usize,
    /// Set by the first read: records are kept from then on.
    read: AtomicBool,
}

#[derive(Debug, Default)]
struct Kept {
    records: VecDeque<Record>,
    /// The number of `records[0]`.
    first: u64,
}

/// One answer of the records endpoint.
#[derive(Debug, Serialize)]
pub struct Page {
    /// The proxy's name.
    pub proxy: String,
    /// See [`Journal::started_unix_ms`].
    pub started_unix_ms: f64,
    /// The number of the first record asked for.
    pub since: u64,
    /// The number to ask from next time.
    pub next: u64,
    /// Records asked for that were no longer kept.
    pub dropped: u64,
    /// The records from `since` (or the oldest kept), at most [`PAGE`].
    pub records: Vec<Record>,
}

impl Journal {
    /// An empty journal whose times count from `started_unix_ms`.
    pub fn new(started_unix_ms: f64, capacity: usize) -> Journal {
        Journal {
            inner: Mutex::default(),
            started_unix_ms,
            capacity: capacity.max(1),
            read: AtomicBool::new(false),
        }
    }

    /// The records numbered `since` and later, at most `limit` of them;
    /// from this first read on, the journal keeps the proxy's records.
    pub fn page(&self, proxy: &str, since: u64, limit: usize) -> Page {
        self.read.store(true, Ordering::Relaxed);
        let kept = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let end = kept.first + kept.records.len() as u64;
        let from = since.clamp(kept.first, end);
        let skip = (from - kept.first) as usize;
        let records: Vec<Record> = kept
            .records
            .iter()
            .skip(skip)
            .take(limit.min(PAGE))
            .cloned()
            .collect();
        Page {
            proxy: proxy.to_string(),
            started_unix_ms: self.started_unix_ms,
            since,
            next: from + records.len() as u64,
            dropped: kept.first.saturating_sub(since),
            records,
        }
    }
}

impl RecordSink for Journal {
    fn record(&self, record: &Record) {
        let mut kept = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if kept.records.len() == self.capacity {
            kept.records.pop_front();
            kept.first += 1;
        }
        kept.records.push_back(record.clone());
    }

    fn wanted(&self) -> bool {
        self.read.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn record(n: u64) -> Record {
        Record {
            at_ms: n as f64,
            proxy: "p".into(),
            method: http::Method::GET,
            http2: false,
            path: format!("/{n}"),
            request_id: None,
            carried: None,
            status: Some(200),
            fault: None,
            latency_ms: Some(1.0),
            closed_after_ms: None,
            bytes_in: 0,
            bytes_out: 0,
            reached_upstream: true,
            grpc_status: None,
        }
    }

    fn paths(page: &Page) -> Vec<String> {
        page.records.iter().map(|r| r.path.clone()).collect()
    }

    #[test]
    fn a_page_starts_at_since_and_says_where_the_next_one_starts() {
        let journal = Journal::new(1000.0, 10);
        for n in 0..5 {
            journal.record(&record(n));
        }
        let page = journal.page("p", 2, 2);
        assert_eq!(paths(&page), ["/2", "/3"]);
        assert_eq!((page.since, page.next, page.dropped), (2, 4, 0));
        let rest = journal.page("p", page.next, 100);
        assert_eq!(paths(&rest), ["/4"]);
        assert_eq!(rest.next, 5);
        let none = journal.page("p", rest.next, 100);
        assert!(none.records.is_empty());
        assert_eq!((none.next, none.dropped), (5, 0));
    }

    #[test]
    fn records_past_the_capacity_push_out_the_oldest_and_a_late_reader_is_told_how_many_it_lost() {
        let journal = Journal::new(0.0, 3);
        for n in 0..7 {
            journal.record(&record(n));
        }
        let page = journal.page("p", 1, 100);
        assert_eq!(paths(&page), ["/4", "/5", "/6"]);
        assert_eq!((page.next, page.dropped), (7, 3));
        // A reader ahead of the journal gets nothing and keeps its place.
        let ahead = journal.page("p", 9, 100);
        assert!(ahead.records.is_empty());
        assert_eq!((ahead.next, ahead.dropped), (7, 0));
    }

    #[test]
    fn one_page_carries_at_most_the_page_size() {
        let journal = Journal::new(0.0, PAGE + 5);
        for n in 0..(PAGE as u64 + 5) {
            journal.record(&record(n));
        }
        let page = journal.page("p", 0, usize::MAX);
        assert_eq!(page.records.len(), PAGE);
        assert_eq!(page.next, PAGE as u64);
    }

    #[tokio::test]
    async fn a_journal_keeps_nothing_until_it_is_first_read_then_every_request() {
        use crate::proxy::Recorder;
        use http_body_util::BodyExt;
        let journal = Arc::new(Journal::new(0.0, 10));
        let recorder = Recorder::with_raw_correlation(
            "p",
            crate::clock::now(),
            journal.clone() as Arc<dyn RecordSink>,
        );
        let serve = |path: &'static str| {
            let req = http::Request::get(path).body(()).unwrap();
            let resp = http::Response::new(crate::http::body::full("ok"));
            recorder.begin(&req, crate::clock::now()).answered(resp)
        };
        serve("/before").into_body().collect().await.unwrap();
        let first = journal.page("p", 0, 100);
        assert!(first.records.is_empty(), "nobody read yet: nothing kept");
        assert_eq!(first.next, 0);
        serve("/after").into_body().collect().await.unwrap();
        let page = journal.page("p", first.next, 100);
        assert_eq!(paths(&page), ["/after"]);
        assert_eq!(
            recorder.counters().unwrap().get("2xx", None),
            2,
            "both counted"
        );
    }
}
