//! What the drill saw of one black-box breaker: the calls that reached
//! its dependency, each with its outcome and when it ended (from the
//! dependency proxy's records), and the caller requests the service
//! answered without any call reaching the dependency (short-circuits).
//!
//! A caller request and a dependency call are paired by the request's id
//! when the service passed it on (the proxy saw it on the call), else by
//! time: a request answered with no call arriving between its send and
//! its answer was short-circuited.
//!
//! Evidence the end of the run cut off is not evidence: a request answered
//! after the run's end (its calls may arrive after it too, unseen) is
//! never taken for a short-circuit, only counted ([`Quality::cut_off`]).
//! A call the service gave up on without an answer ended when the service
//! answered its caller, if that came before the service closed the call's
//! connection (a library that times out and closes its socket later).

use super::caller::{Call, ShortCircuit};
pub use super::gathered::{Gathered, gather_streamed};
use super::stream::Failed;
use crate::clock::Duration;
use crate::defense::breaker::{Classifier, Outcome};
use crate::experiment::timeline::RequestRecord;
use crate::proxy::record::Record;
use crate::spill::Spill;
use std::collections::BTreeSet;

/// How caller requests and dependency calls were paired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pairing {
    /// By the request id the service passed on: exact.
    ById,
    /// By time: a request answered with no call between its send and its
    /// answer was short-circuited.
    ByTime,
}

impl Pairing {
    /// The confidence of a transition inferred from both sides paired so.
    pub fn confidence(self) -> &'static str {
        match self {
            Pairing::ById => "high",
            Pairing::ByTime => "medium",
        }
    }
}

/// The confidence of a transition inferred from the dependency's side
/// alone (outside traffic, or calls without outcomes).
pub const ONE_SIDE: &str = "low";

/// The evidence of one breaker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    /// The calls that reached the dependency, in arrival order.
    pub calls: Vec<Call>,
    /// The caller requests answered without reaching it, in answer order.
    pub shorts: Vec<ShortCircuit>,
    /// How the two sides were paired.
    pub pairing: Pairing,
    /// What the evidence is worth, for the report and the evidence gate.
    pub quality: Quality,
}

pub use crate::experiment::timeline::Quality;

/// The calls of `records` (one dependency's, on the breaker's paths), and
/// the short-circuits among `requests` (the breaker's routes), in a run of
/// `duration`. A record carries a request id when the service passed one
/// on; `sent` holds the id of every request the drill sent (on any route).
/// In memory; [`gather_streamed`] does the work.
pub fn gather(
    records: &[&Record],
    requests: &[&RequestRecord],
    sent: &BTreeSet<u64>,
    duration: Duration,
) -> Evidence {
    let mut calls = Spill::new();
    records.iter().for_each(|r| calls.push(&call(r, duration)));
    // Each request with its place in `requests`, by id, stably.
    let mut placed: Vec<(u64, &RequestRecord)> = (0..).zip(requests.iter().copied()).collect();
    placed.sort_by_key(|(_, r)| r.id);
    let mut asked = Spill::new();
    let mut ids = sent.iter().copied().peekable();
    let mut placed = placed.into_iter().peekable();
    loop {
        let next_id = ids.peek().copied();
        let next_request = placed.peek().map(|(_, r)| r.id);
        let id = match (next_id, next_request) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => break,
        };
        let held = ids.next_if_eq(&id).is_some();
        let mut any = false;
        while let Some((seq, r)) = placed.next_if(|(_, r)| r.id == id) {
            any = true;
            asked.push(&Asked::of(r, seq, held, duration));
        }
        if !any {
            asked.push(&Asked {
                id,
                held,
                route: None,
            });
        }
    }
    let mut failed = Failed::default();
    let mut gathered = gather_streamed(calls, &mut asked, &mut failed);
    let mut calls = Vec::new();
    gathered.calls(&mut failed, &mut |c| calls.push(c));
    let mut shorts = Vec::new();
    gathered.shorts(&mut failed, &mut |s| shorts.push(s));
    Evidence {
        calls,
        shorts,
        pairing: gathered.pairing,
        quality: gathered.quality,
    }
}

/// One request the drill sent, as the evidence reads it: by id.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Asked {
    /// Its id.
    pub id: u64,
    /// The drill sent it: a call with its id pairs (one with an id the
    /// drill never sent does not).
    pub held: bool,
    /// Sent on one of the breaker's routes (else `None`).
    pub route: Option<OnRoute>,
}

/// A request on the breaker's routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OnRoute {
    /// Its place among the requests as they came (of short-circuits
    /// answered at once, the first sent comes first).
    pub seq: u64,
    /// When it was sent.
    pub sent: Duration,
    /// When it was answered, if before the end of the run.
    pub answered: Option<Duration>,
}

