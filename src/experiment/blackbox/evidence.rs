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
use crate::clock::Duration;
use crate::defense::breaker::{Classifier, Outcome};
use crate::experiment::timeline::RequestRecord;
use crate::order::{ById, IdSet, SortedIds, sort_by_key_lean};
use crate::proxy::record::Record;

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
pub fn gather(
    records: &[&Record],
    requests: &[&RequestRecord],
    sent: &impl IdSet,
    duration: Duration,
) -> Evidence {
    let mut calls: Vec<Call> = records.iter().map(|r| call(r, duration)).collect();
    sort_by_key_lean(&mut calls, |c| c.at, Ord::cmp);
    // Only an id of one of the drill's requests pairs.
    let sent_at: ById<Duration> = requests.iter().map(|r| (r.id, r.sent)).collect();
    for c in &mut calls {
        c.request_id = c.request_id.filter(|id| sent.holds(*id));
        c.sent = c.request_id.and_then(|id| sent_at.get(id).copied());
    }
    drop(sent_at);
    let by_id = calls.iter().any(|c| c.request_id.is_some());
    let reached: SortedIds = calls.iter().filter_map(|c| c.request_id).collect();
    let answered = |r: &RequestRecord| Some(r.sent + r.latency?).filter(|at| *at <= duration);
    given_up_when_answered(&mut calls, requests, by_id, answered);
    let mut shorts: Vec<ShortCircuit> = requests
        .iter()
        .filter_map(|r| Some((r, answered(r)?)))
        .filter(|&(r, answered)| {
            if by_id {
                !reached.holds(r.id)
            } else {
                none_between(&calls, r.sent, answered)
            }
        })
        .map(|(r, answered)| ShortCircuit {
            sent: r.sent,
            answered,
        })
        .collect();
    sort_by_key_lean(&mut shorts, |s| s.answered, Ord::cmp);
    let count = |n: usize| n as u64;
    let quality = Quality {
        calls: count(calls.len()),
        paired: count(calls.iter().filter(|c| c.request_id.is_some()).count()),
        requests: count(requests.len()),
        requests_reached: count(requests.iter().filter(|r| reached.holds(r.id)).count()),
        cut_off: count(requests.iter().filter(|r| answered(r).is_none()).count()),
        outstanding: count(calls.iter().filter(|c| c.ended.is_none()).count()),
        ids_expected: by_id,
        lost: None,
        contradicted: Vec::new(),
    };
    Evidence {
        calls,
        shorts,
        pairing: if by_id {
            Pairing::ById
        } else {
            Pairing::ByTime
        },
        quality,
    }
}

/// A failed call let go without an answer ended when the service gave up
/// on it: when it answered the caller request the call was made for, if
/// that came first (a service closes the call's socket some time after its
/// own timeout fired). The request is the call's id, or by time the last
/// one sent before the call arrived and answered after.
fn given_up_when_answered(
    calls: &mut [Call],
    requests: &[&RequestRecord],
    by_id: bool,
    answered: impl Fn(&RequestRecord) -> Option<Duration>,
) {
    // Only the pairing in use is built.
    let by_id_answers: ById<Duration> = requests
        .iter()
        .filter(|_| by_id)
        .filter_map(|r| Some((r.id, answered(r)?)))
        .collect();
    let mut by_send: Vec<(Duration, Duration)> = requests
        .iter()
        .filter(|_| !by_id)
        .filter_map(|r| Some((r.sent, answered(r)?)))
        .collect();
    by_send.sort_unstable();
    for c in calls.iter_mut().filter(|c| c.failed && c.let_go) {
        let Some(ended) = c.ended else { continue };
        let answer = if by_id {
            c.request_id.and_then(|id| by_id_answers.get(id).copied())
        } else {
            let before = by_send.partition_point(|(sent, _)| *sent <= c.at);
            by_send[..before]
                .iter()
                .rev()
                .find(|(_, answer)| *answer >= c.at)
                .map(|(_, answer)| *answer)
        };
        if let Some(answer) = answer.filter(|a| *a >= c.at) {
            c.ended = Some(answer.min(ended));
        }
    }
}

/// A proxy record as a call: ended at its answer, or when the proxy let it
/// go without one (before the end of the run: one still held then was let
/// go by the drill's stop, not by the service, and stays outstanding);
/// failed on a 5xx, a gRPC status that says the server failed
/// (UNAVAILABLE, INTERNAL, ...) or no answer.
fn call(record: &Record, duration: Duration) -> Call {
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

/// No call of `calls` (sorted by arrival) arrived within `[from, to]`.
fn none_between(calls: &[Call], from: Duration, to: Duration) -> bool {
    let first = calls.partition_point(|c| c.at < from);
    calls.get(first).is_none_or(|c| c.at > to)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

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
