//! What the drill saw of one black-box breaker: the calls that reached
//! its dependency, each with its outcome and when it ended (from the
//! dependency proxy's records), and the caller requests the service
//! answered without any call reaching the dependency (short-circuits).
//!
//! A caller request and a dependency call are paired by the request's id
//! when the service passed it on (the proxy saw it on the call), else by
//! time: a request answered with no call arriving between its send and
//! its answer was short-circuited.

use super::caller::{Call, ShortCircuit};
use crate::clock::Duration;
use crate::defense::breaker::{Classifier, Outcome};
use crate::experiment::timeline::RequestRecord;
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
}

/// The calls of `records` (one dependency's, on the breaker's paths), and
/// the short-circuits among `requests` (the breaker's routes), in a run of
/// `duration`. A record carries a request id when the service passed one
/// on.
pub fn gather(records: &[&Record], requests: &[&RequestRecord], duration: Duration) -> Evidence {
    let mut calls: Vec<Call> = records.iter().map(|r| call(r, duration)).collect();
    calls.sort_by_key(|c| c.at);
    let by_id = calls.iter().any(|c| c.request_id.is_some());
    let reached: std::collections::BTreeSet<u64> =
        calls.iter().filter_map(|c| c.request_id).collect();
    let mut shorts: Vec<ShortCircuit> = requests
        .iter()
        .filter_map(|r| Some((r, r.sent + r.latency?)))
        .filter(|&(r, answered)| {
            if by_id {
                !reached.contains(&r.id)
            } else {
                none_between(&calls, r.sent, answered)
            }
        })
        .map(|(r, answered)| ShortCircuit {
            sent: r.sent,
            answered,
        })
        .collect();
    shorts.sort_by_key(|s| s.answered);
    Evidence {
        calls,
        shorts,
        pairing: if by_id {
            Pairing::ById
        } else {
            Pairing::ByTime
        },
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
        ended: answered.or(let_go),
        failed: record.status.is_none_or(|s| s >= 500)
            || record.grpc_status.is_some_and(|g| {
                matches!(Classifier::standard().classify_grpc(g), Outcome::Failure(_))
            }),
        path: record.path.clone(),
        request_id: record.request_id.as_deref().and_then(|i| i.parse().ok()),
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

    fn record(at_ms: f64, status: Option<u16>, took_ms: f64, id: Option<&str>) -> Record {
        Record {
            at_ms,
            proxy: std::sync::Arc::from("inventory"),
            method: http::Method::GET,
            http2: false,
            path: "/inventory/1".to_string(),
            request_id: id.map(str::to_string),
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
        let calls = [record(10.0, Some(200), 5.0, Some("0"))];
        let requests = [request(0, 8, 10), request(1, 9, 10)];
        let evidence = gather(
            &calls.iter().collect::<Vec<_>>(),
            &requests.iter().collect::<Vec<_>>(),
            ms(10_000),
        );
        assert_eq!(evidence.pairing, Pairing::ById);
        let shorts: Vec<Duration> = evidence.shorts.iter().map(|s| s.sent).collect();
        assert_eq!(shorts, [ms(9)]);
    }
}