impl Asked {
    /// `request`, on the breaker's routes, the `seq`-th of them as they
    /// came, in a run of `duration`.
    pub fn of(request: &RequestRecord, seq: u64, held: bool, duration: Duration) -> Asked {
        Asked {
            id: request.id,
            held,
            route: Some(OnRoute {
                seq,
                sent: request.sent,
                answered: answered(request.sent, request.latency, duration),
            }),
        }
    }
}

/// When a request sent at `sent` was answered after `latency`, if before
/// the end of the run (`duration`): one answered after it is cut off.
pub fn answered(sent: Duration, latency: Option<Duration>, duration: Duration) -> Option<Duration> {
    sent.checked_add(latency?).filter(|at| *at <= duration)
}

/// A proxy record as a call: ended at its answer, or when the proxy let it
/// go without one (before the end of the run: one still held then was let
/// go by the drill's stop, not by the service, and stays outstanding);
/// failed on a 5xx, a gRPC status that says the server failed
/// (UNAVAILABLE, INTERNAL, ...) or no answer.
pub(super) fn call(record: &Record, duration: Duration) -> Call {
    let ms = |v: f64| Duration::from_secs_f64((v / 1000.0).max(0.0));
    let answered = record.latency_ms.map(|t| ms(record.at_ms + t));
    let let_go = record
        .closed_after_ms
        .map(|t| ms(record.at_ms + t))
        .filter(|at| *at < duration);
    Call {
        at: ms(record.at_ms),
        let_go: answered.is_none() && let_go.is_some(),
        ended: answered.or(let_go),
        failed: record.status.is_none_or(|s| s >= 500)
            || record.grpc_status.is_some_and(|g| {
                matches!(Classifier::standard().classify_grpc(g), Outcome::Failure(_))
            }),
        path: record.path.clone(),
        request_id: record.request_id,
        sent: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(at_ms: f64, status: Option<u16>, took_ms: f64, id: Option<u64>) -> Record {
        Record {
            at_ms,
            proxy: std::sync::Arc::from("inventory"),
            method: http::Method::GET,
            http2: false,
            path: "/inventory/1".to_string(),
            request_id: id,
            carried: None,
            status,
            fault: None,
            latency_ms: status.map(|_| took_ms),
            closed_after_ms: status.is_none().then_some(took_ms),
            bytes_in: 0,
            bytes_out: 0,
            reached_upstream: status.is_some(),
            grpc_status: None,
        }
    }

    fn request(id: u64, sent_ms: u64, took_ms: u64) -> RequestRecord {
        let mut r = RequestRecord::sent(id, "stock", "/stock/1", ms(sent_ms));
        r.latency = Some(ms(took_ms));
        r.status = Some(200);
        r
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_call_ends_at_its_answer_or_when_it_was_let_go_and_fails_on_5xx_or_no_answer() {
        let run = ms(10_000);
        let ok = call(&record(100.0, Some(200), 5.0, None), run);
        assert_eq!((ok.ended, ok.failed), (Some(ms(105)), false));
        let five = call(&record(100.0, Some(503), 2.0, None), run);
        assert_eq!((five.ended, five.failed), (Some(ms(102)), true));
        let hung = call(&record(100.0, None, 1000.0, None), run);
        assert_eq!((hung.ended, hung.failed), (Some(ms(1100)), true));
    }

    #[test]
    fn a_grpc_call_fails_on_a_status_that_says_the_server_failed_not_on_the_callers_error() {
        let run = ms(10_000);
        let grpc = |code| {
            let mut r = record(100.0, Some(200), 5.0, None);
            r.grpc_status = Some(code);
            call(&r, run).failed
        };
        assert!(!grpc(0), "OK");
        for code in [2, 4, 8, 13, 14, 15] {
            assert!(grpc(code), "status {code} on an HTTP 200 failed");
        }
        for code in [3, 5, 7, 16] {
            assert!(!grpc(code), "status {code} is the caller's error");
        }
    }

    #[test]
    fn a_call_the_drills_stop_let_go_stays_outstanding_not_a_failure_that_ended() {
        let held = call(&record(9_500.0, None, 600.0, None), ms(10_000));
        assert_eq!((held.ended, held.failed), (None, true));
    }

    #[test]
    fn by_time_a_request_with_no_call_between_its_send_and_answer_was_short_circuited() {
        let calls = [record(10.0, Some(200), 5.0, None)];
        let requests = [request(0, 8, 10), request(1, 50, 1), request(2, 100, 1)];
        let evidence = gather(
            &calls.iter().collect::<Vec<_>>(),
            &requests.iter().collect::<Vec<_>>(),
            &ids(&requests),
            ms(10_000),
        );
        assert_eq!(evidence.pairing, Pairing::ByTime);
        let shorts: Vec<Duration> = evidence.shorts.iter().map(|s| s.sent).collect();
        assert_eq!(shorts, [ms(50), ms(100)]);
    }

    #[test]
    fn by_id_a_request_whose_id_no_call_carried_was_short_circuited_whatever_the_times() {
        // Request 1's window holds request 0's call: by time it would look
        // like it reached the dependency.
        let calls = [record(10.0, Some(200), 5.0, Some(0))];
        let requests = [request(0, 8, 10), request(1, 9, 10)];
        let evidence = gather(
            &calls.iter().collect::<Vec<_>>(),
            &requests.iter().collect::<Vec<_>>(),
            &ids(&requests),
            ms(10_000),
        );
        assert_eq!(evidence.pairing, Pairing::ById);
        let shorts: Vec<Duration> = evidence.shorts.iter().map(|s| s.sent).collect();
        assert_eq!(shorts, [ms(9)]);
    }

    fn ids(requests: &[RequestRecord]) -> BTreeSet<u64> {
        requests.iter().map(|r| r.id).collect()
    }

    fn gathered(calls: &[Record], requests: &[RequestRecord], run_ms: u64) -> Evidence {
        gather(
            &calls.iter().collect::<Vec<_>>(),
            &requests.iter().collect::<Vec<_>>(),
            &ids(requests),
            ms(run_ms),
        )
    }

    #[test]
    fn a_call_whose_id_is_no_request_of_the_drill_is_not_paired_and_proves_no_reach() {
        // Request 0 reached the dependency; a call carries an id (9) that
        // no request of the drill has: neither paired nor proof that
        // request 1 reached it.
        let calls = [
            record(10.0, Some(200), 5.0, Some(0)),
            record(52.0, Some(200), 5.0, Some(9)),
        ];
        let requests = [request(0, 8, 10), request(1, 50, 10)];
        let evidence = gathered(&calls, &requests, 10_000);
        assert_eq!(evidence.pairing, Pairing::ById);
        assert_eq!(
            (evidence.quality.calls, evidence.quality.paired),
            (2, 1),
            "{:?}",
            evidence.quality
        );
        assert_eq!(evidence.quality.requests_reached, 1);
        assert_eq!(evidence.calls[1].request_id, None);
    }

    #[test]
    fn a_request_answered_after_the_runs_end_is_cut_off_not_a_short_circuit() {
        // The service stalled at 4.75 s of a 5 s run: the requests sent
        // then are answered after the end, their calls arrive after it.
        let requests: Vec<RequestRecord> = (0..6)
            .map(|i| request(i, 4_750 + i * 50, 5_150 - (4_750 + i * 50)))
            .collect();
        for by_id in [false, true] {
            let calls: Vec<Record> = (0..6u64)
                .map(|i| record(5_140.0, Some(200), 5.0, by_id.then_some(i)))
                .filter(|r| r.at_ms <= 5_000.0)
                .collect();
            let evidence = gathered(&calls, &requests, 5_000);
            assert!(
                evidence.shorts.is_empty(),
                "by id {by_id}: {:?}",
                evidence.shorts
            );
            assert_eq!(evidence.quality.cut_off, 6);
        }
        // One answered before the end with no call is still one.
        let mut early = requests.clone();
        early[0].latency = Some(ms(10));
        let evidence = gathered(&[], &early, 5_000);
        assert_eq!(evidence.shorts.len(), 1);
    }

    #[test]
    fn a_failed_call_let_go_late_ended_when_the_service_answered_its_caller() {
        // The service gave up at 1000 ms (its caller got the fallback at
        // 1005 ms) and closed the call's socket 250 ms later.
        let late = record(5.0, None, 1_245.0, Some(0));
        let requests = [request(0, 0, 1_005), request(1, 2_000, 5)];
        let evidence = gathered(std::slice::from_ref(&late), &requests, 10_000);
        assert_eq!(evidence.calls[0].ended, Some(ms(1_005)));
        // By time: the last request sent before the call arrived.
        let mut no_id = late.clone();
        no_id.request_id = None;
        let evidence = gathered(&[no_id], &requests, 10_000);
        assert_eq!(evidence.pairing, Pairing::ByTime);
        assert_eq!(evidence.calls[0].ended, Some(ms(1_005)));
        // A call answered (a 500), or one let go before its caller's
        // answer, keeps its own end.
        let answered = record(5.0, Some(500), 1_245.0, Some(0));
        let evidence = gathered(&[answered], &requests, 10_000);
        assert_eq!(evidence.calls[0].ended, Some(ms(1_250)));
        let closed_first = record(5.0, None, 500.0, Some(0));
        let evidence = gathered(&[closed_first], &requests, 10_000);
        assert_eq!(evidence.calls[0].ended, Some(ms(505)));
    }
}
