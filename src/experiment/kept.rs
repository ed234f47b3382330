//! A user's service's run keeps every request, every call that reached a
//! dependency and every target hit, to infer the service's breakers and
//! judge them after the run. [`KeptLists`] holds them on disk ([`Spill`]s)
//! and reads them back in passes, so the end of a long game day needs no
//! more memory than its start: one pass holds one item at a time, and the
//! joins between the lists (a hit and the request it belongs to) are made
//! by sorting on disk and merging.

use std::sync::{Arc, Mutex};

use crate::clock::Duration;
use crate::experiment::timeline::{PerRequest, RequestRecord, Sender, TargetHit};
use crate::proxy::record::{Record, Spilled};
use crate::spill::{Replay, Spill};

/// A kept request as the spill holds it: exact times (`RequestRecord`
/// leaves them out of its JSON, which `requests.jsonl` writes in
/// milliseconds).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct KeptRequest {
    sent: Duration,
    latency: Option<Duration>,
    #[serde(flatten)]
    record: RequestRecord,
}

impl From<RequestRecord> for KeptRequest {
    fn from(record: RequestRecord) -> KeptRequest {
        KeptRequest {
            sent: record.sent,
            latency: record.latency,
            record,
        }
    }
}

impl From<KeptRequest> for RequestRecord {
    fn from(kept: KeptRequest) -> RequestRecord {
        RequestRecord {
            sent: kept.sent,
            latency: kept.latency,
            ..kept.record
        }
    }
}

/// A target hit with the request it belongs to (when the run sent a
/// request with its id), and its place in arrival order.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct JoinedHit {
    seq: u64,
    hit: TargetHit,
    sender: Option<Sender>,
}

/// A run's per-request lists on disk: the inference reads the requests
/// with [`KeptLists::requests`], the judges and reports read all three
/// through [`PerRequest`] (`Timeline::each_request`, `each_hit`,
/// `each_dependency_request`).
pub struct KeptLists {
    /// Every request, in the order the stream finished them (by id).
    requests: Mutex<Spill<KeptRequest>>,
    /// Every target hit, in arrival order, joined with its request.
    hits: Mutex<Spill<JoinedHit>>,
    /// Every call through the dependency proxies, in arrival order.
    calls: Mutex<Spill<Spilled>>,
    /// A read of the lists that failed in a pass of their reader's own
    /// (the inference's sorts), kept for [`PerRequest::error`].
    failed: Mutex<Option<std::io::Error>>,
}

impl std::fmt::Debug for KeptLists {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeptLists")
            .field("requests", &lock(&self.requests).len())
            .field("hits", &lock(&self.hits).len())
            .field("calls", &lock(&self.calls).len())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl KeptLists {
    /// The lists of a run: its `requests` (by id), its target `hits` and
    /// the dependencies' `calls` (each in the order they were recorded;
    /// both are put in arrival order here, stably).
    pub fn new(
        mut requests: Spill<KeptRequest>,
        mut hits: Spill<TargetHit>,
        mut calls: Spill<Spilled>,
    ) -> Arc<KeptLists> {
        let hits = join(&mut requests, &mut hits.sorted_by(|a, b| a.at.cmp(&b.at)));
        let calls = calls.sorted_by(|a, b| a.at_ms().total_cmp(&b.at_ms()));
        Arc::new(KeptLists {
            requests: Mutex::new(requests),
            hits: Mutex::new(hits),
            calls: Mutex::new(calls),
            failed: Mutex::new(None),
        })
    }

    /// Every request, in id order.
    pub fn requests(&self) -> &dyn Replay<RequestRecord> {
        self
    }

    /// A reader of the lists lost items in a pass of its own (`err`).
    pub fn fail(&self, err: std::io::Error) {
        lock(&self.failed).get_or_insert(err);
    }
}

impl PerRequest for KeptLists {
    fn each_request(&self, take: &mut dyn FnMut(&RequestRecord)) {
        self.replay(&mut |r| take(&r));
    }

    fn each_hit(&self, take: &mut dyn FnMut(&TargetHit, Option<&Sender>)) {
        lock(&self.hits).read_each(|j| take(&j.hit, j.sender.as_ref()));
    }

    fn each_call(&self, take: &mut dyn FnMut(&Record)) {
        lock(&self.calls).read_each(|s| take(&Record::from(s)));
    }

    fn hits(&self) -> usize {
        lock(&self.hits).len()
    }

    fn calls(&self) -> usize {
        lock(&self.calls).len()
    }

    fn error(&self) -> Option<std::io::Error> {
        let failed = lock(&self.failed);
        let failed = failed
            .as_ref()
            .map(|e| std::io::Error::new(e.kind(), e.to_string()));
        failed
            .or_else(|| lock(&self.requests).error())
            .or_else(|| lock(&self.hits).error())
            .or_else(|| lock(&self.calls).error())
    }
}

impl Replay<RequestRecord> for KeptLists {
    fn replay(&self, take: &mut dyn FnMut(RequestRecord)) {
        lock(&self.requests).read_each(|k| take(RequestRecord::from(k)));
    }
}

/// `hits` (in arrival order) each with the request of its id among
/// `requests`: numbered, sorted by request id, merged with the requests
/// sorted by id, and put back in arrival order.
fn join(requests: &mut Spill<KeptRequest>, hits: &mut Spill<TargetHit>) -> Spill<JoinedHit> {
    let mut numbered = Spill::new();
    let mut seq = 0;
    hits.read_each(|hit| {
        numbered.push(&JoinedHit {
            seq,
            hit,
            sender: None,
        });
        seq += 1;
    });
    let by_id = numbered.sorted_by(|a, b| a.hit.request_id.cmp(&b.hit.request_id));
    let mut ids = requests
        .sorted_by(|a, b| a.record.id.cmp(&b.record.id))
        .into_reader();
    let mut next = ids.next();
    let mut joined = Spill::new();
    let mut hits = by_id.into_reader();
    for mut j in hits.by_ref() {
        if let Some(id) = j.hit.request_id {
            while next.as_ref().is_some_and(|r| r.record.id < id) {
                next = ids.next();
            }
            j.sender = next.as_ref().filter(|r| r.record.id == id).map(|r| Sender {
                route: r.record.route.clone(),
                sent: r.sent,
            });
        }
        joined.push(&j);
    }
    let failed = hits.error().or_else(|| ids.error());
    let mut out = joined.sorted_by(|a, b| a.seq.cmp(&b.seq));
    if let Some(err) = failed {
        out.fail(err);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn hit(at: u64, id: Option<u64>) -> TargetHit {
        TargetHit {
            at: ms(at),
            path: format!("/p/{at}"),
            request_id: id,
            instance: None,
        }
    }

    #[test]
    fn each_hit_comes_in_arrival_order_with_the_request_of_its_id() {
        let mut requests = Spill::new();
        // Out of id order, as a request given up for lost and finished
        // late would come.
        for (id, route) in [(0, "a"), (2, "b"), (1, "a")] {
            let r = RequestRecord::sent(id, route, "/p", ms(10 * id));
            requests.push(&KeptRequest::from(r));
        }
        let mut hits = Spill::new();
        for h in [
            hit(30, Some(2)),
            hit(5, Some(0)),
            hit(30, None),
            hit(12, Some(1)),
            hit(30, Some(7)),
            hit(13, Some(1)),
        ] {
            hits.push(&h);
        }
        let kept = KeptLists::new(requests, hits, Spill::new());
        let mut seen = Vec::new();
        kept.each_hit(&mut |h, s| {
            seen.push((h.at, h.request_id, s.map(|s| (s.route.clone(), s.sent))))
        });
        let sender = |route: &str, sent| Some((route.to_string(), ms(sent)));
        assert_eq!(
            seen,
            [
                (ms(5), Some(0), sender("a", 0)),
                (ms(12), Some(1), sender("a", 10)),
                (ms(13), Some(1), sender("a", 10)),
                // Equal times keep the order they were recorded in.
                (ms(30), Some(2), sender("b", 20)),
                (ms(30), None, None),
                (ms(30), Some(7), None),
            ]
        );
        let mut ids = Vec::new();
        kept.requests().replay(&mut |r| ids.push(r.id));
        assert_eq!(ids, [0, 2, 1], "the requests stay in the stream's order");
        assert_eq!((kept.hits(), kept.calls()), (6, 0));
        assert!(kept.error().is_none());
    }
}
